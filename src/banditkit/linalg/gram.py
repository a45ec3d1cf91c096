"""Full Gram matrix with its inverse, Cholesky factor and log-determinant kept current.

The uncertainty part of linear and neural UCB / Thompson policies: after each observed
feature vector x with weight w,

    V <- V + w x x^T,

and every quantity a policy reads (V^-1 for widths, L for samples, log det V for
determinant-doubling schedules) is updated in O(d^2) instead of refactorised in O(d^3).

References:
    [Sherman1950] J. Sherman, W. J. Morrison. Adjustment of an inverse matrix
        corresponding to a change in one element of a given matrix. Annals of
        Mathematical Statistics 21(1), 1950.
    [Woodbury1950] M. A. Woodbury. Inverting modified matrices. Memorandum Report 42,
        Statistical Research Group, Princeton University, 1950.
    [Gill1974] P. E. Gill, G. H. Golub, W. Murray, M. A. Saunders. Methods for
        modifying matrix factorizations. Mathematics of Computation 28(126), 1974.
    Matrix determinant lemma: det(V + w x x^T) = det(V) (1 + w x^T V^-1 x).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from banditkit.core.lazy import sla  # imported at first use
from banditkit.core.validation import check_scalar

from ._base import FullGramBase
from ._common import (
    check_rhs,
    frozen,
)
from .rank1 import cholesky_update, weighted_norms_unchecked

__all__ = ["Gram"]


class Gram(FullGramBase):
    """Full Gram matrix V = lam * I + sum_i w_i x_i x_i^T with V^-1, L and log det V.

    Each rank-1 update V <- V + w x x^T costs O(d^2):

        u        = V^-1 x,   q = w x^T u
        V^-1    <- V^-1 - w u u^T / (1 + q)                     [Sherman1950]
        log det <- log det + log(1 + q)            (matrix determinant lemma)
        L       <- L C,  C = chol(I + p p^T),  p = L^-1 (sqrt(w) x)   [Gill1974, Method C1]

    The factor L is updated lazily: the vectors sqrt(w) x are queued and applied in
    order, by the same O(d^2) step, the next time L is read (``cholesky``, ``solve``,
    ``sample_normal``, ``state_dict``), so a policy that only reads widths and log det
    never pays for it. Every ``refactor_every`` updates, V^-1, L and log det are
    recomputed from V itself in O(d^3), which bounds the drift of the incremental path.

    Properties return read-only arrays. Updates never modify a stored array in place,
    so an array obtained earlier is a snapshot that later updates do not change.

    Args:
        d: Dimension of the feature vectors, >= 1.
        lam: Regulariser; the Gram starts at V_0 = lam * I, > 0. Larger values mean
            wider initial confidence sets and smaller early widths.
        refactor_every: Recompute inverse, factor and log-determinant from V after
            this many rank-1 updates, >= 1. 1 refactorises every time (O(d^3) each).

    Shapes:
        x is (d,); X is (n, d) for batches and (K, d) for norms; matrices are (d, d).

    Example:
        >>> gram = Gram(d=2, lam=1.0)
        >>> gram.update(np.array([1.0, 0.0]), weight=3.0)
        >>> gram.matrix
        array([[4., 0.],
               [0., 1.]])
        >>> gram.norms(np.array([[1.0, 0.0], [0.0, 1.0]]))
        array([0.5, 1. ])
        >>> round(gram.logdet, 6)  # log 4
        1.386294
    """

    _KIND = "Gram"

    def __init__(self, d: int, lam: float, *, refactor_every: int = 512) -> None:
        super().__init__(d, lam, refactor_every=refactor_every)
        eye = np.eye(self._d)
        self._matrix = frozen(self._lam * eye)
        self._inverse = frozen(eye / self._lam)
        self._cholesky = frozen(np.asfortranarray(math.sqrt(self._lam) * eye))
        self._pending: list[np.ndarray] = []  # sqrt(w) x not yet applied to L
        self._logdet = self._d * math.log(self._lam)

    @property
    def matrix(self) -> np.ndarray:
        """V, shape (d, d), read-only."""
        return self._matrix

    @property
    def inverse(self) -> np.ndarray:
        """V^-1, shape (d, d), read-only."""
        return self._inverse

    @property
    def cholesky(self) -> np.ndarray:
        """Lower-triangular L with V = L L^T, shape (d, d), read-only."""
        return self._factor()

    #: An update replaces V, V^-1 and L (read-only arrays) and appends to ``_pending``:
    #: nothing inside changes (``core.transaction``).
    _undo_parts: ClassVar[tuple[str, ...]] = ()

    def _factor(self) -> np.ndarray:
        """L with every queued rank-1 term applied, in the order they were added."""
        if self._pending:
            chol = self._cholesky
            for root_w_x in self._pending:
                p = sla.solve_triangular(chol, root_w_x, lower=True, check_finite=False)
                chol = cholesky_update(chol, root_w_x, p)
            self._cholesky = frozen(chol)
            self._pending = []
        return self._cholesky

    def update_unchecked(self, x: np.ndarray, w: float) -> None:
        """:meth:`update` for a checked pull: x finite float64 (d,), w a float > 0.

        The same arithmetic, without the argument checks (for a policy's inner loop,
        whose arms its Context has already checked); :meth:`update` checks, then calls it.
        """
        u = self._inverse @ x
        # w x^T V^-1 x >= 0; the clip guards the round-off of a near-zero x.
        wq = max(w * float(x @ u), 0.0)
        self._matrix = frozen(_plus_outer(self._matrix, w, x))
        # [Sherman1950]: (V + w x x^T)^-1 = V^-1 - w u u^T / (1 + w x^T V^-1 x)
        self._inverse = frozen(_plus_outer(self._inverse, -w / (1.0 + wq), u))
        # applied to L when next read; read-only, as every array it stores
        self._pending.append(frozen(math.sqrt(w) * x))
        # Matrix determinant lemma: log det(V + w x x^T) = log det V + log(1 + w q)
        self._logdet += math.log1p(wq)
        self._n_updates += 1
        self._since_refactor += 1
        if self._since_refactor >= self._refactor_every:
            self._refactor()

    def update_rows(self, X: np.ndarray, w: np.ndarray) -> None:
        """Add sum_i w_i x_i x_i^T to V for the n checked rows of X.

        For n > d / 4 the rows are added at once, V += X^T diag(w) X, and everything is
        refactorised in O(d^3 + n d^2); for fewer rows they go through :meth:`update`
        one by one in O(n d^2). Either way the result equals the sequential updates up
        to round-off.
        """
        n = X.shape[0]
        if n == 0:
            return
        if 4 * n <= self._d:
            for x_i, w_i in zip(X, w, strict=True):
                self.update(x_i, float(w_i))
            return
        self._matrix = frozen(self._matrix + (X.T * w) @ X)
        self._n_updates += n
        self._refactor()

    def update_woodbury(self, X: Any, weights: Any = None) -> None:
        """Add sum_i w_i x_i x_i^T to V by the Woodbury identity, without refactorising.

        With the rows scaled, B = diag(sqrt(w)) X (n, d), U = B V^-1 and C = I + U B^T:

            V^-1    <- V^-1 - U^T C^-1 U                     [Woodbury1950]
            log det <- log det + log det C          (the determinant lemma)

        in O(n d^2 + n^3), and the n rows of B are queued for the factor L as
        :meth:`update` does (applied in order when L is next read). Counts n updates
        towards ``refactor_every`` like n calls of :meth:`update`. For a few rows in
        low dimension (an assortment of K items, d small) this is several times cheaper
        than :meth:`update_batch`'s refactorisation; the result equals it up to round-off.

        Args:
            X: Feature vectors, shape (n, d), finite; n = 0 is a no-op.
            weights: w_i > 0, shape (n,); None means all ones.

        Raises:
            ValueError: On a wrong shape, NaN or inf, or a weight <= 0.

        Example:
            >>> gram = Gram(d=2, lam=1.0)
            >>> gram.update_woodbury(np.array([[1.0, 0.0], [1.0, 0.0]]))
            >>> gram.inverse.round(6).tolist()
            [[0.333333, 0.0], [0.0, 1.0]]
        """
        X, w = self._checked_rows(X, weights)
        n = X.shape[0]
        B = X * np.sqrt(w)[:, None]  # bitwise X when all w_i = 1
        if n == 0:
            return
        U = B @ self._inverse
        C = U @ B.T
        C[np.diag_indices(n)] += 1.0
        self._matrix = frozen(self._matrix + B.T @ B)
        self._inverse = frozen(self._inverse - U.T @ np.linalg.solve(C, U))
        self._pending.extend(frozen(np.array(B)))  # copied: X is the caller's
        self._logdet += float(np.linalg.slogdet(C)[1])
        self._n_updates += n
        self._since_refactor += n
        if self._since_refactor >= self._refactor_every:
            self._refactor()

    def _refactor(self) -> None:
        """Recompute L, V^-1 and log det V from V in O(d^3)."""
        matrix = 0.5 * (self._matrix + self._matrix.T)
        chol = np.linalg.cholesky(matrix)
        inverse = _cho_solve_lower(chol, np.eye(self._d))
        self._matrix = frozen(matrix)
        self._cholesky = frozen(np.asfortranarray(chol))
        self._pending = []
        self._inverse = frozen(0.5 * (inverse + inverse.T))
        self._logdet = 2.0 * float(np.sum(np.log(np.diag(chol))))
        self._since_refactor = 0

    def norms_unchecked(self, X: np.ndarray) -> np.ndarray:
        """:meth:`norms` for features built by a model: float64 (K, d), no checks."""
        return weighted_norms_unchecked(X, self._inverse)

    def set_ridge(self, lam: float) -> None:
        """Replace lam * I by lam' * I in V and refactorise in O(d^3).

        Raises:
            ValueError: If lam is not > 0.
        """
        lam = check_scalar("lam", lam, low=0.0, low_open=True)
        self._matrix = frozen(self._matrix + (lam - self._lam) * np.eye(self._d))
        self._lam = lam
        self._refactor()

    def solve(self, b: Any) -> np.ndarray:
        """Return V^-1 b by two triangular solves with L (cho_solve).

        Args:
            b: Right-hand side, shape (d,) or (d, n).

        Returns:
            Solution with the shape of b.
        """
        b = check_rhs("b", b, self._d)
        return sla.cho_solve((self._factor(), True), b, check_finite=False)

    def _unwhiten(self, z: np.ndarray) -> np.ndarray:
        """L^-T z, a draw from N(0, V^-1): Cov(L^-T z) = L^-T L^-1 = (L L^T)^-1 = V^-1."""
        return np.asarray(_solve_lower_transposed(self._factor(), z.T).T)

    def copy(self) -> Gram:
        """Return an independent copy (the stored arrays are immutable and shared)."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new._pending = list(self._pending)
        return new

    def _set_arrays(
        self, matrix: np.ndarray, inverse: np.ndarray, cholesky: np.ndarray
    ) -> None:
        self._matrix = frozen(matrix)
        self._inverse = frozen(inverse)
        self._cholesky = frozen(np.asfortranarray(cholesky))


def _plus_outer(A: np.ndarray, c: float, v: np.ndarray) -> np.ndarray:
    """Return the new array A + c v v^T (exactly symmetric if A is), one allocation."""
    out = np.multiply.outer(v, v)
    out *= c
    out += A
    return out


def _cho_solve_lower(chol: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``scipy.linalg.cho_solve((chol, True), b, check_finite=False)`` for float64.

    The same LAPACK call (dpotrs) without the wrapper's checks: the same bits, a
    fraction of the overhead for the small matrices of a bandit.
    """
    if b.size == 0 or chol.dtype != np.float64 or b.dtype != np.float64:
        return sla.cho_solve((chol, True), b, check_finite=False)
    x, info = sla.lapack.dpotrs(chol, b, lower=1)
    if info != 0:  # pragma: no cover - only for malformed arguments
        raise ValueError(f"illegal value in argument {-info} of LAPACK dpotrs.")
    return np.asarray(x)


def _solve_lower_transposed(L: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``scipy.linalg.solve_triangular(L, b, lower=True, trans="T", check_finite=False)``.

    The same LAPACK call (dtrtrs, with the same argument order for C- and F-ordered L)
    without the wrapper's checks: the same bits, a fraction of the overhead.
    """
    if b.size == 0 or L.dtype != np.float64 or b.dtype != np.float64:
        return sla.solve_triangular(L, b, lower=True, trans="T", check_finite=False)
    if L.flags.f_contiguous:
        x, info = sla.lapack.dtrtrs(L, b, lower=1, trans=1)
    else:  # LAPACK reads Fortran order: solve the transposed system, as scipy does
        x, info = sla.lapack.dtrtrs(L.T, b, lower=0, trans=0)
    if info > 0:
        raise np.linalg.LinAlgError(
            f"singular matrix: resolution failed at diagonal {info - 1}"
        )
    if info < 0:  # pragma: no cover - only for malformed arguments
        raise ValueError(f"illegal value in argument {-info} of LAPACK dtrtrs.")
    return np.asarray(x)
