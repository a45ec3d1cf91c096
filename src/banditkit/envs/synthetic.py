"""Synthetic contextual environments: ``linear`` and ``logistic``.

Each round shows K arm vectors drawn from a context law, either fresh every round or from a
finite pool of N vectors drawn once per run ([Bae2025, App. A]: a small pool lowers the effective
dimension). The expected reward of arm x is ``mean(x)``; the realised reward uses noise drawn
once per round before the action is known, so all policies under one seed see the same noise.

    linear     r = x^T theta + noise_std * eps,  eps ~ N(0, 1),  theta uniform on the unit sphere
    logistic   r = 1[u < mu(h(x))],  u ~ Unif(0, 1),  mu the sigmoid  [Bae2025, Sec. 2]

Regret is the pseudo-regret max_k mean(x_k) - mean(x_action) [Bae2025, Sec. 2].

References:
    [Bae2025] S. Bae, D. Lee. Neural logistic bandits. arXiv:2505.02069.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

import numpy as np

from banditkit.core import ENVIRONMENTS, Context, ContextualEnvironment, Step
from banditkit.core.environment import saved_queue
from banditkit.core.lazy import special  # imported at first use
from banditkit.core.params import Check, Choice, Free, Int, Maybe, Real, param
from banditkit.core.types import Action
from banditkit.core.validation import check_choice, check_int
from banditkit.envs.latent import LATENT_FUNCTIONS, LatentFn, check_theta, make_latent
from banditkit.envs.laws import LAWS, sample_contexts

__all__ = [
    "BernoulliRewards",
    "GaussianRewards",
    "LinearEnv",
    "LogisticEnv",
    "MeanRewardEnv",
    "SyntheticEnv",
]

POOL_SAMPLING = ("uniform", "permutation")


def _check_latent(name: str, h: Any) -> str | LatentFn:
    """A latent function: one of ``LATENT_FUNCTIONS`` by name, or a callable."""
    return h if callable(h) else check_choice(name, h, list(LATENT_FUNCTIONS))


class MeanRewardEnv(ContextualEnvironment):
    """A contextual bandit whose rewards are a known mean per arm plus noise.

    Each round draws the arms (``_draw_arms``), their expected rewards (``mean``) and the
    round's noise (``_draw_noise``, before the action is known, so every policy sees the same
    noise); the oracle and the regret read the expected rewards.
    """

    @abstractmethod
    def _draw_arms(self) -> np.ndarray:
        """This round's arm features (K, d), finite float64, from ``self.context_rng``."""

    @abstractmethod
    def mean(self, x: np.ndarray) -> np.ndarray:
        """Expected reward of each row of x (K, d) -> (K,)."""

    @abstractmethod
    def _draw_noise(self) -> None:
        """Draw this round's noise from ``self.noise_rng`` (before the action is known)."""

    def _next_context(self) -> Context:
        arms = self._draw_arms()
        self._means = self.mean(arms)
        self._draw_noise()
        return Context.unchecked(arms)

    def best_action(self) -> int:
        """Arm with the largest expected reward this round."""
        if self.current is None:
            raise RuntimeError("best_action() needs a current context.")
        return int(np.argmax(self._means))

    def expected_rewards(self) -> np.ndarray:
        """Expected reward of every arm this round, (K,)."""
        return self._means.copy()

    def _regret(self, action: int) -> float:
        return float(self._means.max() - self._means[action])


class GaussianRewards(MeanRewardEnv):
    """Rewards ``mean(x_a) + noise_std * eps``, ``eps ~ N(0, 1)`` drawn before the action."""

    noise_std: float
    _eps = 0.0  # this round's eps

    def _draw_noise(self) -> None:
        self._eps = float(self.noise_rng.standard_normal())

    def _step(self, ctx: Context, action: Action) -> Step:
        assert isinstance(action, int)
        reward = float(self._means[action] + self.noise_std * self._eps)
        return Step(feedback=reward, reward=reward, regret=self._regret(action))


class BernoulliRewards(MeanRewardEnv):
    """Rewards ``1[u < mean(x_a)]``, ``u ~ Unif(0, 1)`` drawn before the action."""

    _u = 0.0  # this round's u

    def _draw_noise(self) -> None:
        self._u = float(self.noise_rng.random())

    def _step(self, ctx: Context, action: Action) -> Step:
        assert isinstance(action, int)
        reward = float(self._u < self._means[action])
        return Step(feedback=reward, reward=reward, regret=self._regret(action))


class SyntheticEnv(MeanRewardEnv):
    """Shared machinery: context law, optional finite pool, expected rewards, oracle.

    Args:
        d: Feature dimension, >= 1.
        n_arms: K, arms per round, >= 1.
        law: Context law (``envs.laws.LAWS``).
        pool: None draws fresh vectors every round; an int N >= K draws N vectors once per run
            and shows K distinct pool vectors each round.
        pool_sampling: "uniform": K distinct pool indices uniformly at random each round;
            "permutation": walk through random permutations of the pool, so that a pool of
            N = T * K vectors shows every vector exactly once ([Bae2025, App. A]'s high-d~ setting).
    """

    d: int = param(Int(low=1), default=10)
    n_arms: int = param(Int(low=1), default=10)
    law: str = param(Choice(LAWS), default="unit-sphere")
    pool: int | None = param(Maybe(Int(low=1)), default=None)
    pool_sampling: str = param(Choice(POOL_SAMPLING), default="uniform")

    def _resolve(self) -> None:
        if self.pool is not None:
            check_int("pool", self.pool, low=self.n_arms)
        self._pool_x: np.ndarray | None = None
        self._queue: np.ndarray = np.empty(0, dtype=np.int64)

    def _reset(self) -> None:
        self._draw_instance()
        if self.pool is not None:
            self._pool_x = sample_contexts(
                self.instance_rng, self.law, self.pool, self.d
            )
        self._queue = np.empty(0, dtype=np.int64)

    @abstractmethod
    def _draw_instance(self) -> None:
        """Draw the hidden parameters from ``self.instance_rng``."""

    def _draw_arms(self) -> np.ndarray:
        k = self.n_arms
        if self._pool_x is None:
            return sample_contexts(self.context_rng, self.law, k, self.d)
        if self.pool_sampling == "uniform":
            idx = self.context_rng.choice(self._pool_x.shape[0], size=k, replace=False)
        else:
            if self._queue.size < k:
                self._queue = self.context_rng.permutation(self._pool_x.shape[0])
            idx, self._queue = self._queue[:k], self._queue[k:]
        return self._pool_x[idx]  # a row selection is a copy

    def _state(self) -> dict[str, Any]:
        return {"queue": self._queue}

    def _load_state(self, state: dict[str, Any]) -> None:
        pool = 0 if self._pool_x is None else self._pool_x.shape[0]
        self._queue = saved_queue(state, pool)


@ENVIRONMENTS.register("linear")
class LinearEnv(SyntheticEnv, GaussianRewards):
    """Linear bandit: r = x^T theta + noise_std * eps with ||theta||_2 = 1.

    Args:
        d: Feature dimension.
        n_arms: Arms per round (K).
        law: Context law; the default "unit-sphere" keeps |x^T theta| <= 1.
        noise_std: Standard deviation of the Gaussian reward noise, >= 0.
        pool: See :class:`SyntheticEnv`.
        pool_sampling: See :class:`SyntheticEnv`.

    Example:
        >>> env = LinearEnv(d=3, n_arms=4)
        >>> env.reset(0); env.context().arms.shape
        (4, 3)
    """

    noise_std: float = param(Real(low=0.0), default=0.1)

    def _draw_instance(self) -> None:
        theta = self.instance_rng.standard_normal(self.d)
        self.theta = theta / np.linalg.norm(theta)

    def mean(self, x: np.ndarray) -> np.ndarray:
        """x^T theta for each row."""
        return np.asarray(x @ self.theta)


@ENVIRONMENTS.register("logistic")
class LogisticEnv(SyntheticEnv, BernoulliRewards):
    """Logistic bandit with a latent function: r ~ Bernoulli(mu(h(x))) [Bae2025, Sec. 2, Sec. 7].

    Args:
        h: "h1".."h6", "linear" (``envs.latent``), or a callable mapping (K, d) -> (K,).
        d: Feature dimension (paper: 20).
        n_arms: Arms per round (paper: K = 5).
        law: Context law. Assumption: "uniform" on [-1, 1]^d; the paper does not state it.
        pool: Number of distinct context-arm vectors per run (paper: 10, 50, 2500, 10000),
            or None for fresh vectors every round.
        pool_sampling: See :class:`SyntheticEnv`.
        theta: None (default) draws theta per run; a number c fixes theta = c * (1, ..., 1)
            and a sequence of d numbers fixes theta itself, for the latents that use a
            theta vector (h1, h2, h4, h6, linear). With h="linear", law="unit-ball" and
            theta=4/sqrt(d) this is the logistic bandit of [Faury2022]'s experiments.

    Notes:
        Assumption: theta, Theta and the pool are redrawn for every seed (per repetition).

    References:
        [Faury2022] L. Faury, M. Abeille, K.-S. Jun, C. Calauzènes. Jointly efficient and
            optimal algorithms for logistic bandits. AISTATS 2022.

    Example:
        >>> env = LogisticEnv(h="h2", d=4, n_arms=3, pool=10)
        >>> env.reset(1); ctx = env.context()
        >>> env.step(0).feedback in (0.0, 1.0)
        True
    """

    h: str | LatentFn = param(Check(_check_latent), default="h1")
    d: int = param(Int(low=1), default=20)
    n_arms: int = param(Int(low=1), default=5)
    law: str = param(Choice(LAWS), default="uniform")
    theta: float | list[float] | None = param(Free(), default=None)

    def _resolve(self) -> None:
        super()._resolve()
        self.theta = check_theta(self.theta, self.h)
        if isinstance(self.theta, list) and len(self.theta) != self.d:
            raise ValueError(
                f"theta must be a number or have d={self.d} entries; "
                f"got {len(self.theta)}."
            )

    @property
    def label(self) -> str:
        """For example "logistic-h1"."""
        name = (
            self.h if isinstance(self.h, str) else getattr(self.h, "__name__", "custom")
        )
        return f"logistic-{name}"

    def _draw_instance(self) -> None:
        self._latent = make_latent(self.h, self.d, self.instance_rng, self.theta)

    def mean(self, x: np.ndarray) -> np.ndarray:
        """mu(h(x)) for each row."""
        return np.asarray(special.expit(self._latent(x)))
