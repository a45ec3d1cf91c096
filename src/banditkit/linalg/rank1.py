"""Stateless kernels: weighted norms, pairwise norms and the rank-1 Cholesky update.

References:
    [Gill1974] P. E. Gill, G. H. Golub, W. Murray, M. A. Saunders. Methods for
        modifying matrix factorizations. Mathematics of Computation 28(126), 1974.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from banditkit.core.lazy import sla  # imported at first use
from banditkit.core.validation import check_finite_array

from ._common import check_vector

__all__ = ["cholesky_rank1_update", "weighted_norms"]


def weighted_norms(X: Any, A_inv: Any) -> np.ndarray:
    """Return sqrt(x_k^T A_inv x_k) for every row x_k of X, in one batched einsum.

    Tiny negative values of the quadratic form, which round-off can produce when
    A_inv is positive semi-definite, are clipped to 0 before the square root.

    Args:
        X: Rows x_k, shape (K, d).
        A_inv: Symmetric positive semi-definite matrix, shape (d, d); usually the
            inverse of a Gram matrix.

    Returns:
        Norms ||x_k||_{A_inv}, shape (K,).

    Raises:
        ValueError: On NaN or inf, or shapes that are not (K, d) and (d, d).

    Example:
        >>> weighted_norms(np.array([[3.0, 4.0]]), np.eye(2))
        array([5.])
    """
    A_inv = check_finite_array("A_inv", A_inv, ndim=2)
    d = A_inv.shape[0]
    if A_inv.shape != (d, d):
        raise ValueError(f"A_inv must be square; got shape {A_inv.shape}.")
    X = check_finite_array("X", X, ndim=2)
    if X.shape[1] != d:
        raise ValueError(f"X must have shape (K, {d}) to match A_inv; got {X.shape}.")
    return weighted_norms_unchecked(X, A_inv)


def weighted_norms_unchecked(X: np.ndarray, A_inv: np.ndarray) -> np.ndarray:
    """:func:`weighted_norms` without input checks (for callers that validated)."""
    # q_k = x_k^T A_inv x_k for all k at once: (K, d) @ (d, d), then a row-wise dot.
    q = np.einsum("kd,kd->k", X @ A_inv, X)
    return np.sqrt(np.maximum(q, 0.0))


def pair_norms_from_cross(
    Z: np.ndarray, cross: Callable[[np.ndarray], np.ndarray]
) -> np.ndarray:
    """Return ||z_i - z_j||_{A^-1} for all pairs of rows of Z, shape (K, K).

    With G = Z A^-1 Z^T (``cross(Z)``, a (K, K) matrix) and q = diag(G),

        ||z_i - z_j||^2_{A^-1} = q_i + q_j - 2 G_ij,

    so the K^2 norms cost one (K, K) cross product instead of K^2 quadratic forms of
    the differences. G is symmetrised, so the result is exactly symmetric; negative
    values from cancellation are clipped to 0 and the diagonal is set to 0. Equal rows
    are merged first (by their bytes), so two equal arms are exactly 0 apart.

    Args:
        Z: Rows z_k, float64 shape (K, p), not checked.
        cross: Maps rows U (n, p) to U A^-1 U^T (n, n).

    Returns:
        Pairwise norms, shape (K, K).
    """
    # index[k] = position of row k among the distinct rows (by its bytes, O(K p)).
    seen: dict[bytes, int] = {}
    index = np.array(
        [seen.setdefault(row.tobytes(), len(seen)) for row in Z], dtype=np.intp
    )
    distinct = len(seen) == Z.shape[0]
    rows = Z if distinct else Z[np.unique(index, return_index=True)[1]]
    G = cross(rows)
    G = 0.5 * (G + G.T)
    q = np.diagonal(G)
    dist = np.sqrt(np.maximum(q[:, None] + q[None, :] - 2.0 * G, 0.0))
    np.fill_diagonal(dist, 0.0)
    return dist if distinct else dist[np.ix_(index, index)]


def diagonal_cross(inv_diag: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """The ``cross`` of a diagonal A^-1 = diag(inv_diag): U -> (U * inv_diag) U^T."""

    def cross(U: np.ndarray) -> np.ndarray:
        return (U * inv_diag) @ U.T

    return cross


def cholesky_rank1_update(L: Any, x: Any) -> np.ndarray:
    """Return the lower Cholesky factor of L L^T + x x^T in O(d^2), a new array.

    With p = L^-1 x, L L^T + x x^T = L (I + p p^T) L^T, so the new factor is L C where
    C is the lower Cholesky factor of I + p p^T. C has the closed form

        beta_j = 1 + sum_{k <= j} p_k^2        (beta_0 = 1)
        C_jj   = sqrt(beta_j / beta_{j-1})
        C_ij   = p_i p_j / sqrt(beta_j beta_{j-1})    for i > j,

    and because C is diagonal plus a rank-1 lower triangle, L C needs only the tail
    sums t_ij = sum_{k > j} L_ik p_k:

        (L C)_ij = L_ij C_jj + t_ij p_j / sqrt(beta_j beta_{j-1}).

    This is the LL^T form of [Gill1974, Method C1] with its inner loop replaced by a
    cumulative sum; the tail sums are accumulated from the right, not by subtraction.
    For d >= 256 the classical column sweep (one Givens-like rotation per column,
    each vectorised over the rows below it) is used instead, as it moves less memory.

    Args:
        L: Lower-triangular factor with positive diagonal, shape (d, d). Entries above
            the diagonal are ignored.
        x: Update vector, shape (d,). For a weighted update w x x^T pass sqrt(w) x.

    Returns:
        New lower-triangular factor, shape (d, d).

    Raises:
        ValueError: On NaN or inf, wrong shapes, or a non-positive diagonal of L.

    Example:
        >>> cholesky_rank1_update(np.eye(2), np.array([0.0, 1.0]))
        array([[1.        , 0.        ],
               [0.        , 1.41421356]])
    """
    L = check_finite_array("L", L, ndim=2)
    d = L.shape[0]
    if L.shape != (d, d):
        raise ValueError(f"L must be square; got shape {L.shape}.")
    if not np.all(np.diag(L) > 0.0):
        raise ValueError("L must have a positive diagonal (a Cholesky factor).")
    x = check_vector("x", x, d)
    L = np.tril(L)
    return cholesky_update(L, x, sla.solve_triangular(L, x, lower=True))


# Assumption: crossover measured with NumPy 2.4 on x86-64. Below it the closed form is
# 3-5x faster (d = 30..200, all in cache); above it the column sweep over the
# column-major factor that Gram keeps is 1.5-3x faster (less memory traffic).
COLUMN_SWEEP_MIN_D = 256


def cholesky_update(L: np.ndarray, x: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Return the factor of L L^T + x x^T given p = L^-1 x (inputs unchecked).

    Used by :class:`~banditkit.linalg.Gram`, which needs p anyway for the determinant
    lemma. See :func:`cholesky_rank1_update` for the formulas.
    """
    if L.shape[0] >= COLUMN_SWEEP_MIN_D:
        return column_sweep(L, x)
    return closed_form(L, p)


def closed_form(L: np.ndarray, p: np.ndarray) -> np.ndarray:
    """L C with C = chol(I + p p^T) via cumulative sums [Gill1974, Method C1]."""
    beta = 1.0 + np.cumsum(p * p)
    beta_prev = np.concatenate(([1.0], beta[:-1]))
    Lp = L * p
    tail = np.zeros_like(Lp)
    # tail[:, j] = sum_{k > j} L[:, k] p_k, summed from k = d - 1 down to j + 1.
    tail[:, :-1] = np.cumsum(Lp[:, :0:-1], axis=1)[:, ::-1]
    tail *= p / np.sqrt(beta * beta_prev)
    out = L * np.sqrt(beta / beta_prev)
    out += tail
    return out


def column_sweep(L: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Classical O(d^2) update: rotate (L_kk, x_k) into (r, 0) column by column."""
    L = np.array(L, dtype=np.float64, order="F", copy=True)  # contiguous columns
    x = np.array(x, dtype=np.float64, copy=True)
    for k in range(L.shape[0]):
        lkk = float(L[k, k])
        r = math.hypot(lkk, float(x[k]))
        c, s = r / lkk, float(x[k]) / lkk
        L[k, k] = r
        col, rest = L[k + 1 :, k], x[k + 1 :]
        col += s * rest
        col /= c
        rest *= c
        rest -= s * col
    return L
