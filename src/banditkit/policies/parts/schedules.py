"""Update schedules: when a policy re-estimates its parameters.

A schedule is asked ``due(t, design)`` after the t-th observation (t counted from 1),
with the policy's Gram matrix, and answers whether to refit now. Each refit counts as
one parameter update (``Policy.n_updates``).

    Periodic(every)            every k-th observation (every=1: every round)
    Grid(rounds)               after the observations of a static grid t_1 < t_2 < ...
    DeterminantDoubling(c)     when det(V_t) > c det(V_last) [Abbasi-Yadkori2011, Sec. 5]

References:
    [Abbasi-Yadkori2011] Y. Abbasi-Yadkori, D. Pal, C. Szepesvari. Improved algorithms for
        linear stochastic bandits. NeurIPS 2011.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from typing import Any, Protocol

import numpy as np

from banditkit.core.validation import check_int, check_scalar
from banditkit.linalg import GramLike

__all__ = ["DeterminantDoubling", "Grid", "Periodic", "Schedule"]


class Schedule(Protocol):
    """When to refit: ``due`` after each observation; state for checkpoints."""

    def due(self, t: int, design: GramLike | None = None) -> bool:
        """Whether to refit after observation ``t`` (1-based)."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """Scalars only."""
        ...

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from ``state_dict``."""
        ...


class Periodic:
    """Refit after every ``every``-th observation (``every=1``: every round).

    Example:
        >>> [Periodic(3).due(t) for t in range(1, 7)]
        [False, False, True, False, False, True]
    """

    def __init__(self, every: int = 1) -> None:
        self.every = check_int("update_every", every, low=1)

    def due(self, t: int, design: GramLike | None = None) -> bool:
        """Whether to refit after observation ``t`` (1-based)."""
        return t % self.every == 0

    def state_dict(self) -> dict[str, Any]:
        """Stateless: an empty dict."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Stateless: nothing to restore."""


class Grid:
    """Refit after the observations of a static grid of rounds (batched bandits).

    Args:
        rounds: The rounds t_1 < t_2 < ... (>= 1) after which to refit.

    Raises:
        ValueError: If the rounds are not strictly increasing positive ints.

    Example:
        >>> [t for t in range(1, 20) if Grid([2, 5, 11]).due(t)]
        [2, 5, 11]
    """

    def __init__(self, rounds: Iterable[int]) -> None:
        grid = [check_int("rounds", t, low=1) for t in rounds]
        if any(b <= a for a, b in itertools.pairwise(grid)):
            raise ValueError(f"rounds must be strictly increasing; got {grid}.")
        self.rounds = tuple(grid)
        self._set = frozenset(grid)

    def due(self, t: int, design: GramLike | None = None) -> bool:
        """Whether ``t`` is on the grid."""
        return t in self._set

    def state_dict(self) -> dict[str, Any]:
        """Stateless: an empty dict (the grid is a hyper-parameter)."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Stateless: nothing to restore."""


class DeterminantDoubling:
    """Refit when det(V_t) > factor * det(V_last), V_last the Gram at the last refit.

    The rarely switching test of [Abbasi-Yadkori2011, Sec. 5] (factor 1 + C, here 2 by
    default): O(d log T) refits over T rounds. Reads ``design.logdet``; the first call
    compares against the Gram's starting log-determinant d log lam.

    Args:
        factor: c > 1.

    Example:
        >>> from banditkit.linalg import Gram
        >>> V, schedule = Gram(1, 1.0), DeterminantDoubling()
        >>> hits = []
        >>> for t in range(1, 9):
        ...     V.update(np.ones(1))
        ...     hits.append(schedule.due(t, V))
        >>> [t for t, hit in enumerate(hits, 1) if hit]  # det = 1 + t > 2 det_last
        [2, 6]
    """

    def __init__(self, factor: float = 2.0) -> None:
        self.factor = check_scalar("factor", factor, low=1.0, low_open=True)
        self._log_factor = math.log(self.factor)
        self.last_logdet: float | None = None

    def due(self, t: int, design: GramLike | None = None) -> bool:
        """Whether log det V_t > log det V_last + log factor (then V_last = V_t).

        Raises:
            ValueError: If no design is given.
        """
        if design is None:
            raise ValueError(
                "design must be the policy's Gram for DeterminantDoubling."
            )
        logdet = design.logdet
        if self.last_logdet is None:
            self.last_logdet = design.d * float(np.log(design.lam))
        if logdet > self.last_logdet + self._log_factor:
            self.last_logdet = logdet
            return True
        return False

    def state_dict(self) -> dict[str, Any]:
        """The log-determinant at the last refit (None before the first call)."""
        return {"last_logdet": self.last_logdet}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from :meth:`state_dict`."""
        last = state.get("last_logdet")
        self.last_logdet = None if last is None else float(last)
