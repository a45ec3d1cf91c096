"""Spans of sparse vectors and the in-place rank-1 step that ``InPlaceGram`` builds on.

span(x)             [lo, hi) of the non-zero coordinates of a vector
row_spans(X)        the same for every row of a matrix
column_blocks(X)    the column blocks that hold each row's non-zeros (block-encoded rows)
cross_forms(X, M)   X M X^T, each row read on its span
diagonal_blocks(V)  the boundaries of the diagonal blocks of a symmetric matrix
subtract_outer      A -= c v v^T in place, on the span of v only
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import scipy.linalg.blas as blas
else:
    from banditkit.core.lazy import lazy_import

    blas = lazy_import("scipy.linalg.blas")  # slow to import: at first use

__all__ = [
    "column_blocks",
    "cross_forms",
    "diagonal_blocks",
    "row_spans",
    "span",
    "subtract_outer",
]

# Assumption (measured with NumPy 2.4 / OpenBLAS on x86-64): a span longer than this
# fraction of d is treated as dense (one BLAS call on the whole matrix beats slicing).
SPARSE_FRACTION = 0.5
# Below this many coordinates a block is updated by NumPy on a slice; above it by BLAS
# ``dger`` on the whole matrix (a slice would be copied by the BLAS wrapper).
BLAS_MIN = 48


def span(x: np.ndarray) -> tuple[int, int]:
    """[lo, hi) of the non-zero coordinates of a vector; (0, 0) for the zero vector."""
    n = x.shape[0]
    if x[0] != 0.0 and x[n - 1] != 0.0:  # a dense vector: no scan
        return 0, n
    nz = x.nonzero()[0]
    if nz.size == 0:
        return 0, 0
    return int(nz[0]), int(nz[-1]) + 1


def row_spans(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-row [lo, hi) of the non-zero coordinates of X (K, d); empty rows give (0, 0)."""
    nz = X != 0.0
    lo = nz.argmax(axis=1)
    hi = X.shape[1] - nz[:, ::-1].argmax(axis=1)
    empty = ~nz[np.arange(X.shape[0]), lo]
    lo[empty] = 0
    hi[empty] = 0
    return lo, hi


def column_blocks(
    X: np.ndarray,
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[np.ndarray, ...]] | None:
    """The column blocks that hold the non-zeros of X's rows: (starts, ends, rows), or None.

    Rows are grouped by their spans (:func:`row_spans`): spans that overlap join one
    block, so block b is the columns [starts[b], ends[b]) and ``rows[b]`` (sorted) the
    rows whose non-zeros lie in it; every other entry of those rows is zero, and zero
    rows belong to no block. Then sum_i c_i x_i x_i^T is block-diagonal (the
    block-encoded arms of the classification bandits: arm k is x in block k). None for
    dense rows, a span over :data:`SPARSE_FRACTION` of the columns, or a single block.

    Example:
        >>> X = np.array([[1.0, 2.0, 0.0, 0.0], [0.0, 0.0, 0.0, 3.0], [0.0, 4.0, 0.0, 0.0]])
        >>> starts, ends, rows = column_blocks(X)
        >>> starts, ends, [r.tolist() for r in rows]
        ((0, 3), (2, 4), [[0, 2], [1]])
    """
    n, d = X.shape
    if n == 0 or d < 2 or X[:, :: d - 1].all():  # dense rows
        return None
    lo, hi = row_spans(X)
    used = np.flatnonzero(hi > lo)
    if used.size == 0 or int((hi - lo).max()) > SPARSE_FRACTION * d:
        return None
    order = used[np.argsort(lo[used], kind="stable")]
    reach = np.maximum.accumulate(hi[order])
    new = np.ones(order.size, dtype=bool)
    new[1:] = lo[order[1:]] >= reach[:-1]  # starts past every earlier span
    first = np.flatnonzero(new)
    if first.size < 2:
        return None
    last = np.append(first[1:], order.size) - 1
    return (
        tuple(int(lo[order[i]]) for i in first),
        tuple(int(reach[j]) for j in last),
        tuple(np.sort(order[i : j + 1]) for i, j in zip(first, last, strict=True)),
    )


def cross_forms(X: np.ndarray, M: np.ndarray) -> np.ndarray:
    """X M X^T (K, K) for X (K, d) and a symmetric M (d, d), each row read on its span.

    Row k contributes x_k[lo:hi] M[lo:hi, :] (O(span d) instead of O(d^2)), so on the
    block-encoded arms of a classification bandit (arm k is x in block k) the product
    costs K m d, m the block, instead of K d^2. Dense rows: one product.

    Example:
        >>> X = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 2.0]])
        >>> cross_forms(X, np.diag([1.0, 2.0, 3.0])).tolist()
        [[1.0, 0.0], [0.0, 12.0]]
    """
    d = X.shape[1]
    if X.shape[0] == 0 or X[:, :: max(d - 1, 1)].all():  # dense rows
        return np.asarray((X @ M) @ X.T)
    lo, hi = row_spans(X)
    if int((hi - lo).max()) > SPARSE_FRACTION * d:
        return np.asarray((X @ M) @ X.T)
    U = np.zeros_like(X)
    for k in range(X.shape[0]):
        s, e = lo[k], hi[k]
        U[k] = M[s:e].T @ X[k, s:e]  # = x_k M restricted to the span (M symmetric)
    return np.asarray(U @ X.T)


def diagonal_blocks(matrix: np.ndarray) -> np.ndarray:
    """Boundaries of the diagonal blocks of a symmetric matrix: (n_blocks + 1,) ints.

    Block i is ``matrix[s:e, s:e]`` with s, e = bounds[i], bounds[i + 1]; every entry
    outside the blocks is exactly zero. A dense matrix is one block, (0, d).

    Example:
        >>> diagonal_blocks(np.diag([1.0, 2.0, 3.0])).tolist()
        [0, 1, 2, 3]
        >>> diagonal_blocks(np.ones((2, 2))).tolist()
        [0, 2]
    """
    d = matrix.shape[0]
    nz = matrix != 0.0
    # the last non-zero row of each column (the diagonal at least: it is positive)
    last = d - 1 - nz[::-1, :].argmax(axis=0)
    last = np.maximum(last, np.arange(d))
    reach = np.maximum.accumulate(last)
    ends = np.flatnonzero(reach == np.arange(d)) + 1
    return np.concatenate(([0], ends))


def subtract_outer(matrix: np.ndarray, v: np.ndarray, c: float) -> None:
    """Subtract c v v^T from ``matrix`` in place, on the span of v only.

    A long span goes through BLAS ``dger`` on the whole matrix (no d x d temporary;
    symmetric up to round-off, as BLAS may round (i, j) and (j, i) differently); a short
    one through NumPy on the slice (exactly symmetric).
    """
    lo, hi = span(v)
    n = matrix.shape[0]
    if hi - lo > SPARSE_FRACTION * n and hi - lo >= BLAS_MIN:
        # the transpose of a C-contiguous matrix is Fortran-contiguous: updated in place
        blas.dger(-c, v, v, a=matrix.T, overwrite_a=1)
    elif hi > lo:
        vs = v[lo:hi]
        outer = np.multiply.outer(vs, vs)
        outer *= c
        matrix[lo:hi, lo:hi] -= outer
