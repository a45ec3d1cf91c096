"""A log of bandit feedback: the rewards, actions and propensities an off-policy estimator reads.

:class:`BanditLog` is data, not evaluation: the replay environments (``banditkit.envs``) hand
their log out as one, and the estimators of ``banditkit.ope`` (which re-exports it) read it.

The logged action is one of three kinds (``BanditLog.kind``), the actions of banditkit's three
policy families (docs/ope.md, "Propensities"):

    kind   actions                                  one of                         family
    arm    (n,) ints in [0, K)                      K arms                         contextual
    pair   (n, 2) ints in [0, K): ordered (i, j)    K^2 ordered pairs              dueling
    set    (n, m) ints: the sorted offered items,   the non-empty sets of at most  assortment
           padded with -1 to m columns              ``capacity`` of K items

The propensity of a pair or a set is that of the pair or set as a whole (the logging policy's
probability of offering exactly it), so one importance weight per row re-weights it, and IPS
and SNIPS apply unchanged (``banditkit.ope.estimators``, given the target's probability of
each logged action). ``feedback`` is what a policy learning from the log observes where it is
not the reward itself: the duel's outcome (1 when the first arm won, else 0) or the chosen
item (-1 for no purchase).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from banditkit.core.types import Action

__all__ = ["ACTION_KINDS", "BanditLog", "n_assortments", "padded_actions"]

#: What a log's action is: an arm, an ordered pair of arms, a set of items.
ACTION_KINDS = ("arm", "pair", "set")


def n_assortments(n_items: int, capacity: int) -> int:
    """The number of non-empty sets of at most ``capacity`` of ``n_items`` items.

    Example:
        >>> n_assortments(4, 2)  # 4 singletons and 6 pairs
        10
    """
    return sum(math.comb(n_items, s) for s in range(1, min(capacity, n_items) + 1))


def padded_actions(rows: Sequence[Sequence[int]]) -> np.ndarray:
    """Pairs or sets of different sizes as one (n, m) int array, padded with -1.

    Example:
        >>> padded_actions([(0, 2), (1,)]).tolist()
        [[0, 2], [1, -1]]
    """
    items = [[int(a) for a in row] for row in rows]
    width = max((len(r) for r in items), default=0)
    return np.array([r + [-1] * (width - len(r)) for r in items], dtype=np.int64)


@dataclass(frozen=True)
class BanditLog:
    """A log of n rounds of bandit feedback over ``n_actions`` arms (items).

    A log of pairs or sets is checked when it is built: actions in range, sets sorted,
    distinct and within ``capacity``, propensities in (0, 1], ``feedback`` consistent.

    Attributes:
        rewards: (n,) float rewards.
        actions: (n,) int arms in [0, n_actions) (``kind="arm"``); (n, 2) ordered pairs
            (``"pair"``); (n, m) sorted items padded with -1 (``"set"``).
        propensities: (n,) logging probabilities of the logged actions, in (0, 1].
        n_actions: K, the number of arms (items).
        features: (n, d) per-row features for a reward model (shared by the actions), or None.
        positions: (n,) display positions (OBD: 1..3), or None.
        meta: Where the log came from.
        kind: "arm", "pair" or "set" (module docstring).
        capacity: The largest set an assortment may hold (``"set"`` only; None: K).
        feedback: (n,) what a policy learning from the log observes, or None: the duel's
            outcome (1: the first arm won, 0) or the chosen item (-1: none).

    Raises:
        ValueError: A bad log of pairs or sets; the message names the argument.

    Example:
        >>> log = BanditLog(rewards=np.array([0.5, 0.2]), actions=np.array([[0, 1], [2, 2]]),
        ...                 propensities=np.array([0.25, 0.5]), n_actions=3, kind="pair")
        >>> log.n_choices, log.action(0), log.uniform_target().tolist()
        (9, (0, 1), [0.1111111111111111, 0.1111111111111111])
    """

    rewards: np.ndarray
    actions: np.ndarray
    propensities: np.ndarray
    n_actions: int
    features: np.ndarray | None = None
    positions: np.ndarray | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    kind: str = "arm"
    capacity: int | None = None
    feedback: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.kind not in ACTION_KINDS:
            raise ValueError(f"kind must be one of {ACTION_KINDS}; got {self.kind!r}.")
        if self.kind != "arm":
            _check_structured(self)

    @property
    def n(self) -> int:
        """Logged rounds."""
        return int(self.rewards.shape[0])

    @property
    def n_choices(self) -> int:
        """How many actions a round offers: K arms, K^2 ordered pairs, or the sets."""
        k = self.n_actions
        if self.kind == "arm":
            return k
        if self.kind == "pair":
            return k * k
        return n_assortments(k, self.capacity or k)

    def action(self, i: int) -> Action:
        """The logged action of row ``i`` as a policy plays it: an arm, a pair, a sorted tuple."""
        row = self.actions[i]
        if self.kind == "arm":
            return int(row)
        return tuple(int(a) for a in row if a >= 0)

    def uniform_target(self) -> np.ndarray:
        """The uniform-random policy as a target.

        (n, K) arm probabilities 1 / K for a log of arms; for pairs and sets, the (n,)
        probabilities of the logged actions, 1 / K^2 or 1 over the number of sets.
        """
        if self.kind == "arm":
            return np.full((self.n, self.n_actions), 1.0 / self.n_actions)
        return np.full(self.n, 1.0 / self.n_choices)


def _check_structured(log: BanditLog) -> None:
    """The checks of a log of pairs or sets (``BanditLog``'s docstring)."""
    n, k = log.n, log.n_actions
    a = np.asarray(log.actions)
    width = 2 if log.kind == "pair" else None
    if a.ndim != 2 or a.shape[0] != n or (width and a.shape[1] != width):
        shape = "(n, 2) ordered pairs" if width else "(n, m) sets padded with -1"
        raise ValueError(
            f"actions of a {log.kind} log must be {shape} for n = {n} rows; got shape "
            f"{a.shape}."
        )
    if a.dtype.kind not in "iu":
        raise ValueError(f"actions must hold integer items; got dtype {a.dtype}.")
    p = np.asarray(log.propensities, dtype=np.float64)
    if p.shape != (n,) or not np.all((p > 0) & (p <= 1)):
        raise ValueError(
            "propensities must be (n,) values in (0, 1] (the logging policy's probability "
            f"of the logged {log.kind}); got shape {p.shape}, values in "
            f"[{np.nanmin(p) if p.size else 0:.6g}, {np.nanmax(p) if p.size else 0:.6g}]."
        )
    if log.kind == "pair":
        bad = np.flatnonzero(((a < 0) | (a >= k)).any(axis=1))
        if bad.size:
            raise ValueError(
                f"actions must be pairs (i, j) of arms in [0, {k}); row {int(bad[0])} "
                f"is {tuple(int(x) for x in a[bad[0]])}."
            )
    else:
        _check_sets(a, k, log.capacity)
    if log.feedback is not None:
        _check_feedback(log, a)


def _check_sets(a: np.ndarray, k: int, capacity: int | None) -> None:
    """Each row: sorted distinct items in [0, K), then -1s; at least one, at most capacity."""
    for i, row in enumerate(a):
        items = row[row >= 0]
        padded = row[items.size :]
        ok = (
            items.size > 0
            and (padded == -1).all()
            and (items < k).all()
            and (np.diff(items) > 0).all()
        )
        if not ok:
            raise ValueError(
                f"actions must be non-empty sets of distinct items in [0, {k}), sorted and "
                f"padded with -1; row {i} is {row.tolist()}."
            )
        if capacity is not None and items.size > capacity:
            raise ValueError(
                f"actions: row {i} offers {items.size} items {items.tolist()}; the "
                f"capacity is {capacity}."
            )


def _check_feedback(log: BanditLog, a: np.ndarray) -> None:
    fb = np.asarray(log.feedback)
    if fb.shape != (log.n,):
        raise ValueError(
            f"feedback must have shape ({log.n},) like rewards; got {fb.shape}."
        )
    if log.kind == "pair":
        ok = np.isin(fb, (0, 1))
        what = "1 (the first arm won) or 0"
    else:
        ok = (fb == -1) | (a == fb[:, None]).any(axis=1)
        what = "an offered item or -1 (no purchase)"
    bad = np.flatnonzero(~ok)
    if bad.size:
        raise ValueError(
            f"feedback must be {what}; row {int(bad[0])} has {fb[bad[0]]!r}."
        )
