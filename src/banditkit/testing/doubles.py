"""Scripted environments: small, seeded, fully known instances of each family for tests.

Each hides a linear utility v_k = x_k^T theta (theta on the unit sphere, ``instance_rng``) and
shows K Gaussian arm vectors a round (``context_rng``, N(0, I / d) times ``arm_scale``, so
||x|| is about ``arm_scale``); one uniform draw
u per round (``noise_rng``, drawn before the action) decides the outcome:

    family       feedback                                          regret
    contextual   real: v_a + reward_scale * N(0,1) noise;          max_k m_k - m_a, m_k the mean
                 binary: 1[u < sigmoid(v_a)]
    dueling      1[u < sigmoid(v_i - v_j)] (first arm won)         (2 v* - v_i - v_j) / 2
    assortment   MNL choice among S: item k w.p. e^{v_k} / (1 +   R(S*) - R(S), R the expected
                 sum_{j in S} e^{v_j}), -1 (no purchase) otherwise  revenue

They exist to drive policies through every contract of ``banditkit.testing``, oracles included
(each implements ``best_action``); they are not benchmarks.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from scipy.special import expit

from banditkit.assortment import optimal_assortment
from banditkit.core import Context, Environment, Step
from banditkit.core.params import Choice, Flag, Int, Maybe, Real, param
from banditkit.core.policy import REWARD_KINDS
from banditkit.core.types import FAMILIES, Action
from banditkit.core.validation import check_choice

__all__ = [
    "ScriptedAssortmentEnv",
    "ScriptedContextualEnv",
    "ScriptedDuelingEnv",
    "ScriptedEnvironment",
    "scripted_env",
]


class ScriptedEnvironment(Environment):
    """Shared machinery of the scripted environments.

    Args:
        n_arms: K, arms (items) per round, >= 1.
        d: Feature dimension, >= 1.
        arm_scale: Typical norm of the arm vectors, >= 0 (0: every arm is zero).
        duplicate_arms: Show K copies of one vector each round (exact ties everywhere).
    """

    n_arms: int = param(Int(low=1), default=4)
    d: int = param(Int(low=1), default=3)
    arm_scale: float = param(Real(low=0.0), default=1.0)
    duplicate_arms: bool = param(Flag(), default=False)

    def _resolve(self) -> None:
        self.theta = np.zeros(self.d)
        self._u = 0.0

    def _reset(self) -> None:
        theta = self.instance_rng.normal(size=self.d)
        self.theta = theta / np.linalg.norm(theta)

    def _arms(self) -> np.ndarray:
        rows = 1 if self.duplicate_arms else self.n_arms
        scale = self.arm_scale / np.sqrt(self.d)
        arms = scale * self.context_rng.normal(size=(rows, self.d))
        self._u = float(self.noise_rng.random())
        return np.repeat(arms, self.n_arms, axis=0) if self.duplicate_arms else arms

    def _utilities(self, ctx: Context) -> np.ndarray:
        return np.asarray(ctx.arms @ self.theta, dtype=np.float64)


class ScriptedContextualEnv(ScriptedEnvironment):
    """Contextual scripted environment (see the module docstring).

    Args:
        reward_kind: "real" (Gaussian noise) or "binary" (Bernoulli rewards), matching the
            policy's ``reward_kind``.
        reward_scale: Noise standard deviation of real rewards, >= 0.
        **kwargs: Those of :class:`ScriptedEnvironment`.

    Example:
        >>> env = ScriptedContextualEnv(n_arms=3, d=2, reward_kind="binary")
        >>> env.reset(0); ctx = env.context()
        >>> env.step(env.best_action()).regret
        0.0
    """

    family: ClassVar[str] = "contextual"

    reward_kind: str = param(Choice(REWARD_KINDS), default="real")
    reward_scale: float = param(Real(low=0.0), default=1.0)
    _noise = 0.0  # this round's N(0, 1) draw

    def _next_context(self) -> Context:
        ctx = Context(arms=self._arms())
        self._noise = float(self.noise_rng.normal())
        return ctx

    def _means(self, ctx: Context) -> np.ndarray:
        v = self._utilities(ctx)
        return np.asarray(expit(v)) if self.reward_kind == "binary" else v

    def best_action(self) -> Action:
        """The arm of largest mean reward this round."""
        assert self.current is not None
        return int(np.argmax(self._means(self.current)))

    def _step(self, ctx: Context, action: Action) -> Step:
        assert isinstance(action, int)
        means = self._means(ctx)
        if self.reward_kind == "binary":
            feedback = float(self._u < means[action])
        else:
            feedback = float(means[action] + self.reward_scale * self._noise)
        return Step(
            feedback=feedback,
            reward=feedback,
            regret=float(means.max() - means[action]),
        )


class ScriptedDuelingEnv(ScriptedEnvironment):
    """Dueling scripted environment: Bradley-Terry duels on the hidden utilities.

    Example:
        >>> env = ScriptedDuelingEnv(n_arms=3, d=2)
        >>> env.reset(0); ctx = env.context()
        >>> i, j = env.best_action(); i == j
        True
    """

    family: ClassVar[str] = "dueling"

    def _next_context(self) -> Context:
        return Context(arms=self._arms())

    def best_action(self) -> Action:
        """The best arm duelling itself, (i*, i*): zero average regret."""
        assert self.current is not None
        best = int(np.argmax(self._utilities(self.current)))
        return (best, best)

    def _step(self, ctx: Context, action: Action) -> Step:
        assert isinstance(action, tuple)
        i, j = action
        v = self._utilities(ctx)
        won = int(self._u < float(expit(v[i] - v[j])))
        return Step(
            feedback=won,
            reward=float((v[i] + v[j]) / 2),
            regret=float((2 * v.max() - v[i] - v[j]) / 2),
        )


class ScriptedAssortmentEnv(ScriptedEnvironment):
    """Assortment scripted environment: multinomial-logit choice with per-item revenues.

    Args:
        max_size: Capacity m >= 1 shown in every context (None: no limit).
        **kwargs: Those of :class:`ScriptedEnvironment`.

    Example:
        >>> env = ScriptedAssortmentEnv(n_arms=4, d=2, max_size=2)
        >>> env.reset(0); ctx = env.context()
        >>> env.step(env.best_action()).regret
        0.0
    """

    family: ClassVar[str] = "assortment"

    max_size: int | None = param(Maybe(Int(low=1)), default=2)

    def _next_context(self) -> Context:
        arms = self._arms()
        revenues = self.context_rng.uniform(0.1, 1.0, size=self.n_arms)
        return Context(arms=arms, revenues=revenues, max_size=self.max_size)

    def _revenue(self, ctx: Context, offer: tuple[int, ...]) -> float:
        assert ctx.revenues is not None
        w = np.exp(self._utilities(ctx)[list(offer)])
        return float(w @ ctx.revenues[list(offer)] / (1.0 + w.sum()))

    def best_action(self) -> Action:
        """The revenue-maximising assortment within capacity (``bk.assortment``, exact)."""
        ctx = self.current
        assert ctx is not None and ctx.revenues is not None
        capacity = ctx.n_arms if ctx.max_size is None else ctx.max_size
        return optimal_assortment(
            self._utilities(ctx), ctx.revenues, capacity=capacity
        ).items

    def _step(self, ctx: Context, action: Action) -> Step:
        assert isinstance(action, tuple) and ctx.revenues is not None
        w = np.exp(self._utilities(ctx)[list(action)])
        cumulative = np.cumsum(w) / (1.0 + w.sum())
        pick = int(np.searchsorted(cumulative, self._u, side="right"))
        choice = action[pick] if pick < len(action) else -1
        best = self.best_action()
        revenue = self._revenue(ctx, action)
        return Step(
            feedback=choice,
            reward=float(ctx.revenues[choice]) if choice >= 0 else 0.0,
            regret=self._revenue(ctx, tuple(best)) - revenue,  # type: ignore[arg-type]
        )


_BY_FAMILY: dict[str, type[ScriptedEnvironment]] = {
    "contextual": ScriptedContextualEnv,
    "dueling": ScriptedDuelingEnv,
    "assortment": ScriptedAssortmentEnv,
}


def scripted_env(
    family: str, *, reward_kind: str = "real", **kwargs: object
) -> ScriptedEnvironment:
    """The scripted environment of ``family``; ``reward_kind`` matters to contextual only.

    Example:
        >>> scripted_env("dueling", n_arms=5).family
        'dueling'
    """
    check_choice("family", family, list(FAMILIES))
    if family == "contextual":
        return ScriptedContextualEnv(reward_kind=reward_kind, **kwargs)  # type: ignore[arg-type]
    return _BY_FAMILY[family](**kwargs)  # type: ignore[arg-type]
