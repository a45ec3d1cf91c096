"""A history's observations as the trainer reads them, on the model's dtype and device.

    History       nn.Rows  (X, y, w)
    PairHistory   nn.Pairs over the table [X1; X2]: first = i, second = n + i, y = outcome
    SetHistory    nn.Sets  over the ragged item table, offered slots padded with -1

``DeviceObservations`` keeps the rows of one history in preallocated device buffers
(``nn.GrowingBuffer``, grown geometrically): at each refit only the rows appended since
the last one cross to the device, checked once on the host as they go (finite values),
and the containers are built on the device views without checking again. The weights are
copied whole at each refit (n numbers): policies rewrite them in place (NVLDB's
1 / zeta_i^2). On the CPU in float64 (the history's own dtype) the history's arrays are
wrapped without any copy instead.

A history is assumed append-only between refits, apart from its weights: a history that
shrank, another history object, or one whose last mirrored row changed (a reloaded state)
is mirrored afresh. ``GroupedRows`` keeps the distinct rows of a ``History`` the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from banditkit.core.lazy import torch  # imported at first use
from banditkit.policies.parts.history import History, PairHistory, SetHistory

if TYPE_CHECKING:
    from banditkit import nn
else:
    from banditkit.core.lazy import lazy_import

    nn = lazy_import("banditkit.nn")

__all__ = [
    "DeviceObservations",
    "GroupedRows",
    "distinct_duels",
    "member_sets",
    "observations_of",
]


def _pair_indices(n: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """First = 0..n-1 and second = n..2n-1: rows of the table [X1; X2]."""
    first = torch.arange(n, device=device)
    return first, first + n


def _set_items(history: SetHistory) -> np.ndarray:
    """(n, S) rows of each set's items in the ragged table, -1 on the padded slots."""
    sizes = history.sizes
    slots = np.arange(int(sizes.max()))[None, :]
    return np.where(slots < sizes[:, None], history.offsets[:-1, None] + slots, -1)


def distinct_duels(history: PairHistory) -> np.ndarray | None:
    """The duels of two different arms (x_i1 != x_i2), as indices; None if every one is.

    A duel of an arm with itself has the margin f(x) - f(x) = 0 whatever the parameters:
    its term of a pair loss is a constant and its gradient is 0, so a fit on the
    distinct duels alone has the same gradient (up to rounding) and the same minimiser.
    At least one duel is kept (the first, when none is distinct), so that the fit still
    takes its penalty's steps.

    Example:
        >>> h = PairHistory(1)
        >>> for a, b in ((1.0, 1.0), (2.0, 1.0), (3.0, 3.0)):
        ...     h.append(np.array([a]), np.array([b]), 1.0)
        >>> distinct_duels(h).tolist()
        [1]
    """
    keep = np.flatnonzero((history.X1 != history.X2).any(axis=1))
    if keep.size == history.n:
        return None
    return keep if keep.size else np.zeros(1, dtype=np.int64)


def observations_of(
    history: History | PairHistory | SetHistory,
    *,
    weighted: bool = True,
    dtype: torch.dtype | None = None,
    device: torch.device | str = "cpu",
    distinct: bool = False,
) -> nn.Rows | nn.Pairs | nn.Sets:
    """The ``nn.observations`` container of a history, with its weights w if ``weighted``.

    Rows for a ``History``; Pairs over the table [X1; X2] (first = i, second = n + i,
    y = the outcome) for a ``PairHistory``, of its distinct duels only if ``distinct``
    (:func:`distinct_duels`); Sets over the ragged item table (padded slots -1) for a
    ``SetHistory``. A fresh, checked conversion (float64 on the CPU by default); models
    keep a ``DeviceObservations`` instead.

    Raises:
        TypeError: For anything else.

    Example:
        >>> h = PairHistory(1)
        >>> h.append(np.array([2.0]), np.array([1.0]), 1.0, weight=4.0)
        >>> pairs = observations_of(h)
        >>> pairs.X[:, 0].tolist(), pairs.first.tolist(), pairs.second.tolist()
        ([2.0, 1.0], [0], [1])
    """
    dtype = torch.float64 if dtype is None else dtype
    w = history.w if weighted else None
    if isinstance(history, History):
        return nn.Rows(history.X, history.y, w, dtype=dtype, device=device)
    if isinstance(history, PairHistory):
        X1, X2, y = history.X1, history.X2, history.outcome
        keep = distinct_duels(history) if distinct else None
        if keep is not None:
            X1, X2, y = X1[keep], X2[keep], y[keep]
            w = None if w is None else w[keep]
        n = len(y)
        return nn.Pairs(
            np.concatenate([X1, X2]),
            np.arange(n),
            np.arange(n, 2 * n),
            y,
            w,
            dtype=dtype,
            device=device,
        )
    if isinstance(history, SetHistory):
        return nn.Sets(
            history.items,
            _set_items(history),
            history.choice,
            w,
            dtype=dtype,
            device=device,
        )
    raise TypeError(
        "history must be a History, a PairHistory or a SetHistory; "
        f"got {type(history).__name__}."
    )


def member_sets(
    histories: list[SetHistory],
    *,
    dtype: torch.dtype,
    device: torch.device | str = "cpu",
) -> nn.Sets:
    """The sets of S histories with equal n as one per-member ``nn.Sets``.

    Member s keeps the layout of its own ``observations_of``: its ragged item table,
    padded with zero rows to the longest table (rows no set offers), and its items
    (n, S_s) padded with empty slots (-1) to the widest set; so each member's loss and
    gradient are those of its own fit up to the order of floating-point operations.

    Raises:
        ValueError: If the histories hold different numbers of sets.

    Example:
        >>> a, b = SetHistory(1), SetHistory(1)
        >>> a.append(np.array([[1.0], [2.0]]), choice=0)
        >>> b.append(np.array([[3.0]]), choice=-1)
        >>> sets = member_sets([a, b], dtype=torch.float64)
        >>> tuple(sets.X.shape), sets.items.tolist(), sets.choice.tolist()
        ((2, 2, 1), [[[0, 1]], [[0, -1]]], [[0], [-1]])
    """
    n = {h.n for h in histories}
    if len(n) != 1:
        raise ValueError(f"the histories must hold as many sets; got {sorted(n)}.")
    rows = max(h.items.shape[0] for h in histories)
    width = max(int(h.sizes.max()) for h in histories)
    d = histories[0].d
    X = np.zeros((len(histories), rows, d))
    items = np.full((len(histories), n.pop(), width), -1, dtype=np.int64)
    for s, h in enumerate(histories):
        X[s, : h.items.shape[0]] = h.items
        own = _set_items(h)
        items[s, :, : own.shape[1]] = own
    choice = np.stack([h.choice for h in histories])
    return nn.Sets(X, items, choice, dtype=dtype, device=device)


class DeviceObservations:
    """The observations of one history at a time, mirrored on a device (module docstring).

    Args:
        dtype: The network's dtype.
        device: The network's device.

    Example:
        >>> obs = DeviceObservations(torch.float32, torch.device("cpu"))
        >>> h = History(2)
        >>> h.append(np.array([1.0, 2.0]), 1.0)
        >>> rows = obs(h)
        >>> rows.X.dtype, rows.n
        (torch.float32, 1)
    """

    def __init__(self, dtype: torch.dtype, device: torch.device) -> None:
        self.dtype, self.device = dtype, device
        #: Wrap the history's float64 host arrays, no mirror (CPU, float64).
        self.zero_copy = device.type == "cpu" and dtype == torch.float64
        self._source: object | None = None
        self._n = 0  # entries mirrored
        self._last = np.empty(0)  # host copy of the last mirrored row
        self._buffers: dict[str, nn.GrowingBuffer] = {}

    def _transaction(self) -> Callable[[], None]:
        """Undo what comes next (``core.transaction``): the mirror is built again."""

        def undo() -> None:
            self._source, self._n, self._buffers = None, 0, {}

        return undo

    def __call__(
        self,
        history: History | PairHistory | SetHistory,
        *,
        weighted: bool = True,
        distinct: bool = False,
    ) -> nn.Rows | nn.Pairs | nn.Sets:
        """The container of ``history`` (weights w if ``weighted``) on the device.

        ``distinct``: a ``PairHistory``'s distinct duels only (:func:`distinct_duels`).
        """
        if self.zero_copy or getattr(history, "n", None) == 0:
            return observations_of(
                history,
                weighted=weighted,
                dtype=self.dtype,
                device=self.device,
                distinct=distinct,
            )
        if isinstance(history, History):
            t = self._mirror(history, {"X": history.X, "y": history.y})
            w = self._weights(history.w) if weighted else None
            return nn.Rows(t["X"], t["y"], w, validate=False)
        if isinstance(history, PairHistory):
            t = self._mirror(
                history,
                {"X1": history.X1, "X2": history.X2, "y": history.outcome},
            )
            w = self._weights(history.w) if weighted else None
            X1, X2, y = t["X1"], t["X2"], t["y"]
            keep = distinct_duels(history) if distinct else None
            if keep is not None:
                index = torch.as_tensor(keep, device=self.device)
                X1, X2, y = X1[index], X2[index], y[index]
                w = None if w is None else w[index]
            first, second = _pair_indices(len(y), self.device)
            table = torch.cat([X1, X2])
            return nn.Pairs(table, first, second, y, w, validate=False)
        if isinstance(history, SetHistory):
            t = self._mirror(history, {"X": history.items}, ints={"c": history.choice})
            items = torch.as_tensor(_set_items(history), device=self.device)
            w = self._weights(history.w) if weighted else None
            return nn.Sets(t["X"], items, t["c"], w, validate=False)
        raise TypeError(
            "history must be a History, a PairHistory or a SetHistory; "
            f"got {type(history).__name__}."
        )

    def _mirror(
        self,
        history: object,
        arrays: dict[str, np.ndarray],
        ints: dict[str, np.ndarray] | None = None,
    ) -> dict[str, torch.Tensor]:
        """Device views of append-only ``arrays`` (floats) and ``ints`` (int64)."""
        ints = ints or {}
        probe = next(iter(arrays.values()))
        n = probe.shape[0]
        stale = (
            history is not self._source
            or n < self._n
            or (self._n > 0 and not np.array_equal(probe[self._n - 1], self._last))
        )
        if stale:
            self._source, self._n = history, 0
            self._buffers = {}
        new = {**arrays, **ints}
        for name, array in new.items():
            buf = self._buffers.get(name)
            if buf is None:
                dtype = self.dtype if name in arrays else torch.int64
                buf = self._buffers[name] = nn.GrowingBuffer(
                    array.shape[1:], dtype, self.device
                )
            rows = array[buf.n :]  # appended since the last refit
            if name in arrays and not np.isfinite(rows).all():
                raise ValueError(f"history {name} contains NaN or inf.")
            buf.extend(rows)
        self._n = n
        self._last = probe[n - 1].copy()
        return {name: self._buffers[name].view() for name in new}

    def _weights(self, w: np.ndarray) -> torch.Tensor:
        """The weights, copied whole (policies rewrite them in place)."""
        if not np.isfinite(w).all() or bool((w < 0).any()):
            raise ValueError("history weights must be finite and >= 0.")
        buf = self._buffers.get("w")
        if buf is None:
            buf = self._buffers["w"] = nn.GrowingBuffer((), self.dtype, self.device)
        buf.truncate(0)
        buf.extend(w)
        return buf.view()


class GroupedRows:
    """The distinct rows of one ``History``, their counts and mean targets, kept as it grows.

    ``np.unique(X, axis=0)`` over all t rows at every refit costs O(t d log t) a round,
    which at T = 10,000 outgrew the refit it serves. This keeps a dict from each row to
    its group, counts the rows appended since the last call (O(d) each), and sorts only
    the u distinct rows, with ``np.unique`` itself, so that the rows come in the order
    ``np.unique`` gives over the whole history. The target sums accumulate in the
    history's order, as ``np.bincount`` adds them, so the groups are those of the full
    computation bitwise, but for the sign of a zero: rows are keyed on x + 0.0 (-0.0
    and 0.0 are one row, as for ``np.unique``, which keeps either) and x + 0.0 is the
    row kept. A history that shrank, another history,
    or one whose last counted row changed (a reloaded state) is counted afresh, and an
    undone update (``core.transaction``) drops the groups.

    Example:
        >>> h = History(1)
        >>> for x, y in ((2.0, 1.0), (1.0, 0.0), (2.0, 0.0)):
        ...     h.append(np.array([x]), y)
        >>> X_u, ybar, counts = GroupedRows()(h)
        >>> X_u[:, 0].tolist(), ybar.tolist(), counts.tolist()
        ([1.0, 2.0], [0.0, 0.5], [1.0, 2.0])
    """

    def __init__(self) -> None:
        self._start(None)

    def _start(self, source: object | None) -> None:
        self._source, self._n = source, 0
        self._last = np.empty(0)  # the last counted row
        self._index: dict[bytes, int] = {}
        self._rows: list[np.ndarray] = []
        self._counts: list[int] = []
        self._sums: list[float] = []

    def _transaction(self) -> Callable[[], None]:
        """Undo what comes next (``core.transaction``): the groups are counted again."""

        def undo() -> None:
            self._start(None)

        return undo

    def __call__(self, history: History) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The distinct rows X_u (u, d) in ``np.unique``'s order, ybar (u,), counts (u,)."""
        X, y = history.X, history.y
        n = X.shape[0]
        if n == 0:  # no rows: no groups (as np.unique of an empty history)
            self._start(history)
            return X.copy(), np.zeros(0), np.zeros(0)
        if (
            history is not self._source
            or n < self._n
            or (self._n > 0 and not np.array_equal(X[self._n - 1], self._last))
        ):
            self._start(history)
        index, rows, counts, sums = self._index, self._rows, self._counts, self._sums
        for x, target in zip(X[self._n :] + 0.0, y[self._n :].tolist(), strict=True):
            key = x.tobytes()
            k = index.get(key)
            if k is None:
                index[key] = len(rows)
                rows.append(x)
                counts.append(1)
                sums.append(0.0 + target)
            else:
                counts[k] += 1
                sums[k] += target
        self._n, self._last = n, X[n - 1].copy()
        R = np.array(rows)
        X_u, order = np.unique(R, axis=0, return_index=True)
        c = np.asarray(counts, dtype=np.float64)[order]
        return X_u, np.asarray(sums)[order] / c, c
