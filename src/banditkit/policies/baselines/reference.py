"""Reference policies of every family: uniform play and the oracle.

    family        uniform play          oracle
    contextual    random                oracle
    dueling       random-duel           oracle-duel
    assortment    random-assortment     oracle-assortment

The registry files each policy under one family (``list_policies(family)``), so each family has
its own oracle name; the three oracles share one rule: play ``env.best_action()``.
"""

from __future__ import annotations

from functools import partial
from typing import Any, ClassVar

from banditkit.core import (
    POLICIES,
    AssortmentPolicy,
    Context,
    ContextualPolicy,
    DuelingPolicy,
    Environment,
)
from banditkit.core.types import Action, Feedback
from banditkit.policies.parts.propensity import PointLaw

__all__ = [
    "AssortmentOracle",
    "DuelingOracle",
    "Oracle",
    "RandomAssortment",
    "RandomDuel",
    "RandomPolicy",
]


class _PlaysBestAction:
    """The oracle rule: play the attached environment's optimal action, learn nothing.

    It reads the environment's expected values through ``Environment.best_action``, which
    ``simulate`` makes available by calling ``attach``.
    """

    family: ClassVar[str]
    _env: Environment | None = None

    def attach(self, env: Environment) -> None:
        """Keep a reference to the environment whose optimal action is played.

        Raises:
            ValueError: If ``env`` is of another family.
        """
        if env.family != self.family:
            raise ValueError(
                f"env is of the {env.family} family; this oracle plays {self.family} actions."
            )
        self._env = env

    def _act(self, ctx: Context) -> Action:
        if self._env is None:
            raise RuntimeError(
                "the oracle needs attach(env) before act(); simulate() does it."
            )
        action = self._check_action(self._env.best_action(), ctx)  # type: ignore[attr-defined]
        self.propose(PointLaw(action))  # type: ignore[attr-defined]  # probability 1
        return action

    def _update(self, ctx: Context, action: Action, feedback: Feedback) -> None:
        pass

    def _state(self) -> dict[str, Any]:
        return {}


class _PlaysUniform:
    """Uniform play over the round's actions (``Policy._uniform_action``), learning nothing."""

    def _act(self, ctx: Context) -> Action:
        self.propose(partial(self._uniform_probability, ctx))  # type: ignore[attr-defined]
        return self._uniform_action(ctx)  # type: ignore[attr-defined]

    def _update(self, ctx: Context, action: Action, feedback: Feedback) -> None:
        pass


def _distinct_pair_probability(k: int, action: Action) -> float:
    """``random-duel``'s law: 1 / (K (K - 1)) for a pair of distinct arms ((0, 0) if K = 1)."""
    assert isinstance(action, tuple)
    i, j = action
    if k == 1:
        return 1.0
    return 0.0 if i == j else 1.0 / (k * (k - 1))


@POLICIES.register("random")
class RandomPolicy(_PlaysUniform, ContextualPolicy):
    """Uniform play: each round an arm uniformly at random (propensity 1/K).

    Example:
        >>> from banditkit.core import Context
        >>> import numpy as np
        >>> RandomPolicy(seed=0).act(Context(arms=np.eye(3))) in range(3)
        True
    """


@POLICIES.register("oracle")
class Oracle(_PlaysBestAction, ContextualPolicy):
    """Plays the environment's optimal arm (zero regret); a reference for tests and plots."""


@POLICIES.register("random-duel")
class RandomDuel(DuelingPolicy):
    """Uniform dueling play: an ordered pair of two distinct arms drawn uniformly at random.

    With a single arm the pair is (0, 0). The propensity is 1 / (K (K - 1)).

    Example:
        >>> from banditkit.core import Context
        >>> import numpy as np
        >>> i, j = RandomDuel(seed=0).act(Context(arms=np.eye(4)))
        >>> i != j
        True
    """

    def _act(self, ctx: Context) -> Action:
        k = ctx.n_arms
        self.propose(partial(_distinct_pair_probability, k))
        if k == 1:
            return (0, 0)
        first, second = self.rng.choice(k, size=2, replace=False)
        return (int(first), int(second))

    def _update(self, ctx: Context, action: Action, feedback: Feedback) -> None:
        pass


@POLICIES.register("oracle-duel")
class DuelingOracle(_PlaysBestAction, DuelingPolicy):
    """Plays the environment's optimal pair.

    By convention the best arm duelling itself, (i*, i*), which has zero average regret.
    """


@POLICIES.register("random-assortment")
class RandomAssortment(_PlaysUniform, AssortmentPolicy):
    """Uniform assortment play: a non-empty set of at most m items, uniform over all of them.

    With K items and capacity m (``ctx.max_size``, K when absent) there are
    N = sum_{s=1}^{m} C(K, s) such sets; the size s is drawn with probability C(K, s) / N
    and then s distinct items uniformly, so every set has propensity 1 / N.

    Example:
        >>> from banditkit.core import Context
        >>> import numpy as np
        >>> offer = RandomAssortment(seed=0).act(Context(arms=np.eye(5), max_size=2))
        >>> 1 <= len(offer) <= 2
        True
    """


@POLICIES.register("oracle-assortment")
class AssortmentOracle(_PlaysBestAction, AssortmentPolicy):
    """Plays the environment's revenue-maximising assortment (zero regret)."""
