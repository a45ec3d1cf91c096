"""The log-determinant of a full Gram, updated by blocks of rows: ``BlockedLogdet``.

``LogdetGram`` adds each row to V and V^-1 by rank-1 BLAS-2 updates: reading and writing
both p x p triangles per row (p = 420 for NeuralLog-UCB-2 on h1: 2.8 MB, which does not
stay in the cache between rounds). ``BlockedLogdet`` keeps V_0^-1,
the inverse at the start of the current block, and the block's weighted rows
r_i = sqrt(w_i) x_i (R, k x p); by the matrix determinant lemma,

    log det V = log det V_0 + log det M,   M = I_k + R V_0^-1 R^T = L L^T,

so the exact value after any row costs one product Y = R V_0^-1 (``dsymm``) and a k x k
Cholesky factor. A full block is folded in (Woodbury, [Woodbury1950]): V_0^-1 -= W^T W
with W = L^-1 Y (``dsyrk``), log det V_0 += log det M. Every row thus reaches V_0^-1
through BLAS-3 products, once per block.

The value is computed when it is read, from the state at the start of the block and the
block's rows only, and a read changes nothing: the values are the same whenever (and
whether) they are read, and the folds, which happen every ``block`` rows, make the
state. Until a value is read, ``bounds`` brackets it: each row adds log(1 + r^T V^-1 r),
in [0, log(1 + ||r||^2 / lam)] (V >= lam I). A caller that can decide with the bounds (a
selection whose winner is the same at both ends) never computes the value mid-block.

As ``LogdetGram``, V^-1 and the log-determinant can be recomputed from V by a Cholesky
factorisation (LAPACK ``potrf`` and ``potri``, on the upper triangles) every
``refactor_every`` rows (a multiple of the block, V += R^T R at each fold); with
``refactor_every=None`` V is not kept (on the 2000 played gradients of NeuralLog-UCB-2
on h1, p = 420, the value then agrees with ``numpy.linalg.slogdet`` of the Gram to about
1e-12, as it does with the refactorisations). The values agree with ``LogdetGram``'s up
to rounding (tests/linalg/test_blocked.py: 1e-12 relative), not bit for bit.

References:
    [Woodbury1950] M. A. Woodbury. Inverting modified matrices. Memorandum report 42,
        Statistical Research Group, Princeton University, 1950.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.linalg
import scipy.linalg.blas
import scipy.linalg.lapack

from banditkit.core.transaction import journal, overwrites
from banditkit.core.validation import (
    check_int,
    check_scalar,
    check_spd,
    check_state_array,
)

from ._common import check_state, check_vector, check_weight

__all__ = ["BlockedLogdet"]

#: The float64 BLAS and LAPACK routines of the tracker (module-level: an instance holds
#: no Fortran objects, which cannot be copied or pickled)
_SYMM, _SYRK, _TRSM = scipy.linalg.blas.get_blas_funcs(
    ("symm", "syrk", "trsm"), dtype=np.float64
)
_POTRF, _POTRI = scipy.linalg.lapack.get_lapack_funcs(
    ("potrf", "potri"), dtype=np.float64
)


class BlockedLogdet:
    """log det V of V = lam I + sum_i w_i x_i x_i^T, by blocks of rows (module docstring).

    Args:
        d: Dimension p, >= 1.
        lam: V_0 = lam I, > 0.
        block: Rows per block, >= 1; divides ``refactor_every``.
        refactor_every: Rows between exact refactorisations (512, as ``LogdetGram``),
            or None: never (V is not kept).

    Example:
        >>> tracker = BlockedLogdet(2, 1.0, block=2, refactor_every=4)
        >>> for x in ([1.0, 0.0], [1.0, 1.0], [0.0, 2.0]):
        ...     tracker.update(np.array(x))
        >>> V = np.eye(2) + np.array([[2.0, 1.0], [1.0, 5.0]])
        >>> bool(np.isclose(tracker.logdet, np.linalg.slogdet(V)[1]))
        True
    """

    def __init__(
        self,
        d: int,
        lam: float,
        *,
        block: int = 32,
        refactor_every: int | None = 512,
    ) -> None:
        if int(d) < 1:
            raise ValueError(f"d must be an int >= 1; got {d!r}.")
        if not lam > 0.0:
            raise ValueError(f"lam must be > 0; got {lam!r}.")
        if int(block) < 1 or (
            refactor_every is not None and int(refactor_every) % int(block)
        ):
            raise ValueError(
                f"block must be an int >= 1 dividing refactor_every={refactor_every}; "
                f"got {block!r}."
            )
        self.d, self.lam = int(d), float(lam)
        self.block = int(block)
        self.refactor_every = None if refactor_every is None else int(refactor_every)
        self._matrix = (  # V (upper), kept for the refactorisations only
            None
            if self.refactor_every is None
            else np.asfortranarray(self.lam * np.eye(self.d))
        )
        self._inverse = np.asfortranarray(np.eye(self.d) / self.lam)  # V_0^-1 (upper)
        self._rows = np.zeros((self.block, self.d))  # R: the block's rows r_i
        self._k = 0
        self._base = self.d * math.log(self.lam)  # log det V_0
        # the last value read (or log det V_0) and the rows added since: the bounds
        self._known = self._base
        self._known_k = 0
        self._slack = 0.0  # sum of log(1 + ||r||^2 / lam) over the rows since
        self.n_updates = 0
        self._since_refactor = 0

    #: the journal of a policy's update in progress (``_transaction``), else None
    _journal: list[tuple[np.ndarray, np.ndarray]] | None = None

    def update(self, x: Any, weight: float = 1.0) -> None:
        """Add w x x^T to V (x (d,) finite, w > 0)."""
        self.update_unchecked(check_vector("x", x, self.d), check_weight(weight))

    def update_unchecked(self, x: np.ndarray, w: float) -> None:
        """:meth:`update` for a checked row: x finite float64 (d,), w a float > 0."""
        r = self._rows[self._k]
        overwrites(self, r)
        np.multiply(x, math.sqrt(w), out=r)
        # log(1 + r^T V^-1 r) <= log(1 + ||r||^2 / lam), as V >= lam I
        self._slack += math.log1p(float(r @ r) / self.lam)
        self._k += 1
        self.n_updates += 1
        if self._k == self.block:
            self._fold()

    @property
    def logdet(self) -> float:
        """Return log det V after every row so far (computed on demand; docstring)."""
        if self._known_k != self._k:
            self._known = self._base + self._block_logdet(self._k)[0]
            self._known_k = self._k
            self._slack = 0.0
        return self._known

    def bounds(self) -> tuple[float, float]:
        """Lower and upper bounds on ``logdet`` without computing it.

        The last value computed (or log det V_0) and that value plus
        log(1 + ||r||^2 / lam) for every row added since; equal when none was.
        """
        return self._known, self._known + self._slack

    def _block_logdet(self, k: int) -> tuple[float, np.ndarray, np.ndarray]:
        """Return log det M of the first k rows of the block, Y = R V_0^-1 and L."""
        R = self._rows[:k]
        Y = _SYMM(1.0, self._inverse, R, side=1, lower=0)  # R V_0^-1
        M = Y @ R.T
        M.flat[:: k + 1] += 1.0
        L, info = _POTRF(M, lower=1, clean=1)
        if info:
            raise np.linalg.LinAlgError(
                f"I + R V_0^-1 R^T is not positive (potrf: {info})."
            )
        return 2.0 * float(np.log(np.diagonal(L)).sum()), Y, L

    def _transaction(self) -> tuple[Callable[[], None], Callable[[], None]]:
        """Undo what comes next (``core.transaction``) without copying V^-1 each update.

        An update writes one row of the block; only when the block is full are V^-1
        and V written in place (the fold), and then the block starts afresh: the
        journal holds the row, and V^-1, V and the block at a fold (d^2 copied once
        every ``block`` rows instead of at every update).
        """
        return journal(self)

    def _fold(self) -> None:
        """Fold the block in: log det V_0 += log det M, V_0^-1 -= W^T W, V += R^T R."""
        overwrites(self, self._inverse, self._matrix, self._rows)
        k = self._k
        value, Y, L = self._block_logdet(k)
        W = _TRSM(1.0, L, Y, lower=1)  # L^-1 Y
        _SYRK(-1.0, W, beta=1.0, c=self._inverse, trans=1, lower=0, overwrite_c=1)
        if self._matrix is not None:
            _SYRK(
                1.0,
                self._rows[:k],
                beta=1.0,
                c=self._matrix,
                trans=1,
                lower=0,
                overwrite_c=1,
            )
        self._base += value
        self._k = 0
        self._since_refactor += k
        if self.refactor_every and self._since_refactor >= self.refactor_every:
            self._refactor()
        self._known, self._known_k, self._slack = self._base, 0, 0.0

    def _refactor(self) -> None:
        """V^-1 and log det V afresh from V: V = U^T U (``potrf``), V^-1 by ``potri``."""
        assert self._matrix is not None
        upper, info = _POTRF(self._matrix, lower=0, clean=0)
        if info:
            raise np.linalg.LinAlgError(f"V is not positive definite (potrf: {info}).")
        self._base = 2.0 * float(np.sum(np.log(np.diag(upper))))
        inverse, info = _POTRI(upper, lower=0)
        if info:
            raise np.linalg.LinAlgError(f"V is singular (potri: {info}).")
        self._inverse = np.asfortranarray(inverse)  # its upper triangle is V^-1's
        self._since_refactor = 0

    @property
    def matrix(self) -> np.ndarray:
        """V (a full symmetric copy, with the current block's rows)."""
        if self._matrix is None:
            raise ValueError("V is not kept with refactor_every=None.")
        k = self._k
        return _full(self._matrix) + self._rows[:k].T @ self._rows[:k]

    def state_dict(self) -> dict[str, Any]:
        """Arrays and scalars only; restoring continues with the same values."""
        k = self._k
        return {
            "kind": "BlockedLogdet",
            "d": self.d,
            "lam": self.lam,
            "block": self.block,
            "refactor_every": self.refactor_every,
            "n_updates": self.n_updates,
            "since_refactor": self._since_refactor,
            "base": self._base,
            "known": self._known,
            "known_k": self._known_k,
            "slack": self._slack,
            "matrix": None if self._matrix is None else _full(self._matrix),
            "inverse": _full(self._inverse),
            "rows": self._rows[:k].copy(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from :meth:`state_dict`.

        Raises:
            ValueError: If the state is not a BlockedLogdet state of this tracker's d,
                lam, block and refactor_every, V or V^-1 is not symmetric
                positive-definite, or the block holds more rows than ``block``.
        """
        check_state(state, "BlockedLogdet", _STATE_KEYS, self.d)
        settings = {
            "lam": self.lam,
            "block": self.block,
            "refactor_every": self.refactor_every,
        }
        other = {k: state[k] for k in settings if state[k] != settings[k]}
        if other:
            raise ValueError(f"state has {other}; this tracker has {settings}.")
        rows = check_state_array("rows", state["rows"], (None, self.d))
        if rows.shape[0] > self.block:
            raise ValueError(
                f"rows must hold at most block={self.block} rows; got {rows.shape[0]}."
            )
        matrix = state["matrix"]
        if (matrix is None) != (self.refactor_every is None):
            raise ValueError("matrix must be kept exactly when refactor_every is set.")
        if matrix is not None:
            self._matrix = np.asfortranarray(check_spd("matrix", matrix, self.d))
        self._inverse = np.asfortranarray(
            check_spd("inverse", state["inverse"], self.d)
        )
        self._rows[:] = 0.0
        self._k = rows.shape[0]
        self._rows[: self._k] = rows
        self.n_updates = check_int("n_updates", state["n_updates"], low=0)
        self._since_refactor = check_int(
            "since_refactor", state["since_refactor"], low=0
        )
        self._base = check_scalar("base", state["base"])
        self._known = check_scalar("known", state["known"])
        self._known_k = check_int("known_k", state["known_k"], low=0, high=self._k)
        self._slack = check_scalar("slack", state["slack"], low=0.0)


_STATE_KEYS = (
    "kind",
    "d",
    "lam",
    "block",
    "refactor_every",
    "n_updates",
    "since_refactor",
    "base",
    "known",
    "known_k",
    "slack",
    "matrix",
    "inverse",
    "rows",
)


def _full(upper: np.ndarray) -> np.ndarray:
    """The symmetric matrix whose upper triangle is ``upper``'s."""
    return np.triu(upper) + np.triu(upper, 1).T
