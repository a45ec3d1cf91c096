"""Gram matrices by name, and the data-adaptive effective dimension.

    make_gram            a ``Gram`` (``InPlaceGram`` from d = 1,024) or ``DiagonalGram``
                         of lam * I by name
    EffectiveDimension   d_eff = logdet(I + a * sum_i z_i z_i^T) [Bae2025, App. A]
    KernelLogdet         the same log-determinant exactly, through the n x n Gram
                         I_n + a Z Z^T of the n features seen (Sylvester), for p >> n
    LogdetGram           the log-determinant of a full Gram, updated in place

References:
    [Bae2025] S. Bae, D. Lee. Neural logistic bandits. arXiv:2505.02069.
    [Sherman1950] J. Sherman, W. J. Morrison. Adjustment of an inverse matrix
        corresponding to a change in one element of a given matrix. Ann. Math. Stat., 1950.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.linalg
import scipy.linalg.blas
import scipy.sparse

from banditkit.core.transaction import journal, overwrites
from banditkit.core.validation import check_choice, check_int

from ._common import check_vector, check_weight
from .blocked import BlockedLogdet
from .diagonal import DiagonalGram
from .gram import Gram
from .inplace import InPlaceGram
from .shifted import GRAMS

__all__ = [
    "EFFDIMS",
    "EXACT_FULL_MAX",
    "IN_PLACE_FROM",
    "EffectiveDimension",
    "KernelLogdet",
    "LogdetGram",
    "make_gram",
]

#: How ``EffectiveDimension`` computes the log-determinant: the diagonal of the sum,
#: the exact p x p Gram, exactly through the n x n Gram ("kernel"), or "exact": "full"
#: for p <= ``EXACT_FULL_MAX`` (O(p^2) per update) and "kernel" above.
EFFDIMS = ("diagonal", "full", "kernel", "exact")
#: The largest p for which ``gram="exact"`` keeps the p x p Gram.
EXACT_FULL_MAX = 512
#: The least d for which ``make_gram("full", d, lam)`` updates its arrays in place
#: (``InPlaceGram``): 8 MB and more a matrix, whose copies then dominate an update.
IN_PLACE_FROM = 1024


def make_gram(kind: str, d: int, lam: float) -> Gram | InPlaceGram | DiagonalGram:
    """Return a Gram lam * I of dimension d: "diagonal" (O(d)) or "full" (O(d^2)).

    A full Gram of d >= :data:`IN_PLACE_FROM` is an ``InPlaceGram``: the same formulas
    written into its arrays (on block-encoded arms one block of V and V^-1 an update),
    where a ``Gram`` builds two new d x d arrays at every update, three passes over
    2 d^2 floats (on mnist's d = 1,960 about 24 ms an update, 7 ms for the products
    alone). Its values equal the ``Gram``'s up to round-off, and its ``matrix`` and
    ``inverse`` are views that later updates change (copy them to keep one).

    Example:
        >>> make_gram("diagonal", 3, 2.0).diagonal
        array([2., 2., 2.])
        >>> type(make_gram("full", 3, 1.0)).__name__, type(make_gram("full", 2048, 1.0)).__name__
        ('Gram', 'InPlaceGram')
    """
    kind = check_choice("gram", kind, GRAMS)
    if kind == "diagonal":
        return DiagonalGram(d, lam)
    return InPlaceGram(d, lam) if d >= IN_PLACE_FROM else Gram(d, lam)


#: ``LogdetGram``'s float64 BLAS routines (module-level: an instance holds no Fortran
#: objects, which cannot be copied or pickled)
_SYR, _SYMV = scipy.linalg.blas.get_blas_funcs(("syr", "symv"), dtype=np.float64)


def _index_dtype(size: int) -> type[np.signedinteger[Any]]:
    """int32 for sparse indices while ``size`` entries fit it, else int64 (as scipy does)."""
    return np.int32 if size <= np.iinfo(np.int32).max else np.int64


class KernelLogdet:
    """Exact logdet(I_p + a Z^T Z) = logdet(I_n + a Z Z^T) of n rows z_i, grown one by one.

    By Sylvester's identity the p x p and the n x n log-determinants agree, so for
    p >> n (a network's gradients: p = 39,220 on mnist) the value is exact at O(n^2)
    memory: the rows are kept sparse (their nonzeros only; ReLU gradients and block
    one-hot inputs are mostly zero), and the Cholesky factor L of I_n + a Z Z^T grows
    by one row per update,

        l = L^-1 (a Z z),   c = 1 + a ||z||^2 - ||l||^2,   logdet += log c,

    O(nnz(Z) + n^2) per update.

    Args:
        d: Feature dimension p, >= 1.
        scale: a > 0.

    Example:
        >>> tracker = KernelLogdet(3, scale=1.0)
        >>> tracker.update(np.array([1.0, 0.0, 1.0]))
        >>> round(tracker.logdet, 6) == round(float(np.log(3.0)), 6)
        True
    """

    def __init__(self, d: int, scale: float) -> None:
        if int(d) < 1:
            raise ValueError(f"d must be an int >= 1; got {d!r}.")
        if not scale > 0.0:
            raise ValueError(f"scale must be > 0; got {scale!r}.")
        self.d = int(d)
        self.scale = float(scale)
        self.n = 0
        self.logdet = 0.0
        self._chol = np.zeros((0, 0))
        # The nonzeros of the rows, CSR-style, in buffers grown by doubling; int32
        # indices while they fit, as scipy.sparse would otherwise convert them to int32
        # at every product (a copy of every stored index: 3x the product's time on mnist).
        self._data = np.zeros(0)
        self._indices = np.zeros(0, dtype=np.int32)
        self._indptr = np.zeros(1, dtype=np.int32)

    #: the journal of a policy's update in progress (``_transaction``), else None
    _journal: list[tuple[np.ndarray, np.ndarray]] | None = None

    def _transaction(self) -> tuple[Callable[[], None], Callable[[], None]]:
        """Undo what comes next (``core.transaction``) without copying L.

        An update writes one row of L and the new row's nonzeros past the stored ones
        (or moves them into grown buffers, which the attributes put back): the journal
        holds those regions, O(n + nnz(z)) instead of the O(n^2) factor.
        """
        return journal(self)

    def update(self, z: np.ndarray) -> None:
        """Add the row z (p,): logdet += log(1 + a ||z||^2 - ||l||^2)."""
        z = np.asarray(z, dtype=np.float64).reshape(-1)
        if z.shape[0] != self.d:
            raise ValueError(f"z must have shape ({self.d},); got {z.shape}.")
        n, a = self.n, self.scale
        if n:
            nnz = int(self._indptr[n])
            rows = scipy.sparse.csr_matrix(
                (self._data[:nnz], self._indices[:nnz], self._indptr[: n + 1]),
                shape=(n, self.d),
            )
            cross = a * (rows @ z)
            row = scipy.linalg.solve_triangular(
                self._chol[:n, :n], cross, lower=True, check_finite=False
            )
        else:
            row = np.zeros(0)
        c = 1.0 + a * float(z @ z) - float(row @ row)
        c = max(c, 1.0e-12)  # >= 1 in exact arithmetic (I_n + a Z Z^T >= I)
        if n + 1 > self._chol.shape[0]:
            grown = np.zeros((max(2 * n, 16), max(2 * n, 16)))
            grown[:n, :n] = self._chol[:n, :n]
            self._chol = grown
        nz = np.flatnonzero(z)
        start, stop = int(self._indptr[n]), int(self._indptr[n]) + nz.size
        if stop > self._data.size:
            size = max(2 * self._data.size, stop, 1024)
            self._data = np.resize(self._data, size)
            index = _index_dtype(size)
            self._indices = np.resize(self._indices, size).astype(index, copy=False)
            self._indptr = self._indptr.astype(index, copy=False)
        if n + 2 > self._indptr.size:
            self._indptr = np.resize(self._indptr, max(2 * self._indptr.size, 16))
        overwrites(
            self,
            self._chol[n, : n + 1],
            self._data[start:stop],
            self._indices[start:stop],
            self._indptr[n + 1 : n + 2],
        )
        self._chol[n, :n] = row
        self._chol[n, n] = math.sqrt(c)
        self._data[start:stop] = z[nz]
        self._indices[start:stop] = nz
        self._indptr[n + 1] = stop
        self.n = n + 1
        self.logdet += math.log(c)

    def state_dict(self) -> dict[str, Any]:
        """Arrays and scalars only."""
        return {
            "d": self.d,
            "scale": self.scale,
            "n": self.n,
            "logdet": self.logdet,
            "chol": self._chol[: self.n, : self.n].copy(),
            "data": self._data[: self._indptr[self.n]].copy(),
            "indices": self._indices[: self._indptr[self.n]].copy(),
            "indptr": self._indptr[: self.n + 1].copy(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from :meth:`state_dict`."""
        self.d, self.scale = int(state["d"]), float(state["scale"])
        self.n, self.logdet = int(state["n"]), float(state["logdet"])
        self._chol = np.array(state["chol"], dtype=np.float64).reshape(self.n, self.n)
        self._data = np.array(state["data"], dtype=np.float64)
        index = _index_dtype(len(state["indices"]))
        self._indices = np.array(state["indices"], dtype=index)
        self._indptr = np.array(state["indptr"], dtype=index).reshape(self.n + 1)


class LogdetGram:
    """log det V of V = lam * I + sum_i w_i x_i x_i^T, updated in place in O(d^2).

    The exact log-determinant of ``EffectiveDimension`` (``gram="full"``). It reads only
    log det V, so it keeps the upper triangles of V and V^-1 (Fortran order) and updates
    them in place with the symmetric BLAS routines: u = V^-1 x (``dsymv``),
    q = w x^T u, log det += log(1 + q) (matrix determinant lemma), V += w x x^T and
    V^-1 -= w u u^T / (1 + q) (``dsyr``, [Sherman1950]); every ``refactor_every``
    updates V^-1 and log det are recomputed from V by a Cholesky factorisation, as in
    ``Gram``. ``Gram.update`` instead builds a new full (d, d) V and V^-1 per update
    (snapshots for its readers): at d = 420 (NeuralLog-UCB-2's gradients on h1) two
    fresh 1.4 MB arrays per round, about three times the memory traffic of this one.
    The values agree with ``Gram``'s up to rounding (tests: 1e-12 relative).

    ``state_dict`` is a ``Gram`` state (kind "Gram", the full symmetric V and V^-1 and a
    Cholesky factor of V), so either class restores the other's.

    Args:
        d: Dimension, >= 1.
        lam: V_0 = lam * I, > 0.
        refactor_every: Updates between exact refactorisations, >= 1.
    """

    def __init__(self, d: int, lam: float, *, refactor_every: int = 512) -> None:
        self._gram = Gram(d, lam, refactor_every=refactor_every)  # validates
        self.d, self.lam, self.refactor_every = d, float(lam), refactor_every
        self._matrix = np.asfortranarray(lam * np.eye(d))
        self._inverse = np.asfortranarray(np.eye(d) / lam)
        self.logdet = d * math.log(lam)
        self.n_updates = 0
        self._since_refactor = 0

    def update(self, x: Any, weight: float = 1.0) -> None:
        """Add w x x^T to V (module docstring; x (d,) finite, w > 0)."""
        self.update_unchecked(check_vector("x", x, self.d), check_weight(weight))

    #: inside a policy's update (``_transaction``): the rank-1 terms (x, w, u, c) whose
    #: in-place writes wait for the update to succeed; None otherwise, and once a read
    #: inside the update has written them (the arrays journalled first)
    _deferred: list[tuple[np.ndarray, float, np.ndarray, float]] | None = None
    #: the journal of a policy's update in progress (``core.transaction.journal``)
    _journal: list[tuple[np.ndarray, np.ndarray]] | None = None

    def update_unchecked(self, x: np.ndarray, w: float) -> None:
        """:meth:`update` for a checked pull: x finite float64 (d,), w a float > 0."""
        self._flush()  # a row of this update waits: V^-1 must include it
        u = _SYMV(1.0, self._inverse, x, lower=0)
        wq = max(w * float(x @ u), 0.0)
        c = -w / (1.0 + wq)
        if self._deferred is None:
            self._write(x, w, u, c)
        else:  # written when the update succeeds (``_transaction``)
            self._deferred.append((x.copy(), w, u, c))
        self.logdet += math.log1p(wq)
        self.n_updates += 1
        self._since_refactor += 1
        if self._since_refactor >= self.refactor_every:
            self._flush()
            self._refactor()

    def _write(self, x: np.ndarray, w: float, u: np.ndarray, c: float) -> None:
        """V += w x x^T, V^-1 += c u u^T, in place (``dsyr``)."""
        _SYR(w, x, a=self._matrix, lower=0, overwrite_a=1)
        _SYR(c, u, a=self._inverse, lower=0, overwrite_a=1)

    def _flush(self) -> None:
        """Write the deferred rows now, V and V^-1 journalled first.

        The update's later rows then write in place (the journal holds the arrays).
        """
        pending = self._deferred
        if pending:
            overwrites(self, self._matrix, self._inverse)
            for row in pending:
                self._write(*row)
            self._deferred = None

    def _transaction(self) -> tuple[Callable[[], None], Callable[[], None]]:
        """Undo what comes next (``core.transaction``) without copying V or V^-1.

        Every update writes all of V and V^-1 (rank-1 terms), so a journal would copy
        them (2 d^2 floats: 61 MB a round at d = 1,960). Inside a policy's update the
        rows' writes wait instead (log det, u and the counters are computed as usual,
        from the arrays as they stand) and are made, in the same order and with the same
        arithmetic, when the update succeeds; undoing puts the attributes back and drops
        them. Only a read of V or V^-1 inside the update (a second row, a
        refactorisation, ``matrix``) writes them earlier, after journalling the arrays.
        """
        undo, close = journal(self)
        deferred: list[tuple[np.ndarray, float, np.ndarray, float]] = []
        self._deferred = deferred

        def done() -> None:
            close()
            pending = vars(self).pop("_deferred", None)  # back to the class's None
            for row in pending or ():
                self._write(*row)

        return undo, done

    def _full(self, upper: np.ndarray) -> np.ndarray:
        """The symmetric matrix whose upper triangle is ``upper``'s."""
        return np.triu(upper) + np.triu(upper, 1).T

    def _refactor(self) -> None:
        self._flush()
        chol = np.linalg.cholesky(self._full(self._matrix))
        inverse = scipy.linalg.cho_solve((chol, True), np.eye(self.d))
        self._inverse = np.asfortranarray(inverse)
        self.logdet = 2.0 * float(np.sum(np.log(np.diag(chol))))
        self._since_refactor = 0

    @property
    def matrix(self) -> np.ndarray:
        """V (a full symmetric copy)."""
        self._flush()
        return self._full(self._matrix)

    @property
    def inverse(self) -> np.ndarray:
        """V^-1 (a full symmetric copy)."""
        self._flush()
        return self._full(self._inverse)

    def state_dict(self) -> dict[str, Any]:
        """A ``Gram`` state (class docstring)."""
        matrix = self.matrix
        return {
            "kind": "Gram",
            "d": self.d,
            "lam": self.lam,
            "refactor_every": self.refactor_every,
            "n_updates": self.n_updates,
            "since_refactor": self._since_refactor,
            "logdet": self.logdet,
            "matrix": matrix,
            "inverse": self.inverse,
            "cholesky": np.linalg.cholesky(matrix),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a ``Gram`` state (validated by ``Gram.load_state_dict``)."""
        self._gram.load_state_dict(state)
        gram = self._gram
        self.lam, self.refactor_every = gram.lam, gram.refactor_every
        self._matrix = np.asfortranarray(gram.matrix)
        self._inverse = np.asfortranarray(gram.inverse)
        self.logdet = gram.logdet
        self.n_updates = gram.n_updates
        self._since_refactor = int(state["since_refactor"])


class EffectiveDimension:
    """Data-adaptive effective dimension d_eff = logdet(I + a * sum_i z_i z_i^T).

    [Bae2025, App. A] measures the effective dimension on the features z_i of the
    arms played so far: a = R = 1/4 for NeuralLog-UCB-1/2 (z = g(x_i; theta_{i-1})) and
    for Logistic-UCB-1 / ada-OFU-ECOLog (z = x_i), a = 1/kappa for NCBF-UCB. With
    ``gram="diagonal"`` only the diagonal of the sum is kept,

        d_eff = sum_j log(1 + a * sum_i z_ij^2),

    which equals the exact log-determinant when every z_i lies along an axis; it
    overstates d_eff when the z_i are correlated (a network's gradients are: on the
    synthetic h1 of [Bae2025, Sec. 7], 1,004 against the exact 452 after 300 rounds).
    ``gram="full"`` keeps the exact p x p sum (O(p^2) per update) and
    ``gram="kernel"`` computes the same exact value through the n x n Gram
    (``KernelLogdet``; O(nnz + n^2) per update, for large p); ``gram="exact"`` takes
    "full" for d <= ``EXACT_FULL_MAX`` and "kernel" above. The "full" value is updated
    by rank-1 BLAS-2 steps (``LogdetGram``; ``block=1``, the default) or, with
    ``block`` > 1, by BLAS-3 folds of ``block`` rows, without refactorisation, and
    computed only when read (``linalg.blocked.BlockedLogdet``; the same value up to
    rounding), whose ``bounds`` bracket the value without computing it.

    Args:
        d: Feature dimension.
        scale: a > 0.
        gram: "diagonal", "full", "kernel" or "exact".
        block: Rows per BLAS-3 fold of the "full" value, >= 1 (1: rank-1 updates).

    Example:
        >>> tracker = EffectiveDimension(2, scale=1.0)
        >>> tracker.update(np.array([1.0, 0.0]))
        >>> round(tracker.value, 6) == round(float(np.log(2.0)), 6)
        True
    """

    def __init__(
        self, d: int, scale: float, gram: str = "diagonal", *, block: int = 1
    ) -> None:
        self.scale = scale
        block = check_int("block", block, low=1)
        kind = check_choice("gram", gram, EFFDIMS)
        if kind == "exact":
            kind = "full" if d <= EXACT_FULL_MAX else "kernel"
        self.kind = kind
        self.gram: LogdetGram | BlockedLogdet | DiagonalGram | KernelLogdet
        if kind == "kernel":
            self.gram = KernelLogdet(d, scale)
        elif kind == "full" and block > 1:  # exact per row, BLAS-3 folds
            self.gram = BlockedLogdet(d, 1.0, block=block, refactor_every=None)
        elif kind == "full":  # log det only: V and V^-1 updated in place
            self.gram = LogdetGram(d, 1.0)
        else:  # "diagonal"
            self.gram = DiagonalGram(d, 1.0)

    def update(self, z: np.ndarray) -> None:
        """Add a * z z^T to the sum."""
        if isinstance(self.gram, KernelLogdet):
            self.gram.update(z)
        else:
            self.gram.update(z, self.scale)

    def update_unchecked(self, z: np.ndarray) -> None:
        """:meth:`update` for features z that are finite float64 (p,) already.

        The same arithmetic without the argument checks (a policy's played features).
        """
        gram = self.gram
        if isinstance(gram, KernelLogdet):
            gram.update(z)
        else:
            gram.update_unchecked(z, self.scale)

    @property
    def value(self) -> float:
        """The current d_eff (0 before any update)."""
        return float(self.gram.logdet)

    def bounds(self) -> tuple[float, float]:
        """Lower and upper bounds on ``value`` that are cheaper to read.

        The blocked tracker (``block`` > 1) computes its value when it is read; its
        bounds bracket the value without computing it (``BlockedLogdet.bounds``). The
        other trackers return the value twice.
        """
        gram = self.gram
        if isinstance(gram, BlockedLogdet):
            return gram.bounds()
        value = self.value
        return value, value

    def state_dict(self) -> dict[str, Any]:
        """Arrays and scalars only."""
        return self.gram.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from :meth:`state_dict`."""
        self.gram.load_state_dict(state)
