"""Environments of the rare-update experiments [Yu2026, Sec. 8, App. D]: linear and logistic.

Every round shows K fresh arms whose coordinates are i.i.d. from a feature law, then
rescaled (``normalize``); theta* ~ N(0, I_d) is drawn once per run and, by default,
normalised to norm S, so that ||x|| <= 1 and ||theta*|| <= S hold as the algorithms assume
(Assumptions 1 and 3; the paper does not state its scaling).

    rare-linear     r = <x, theta*> + noise_std * eps,  eps ~ N(0, 1)
    rare-logistic   r ~ Bernoulli(mu(<x, theta*>)),  mu the sigmoid

Feature laws (``law``):

    uniform             Unif[0, 1] (our reading of the paper's "uniform": its runtimes
                        follow the nonnegative laws, see docs/rare.md)
    uniform-symmetric   Unif[-1, 1]
    normal              N(0, 1)
    student-t           Student-t with ``df`` = 1.5 degrees of freedom (App. D.3)
    beta                Beta(0.5, 0.5) on (0, 1)
    laplace             Laplace(0, 1/sqrt(2)), unit variance
    exponential         Exponential(1) on [0, inf)

Common random numbers: the contexts come from the run's "contexts" stream and the noise of
round t (eps_t, or the uniform u_t with r = 1[u_t < mu]) from its "noise" stream, drawn
before the action is known, so every policy run with one seed sees the same theta*, arms
and noise. Regret is the pseudo-regret max_k mean(x_k) - mean(x_a).

References:
    [Yu2026] S. Yu, M. Oh. Practical and optimal algorithm for linear contextual bandits
        with rare parameter updates. arXiv:2606.00984.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.special import expit

from banditkit.core import ENVIRONMENTS
from banditkit.core.params import POSITIVE, Choice, Int, Maybe, Real, param
from banditkit.envs.laws import LAWS
from banditkit.envs.synthetic import BernoulliRewards, GaussianRewards, MeanRewardEnv

__all__ = ["NORMALIZATIONS", "RARE_LAWS", "RareEnv", "RareLinearEnv", "RareLogisticEnv"]

Law = Callable[[np.random.Generator, int, int, float], np.ndarray]

RARE_LAWS: dict[str, Law] = {
    "uniform": lambda rng, n, d, df: rng.uniform(0.0, 1.0, size=(n, d)),
    "uniform-symmetric": lambda rng, n, d, df: LAWS["uniform"](rng, n, d),
    "normal": lambda rng, n, d, df: LAWS["normal"](rng, n, d),
    "student-t": lambda rng, n, d, df: rng.standard_t(df, size=(n, d)),
    "beta": lambda rng, n, d, df: rng.beta(0.5, 0.5, size=(n, d)),
    "laplace": lambda rng, n, d, df: rng.laplace(0.0, 1.0 / np.sqrt(2.0), size=(n, d)),
    "exponential": lambda rng, n, d, df: rng.exponential(1.0, size=(n, d)),
}
"""Feature laws of the rare-update experiments: (rng, n, d, df) -> (n, d)."""

NORMALIZATIONS = ("unit", "sqrt_d", "none")
"""Arm rescalings: each arm to unit norm, all coordinates / sqrt(d), or none."""


class RareEnv(MeanRewardEnv):
    """Shared part: the feature law, the rescaling, theta*, the oracle and the regret.

    Args:
        d: Feature dimension, >= 1.
        n_arms: K, >= 1.
        law: A key of :data:`RARE_LAWS`.
        normalize: "unit" (each arm x / ||x||; zero rows stay zero), "sqrt_d" (x / sqrt(d))
            or "none".
        S: Norm of theta* (theta* = S z / ||z||, z ~ N(0, I)); None keeps the raw draw.
        df: Degrees of freedom of the Student-t law, > 0.
    """

    d: int = param(Int(low=1), default=5)
    n_arms: int = param(Int(low=1), default=1000)
    law: str = param(Choice(RARE_LAWS), default="uniform")
    normalize: str = param(Choice(NORMALIZATIONS), default="unit")
    S: float | None = param(Maybe(POSITIVE), default=1.0)
    df: float = param(POSITIVE, default=1.5)

    def _resolve(self) -> None:
        self.theta = np.zeros(self.d)
        self._means = np.zeros(self.n_arms)

    def _reset(self) -> None:
        theta = self.instance_rng.standard_normal(self.d)
        if self.S is not None:
            theta = self.S * theta / np.linalg.norm(theta)
        self.theta = theta

    def sample_arms(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """N arms from the law, rescaled; shape (n, d)."""
        x = RARE_LAWS[self.law](rng, n, self.d, self.df)
        if self.normalize == "unit":
            norms = np.sqrt(np.add.reduce(x * x, axis=1, keepdims=True))
            x = x / np.where(norms > 0.0, norms, 1.0)
        elif self.normalize == "sqrt_d":
            x = x / np.sqrt(self.d)
        return np.ascontiguousarray(x, dtype=np.float64)

    def _draw_arms(self) -> np.ndarray:
        return self.sample_arms(self.context_rng, self.n_arms)


@ENVIRONMENTS.register("rare-linear")
class RareLinearEnv(RareEnv, GaussianRewards):
    """Linear rewards r = <x, theta*> + noise_std * eps [Yu2026, Sec. 8, App. D.1, D.3].

    Args:
        d: Feature dimension (paper: 5, 10, 20, 30).
        n_arms: K (paper: 1000, 5000, 50, 100).
        law: Feature law (:data:`RARE_LAWS`); "uniform" is Unif[0, 1].
        normalize: "unit" (default), "sqrt_d" or "none".
        S: ||theta*||, 1 by default; None keeps the N(0, I) draw.
        noise_std: Standard deviation of the Gaussian noise, >= 0 (1: sigma = 1).
        df: Degrees of freedom of the Student-t law (1.5).

    Example:
        >>> env = RareLinearEnv(d=3, n_arms=4, law="normal")
        >>> env.reset(0); bool(np.allclose(np.linalg.norm(env.context().arms, axis=1), 1))
        True
    """

    noise_std: float = param(Real(low=0.0), default=1.0)

    @property
    def label(self) -> str:
        """For example "rare-linear-K1000-d5-uniform"."""
        return f"rare-linear-K{self.n_arms}-d{self.d}-{self.law}"

    def mean(self, x: np.ndarray) -> np.ndarray:
        """<x, theta*> for each row."""
        return np.asarray(x @ self.theta)


@ENVIRONMENTS.register("rare-logistic")
class RareLogisticEnv(RareEnv, BernoulliRewards):
    """Logistic rewards r ~ Bernoulli(mu(<x, theta*>)) [Yu2026, App. D.2].

    Args:
        d: Feature dimension (paper: 2, 3).
        n_arms: K (paper: 20, 50).
        law: Feature law (:data:`RARE_LAWS`).
        normalize: "unit" (default), "sqrt_d" or "none".
        S: ||theta*||, 1 by default (R = S = 1 in the paper).
        df: Degrees of freedom of the Student-t law.

    Example:
        >>> env = RareLogisticEnv(d=2, n_arms=5)
        >>> env.reset(1); _ = env.context(); env.step(0).feedback in (0.0, 1.0)
        True
    """

    d: int = param(Int(low=1), default=2)
    n_arms: int = param(Int(low=1), default=20)

    @property
    def label(self) -> str:
        """For example "rare-logistic-K20-d2-uniform"."""
        return f"rare-logistic-K{self.n_arms}-d{self.d}-{self.law}"

    def mean(self, x: np.ndarray) -> np.ndarray:
        """mu(<x, theta*>) for each row."""
        return np.asarray(expit(x @ self.theta))

    def kappa(self, n: int = 100_000, seed: int = 0) -> float:
        """Max 1 / mu'(<x, theta*>) over n arms drawn from the law (the instance's kappa)."""
        x = self.sample_arms(np.random.default_rng(seed), n)
        m = expit(x @ self.theta)
        return float(np.max(1.0 / (m * (1.0 - m))))
