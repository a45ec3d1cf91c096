"""Observation histories for every family's loss: rows, pairs and sets, with weights.

    History       rows (x_i, y_i, w_i)                                  contextual
    PairHistory   pairs (x_i1, x_i2, o_i, w_i) and the arm indices      dueling
    SetHistory    sets (offered items, choice c_i, w_i), c_i = -1 for   assortment
                  the outside option; ragged (items + offsets) or
                  padded (n, S, d) with a mask

Every buffer is preallocated and grows by doubling, so n appends cost O(n) amortised;
the properties are views of the first n entries (no copy). ``w`` is 1 unless a weight
is given (importance weights, variance weights, ...).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, overload

import numpy as np

from banditkit.core.validation import check_int, check_state_array

__all__ = ["BufferView", "Buffers", "History", "PairHistory", "SetHistory"]

_CAPACITY = 256


class Buffers:
    """Named arrays sharing a leading length n, grown by doubling.

    The one growable log of the package: the histories below, the per-arm baselines' logs
    of learned rounds and the rare family's interval rows are built on it. An append
    writes past n only, so the update transaction undoes it by the arrays and n.

    Args:
        shapes: For each name, (trailing shape, dtype) of its entries.
        capacity: Entries allocated up front (>= 1).

    Example:
        >>> log = Buffers({"x": ((2,), float), "arm": ((), np.int64)})
        >>> log.push(x=[1.0, 2.0], arm=3)
        >>> log.view("x").tolist(), log.view("arm").tolist(), log.n
        ([[1.0, 2.0]], [3], 1)
    """

    def __init__(
        self,
        shapes: dict[str, tuple[tuple[int, ...], type]],
        capacity: int = _CAPACITY,
    ) -> None:
        self._shapes = shapes
        capacity = max(int(capacity), 1)
        self._arrays: dict[str, np.ndarray] = {
            name: np.empty((capacity, *shape), dtype=dtype)
            for name, (shape, dtype) in shapes.items()
        }
        self.n = 0

    def reserve(self, n: int) -> None:
        """Make room for n entries in total (capacity doubles until it fits)."""
        cap = next(iter(self._arrays.values())).shape[0]
        if n <= cap:
            return
        while cap < n:
            cap *= 2
        for name, arr in self._arrays.items():
            grown = np.empty((cap, *arr.shape[1:]), dtype=arr.dtype)
            grown[: self.n] = arr[: self.n]
            self._arrays[name] = grown

    def _transaction(self) -> Callable[[], None]:
        """Undo what comes next (``core.transaction``): appends write past n only."""
        arrays, n = dict(self._arrays), self.n

        def undo() -> None:
            self._arrays, self.n = dict(arrays), n

        return undo

    @property
    def names(self) -> tuple[str, ...]:
        """The names of the arrays."""
        return tuple(self._arrays)

    def push(self, **values: Any) -> None:
        """Append one entry (one value per array)."""
        self.reserve(self.n + 1)
        for name, value in values.items():
            self._arrays[name][self.n] = value
        self.n += 1

    def extend(self, **blocks: np.ndarray) -> None:
        """Append m entries at once (one (m, ...) block per array)."""
        m = len(next(iter(blocks.values())))
        self.reserve(self.n + m)
        for name, block in blocks.items():
            self._arrays[name][self.n : self.n + m] = block
        self.n += m

    def view(self, name: str) -> np.ndarray:
        """The first n entries of one array (a view)."""
        return self._arrays[name][: self.n]

    def state_dict(self) -> dict[str, np.ndarray]:
        """Copies of the first n entries."""
        return {name: self.view(name).copy() for name in self._arrays}

    def validate(self, arrays: dict[str, Any]) -> dict[str, np.ndarray]:
        """Checked copies of saved ``arrays``: these names, one length n, each (n, ...).

        Entries must be real and finite with this buffer's trailing shape (integer
        arrays: integers); weights ``w`` must be >= 0.

        Raises:
            ValueError: Otherwise; the message names the array.
        """
        if set(arrays) != set(self._arrays):
            raise ValueError(
                f"a history holds the arrays {sorted(self._arrays)}; got {sorted(arrays)}."
            )
        checked = {
            name: check_state_array(
                name,
                arrays[name],
                (None, *self._shapes[name][0]),
                dtype=self._shapes[name][1],
                low=0.0 if name == "w" else None,
            )
            for name in self._arrays
        }
        lengths = {name: arr.shape[0] for name, arr in checked.items()}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"history arrays must have one length; got {lengths}.")
        return checked

    def load(self, arrays: dict[str, Any]) -> None:
        """Replace the contents by ``arrays`` (checked by :meth:`validate` first)."""
        checked = self.validate(arrays)
        n = len(next(iter(checked.values())))
        self.n = 0
        self.reserve(max(n, 1))
        for name, arr in checked.items():
            self._arrays[name][:n] = arr
        self.n = n


class BufferView:
    """A read-only attribute: the first n entries of one named array of a ``Buffers``.

    ``X = BufferView("X", "The (n, d) features so far.")`` on a class whose ``_buf`` holds "X"
    reads ``self._buf.view("X")`` (a view, no copy); ``source`` names another buffers
    attribute.
    """

    def __init__(self, name: str, doc: str, source: str = "_buf") -> None:
        self._name, self._source = name, source
        self.__doc__ = f"{doc} (a view)"

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> BufferView: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> np.ndarray: ...
    def __get__(self, obj: object | None, owner: type | None = None) -> Any:
        if obj is None:
            return self
        return getattr(obj, self._source).view(self._name)

    def __set__(self, obj: object, value: object) -> None:
        raise AttributeError(f"{self._name} is read-only (a view of the history)")


class _Entries:
    """One buffer of entries with a weight each: ``n``, ``w`` and the state."""

    _buf: Buffers

    @property
    def n(self) -> int:
        """Number of entries so far."""
        return self._buf.n

    w = BufferView("w", "The (n,) weights so far")

    def state_dict(self) -> dict[str, Any]:
        """Arrays only."""
        return self._buf.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from :meth:`state_dict` (a state without weights gets w = 1)."""
        arrays = dict(state)
        if "w" not in arrays and self._buf.names[0] in arrays:
            arrays["w"] = np.ones(len(np.asarray(arrays[self._buf.names[0]])))
        self._buf.load(arrays)


class History(_Entries):
    """Rows x (d,) with a scalar target y and a weight w each.

    Example:
        >>> h = History(2)
        >>> h.append(np.array([1.0, 2.0]), 1.0); h.append(np.array([3.0, 4.0]), 0.0)
        >>> h.X.tolist(), h.y.tolist(), h.w.tolist()
        ([[1.0, 2.0], [3.0, 4.0]], [1.0, 0.0], [1.0, 1.0])
    """

    def __init__(self, d: int) -> None:
        self.d = d
        self._buf = Buffers({"X": ((d,), float), "y": ((), float), "w": ((), float)})

    def _transaction(self) -> Callable[[], None]:
        """Undo what comes next (``core.transaction``): appends change the buffers only."""
        return self._buf._transaction()

    def append(self, x: np.ndarray, y: float, weight: float = 1.0) -> None:
        """Add one row (x, y, weight)."""
        self._buf.push(X=x, y=y, w=weight)

    X = BufferView("X", "The (n, d) features so far")
    y = BufferView("y", "The (n,) targets so far")


class PairHistory(_Entries):
    """Duels: the features of both arms, the arm indices, the outcome and a weight.

    The outcome o_i is 1 if the first arm won, else 0 (or a probability); a
    Bradley-Terry-Luce model reads it as a logistic regression on the differences
    x_i1 - x_i2 (``diff``).

    Example:
        >>> h = PairHistory(2)
        >>> h.append(np.array([1.0, 0.0]), np.array([0.0, 1.0]), 1.0, arms=(0, 1))
        >>> h.diff.tolist(), h.outcome.tolist(), h.arms.tolist()
        ([[1.0, -1.0]], [1.0], [[0, 1]])
    """

    def __init__(self, d: int) -> None:
        self.d = d
        self._buf = Buffers(
            {
                "X1": ((d,), float),
                "X2": ((d,), float),
                "arms": ((2,), np.int64),
                "outcome": ((), float),
                "w": ((), float),
            }
        )

    def append(
        self,
        x1: np.ndarray,
        x2: np.ndarray,
        outcome: float,
        weight: float = 1.0,
        arms: tuple[int, int] = (-1, -1),
    ) -> None:
        """Add one duel of x1 against x2 (arm indices ``arms``, -1 when unknown)."""
        self._buf.push(X1=x1, X2=x2, arms=arms, outcome=outcome, w=weight)

    X1 = BufferView("X1", "The (n, d) features of the first arms")
    X2 = BufferView("X2", "The (n, d) features of the second arms")
    arms = BufferView("arms", "The (n, 2) arm indices of each duel within its round")
    outcome = BufferView("outcome", "The (n,) outcomes, 1 if the first arm won")

    @property
    def diff(self) -> np.ndarray:
        """x_i1 - x_i2, (n, d) (a new array)."""
        return self.X1 - self.X2


class SetHistory:
    """Offered sets (assortments), the chosen slot (-1: outside option) and a weight.

    Stored ragged: all offered items one after the other in ``items`` (N, d), set i
    being ``items[offsets[i]:offsets[i + 1]]``; ``padded()`` gives the (n, S, d) block
    with a mask that the MNL loss (``nn.losses.mnl_nll``) takes.

    Args:
        d: Item feature dimension.

    Example:
        >>> h = SetHistory(1)
        >>> h.append(np.array([[1.0], [2.0]]), choice=1)
        >>> h.append(np.array([[3.0]]), choice=-1)
        >>> X, mask, choice = h.padded()
        >>> X[:, :, 0].tolist(), mask.tolist(), choice.tolist()
        ([[1.0, 2.0], [3.0, 0.0]], [[True, True], [True, False]], [1, -1])
    """

    def __init__(self, d: int) -> None:
        self.d = d
        self._sets = Buffers(
            {"end": ((), np.int64), "choice": ((), np.int64), "w": ((), float)}
        )
        self._items = Buffers({"items": ((d,), float)})

    @property
    def n(self) -> int:
        """Number of offered sets so far."""
        return self._sets.n

    def append(self, items: np.ndarray, choice: int, weight: float = 1.0) -> None:
        """Add one offered set (S, d) and the chosen slot in [0, S) or -1.

        Raises:
            ValueError: If ``choice`` is not -1 or a slot of ``items``.
        """
        items = np.asarray(items, dtype=float).reshape(-1, self.d)
        size = items.shape[0]
        choice = check_int("choice", choice, low=-1, high=size - 1)
        self._items.extend(items=items)
        self._sets.push(end=self._items.n, choice=choice, w=weight)

    items = BufferView("items", "All offered items, (N, d)", source="_items")

    @property
    def offsets(self) -> np.ndarray:
        """(n + 1,) start of each set in ``items``, then N."""
        return np.concatenate([[0], self._sets.view("end")])

    @property
    def sizes(self) -> np.ndarray:
        """(n,) sizes of the offered sets."""
        return np.diff(self.offsets)

    choice = BufferView(
        "choice", "(n,) chosen slot of each set, -1 for the outside option", "_sets"
    )
    w = BufferView("w", "(n,) weights", source="_sets")

    def padded(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return X (n, S, d) zero-padded, mask (n, S) of offered slots, choice (n,).

        S is the largest set size so far.
        """
        sizes = self.sizes
        width = int(sizes.max()) if self.n else 0
        mask = np.arange(width)[None, :] < sizes[:, None]
        X = np.zeros((self.n, width, self.d))
        X[mask] = self.items
        return X, mask, self.choice.copy()

    def state_dict(self) -> dict[str, Any]:
        """Arrays only."""
        return {**self._sets.state_dict(), **self._items.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from :meth:`state_dict`."""
        sets = {name: state.get(name) for name in self._sets.names}
        checked = self._sets.validate(sets)
        items = self._items.validate({"items": state.get("items")})["items"]
        end, choice = checked["end"], checked["choice"]
        sizes = np.diff(end, prepend=0)
        if (end.size and end[-1] != items.shape[0]) or np.any(sizes < 1):
            raise ValueError(
                "history 'end' must increase by >= 1 per set and end at the "
                f"{items.shape[0]} items."
            )
        if np.any((choice < -1) | (choice >= sizes)):
            raise ValueError("history 'choice' must be -1 or a slot of its set.")
        self._sets.load(sets)
        self._items.load({"items": items})
