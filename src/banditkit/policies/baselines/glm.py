"""Generalised linear bandits: GLM-UCB and GLM Thompson sampling.

Both compose a row ``History``, a :class:`~banditkit.policies.parts.models.GLMModel` (regularised MLE
by Newton's method, refitted on a :class:`~banditkit.policies.parts.schedules.Periodic` schedule), the
design Gram V of the raw features and a selection rule; GLM-UCB scores through a ``Scorer``.

References:
    In the package's docstring (``banditkit.policies.baselines``): [Filippi2010], [Kveton2020].
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from banditkit.core import POLICIES, Context, ContextualPolicy
from banditkit.core.params import POSITIVE, Choice, Int, Real, param
from banditkit.core.types import Action, Feedback
from banditkit.glm import LINKS
from banditkit.linalg import Gram
from banditkit.policies.parts.history import History
from banditkit.policies.parts.models import GLMModel
from banditkit.policies.parts.propensity import monte_carlo
from banditkit.policies.parts.schedules import Periodic
from banditkit.policies.parts.scorer import Scorer
from banditkit.policies.parts.selection import (
    TIE_RTOL,
    Optimistic,
    argmax_random_tie,
    gaussian_argmax_law,
    play,
)
from banditkit.policies.parts.warmup import WARMUPS, design_plan, warmup_pull

__all__ = ["GLMTS", "GLMUCB", "GLMPolicy"]


class GLMPolicy(ContextualPolicy):
    """Shared part of the GLM policies: history, model, design Gram, schedule and state.

    Args:
        nu: Exploration scale, >= 0; 0 is greedy.
        lam: MLE ridge weight and design-Gram start, > 0.
        link: "logistic" (default), "probit" or "identity".
        rewards: "auto" (default: rewards in [0, 1] for the logistic and probit links, real
            rewards for the identity link) or "real" (any finite reward, e.g. a sigmoid
            mean plus Gaussian noise; the NLL is convex in theta for every real target).
        update_every: Refit the MLE after every this many observations, >= 1 (default 10:
            on the README's 2000-round logistic tour, d = 20, 5 seeds, it cuts the time from
            0.85 s to 0.14 s per run with regret 283 +- 19 against 327 +- 50 refitting every
            round; pass 1 for the per-round refit of [Filippi2010]).
        warmup: Warm-up pulls tau before the first fit, >= 0 (default 0: none). The MLE is
            first fitted after them and then every ``update_every`` observations; used to
            give the baselines the warm-up of GLM-ES (docs/ensemble.md).
        warmup_strategy: "design" (default: a G-optimal design rounded to tau pulls, in a
            random order, as GLM-ES, ``policies.ensemble.design_plan``; a uniform arm when
            the arm set changes), "round-robin" or "random".
        seed: Seed of the policy's own stream.
    """

    nu: float = param(Real(low=0.0), default=1.0)
    lam: float = param(POSITIVE, default=1.0)
    link: str = param(Choice(LINKS), default="logistic")
    update_every: int = param(Int(low=1), default=10)
    rewards: str = param(Choice("auto", "real"), default="auto")
    warmup: int = param(Int(low=0), default=0)
    warmup_strategy: str = param(Choice(WARMUPS), default="design")

    def _resolve(self) -> None:
        real = self.link == "identity" or self.rewards == "real"
        self.reward_kind = "real" if real else "binary"
        self.schedule = Periodic(self.update_every)

    def _setup(self, ctx: Context) -> None:
        self._build()

    def warmup_rounds(self, horizon: int) -> int:
        """The ``warmup`` pulls before the first fit (at most ``horizon``)."""
        return min(self.warmup, horizon)

    def _build(self) -> None:
        assert self.d is not None
        self.history = History(self.d)
        self.model = GLMModel(self.d, self.lam, self.link)
        self.design = Gram(self.d, self.lam)  # V = lam I + sum x x^T
        self.plan: np.ndarray | None = None  # warm-up pulls (warmup_strategy "design")
        self.plan_arms: np.ndarray | None = None

    def _warmup_arm(self, ctx: Context) -> int | None:
        """The warm-up pull of this round (its law proposed), or None after the warm-up."""
        i = self.history.n
        if i >= self.warmup:
            return None
        drawn_now = self.plan is None
        if self.warmup_strategy == "design" and drawn_now:
            self.plan = design_plan(ctx.arms, self.warmup, self.rng)
            self.plan_arms = ctx.arms.copy()
        return warmup_pull(
            self,
            ctx.arms,
            i,
            self.warmup_strategy,
            self.plan,
            self.plan_arms,
            drawn_now=drawn_now,
        )

    def _act(self, ctx: Context) -> Action:
        warm = self._warmup_arm(ctx)
        return self._choose(ctx) if warm is None else warm

    def _choose(self, ctx: Context) -> Action:
        """The algorithm's choice after the warm-up."""
        raise NotImplementedError

    def _update(self, ctx: Context, action: Action, feedback: Feedback) -> None:
        assert isinstance(action, int)
        x = ctx.arms[action]
        self.history.append(x, float(feedback))
        self.design.update(x)
        n = self.history.n - self.warmup  # observations since the warm-up
        if n == 0 or (n > 0 and self.schedule.due(n, self.design)):
            self.model.fit(self.history)
            self._n_updates += 1

    def _state(self) -> dict[str, Any]:
        state: dict[str, Any] = {
            "history": self.history.state_dict(),
            "model": self.model.state_dict(),
            "design": self.design.state_dict(),
        }
        if self.warmup > 0:
            state["plan"] = None if self.plan is None else self.plan.copy()
            state["plan_arms"] = (
                None if self.plan_arms is None else self.plan_arms.copy()
            )
        return state

    def _load_state(self, state: dict[str, Any]) -> None:
        assert self.d is not None
        self._build()
        self.history.load_state_dict(state["history"])
        self.model.load_state_dict(state["model"])
        self.design.load_state_dict(state["design"])
        plan, arms = state.get("plan"), state.get("plan_arms")
        self.plan = None if plan is None else np.asarray(plan, dtype=np.int64)
        self.plan_arms = None if arms is None else np.asarray(arms, dtype=np.float64)


@POLICIES.register("glm-ucb")
class GLMUCB(GLMPolicy):
    """GLM-UCB [Filippi2010, Alg. 1]: optimism on the linear predictor of the MLE.

        score(k) = x_k^T theta + nu * ||x_k||_{V^-1},   V = lam I + sum_s x_s x_s^T

    Since the link is increasing, ranking by the linear predictor equals ranking by the mean.
    Symbols: nu = rho(t) (the paper's radius), lam = the ridge weight of the regularised MLE.

    Notes:
        Deviation: the MLE is regularised (lam > 0) so it exists from the first round, as in
        [Faury2020]; the radius rho(t) is the constant nu.

    Example:
        >>> GLMUCB(nu=0.5).act(Context(arms=np.eye(3))) in range(3)
        True
    """

    #: What an update changes inside (``core.transaction``): the rest it only rebinds.
    _undo_parts: ClassVar[tuple[str, ...]] = ("history", "design", "model")

    def _choose(self, ctx: Context) -> Action:
        # x^T theta + nu ||x||_{V^-1}
        mean, width = Scorer(self.model, self.design, nu=self.nu).score(ctx.arms)
        return play(self, Optimistic(TIE_RTOL), mean, width)


@POLICIES.register("glm-ts")
class GLMTS(GLMPolicy):
    """GLM Thompson sampling (GLM-TSL) [Kveton2020, Alg. 1]: Laplace posterior around the MLE.

        theta_tilde ~ N(theta, nu^2 H^-1),  H = sum_s mu'(x_s^T theta) x_s x_s^T + lam I
        a = argmax_k x_k^T theta_tilde

    Symbols: nu = a (the posterior inflation), lam = the ridge weight. The propensity is a
    Monte Carlo estimate from ``propensity_samples`` further draws of the scores
    x_k^T theta_tilde, jointly N(X theta, nu^2 X H^-1 X^T) (docs/ope.md).

    Example:
        >>> GLMTS(nu=0.5).act(Context(arms=np.eye(3))) in range(3)
        True
    """

    def _choose(self, ctx: Context) -> Action:
        X = ctx.arms
        theta = self.model.sample_theta(self.rng, self.nu, self.history)
        action = argmax_random_tie(X @ theta, self.rng, TIE_RTOL)
        mc = monte_carlo(self)
        if mc is not None:  # X theta~ ~ N(X theta, nu^2 X H^-1 X^T)
            cov = self.nu**2 * self.model.score_covariance(X, self.history)
            mean = self.model.predict(X)
            self.propose(gaussian_argmax_law(mean, cov, action, mc, TIE_RTOL))
        return action
