"""Update schedules: when a policy re-estimates its parameters.

A schedule is asked ``due(t)`` after the t-th observation (t counted from 1) and answers whether
to refit now. Each refit counts as one parameter update (``Policy.n_updates``).
"""

from __future__ import annotations

from banditkit.core.validation import check_int

__all__ = ["Periodic"]


class Periodic:
    """Refit after every ``every``-th observation (``every=1``: every round).

    Example:
        >>> [Periodic(3).due(t) for t in range(1, 7)]
        [False, False, True, False, False, True]
    """

    def __init__(self, every: int = 1) -> None:
        self.every = check_int("update_every", every, low=1)

    def due(self, t: int) -> bool:
        """Whether to refit after observation ``t`` (1-based)."""
        return t % self.every == 0
