"""Gram matrices by name, and the data-adaptive effective dimension.

    make_gram            a ``Gram`` or ``DiagonalGram`` of lam * I by name
    EffectiveDimension   d_eff = logdet(I + a * sum_i z_i z_i^T) [Bae2025, App. A]

References:
    [Bae2025] S. Bae, D. Lee. Neural logistic bandits. arXiv:2505.02069.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from banditkit.core.validation import check_choice

from .diagonal import DiagonalGram
from .gram import Gram
from .shifted import GRAMS

__all__ = ["EffectiveDimension", "make_gram"]


def make_gram(kind: str, d: int, lam: float) -> Gram | DiagonalGram:
    """Return a Gram lam * I of dimension d: "diagonal" (O(d)) or "full" (O(d^2)).

    Example:
        >>> make_gram("diagonal", 3, 2.0).diagonal
        array([2., 2., 2.])
    """
    kind = check_choice("gram", kind, GRAMS)
    return DiagonalGram(d, lam) if kind == "diagonal" else Gram(d, lam)


class EffectiveDimension:
    """Data-adaptive effective dimension d_eff = logdet(I + a * sum_i z_i z_i^T).

    [Bae2025, App. A] measures the effective dimension on the features z_i of the
    arms played so far: a = R = 1/4 for NeuralLog-UCB-1/2 (z = g(x_i; theta_{i-1})) and
    for Logistic-UCB-1 / ada-OFU-ECOLog (z = x_i), a = 1/kappa for NCBF-UCB. With
    ``gram="diagonal"`` only the diagonal of the sum is kept,

        d_eff = sum_j log(1 + a * sum_i z_ij^2),

    which equals the exact log-determinant when every z_i lies along an axis.

    Args:
        d: Feature dimension.
        scale: a > 0.
        gram: "diagonal" or "full".

    Example:
        >>> tracker = EffectiveDimension(2, scale=1.0)
        >>> tracker.update(np.array([1.0, 0.0]))
        >>> round(tracker.value, 6) == round(float(np.log(2.0)), 6)
        True
    """

    def __init__(self, d: int, scale: float, gram: str = "diagonal") -> None:
        self.scale = scale
        self.gram = make_gram(gram, d, 1.0)

    def update(self, z: np.ndarray) -> None:
        """Add a * z z^T to the sum."""
        self.gram.update(z, self.scale)

    @property
    def value(self) -> float:
        """The current d_eff (0 before any update)."""
        return self.gram.logdet

    def state_dict(self) -> dict[str, Any]:
        """Arrays and scalars only."""
        return self.gram.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from :meth:`state_dict`."""
        self.gram.load_state_dict(state)
