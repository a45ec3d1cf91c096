"""The within-interval state of the grid policies: the Gram H and the interval's rows.

``WithinGram`` is H: H^-1 at every pull, the rest when read. ``IntervalRows`` holds the
interval's pulls (x_t, r_t) as a row ``History`` does, with a cheaper append.

The uncertainty rule argmax_x ||x||_{H_{t-1}^-1} of BLCE-G, BLCE and BGLE reads only H^-1
[Yu2026, Alg. 1 l.17, Alg. 2 l.13], after every pull of the interval's exploration
rounds. ``linalg.Gram`` keeps H, H^-1, the Cholesky factor and log det H up to date at
every pull; :class:`WithinGram` computes H^-1 with the same arithmetic, bit for bit
(Sherman-Morrison, and every ``refactor_every`` pulls H^-1 recomputed from H as
``Gram`` does), and brings H up to date only when it is read or refactorised:

    H_n = (...((H_0 + w_1 x_1 x_1^T) + w_2 x_2 x_2^T) + ...) + w_n x_n x_n^T,

in that order, as one ``np.add.accumulate`` over the stacked rank-1 terms (the same
sums in the same order as ``Gram``'s pull-by-pull updates, hence the same bits). Its
state is ``Gram``'s (``state_dict`` replays the interval's pulls through a ``Gram``), so
a saved policy restores and continues bit for bit.

References:
    [Yu2026] S. Yu, M. Oh. Practical and optimal algorithm for linear contextual bandits
        with rare parameter updates. arXiv:2606.00984.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from banditkit.core.validation import check_scalar
from banditkit.linalg import Gram
from banditkit.linalg.gram import _cho_solve_lower
from banditkit.policies.parts.history import Buffers, BufferView

__all__ = ["IntervalRows", "WithinGram"]


class WithinGram:
    """H = lam I + sum_i w_i x_i x_i^T of one interval; H^-1 as ``linalg.Gram`` has it.

    Args:
        d: Dimension, >= 1.
        lam: Ridge of H_0 = lam I, > 0.
        refactor_every: H^-1 is recomputed from H after this many pulls (``Gram``'s).

    Example:
        >>> H = WithinGram(2, 1.0)
        >>> H.update(np.array([1.0, 0.0]), 3.0)
        >>> H.inverse
        array([[0.25, 0.  ],
               [0.  , 1.  ]])
        >>> H.matrix
        array([[4., 0.],
               [0., 1.]])
    """

    #: Lists only ever appended to: the update transaction undoes them by their length.
    _append_only: ClassVar[tuple[str, ...]] = ("_x", "_w")

    def __init__(self, d: int, lam: float, *, refactor_every: int = 512) -> None:
        self._start(Gram(d, lam, refactor_every=refactor_every))

    def _start(self, base: Gram) -> None:
        """Continue from ``base`` (its pulls so far are in it)."""
        self._base = base  # the state before the pulls listed below
        self.d = base.d
        self._every = base.refactor_every
        self._inverse = base.inverse
        self._matrix = base.matrix  # H at the last refactorisation (or at base)
        self._since = base.since_refactor
        self._n = base.n_updates
        self._x: list[np.ndarray] = []  # the pulls since base, in order
        self._w: list[float] = []
        self._fresh = 0  # how many of them came after self._matrix

    @property
    def inverse(self) -> np.ndarray:
        """H^-1, (d, d), read-only (a snapshot: later pulls make a new array)."""
        return self._inverse

    @property
    def n_updates(self) -> int:
        """Pulls so far."""
        return self._n

    @property
    def matrix(self) -> np.ndarray:
        """H, (d, d), read-only: the same bits as ``Gram.matrix`` after the same pulls."""
        if self._fresh:
            self._matrix = self._catch_up()
            self._fresh = 0
        return self._matrix

    def update(self, x: Any, weight: float = 1.0) -> None:
        """Add w x x^T (checked: x finite (d,), w > 0)."""
        x = np.asarray(x, dtype=float)
        if x.shape != (self.d,) or not np.all(np.isfinite(x)):
            raise ValueError(f"x must be a finite vector of shape ({self.d},).")
        w = check_scalar("weight", weight, low=0.0, low_open=True)
        self.update_unchecked(x, w)

    def update_unchecked(self, x: np.ndarray, w: float) -> None:
        """Add w x x^T for a checked pull: x finite float64 (d,), w a float > 0.

        H^-1 <- H^-1 - w u u^T / (1 + w x^T u), u = H^-1 x [Sherman1950], written as
        ``Gram.update_unchecked`` writes it.
        """
        u = self._inverse @ x
        wq = max(w * float(x @ u), 0.0)
        out = np.multiply.outer(u, u)
        out *= -w / (1.0 + wq)
        out += self._inverse
        out.flags.writeable = False
        self._inverse = out
        row = x.copy()
        row.flags.writeable = False
        self._x.append(row)
        self._w.append(w)
        self._fresh += 1
        self._n += 1
        self._since += 1
        if self._since >= self._every:
            self._refactor()

    def _catch_up(self) -> np.ndarray:
        """H after the pulls not yet in ``self._matrix``, summed in their order."""
        X = np.array(self._x[-self._fresh :])
        terms = np.empty((X.shape[0] + 1, self.d, self.d))
        terms[0] = self._matrix
        np.multiply(X[:, :, None], X[:, None, :], out=terms[1:])
        w = np.array(self._w[-self._fresh :])
        if np.any(w != 1.0):
            terms[1:] *= w[:, None, None]
        return np.add.accumulate(terms, axis=0)[-1]

    def _refactor(self) -> None:
        """H^-1 recomputed from H (``Gram``'s refactorisation, the same operations)."""
        matrix = self._catch_up()
        matrix = 0.5 * (matrix + matrix.T)
        chol = np.linalg.cholesky(matrix)
        inverse = _cho_solve_lower(chol, np.eye(self.d))
        matrix.flags.writeable = False
        self._matrix = matrix
        self._fresh = 0
        inverse = 0.5 * (inverse + inverse.T)
        inverse.flags.writeable = False
        self._inverse = inverse
        self._since = 0

    def state_dict(self) -> dict[str, Any]:
        """``Gram``'s state after the same pulls (they are replayed through a ``Gram``)."""
        gram = Gram.from_state_dict(self._base.state_dict())
        for x, w in zip(self._x, self._w, strict=True):
            gram.update_unchecked(x, w)
        return gram.state_dict()

    @classmethod
    def from_state_dict(cls, state: dict[str, Any], d: int | None = None) -> WithinGram:
        """Continue from ``Gram``'s state (as :meth:`state_dict` writes it; of d if given)."""
        H = cls.__new__(cls)
        H._start(Gram.from_state_dict(state, d=d))
        return H

    def __repr__(self) -> str:
        return f"WithinGram(d={self.d}, n_updates={self._n})"


class IntervalRows:
    """The pulls (x_t, r_t) of one interval, as a row ``History`` keeps them.

    A grid policy appends one row per round and reads the rows once, at the interval's
    end. ``X`` and ``y`` are views of the first n rows of a ``parts.history.Buffers``
    (grown by doubling, an append undone by its length); the state is ``History``'s,
    weights 1.

    Args:
        d: Dimension, >= 1.
        capacity: Rows allocated up front (the interval's length, when known).

    Example:
        >>> rows = IntervalRows(2)
        >>> rows.append(np.array([1.0, 2.0]), 0.5)
        >>> rows.X.tolist(), rows.y.tolist(), rows.n
        ([[1.0, 2.0]], [0.5], 1)
    """

    def __init__(self, d: int, capacity: int = 256) -> None:
        self.d = d
        self._buf = Buffers({"X": ((d,), float), "y": ((), float)}, capacity)

    def _transaction(self) -> Callable[[], None]:
        """Undo what comes next (``core.transaction``): by the arrays and n, in O(1)."""
        return self._buf._transaction()

    @property
    def n(self) -> int:
        """Rows so far."""
        return self._buf.n

    def append(self, x: np.ndarray, y: float) -> None:
        """Add the row (x, y); x of shape (d,)."""
        self._buf.push(X=x, y=y)

    X = BufferView("X", "The (n, d) rows so far")
    y = BufferView("y", "The (n,) rewards so far")

    @property
    def w(self) -> np.ndarray:
        """The (n,) weights, all 1 (``History``'s state has them)."""
        return np.ones(self.n)

    def state_dict(self) -> dict[str, Any]:
        """``History``'s state: copies of X, y and the weights (all 1)."""
        return {**self._buf.state_dict(), "w": self.w}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from :meth:`state_dict` (or a ``History``'s state with weights 1)."""
        if "w" in state and np.any(np.asarray(state["w"]) != 1.0):
            raise ValueError("state['w'] must be all ones for an interval's rows.")
        X = np.asarray(state["X"], dtype=float).reshape(-1, self.d)
        self._buf.load({"X": X, "y": state["y"]})
