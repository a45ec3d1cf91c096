"""Linear contextual bandits: LinUCB (OFUL), linear Thompson sampling and epsilon-greedy.

Each policy composes a :class:`~banditkit.policies.parts.models.RidgeModel` (ridge estimate and Gram
kept by rank-1 updates), fitted every round on a row ``History``, with a selection rule from
:mod:`banditkit.policies.parts.selection`; LinUCB scores through a ``Scorer`` whose uncertainty is
the model's own Gram V.

References:
    In the package's docstring (``banditkit.policies.baselines``): [Li2010], [Agrawal2013].
    [Abbasi-Yadkori2011] Y. Abbasi-Yadkori, D. Pal, C. Szepesvari. Improved algorithms for linear
        stochastic bandits. NeurIPS 2011.
"""

from __future__ import annotations

from typing import Any, ClassVar

from banditkit.core import POLICIES, Context, ContextualPolicy
from banditkit.core.params import POSITIVE, Flag, Real, param
from banditkit.core.types import Action, Feedback
from banditkit.policies.parts.history import History
from banditkit.policies.parts.models import RidgeModel
from banditkit.policies.parts.propensity import monte_carlo
from banditkit.policies.parts.scorer import Scorer
from banditkit.policies.parts.selection import (
    TIE_RTOL,
    Optimistic,
    argmax_random_tie,
    epsilon_greedy,
    epsilon_greedy_law,
    gaussian_argmax_law,
    play,
)

__all__ = ["EpsGreedy", "LinTS", "LinUCB", "RidgePolicy"]


class RidgePolicy(ContextualPolicy):
    """Shared part of the ridge-based policies: the model, its update and its state.

    Args:
        lam: Ridge weight, V_0 = lam * I, > 0.
        keep_history: Keep every observation (x, r) in ``history`` and in the saved
            state (default True); False keeps only the ridge statistics, whose update is
            incremental: the saved state stays O(d^2) however long the policy runs.
        seed: Seed of the policy's own stream.
    """

    lam: float = param(POSITIVE, default=1.0)
    keep_history: bool = param(Flag(), default=True, quiet=True)

    def _setup(self, ctx: Context) -> None:
        self._build()

    def _build(self) -> None:
        assert self.d is not None
        self.history = History(self.d)
        self.model = RidgeModel(self.d, self.lam, in_place=True)

    def _update(self, ctx: Context, action: Action, feedback: Feedback) -> None:
        assert isinstance(action, int)
        if self.keep_history:
            self.history.append(ctx.arms[action], float(feedback))
            self.model.fit(self.history)  # O(d^2): the new row only
        else:  # the same rank-1 step, the row not kept
            self.model.add(ctx.arms[action], float(feedback))
        self._n_updates += 1

    def _state(self) -> dict[str, Any]:
        return {"history": self.history.state_dict(), "model": self.model.state_dict()}

    def _load_state(self, state: dict[str, Any]) -> None:
        assert self.d is not None
        self._build()
        self.history.load_state_dict(state["history"])
        self.model.load_state_dict(state["model"])


@POLICIES.register("linucb")
class LinUCB(RidgePolicy):
    """LinUCB / OFUL [Abbasi-Yadkori2011, Alg. 1; Li2010, Alg. 1]: optimism over a ridge fit.

        score(k) = x_k^T theta + nu * ||x_k||_{V^-1},   theta = V^-1 b

    Symbols: nu = alpha (LinUCB) or sqrt(beta_t) (OFUL), lam = lambda. The propensity
    (``last_propensity``) is 1 / (number of tied scores) for each tied arm.

    Args:
        nu: Exploration scale, >= 0; 0 is greedy.
        lam: Ridge weight, > 0.
        keep_history: Keep every observation (x, r) in ``history`` and in the saved
            state (default True); False keeps only the ridge statistics, whose update is
            incremental: the saved state stays O(d^2) however long the policy runs.
        seed: Seed of the policy's own stream (ties are broken at random).

    Notes:
        Deviation: the radius sqrt(beta_t) of OFUL is replaced by the constant nu.

    Example:
        >>> p = LinUCB(nu=0.5)
        >>> p.act(Context(arms=np.eye(3))) in range(3)
        True
    """

    nu: float = param(Real(low=0.0), default=1.0)
    #: What an update changes inside (``core.transaction``): the rest it only rebinds.
    _undo_parts: ClassVar[tuple[str, ...]] = ("history", "model")

    def _resolve(self) -> None:
        self._scorer: Scorer | None = None
        self._rule = Optimistic(TIE_RTOL)

    def _act(self, ctx: Context) -> Action:
        # mean x^T theta + nu ||x||_{V^-1}, V the model's own Gram
        scorer = self._scorer
        if scorer is None or scorer.model is not self.model:  # built once per model
            scorer = self._scorer = Scorer(self.model, self.model.gram, nu=self.nu)
        scorer.design = self.model.gram  # a restored model holds a new Gram
        mean, width = scorer.score(ctx.arms)
        return play(self, self._rule, mean, width)


@POLICIES.register("lints")
class LinTS(RidgePolicy):
    """Linear Thompson sampling [Agrawal2013, Alg. 1]: play the best arm for a sampled theta.

        theta_tilde ~ N(theta, nu^2 V^-1),   a = argmax_k x_k^T theta_tilde

    Symbols: nu = v (the posterior scale), lam = the prior precision. The propensity is a
    Monte Carlo estimate from ``propensity_samples`` further draws of the scores
    x_k^T theta_tilde, jointly N(X theta, nu^2 X V^-1 X^T) (docs/ope.md).

    Args:
        nu: Posterior scale, >= 0; 0 is greedy.
        lam: Ridge weight, > 0.
        keep_history: Keep every observation (x, r) in ``history`` and in the saved
            state (default True); False keeps only the ridge statistics, whose update is
            incremental: the saved state stays O(d^2) however long the policy runs.
        seed: Seed of the policy's own stream (the posterior draws).

    Example:
        >>> LinTS(nu=0.1).act(Context(arms=np.eye(2))) in (0, 1)
        True
    """

    nu: float = param(Real(low=0.0), default=1.0)
    _undo_parts: ClassVar[tuple[str, ...]] = LinUCB._undo_parts

    def _act(self, ctx: Context) -> Action:
        X = ctx.arms
        theta = self.model.sample_theta(self.rng, self.nu)
        action = argmax_random_tie(X @ theta, self.rng, TIE_RTOL)
        mc = monte_carlo(self)
        if mc is not None:  # the scores X theta~ ~ N(X theta, nu^2 X V^-1 X^T)
            cov = self.nu**2 * self.model.score_covariance(X)
            self.propose(
                gaussian_argmax_law(self.model.predict(X), cov, action, mc, TIE_RTOL)
            )
        return action


@POLICIES.register("eps-greedy")
class EpsGreedy(RidgePolicy):
    """Epsilon-greedy over a ridge fit: a uniform arm with probability epsilon, else the greedy one.

        a = uniform(K)                  with probability epsilon
        a = argmax_k x_k^T theta        otherwise (ties broken uniformly)

    The propensity of the played arm, epsilon / K plus (1 - epsilon) / (number of tied greedy
    arms) when it is one of them, is recorded with each round (``last_propensity``).

    Args:
        epsilon: Exploration rate in [0, 1]; 0 is greedy, 1 is uniform play.
        lam: Ridge weight, > 0.
        keep_history: Keep every observation (x, r) in ``history`` and in the saved
            state (default True); False keeps only the ridge statistics, whose update is
            incremental: the saved state stays O(d^2) however long the policy runs.
        seed: Seed of the policy's own stream.

    Example:
        >>> EpsGreedy(epsilon=0.1).act(Context(arms=np.eye(4))) in range(4)
        True
    """

    epsilon: float = param(Real(low=0.0, high=1.0), default=0.1)

    def _act(self, ctx: Context) -> Action:
        scores = self.model.predict(ctx.arms)
        action, _ = epsilon_greedy(scores, self.epsilon, self.rng)
        self.propose(epsilon_greedy_law(scores, self.epsilon))
        return action
