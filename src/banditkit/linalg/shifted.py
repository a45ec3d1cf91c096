"""A Gram matrix whose ridge may change every round.

    A = ridge * I + M,   M = sum_i w_i z_i z_i^T

Theory-mode neural logistic bandits re-ridge their design every round (V_t = G_t +
kappa lam_t I, [Bae2025, Alg. 1]), so the rank-1 inverse updates of ``Gram`` do not
apply. ``ShiftedGram`` keeps the unridged sum M instead (its diagonal, or the full
matrix with a lazily recomputed eigendecomposition) and answers the same methods as
``Gram`` and ``DiagonalGram``.

References:
    [Bae2025] S. Bae, D. Lee. Neural logistic bandits. arXiv:2505.02069.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from banditkit.core.validation import check_choice, check_int, check_scalar

from ._common import check_rhs, check_rows, check_vector, check_weight
from .rank1 import diagonal_cross, pair_norms_from_cross

__all__ = ["GRAMS", "ShiftedGram"]

#: The kinds of Gram matrix a policy can ask for: the diagonal only or the full matrix.
GRAMS = ("diagonal", "full")


class ShiftedGram:
    """A = ridge * I + sum_i w_i z_i z_i^T whose ridge may change every round.

    ``kind="diagonal"`` keeps the diagonal of the sum (O(p) per norm); ``kind="full"``
    keeps the p x p matrix M, whose eigendecomposition M = U diag(e) U^T is recomputed
    (O(p^3), ``numpy.linalg.eigh``) at most once per update, lazily, at the next read;
    any ridge then costs O(K p^2):

        ||z||^2_{(M + ridge I)^-1} = sum_j (U^T z)_j^2 / (e_j + ridge),
        log det A                  = sum_j log(e_j + ridge).

    Args:
        kind: "diagonal" or "full".
        d: Dimension p of the features, >= 1.
        ridge: Initial ridge, > 0.

    Notes:
        Assumption: O(p^3) per round in the full case; meant for small p.

    Example:
        >>> gram = ShiftedGram("full", 2, ridge=1.0)
        >>> gram.update(np.array([1.0, 0.0]), weight=3.0)
        >>> gram.set_ridge(2.0)
        >>> gram.norms(np.array([[1.0, 0.0], [0.0, 1.0]])) ** 2  # 1/5, 1/2
        array([0.2, 0.5])
    """

    def __init__(self, kind: str, d: int, ridge: float) -> None:
        self.kind = check_choice("kind", kind, GRAMS)
        self._d = check_int("d", d, low=1)
        self.ridge = check_scalar("ridge", ridge, low=0.0, low_open=True)
        self.sum = np.zeros(d) if self.kind == "diagonal" else np.zeros((d, d))
        self._eig: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def d(self) -> int:
        """Dimension of the feature vectors."""
        return self._d

    @property
    def lam(self) -> float:
        """The current ridge (the ``lam`` of ``Gram``)."""
        return self.ridge

    @property
    def is_diagonal(self) -> bool:
        """True when only the diagonal is kept."""
        return self.kind == "diagonal"

    @property
    def diagonal(self) -> np.ndarray:
        """The diagonal of A = ridge * I + M."""
        base = self.sum if self.is_diagonal else np.diagonal(self.sum)
        return self.ridge + base

    @property
    def logdet(self) -> float:
        """Log det A (of its diagonal when ``kind="diagonal"``)."""
        if self.is_diagonal:
            return float(np.sum(np.log(self.ridge + self.sum)))
        evals, _ = self._eigen()
        return float(np.sum(np.log(evals + self.ridge)))

    def set_ridge(self, lam: float) -> None:
        """Replace the ridge (no refactorisation needed).

        Raises:
            ValueError: If lam is not > 0.
        """
        self.ridge = check_scalar("lam", lam, low=0.0, low_open=True)

    def update(self, z: Any, weight: float = 1.0) -> None:
        """M += weight * z z^T (or its diagonal).

        Raises:
            ValueError: On a wrong shape, NaN or inf in z, or weight <= 0.
        """
        z = check_vector("z", z, self._d)
        weight = check_weight(weight)
        if self.is_diagonal:
            self.sum += weight * z * z
        else:
            self.sum += weight * np.outer(z, z)
            self._eig = None

    def _eigen(self) -> tuple[np.ndarray, np.ndarray]:
        """The eigendecomposition (e, U) of M, recomputed once per update."""
        if self._eig is None:
            evals, U = np.linalg.eigh(self.sum)
            self._eig = (np.maximum(evals, 0.0), U)
        return self._eig

    def norms(self, Z: Any) -> np.ndarray:
        """||z_k||_{A^-1} for the rows of Z (K, p)."""
        return self.norms_unchecked(check_rows("Z", Z, self._d))

    def norms_unchecked(self, Z: np.ndarray) -> np.ndarray:
        """:meth:`norms` for features built by a model (no checks)."""
        if self.is_diagonal:
            return np.sqrt((Z * Z) @ (1.0 / (self.ridge + self.sum)))
        evals, U = self._eigen()
        P = Z @ U
        return np.sqrt((P * P) @ (1.0 / (evals + self.ridge)))

    def pair_norms(self, Z: Any) -> np.ndarray:
        """||z_i - z_j||_{A^-1} for all pairs of the rows of Z (K, p), shape (K, K).

        sqrt(max(q_i + q_j - 2 G_ij, 0)) with G = Z A^-1 Z^T and q = diag(G); in the
        full case G = (P / (e + ridge)) P^T with P = Z U, O(K p^2 + K^2 p).
        Symmetric, with an exactly zero diagonal; equal rows are exactly 0 apart.

        Raises:
            ValueError: On a wrong shape or NaN or inf in Z.
        """
        return self.pair_norms_unchecked(check_rows("Z", Z, self._d))

    def pair_norms_unchecked(self, Z: np.ndarray) -> np.ndarray:
        """:meth:`pair_norms` for features built by a model (no checks)."""
        if self.is_diagonal:
            return pair_norms_from_cross(
                Z, diagonal_cross(1.0 / (self.ridge + self.sum))
            )
        evals, U = self._eigen()
        inv = 1.0 / (evals + self.ridge)

        def cross(rows: np.ndarray) -> np.ndarray:
            P = rows @ U
            return (P * inv) @ P.T

        return pair_norms_from_cross(Z, cross)

    def solve(self, b: Any) -> np.ndarray:
        """A^-1 b for b of shape (p,) or (p, n)."""
        b = check_rhs("b", b, self._d)
        if self.is_diagonal:
            scale = 1.0 / (self.ridge + self.sum)
            return b * scale if b.ndim == 1 else b * scale[:, None]
        evals, U = self._eigen()
        inv = 1.0 / (evals + self.ridge)
        coef = U.T @ b
        return U @ (coef * inv if b.ndim == 1 else coef * inv[:, None])

    def state_dict(self) -> dict[str, Any]:
        """Arrays and scalars only."""
        return {"kind": self.kind, "ridge": self.ridge, "sum": self.sum.copy()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from :meth:`state_dict`.

        Raises:
            ValueError: If the state holds another kind of Gram.
        """
        if state["kind"] != self.kind:
            raise ValueError(
                f"state holds a {state['kind']!r} Gram, not {self.kind!r}."
            )
        self.ridge = float(state["ridge"])
        self.sum = np.array(state["sum"], dtype=float)
        self._eig = None
