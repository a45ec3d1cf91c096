"""The order in which a pool of workers computes the runs of an experiment.

A grid's wall time on J workers is at least max(longest run, total / J); a worker that takes
the runs in the config's order can leave the expensive runs for last and finish them alone
while the others idle. :class:`RunScheduler` hands out runs longest-expected-first
(longest-processing-time-first, LPT), with the cost of a run learned while the grid runs:

    1. probe: while some kind of run (everything but the seed: a task's ``kind``) has
       not started, the next run is the first run of the first such kind (config order;
       given a priori ``costs``, such as the rounds of each run, the dearest kind first);
    2. then the kind with the largest expected cost goes next: the mean CPU (or wall)
       seconds of its finished runs, or, while none has finished, the time its running
       probe has taken so far (a lower bound, which grows);
    3. ties go to a kind priced by its running probe (its cost is at least that), then
       to the config's order; runs of one kind keep their order (seeds).

Runs of one kind (same environment, policy, parameters and horizon; only the seed differs)
cost about the same, so one probe per kind prices the rest. The order changes no result:
each run is computed alone from its spec, and the store files it under its id.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

__all__ = ["Replay", "RunScheduler", "simulate_schedule"]


class RunScheduler:
    """Longest-expected-first order of runs, the costs learned from finished runs.

    Args:
        kinds: The kind of each run (hashable; runs of one kind cost about the same),
            in the config's order.
        costs: An a priori cost of each run (its rounds), which orders the probes:
            the dearest kind's first. None: the config's order.

    Example:
        >>> s = RunScheduler(["a", "a", "b", "b"])
        >>> [s.take(0.0), s.take(0.0)]  # one probe per kind first
        [0, 2]
        >>> s.finish(0, 5.0); s.finish(2, 1.0)
        >>> [s.take(5.0), s.take(5.0), s.take(5.0)]  # then the dearest kind
        [1, 3, None]
    """

    def __init__(
        self, kinds: Sequence[Hashable], costs: Sequence[float] | None = None
    ) -> None:
        self._order: list[Hashable] = []
        self._left: dict[Hashable, deque[int]] = {}
        for index, kind in enumerate(kinds):
            if kind not in self._left:
                self._order.append(kind)
                self._left[kind] = deque()
            self._left[kind].append(index)
        if costs is not None:  # stable: equal costs keep the config's order
            first = {kind: self._left[kind][0] for kind in self._order}
            self._order.sort(key=lambda kind: -costs[first[kind]])
        self._kind = list(kinds)
        self._rank = {kind: i for i, kind in enumerate(self._order)}
        self._done: dict[Hashable, list[float]] = {k: [] for k in self._order}
        self._running: dict[int, float] = {}  # run index -> start time
        self._started: set[Hashable] = set()

    @property
    def remaining(self) -> int:
        """Runs not handed out yet."""
        return sum(len(v) for v in self._left.values())

    def expected(self, kind: Hashable, now: float) -> float | None:
        """Expected seconds of a run of ``kind`` (None: none started yet).

        The mean of its finished runs, else the longest elapsed time of its running ones.
        """
        done = self._done[kind]
        if done:
            return sum(done) / len(done)
        elapsed = [
            now - start for i, start in self._running.items() if self._kind[i] == kind
        ]
        return max(elapsed) if elapsed else None

    def take(self, now: float) -> int | None:
        """The index of the run to start now (None when every run has been handed out)."""
        kinds = [k for k in self._order if self._left[k]]
        if not kinds:
            return None
        fresh = [k for k in kinds if k not in self._started]
        if fresh:
            kind = fresh[0]
        else:
            # ties: a kind priced by a running probe (a lower bound) first, then config order
            kind = max(
                kinds,
                key=lambda k: (
                    self.expected(k, now) or 0.0,
                    not self._done[k],
                    -self._rank[k],
                ),
            )
        index = self._left[kind].popleft()
        self._started.add(kind)
        self._running[index] = now
        return index

    def finish(self, index: int, seconds: float | None) -> None:
        """Record that run ``index`` ended after ``seconds`` (None: it failed)."""
        self._running.pop(index, None)
        if seconds is not None:
            self._done[self._kind[index]].append(float(seconds))


@dataclass(frozen=True)
class Replay:
    """A grid replayed on idle workers: its wall time, each worker's busy time, the order."""

    makespan: float
    busy: list[float]
    order: list[int]


def simulate_schedule(
    seconds: Sequence[float],
    kinds: Sequence[Hashable] | None,
    workers: int,
) -> Replay:
    """Replay a grid on ``workers`` idle workers with known run times.

    With ``kinds`` the runs are handed out by :class:`RunScheduler`; with None in their
    given order (the first free worker takes the next run).

    Example:
        >>> simulate_schedule([1, 1, 4], None, 2).makespan
        5.0
        >>> simulate_schedule([1, 1, 4], ["a", "a", "b"], 2).makespan
        4.0
    """
    if workers < 1:
        raise ValueError(f"workers must be >= 1; got {workers!r}.")
    n = len(seconds)
    scheduler = RunScheduler(list(kinds)) if kinds is not None else None
    free_at = [0.0] * workers
    busy = [0.0] * workers
    running: list[tuple[float, int, int]] = []  # (end, worker, run)
    order: list[int] = []
    queue = list(range(n))
    now = 0.0
    while True:
        for w in range(workers):
            if free_at[w] <= now and not any(r[1] == w for r in running):
                if scheduler is not None:
                    index = scheduler.take(now)
                else:
                    index = queue.pop(0) if queue else None
                if index is None:
                    continue
                order.append(index)
                end = now + float(seconds[index])
                running.append((end, w, index))
                busy[w] += float(seconds[index])
                free_at[w] = end
        if not running:
            break
        running.sort()
        end, w, index = running.pop(0)
        now = end
        if scheduler is not None:
            scheduler.finish(index, float(seconds[index]))
    return Replay(makespan=max(free_at), busy=busy, order=order)
