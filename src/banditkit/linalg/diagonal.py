"""Diagonal approximation of the Gram matrix, for d in the tens of thousands.

Neural bandits build their Gram from per-sample gradients, whose dimension p is the
number of network parameters. Keeping only diag(V) costs O(p) memory and time per
update; it is the approximation used in the experiments of [Zhou2020] and
[Zhang2021]:

    diag(V) = lam + sum_i w_i x_i^2        (elementwise square)

References:
    [Zhou2020] D. Zhou, L. Li, Q. Gu. Neural contextual bandits with UCB-based
        exploration. ICML 2020.
    [Zhang2021] W. Zhang, D. Zhou, L. Li, Q. Gu. Neural Thompson sampling. ICLR 2021.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from banditkit.core.validation import check_finite_array, check_int, check_scalar

from ._base import GramBase
from ._common import (
    check_rhs,
    check_state,
    frozen,
)
from .rank1 import diagonal_cross, pair_norms_from_cross

__all__ = ["DiagonalGram"]


class DiagonalGram(GramBase):
    """Diagonal Gram D = diag(lam + sum_i w_i x_i^2), with the interface of Gram.

    Every quantity is the diagonal-matrix version of its Gram counterpart, computed in
    O(d) (O(K d) for norms) without forming a d x d matrix:

        inverse   = diag(1 / D_jj)         cholesky = diag(sqrt(D_jj))
        logdet    = sum_j log D_jj         norms_k  = sqrt(sum_j x_kj^2 / D_jj)
        solve(b)  = b / D_jj               samples  = z / sqrt(D_jj),  z ~ N(0, I)

    Only :attr:`matrix`, :attr:`inverse` and :attr:`cholesky` build (d, d) arrays,
    on request; use :attr:`diagonal` otherwise. For feature vectors along the axes
    (multiples of unit vectors) D equals the full Gram exactly.

    Args:
        d: Dimension, >= 1 (e.g. the number of network parameters).
        lam: Regulariser; D starts at lam * I, > 0.

    Shapes:
        x is (d,); X is (n, d) for batches and (K, d) for norms; diagonal is (d,).

    Example:
        >>> gram = DiagonalGram(d=3, lam=1.0)
        >>> gram.update(np.array([1.0, 2.0, 0.0]))
        >>> gram.diagonal
        array([2., 5., 1.])
        >>> gram.norms(np.array([[2.0, 0.0, 0.0]]))
        array([1.41421356])
    """

    _KIND = "DiagonalGram"
    _STATE_KEYS = ("kind", "d", "lam", "n_updates", "diagonal")

    def __init__(self, d: int, lam: float) -> None:
        super().__init__(d, lam)
        self._diagonal = frozen(np.full(self._d, self._lam))

    @property
    def is_diagonal(self) -> bool:
        """True: only diag(V) is kept (``Gram`` answers False)."""
        return True

    @property
    def diagonal(self) -> np.ndarray:
        """diag(V), shape (d,), read-only."""
        return self._diagonal

    @property
    def matrix(self) -> np.ndarray:
        """diag(V) as a dense (d, d) matrix (builds it)."""
        return np.diag(self._diagonal)

    @property
    def inverse(self) -> np.ndarray:
        """diag(1 / V_jj) as a dense (d, d) matrix (builds it)."""
        return np.diag(1.0 / self._diagonal)

    @property
    def cholesky(self) -> np.ndarray:
        """diag(sqrt(V_jj)) as a dense (d, d) matrix (builds it)."""
        return np.diag(np.sqrt(self._diagonal))

    @property
    def logdet(self) -> float:
        """sum_j log V_jj, in O(d)."""
        return float(np.sum(np.log(self._diagonal)))

    #: An update replaces the (read-only) diagonal: nothing inside changes
    #: (``core.transaction``).
    _undo_parts: ClassVar[tuple[str, ...]] = ()

    def update_unchecked(self, x: np.ndarray, w: float) -> None:
        """:meth:`update` for a checked pull: x finite float64 (d,), w a float > 0.

        The same arithmetic without the argument checks (as ``Gram.update_unchecked``),
        in one new array (w = 1 skips its product: x^2 * 1 is x^2 exactly).
        """
        new = np.multiply(x, x)
        if w != 1.0:
            new *= w
        self._diagonal = frozen(np.add(self._diagonal, new, out=new))
        self._n_updates += 1

    def update_rows(self, X: np.ndarray, w: np.ndarray) -> None:
        """Add sum_i w_i x_i^2 (elementwise) to the diagonal in O(n d)."""
        self._diagonal = frozen(self._diagonal + w @ (X * X))
        self._n_updates += X.shape[0]

    def norms_unchecked(self, X: np.ndarray) -> np.ndarray:
        """:meth:`norms` for features built by a model: float64 (K, d), no checks."""
        return np.sqrt((X * X) @ (1.0 / self._diagonal))

    def pair_norms_unchecked(self, Z: np.ndarray) -> np.ndarray:
        """:meth:`pair_norms` for features built by a model: float64 (K, d), no checks."""
        return pair_norms_from_cross(Z, diagonal_cross(1.0 / self._diagonal))

    def set_ridge(self, lam: float) -> None:
        """Replace lam * I by lam' * I in diag(V), in O(d).

        Raises:
            ValueError: If lam is not > 0.
        """
        lam = check_scalar("lam", lam, low=0.0, low_open=True)
        self._diagonal = frozen(self._diagonal + (lam - self._lam))
        self._lam = lam

    def solve(self, b: Any) -> np.ndarray:
        """Return D^-1 b for b of shape (d,) or (d, n)."""
        b = check_rhs("b", b, self._d)
        scale = 1.0 / self._diagonal
        return b * scale if b.ndim == 1 else b * scale[:, None]

    def _unwhiten(self, z: np.ndarray) -> np.ndarray:
        """Z / sqrt(D_jj): a draw from N(0, D^-1) for z ~ N(0, I)."""
        return np.asarray(z / np.sqrt(self._diagonal))

    def copy(self) -> DiagonalGram:
        """Return an independent copy (the stored array is immutable and shared)."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        return new

    def state_dict(self) -> dict[str, Any]:
        """Return the full state: one numpy array and JSON-able scalars, no pickle."""
        return {
            "kind": "DiagonalGram",
            "d": self._d,
            "lam": self._lam,
            "n_updates": self._n_updates,
            "diagonal": np.array(self._diagonal),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state from :meth:`state_dict`; its d must equal this one's d.

        Raises:
            ValueError: On missing keys, another kind or d, or a malformed diagonal.
        """
        check_state(state, self._KIND, self._STATE_KEYS, self._d)
        diagonal = check_finite_array("diagonal", state["diagonal"], ndim=1)
        if diagonal.shape != (self._d,) or not np.all(diagonal > 0.0):
            raise ValueError(f"diagonal must be ({self._d},) and positive.")
        lam = check_scalar("lam", state["lam"], low=0.0, low_open=True)
        n_updates = check_int("n_updates", state["n_updates"], low=0)
        self._lam, self._n_updates = lam, n_updates
        self._diagonal = frozen(np.array(diagonal, dtype=np.float64, copy=True))
