"""The fixed-arm nonlinear bandits of the ensemble-sampling experiments [Sun2025, Sec. 7.1].

One instance per run (seed): K arms x_k drawn once, uniform on the unit sphere of R^d, and
shown unchanged every round; theta* uniform on the unit sphere (times ``theta_scale``);
A (d, d) with i.i.d. N(0, 1) entries. The mean reward h(x) is

    linear      x^T theta*
    logistic    1 / (1 + exp(-x^T theta*))
    distance    -||x - theta*||_2
    quadratic   0.01 x^T A A^T x

and the observed reward h(X_t) + eta_t, eta_t ~ N(0, noise_std^2) (noise 0.5 in the paper;
the logistic bandit too adds Gaussian noise to the sigmoid mean). ``noise="bernoulli"``
draws r ~ Bernoulli(h(x)) instead (logistic only). The noise of a round is drawn before
the action is known (common random numbers across policies). Regret is the pseudo-regret
max_k h(x_k) - h(X_t). Main setting K = 50, d = 20; larger space K = 500, d = 50
[Sun2025, App. F.1.3].

Assumption: the paper states neither the law of the arms nor that of theta*; the unit
sphere keeps ||x|| <= 1 and ||theta*|| = 1 as the analysis assumes.

References:
    [Sun2025] J. Sun, W. Wang, P. Xu. Provable anytime ensemble sampling algorithms in
        nonlinear contextual bandits. arXiv:2510.10730.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from banditkit.core import ENVIRONMENTS, Context, ContextualEnvironment, Step
from banditkit.core.params import POSITIVE, Choice, Int, Real, param
from banditkit.core.types import Action
from banditkit.envs.laws import sample_contexts

__all__ = ["NONLINEAR_FUNCTIONS", "NonlinearEnv"]

NONLINEAR_FUNCTIONS = ("linear", "logistic", "distance", "quadratic")
NOISES = ("gaussian", "bernoulli")


@ENVIRONMENTS.register("nonlinear")
class NonlinearEnv(ContextualEnvironment):
    """A fixed arm set with a linear, logistic, distance or quadratic mean reward.

    Args:
        function: "linear", "logistic", "distance" or "quadratic" (module docstring).
        d: Feature dimension (paper: 20; larger space: 50).
        n_arms: K, the fixed arms (paper: 50; larger space: 500).
        noise_std: Standard deviation of the Gaussian reward noise (paper: 0.5).
        noise: "gaussian" (the paper) or "bernoulli" (logistic only).
        theta_scale: ||theta*||, > 0 (1: theta* on the unit sphere).

    Example:
        >>> env = NonlinearEnv(function="quadratic", d=3, n_arms=4)
        >>> env.reset(0); env.context().arms.shape
        (4, 3)
    """

    function: str = param(Choice(NONLINEAR_FUNCTIONS), default="linear")
    d: int = param(Int(low=1), default=20)
    n_arms: int = param(Int(low=1), default=50)
    noise_std: float = param(Real(low=0.0), default=0.5)
    noise: str = param(Choice(NOISES), default="gaussian")
    theta_scale: float = param(POSITIVE, default=1.0)

    def _resolve(self) -> None:
        if self.noise == "bernoulli" and self.function != "logistic":
            raise ValueError(
                f"noise='bernoulli' needs function='logistic'; got {self.function!r}."
            )

    @property
    def label(self) -> str:
        """For example "nonlinear-quadratic" (with "-d50-K500" off the main setting)."""
        extra = (
            "" if (self.d, self.n_arms) == (20, 50) else f"-d{self.d}-K{self.n_arms}"
        )
        return f"nonlinear-{self.function}{extra}"

    def _reset(self) -> None:
        rng = self.instance_rng
        self.arms = sample_contexts(rng, "unit-sphere", self.n_arms, self.d)
        theta = rng.standard_normal(self.d)
        self.theta = self.theta_scale * theta / np.linalg.norm(theta)
        self.A = rng.standard_normal((self.d, self.d))
        self._means = self.mean(self.arms)
        self._best = int(np.argmax(self._means))

    def mean(self, x: np.ndarray) -> np.ndarray:
        """h(x) for each row of x (K, d)."""
        if self.function == "linear":
            return np.asarray(x @ self.theta)
        if self.function == "logistic":
            return np.asarray(expit(x @ self.theta))
        if self.function == "distance":
            return -np.linalg.norm(x - self.theta, axis=1)
        xa = x @ self.A
        return 0.01 * np.sum(xa * xa, axis=1)

    def _next_context(self) -> Context:
        if self.noise == "gaussian":
            self._eps = float(self.noise_rng.standard_normal())
        else:
            self._eps = float(self.noise_rng.random())
        return Context.unchecked(self.arms.copy())

    def best_action(self) -> int:
        """The arm with the largest mean (the arm set never changes)."""
        return self._best

    def expected_rewards(self) -> np.ndarray:
        """h(x_k) of every arm, (K,)."""
        return self._means.copy()

    def _step(self, ctx: Context, action: Action) -> Step:
        assert isinstance(action, int)
        mean = float(self._means[action])
        if self.noise == "gaussian":
            reward = mean + self.noise_std * self._eps
        else:
            reward = float(self._eps < mean)
        regret = float(self._means[self._best] - mean)
        return Step(feedback=reward, reward=reward, regret=regret)
