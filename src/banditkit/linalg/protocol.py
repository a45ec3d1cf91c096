"""The one interface of the Gram types, so a policy never asks which one it holds.

``Gram`` (full, rank-1 updates), ``DiagonalGram`` (diag(V) only) and ``ShiftedGram``
(a ridge that may change every round) all answer these methods; a policy's uncertainty
part is written against ``GramLike`` alone. ``is_diagonal`` tells a model it may
compute the squared norms sum_j z_j^2 / diagonal_j itself, without building the (K, p)
feature block (``nn.forward_and_sq_norms``).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["GramLike"]


@runtime_checkable
class GramLike(Protocol):
    """A = lam * I + sum_i w_i z_i z_i^T (or its diagonal), read through norms."""

    @property
    def d(self) -> int:
        """Dimension of the features."""
        ...

    @property
    def lam(self) -> float:
        """The current ridge."""
        ...

    @property
    def is_diagonal(self) -> bool:
        """True when A is diagonal (then ``diagonal`` is all of it)."""
        ...

    @property
    def diagonal(self) -> np.ndarray:
        """diag(A), shape (d,)."""
        ...

    @property
    def logdet(self) -> float:
        """Log det A."""
        ...

    def update(self, x: Any, weight: float = 1.0) -> None:
        """A += weight * x x^T (validated)."""
        ...

    def norms(self, X: Any) -> np.ndarray:
        """||x_k||_{A^-1} for the rows of X (K, d) (validated)."""
        ...

    def norms_unchecked(self, X: np.ndarray) -> np.ndarray:
        """``norms`` for float64 features built by a model (no checks)."""
        ...

    def pair_norms(self, Z: Any) -> np.ndarray:
        """||z_i - z_j||_{A^-1} for all pairs of rows of Z (K, d), shape (K, K) (validated)."""
        ...

    def pair_norms_unchecked(self, Z: np.ndarray) -> np.ndarray:
        """``pair_norms`` for float64 features built by a model (no checks)."""
        ...

    def solve(self, b: Any) -> np.ndarray:
        """A^-1 b for b (d,) or (d, n)."""
        ...

    def set_ridge(self, lam: float) -> None:
        """Replace the ridge lam * I."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """Arrays and JSON-able scalars only."""
        ...

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from ``state_dict``."""
        ...
