"""When the served model learns: every N feedbacks, or on a static grid of feedback counts.

Feedbacks are buffered; when the n-th feedback makes the schedule *due*, every buffered
feedback is learned in arrival order and the model version goes up by one. Between two
learning steps the service decides from the last model, as a batched bandit does.

    update_every: 4                               learn at n = 4, 8, 12, ...
    update_every: {grid: [50, 200, 1000]}         learn at n = 50, 200, 1000, then every 800
    update_every: {grid: blce, horizon: 10000}    the end points of the BLCE grid for T = 10,000
                                                  (also blce-g, bgle, doubling), then every
                                                  last interval length

The named grids are those of the rare-update algorithms [Yu2026, Alg. 1-3], whose intervals
grow so that only O(log log T) learning steps happen in T rounds. Past the grid's last end
point the last interval's length repeats, so an open-ended service keeps learning.

References:
    [Yu2026] S. Yu, M. Oh. Practical and optimal algorithm for linear contextual bandits
        with rare parameter updates. arXiv:2606.00984.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from banditkit.policies.rare import GRIDS, update_grid

__all__ = ["Schedule", "make_schedule"]


@dataclass(frozen=True)
class Schedule:
    """Learning points in the count n of feedbacks received (1, 2, ...).

    Args:
        ends: Increasing end points of the grid (empty: periodic only).
        every: Period after the last end point (or from the start when ``ends`` is empty).

    Example:
        >>> s = Schedule(ends=(2, 5), every=3)
        >>> [n for n in range(1, 12) if s.due(n)]
        [2, 5, 8, 11]
    """

    ends: tuple[int, ...]
    every: int

    def due(self, n: int) -> bool:
        """Whether the model learns when the n-th feedback arrives."""
        if self.ends and n <= self.ends[-1]:
            return n in self.ends
        last = self.ends[-1] if self.ends else 0
        return (n - last) % self.every == 0


def _grid(spec: Mapping[str, Any]) -> tuple[int, ...]:
    extra = set(spec) - {"grid", "horizon"}
    if extra:
        raise ValueError(
            f"update_every: unknown keys {sorted(extra)}; use grid (and horizon)."
        )
    grid = spec.get("grid")
    if isinstance(grid, str):
        if grid not in GRIDS:
            raise ValueError(
                f"update_every.grid must be a list of counts or one of {list(GRIDS)}; "
                f"got {grid!r}."
            )
        horizon = spec.get("horizon")
        if not isinstance(horizon, int) or isinstance(horizon, bool) or horizon < 1:
            raise ValueError(
                f"update_every.horizon must be an integer >= 1 for grid {grid!r}; got "
                f"{horizon!r}."
            )
        return update_grid(grid, horizon)
    if "horizon" in spec:
        raise ValueError("update_every.horizon goes with a named grid only.")
    if (
        not isinstance(grid, list)
        or not grid
        or not all(isinstance(t, int) and not isinstance(t, bool) for t in grid)
    ):
        raise ValueError(
            f"update_every.grid must be a non-empty list of integers; got {grid!r}."
        )
    if grid[0] < 1 or any(b <= a for a, b in itertools.pairwise(grid)):
        raise ValueError(
            f"update_every.grid must increase strictly from >= 1; got {grid!r}."
        )
    return tuple(grid)


def make_schedule(spec: int | Mapping[str, Any]) -> Schedule:
    """The schedule of a config's ``update_every`` value.

    Raises:
        ValueError: A bad value; the message names ``update_every``.

    Example:
        >>> make_schedule({"grid": [3, 10]}).every
        7
    """
    if isinstance(spec, Mapping):
        ends = _grid(spec)
        every = ends[-1] - ends[-2] if len(ends) > 1 else ends[-1]
        return Schedule(ends=ends, every=every)
    if isinstance(spec, bool) or not isinstance(spec, int) or spec < 1:
        raise ValueError(
            f"update_every must be an integer >= 1 or a {{grid: ...}} mapping; got {spec!r}."
        )
    return Schedule(ends=(), every=spec)
