"""The labelled table every classification loader returns: :class:`Dataset`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Dataset"]


@dataclass(frozen=True)
class Dataset:
    """A labelled table: features (n, d) float64, labels (n,) int in [0, n_classes).

    Arrays returned by :func:`load_dataset` are shared through an in-process cache and are
    read-only; copy them before modifying.
    """

    name: str
    features: np.ndarray
    labels: np.ndarray
    n_classes: int
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def n_rows(self) -> int:
        """Number of rows."""
        return int(self.features.shape[0])

    @property
    def d(self) -> int:
        """Number of features per row."""
        return int(self.features.shape[1])
