"""Reference policies: uniform play and the oracle."""

from __future__ import annotations

from typing import Any

from banditkit.core import POLICIES, Context, Environment, Policy
from banditkit.core.types import Action, Feedback

__all__ = ["Oracle", "RandomDuel", "RandomPolicy"]


@POLICIES.register("random")
class RandomPolicy(Policy):
    """Uniform play: each round an arm uniformly at random.

    Example:
        >>> from banditkit.core import Context
        >>> import numpy as np
        >>> RandomPolicy(seed=0).act(Context(arms=np.eye(3))) in range(3)
        True
    """

    def __init__(self, *, seed: int = 0) -> None:
        super().__init__(seed=seed)

    def _act(self, ctx: Context) -> Action:
        self.last_propensity = 1.0 / ctx.n_arms
        return int(self.rng.integers(ctx.n_arms))

    def _update(self, ctx: Context, action: Action, feedback: Feedback) -> None:
        pass


@POLICIES.register("oracle")
class Oracle(Policy):
    """Plays the environment's optimal action (zero regret); a reference for tests and plots.

    It reads the environment's expected values through ``Environment.best_action``, which
    ``simulate`` makes available by calling ``attach``. It learns nothing.
    """

    def __init__(self, *, seed: int = 0) -> None:
        super().__init__(seed=seed)
        self._env: Environment | None = None

    def attach(self, env: Environment) -> None:
        """Keep a reference to the environment whose optimal action is played."""
        self._env = env

    def _act(self, ctx: Context) -> Action:
        if self._env is None:
            raise RuntimeError(
                "the oracle needs attach(env) before act(); simulate() does it."
            )
        return self._env.best_action()

    def _update(self, ctx: Context, action: Action, feedback: Feedback) -> None:
        pass

    def _state(self) -> dict[str, Any]:
        return {}


@POLICIES.register("random-duel")
class RandomDuel(Policy):
    """Uniform dueling play: an ordered pair of two distinct arms drawn uniformly at random.

    With a single arm the pair is (0, 0).

    Example:
        >>> from banditkit.core import Context
        >>> i, j = RandomDuel(seed=0).act(Context(arms=np.eye(4)))
        >>> i != j
        True
    """

    family = "dueling"

    def __init__(self, *, seed: int = 0) -> None:
        super().__init__(seed=seed)

    def _act(self, ctx: Context) -> Action:
        if ctx.n_arms == 1:
            return (0, 0)
        first, second = self.rng.choice(ctx.n_arms, size=2, replace=False)
        return (int(first), int(second))

    def _update(self, ctx: Context, action: Action, feedback: Feedback) -> None:
        pass
