"""Helpers shared by the tests of the run order and the process-grid benchmark."""

from __future__ import annotations

import itertools


def brute_force_makespan(seconds: list[float], workers: int) -> float:
    """The optimal makespan of ``seconds`` on ``workers``, by trying every assignment."""
    best = float("inf")
    for assignment in itertools.product(range(workers), repeat=len(seconds)):
        loads = [0.0] * workers
        for w, sec in zip(assignment, seconds, strict=True):
            loads[w] += sec
        best = min(best, max(loads))
    return best
