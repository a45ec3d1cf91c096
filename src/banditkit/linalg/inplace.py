"""A full Gram matrix updated in place, at the cost of the coordinates each update touches.

:class:`InPlaceGram` keeps what :class:`~banditkit.linalg.Gram` keeps (V, V^-1, the Cholesky
factor L and log det V) with the same rank-1 formulas, but it overwrites its arrays instead of
building new ones, and it restricts every step to the span of the vectors involved:

    span(x)      [lo, hi): first and last non-zero coordinate of x, plus one
    update       u = V^-1[:, span(x)] x_span,   q = w x^T u
                 V^-1[span(u), span(u)] -= w u u^T / (1 + q)             [Sherman1950]
                 V[span(x), span(x)]   += w x x^T
    norms        x_k^T V^-1 x_k = x_span^T V^-1[span, span] x_span for each row
    factor       L[B, B] <- chol(L[B, B] L[B, B]^T + w x_B x_B^T),   B = span(x), when the
                 columns B of L are zero below B (V block-diagonal there); otherwise the
                 trailing block from lo on                                    [Gill1974]

On dense vectors these are the usual O(d^2) steps (BLAS ``dger`` in place, no d x d
temporaries). On the block-encoded arms of the classification bandits (arm k is x in block k
of a (K d)-vector) they cost O(d^2) instead of O((K d)^2): V stays block-diagonal, so each
update touches one d x d block and each norm reads one.

Every ``refactor_every`` updates V^-1, L and log det V are recomputed from V, block by block
when V is block-diagonal, which bounds the drift of the incremental path.

The price of updating in place: ``matrix``, ``inverse`` and ``cholesky`` are read-only
*views* that later updates change (``Gram`` hands out snapshots). Copy them to keep one.

References:
    [Sherman1950] J. Sherman, W. J. Morrison. Adjustment of an inverse matrix
        corresponding to a change in one element of a given matrix. Annals of
        Mathematical Statistics 21(1), 1950.
    [Gill1974] P. E. Gill, G. H. Golub, W. Murray, M. A. Saunders. Methods for
        modifying matrix factorizations. Mathematics of Computation 28(126), 1974.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from banditkit.core.lazy import sla  # imported at first use
from banditkit.core.transaction import journal, overwrites
from banditkit.core.validation import check_scalar

from ._base import FullGramBase
from ._common import (
    check_rhs,
    frozen,
)
from .rank1 import cholesky_update
from .spans import SPARSE_FRACTION, diagonal_blocks, row_spans, span, subtract_outer

__all__ = ["InPlaceGram"]


class InPlaceGram(FullGramBase):
    """Full Gram V = lam * I + sum_i w_i x_i x_i^T with V^-1, L and log det V, updated in place.

    The arithmetic of :class:`~banditkit.linalg.Gram` (Sherman-Morrison for V^-1, the
    determinant lemma for log det V, the rank-1 Cholesky update for L, applied lazily when
    L is read), restricted to the coordinates that each update touches and written into
    the stored arrays (see the module docstring). It answers ``GramLike``.

    Args:
        d: Dimension of the feature vectors, >= 1.
        lam: Regulariser; V_0 = lam * I, > 0.
        refactor_every: Recompute V^-1, L and log det V from V after this many rank-1
            updates, >= 1.

    Example:
        >>> gram = InPlaceGram(d=4, lam=1.0)
        >>> gram.update(np.array([0.0, 3.0, 0.0, 0.0]))   # touches coordinate 1 only
        >>> gram.norms(np.array([[0.0, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]]))
        array([0.31622777, 1.        ])
        >>> round(gram.logdet, 6)  # log 10
        2.302585
    """

    _KIND = "InPlaceGram"
    _LOADS = ("Gram",)  # restores a Gram's state too
    #: The blocks overwritten since an update began (``core.transaction``); None outside.
    _journal: list[tuple[np.ndarray, np.ndarray]] | None = None

    def __init__(self, d: int, lam: float, *, refactor_every: int = 512) -> None:
        super().__init__(d, lam, refactor_every=refactor_every)
        self._matrix = self._lam * np.eye(self._d)
        self._inverse = np.eye(self._d) / self._lam
        self._cholesky = math.sqrt(self._lam) * np.eye(self._d)
        self._pending: list[np.ndarray] = []  # sqrt(w) x not yet applied to L
        self._logdet = self._d * math.log(self._lam)

    # ------------------------------------------------------------------ read
    @property
    def matrix(self) -> np.ndarray:
        """V, (d, d): a read-only view that later updates change."""
        return _view(self._matrix)

    @property
    def inverse(self) -> np.ndarray:
        """V^-1, (d, d): a read-only view that later updates change."""
        return _view(self._inverse)

    @property
    def cholesky(self) -> np.ndarray:
        """Lower-triangular L with V = L L^T: a read-only view that later updates change."""
        return _view(self._factor())

    # ------------------------------------------------------------------ update
    def update_unchecked(self, x: np.ndarray, w: float) -> None:
        """:meth:`update` for a checked pull: x finite float64 (d,), w a float > 0.

        Adds w x x^T to V and updates V^-1 and log det V in place (L when next read);
        :meth:`rank1_update` also returns u and q.
        """
        self.rank1_update(x, w)

    def rank1_update(
        self, x: np.ndarray, weight: float = 1.0
    ) -> tuple[np.ndarray, float]:
        """:meth:`update` without checks, for callers that validated x (float64 (d,)) and w.

        Returns:
            u = V^-1 x and q = w x^T V^-1 x with V before the update: the ridge estimate
            moves by theta <- theta + w u (y - x^T theta) / (1 + q).
        """
        w = weight
        lo, hi = span(x)
        d = self._d
        if hi == 0:  # x = 0: V does not change
            u = np.zeros(d)
            q = 0.0
        else:
            inverse, matrix = self._inverse, self._matrix
            xs = x[lo:hi]
            u = inverse[:, lo:hi] @ xs
            # w x^T V^-1 x >= 0; the clip guards the round-off of a near-zero x.
            q = max(w * float(xs @ u[lo:hi]), 0.0)
            c = w / (1.0 + q)
            if self._journal is not None:
                self._overwrites(inverse, *span(u))
                self._overwrites(matrix, lo, hi)
            subtract_outer(inverse, u, c)  # [Sherman1950]
            subtract_outer(matrix, x, -w)
            self._pending.append(frozen(x.copy() if w == 1.0 else math.sqrt(w) * x))
            # matrix determinant lemma: log det(V + w x x^T) = log det V + log(1 + q)
            self._logdet += math.log1p(q)
        self._n_updates += 1
        self._since_refactor += 1
        if self._since_refactor >= self._refactor_every:
            self._refactor()
        return u, q

    def update_rows(self, X: np.ndarray, w: np.ndarray) -> None:
        """Add sum_i w_i x_i x_i^T to V for the n checked rows of X, one rank-1 update each."""
        n = X.shape[0]
        for i in range(n):
            self.rank1_update(np.ascontiguousarray(X[i]), float(w[i]))

    def _transaction(
        self,
    ) -> tuple[Callable[[], None], Callable[[], None]]:
        """Undo what comes next (``core.transaction``) without copying V, V^-1 or L.

        Until the update ends, every block about to be overwritten in place is copied
        first (:meth:`_overwrites`): on block-encoded arms one block, not the whole matrix.
        Undoing writes the blocks back, drops the queued rank-1 rows added since and puts
        back the attributes (arrays a refactorisation replaced, counters, log det V).
        """
        pending, n_pending = self._pending, len(self._pending)

        def drop_pending() -> None:
            del pending[n_pending:]

        return journal(self, drop_pending)

    def _overwrites(self, array: np.ndarray, lo: int, hi: int) -> None:
        """``array[lo:hi, lo:hi]`` is about to be overwritten: journal it in an update."""
        if hi > lo and self._journal is not None:
            overwrites(self, array[lo:hi, lo:hi])

    def _factor(self) -> np.ndarray:
        """L with every queued rank-1 term applied, in the order they were added."""
        chol, d = self._cholesky, self._d
        for v in self._pending:
            lo, hi = span(v)
            if hi == 0:
                continue
            if hi < d and chol[hi:, lo:hi].any():
                hi = d  # the columns reach below the span: update the trailing block
            self._overwrites(chol, lo, hi)
            block = chol[lo:hi, lo:hi]
            p = sla.solve_triangular(block, v[lo:hi], lower=True, check_finite=False)
            chol[lo:hi, lo:hi] = cholesky_update(block, v[lo:hi], p)
        self._pending = []
        return chol

    def _refactor(self) -> None:
        """Recompute L, V^-1 and log det V from V, block by block (O(sum of block^3))."""
        matrix = 0.5 * (self._matrix + self._matrix.T)
        chol = np.zeros_like(matrix)
        inverse = np.zeros_like(matrix)
        bounds = diagonal_blocks(matrix)
        for s, e in itertools.pairwise(bounds):
            block = np.linalg.cholesky(matrix[s:e, s:e])
            chol[s:e, s:e] = block
            inv = sla.cho_solve((block, True), np.eye(e - s), check_finite=False)
            inverse[s:e, s:e] = 0.5 * (inv + inv.T)
        self._matrix = matrix
        self._cholesky = chol
        self._inverse = inverse
        self._pending = []
        self._logdet = 2.0 * float(np.sum(np.log(np.diagonal(chol))))
        self._since_refactor = 0

    def set_ridge(self, lam: float) -> None:
        """Replace lam * I by lam' * I in V and refactorise.

        Raises:
            ValueError: If lam is not > 0.
        """
        lam = check_scalar("lam", lam, low=0.0, low_open=True)
        self._overwrites(self._matrix, 0, self._d)
        self._matrix += (lam - self._lam) * np.eye(self._d)
        self._lam = lam
        self._refactor()

    # ------------------------------------------------------------------ norms, solves, draws
    def norms_unchecked(self, X: np.ndarray) -> np.ndarray:
        """:meth:`norms` for float64 (K, d) features built by a model (no checks)."""
        return np.sqrt(np.maximum(self.sq_norms_unchecked(X), 0.0))

    def sq_norms_unchecked(self, X: np.ndarray) -> np.ndarray:
        """x_k^T V^-1 x_k for the rows of X (K, d), each read on its span (no checks)."""
        inverse, d = self._inverse, self._d
        K = X.shape[0]
        # dense rows (the first and the last coordinate set): one product
        if K == 0 or X[:, :: max(d - 1, 1)].all():
            return np.einsum("kd,kd->k", X @ inverse, X)
        lo, hi = row_spans(X)
        width = hi - lo
        m = int(width.max())
        if m > SPARSE_FRACTION * d:
            return np.einsum("kd,kd->k", X @ inverse, X)
        if m > 0 and K > 1 and (width == m).all():
            step = int(lo[1] - lo[0])
            last = int(lo[0]) + (K - 1) * step
            if (
                step >= 0
                and (lo == lo[0] + step * np.arange(K)).all()
                and last + m <= d
            ):
                # regular blocks (block encoding): arm k reads V^-1[lo_k:hi_k, lo_k:hi_k],
                # K strided (m, m) views of V^-1 and (m,) views of X, one batched product
                blocks = np.lib.stride_tricks.as_strided(
                    inverse[lo[0] :, lo[0] :],
                    shape=(K, m, m),
                    strides=(
                        step * (inverse.strides[0] + inverse.strides[1]),
                        *inverse.strides,
                    ),
                    writeable=False,
                )
                rows = np.lib.stride_tricks.as_strided(
                    X[0, lo[0] :],
                    shape=(K, m),
                    strides=(X.strides[0] + step * X.strides[1], X.strides[1]),
                    writeable=False,
                )
                return np.einsum("ki,ki->k", (blocks @ rows[:, :, None])[:, :, 0], rows)
        out = np.zeros(K)
        for k in range(K):
            s, e = lo[k], hi[k]
            xs = X[k, s:e]
            out[k] = xs @ (inverse[s:e, s:e] @ xs)
        return out

    def solve(self, b: Any) -> np.ndarray:
        """Return V^-1 b for b (d,) or (d, n), as the product with the kept inverse."""
        return self._inverse @ check_rhs("b", b, self._d)

    def _unwhiten(self, z: np.ndarray) -> np.ndarray:
        """L^-T z (as ``Gram._unwhiten``)."""
        draws = sla.solve_triangular(
            self._factor(), z.T, lower=True, trans="T", check_finite=False
        )
        return np.asarray(draws.T)

    # ------------------------------------------------------------------ state
    def copy(self) -> InPlaceGram:
        """An independent copy (its own arrays)."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new._matrix = self._matrix.copy()
        new._inverse = self._inverse.copy()
        new._cholesky = self._cholesky.copy()
        new._pending = list(self._pending)
        return new

    def _set_arrays(
        self, matrix: np.ndarray, inverse: np.ndarray, cholesky: np.ndarray
    ) -> None:
        self._matrix = np.ascontiguousarray(matrix)
        self._inverse = np.ascontiguousarray(inverse)
        self._cholesky = np.ascontiguousarray(cholesky)


def _view(arr: np.ndarray) -> np.ndarray:
    view = arr.view()
    view.flags.writeable = False
    return view
