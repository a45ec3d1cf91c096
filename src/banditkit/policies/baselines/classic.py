"""Classic non-contextual bandits: UCB1, KL-UCB and Bernoulli Thompson sampling.

They ignore the arms' features and learn one mean per arm index, so they run in any
contextual configuration as references: what a contextual policy gains over them is what it
gains from the features. The number of arms K is fixed at the first round; a context with
another number of arms raises a ``ValueError`` naming ``ctx``. Everything is vectorised over
the arms; ties are broken uniformly at random with the policy's generator.

    ucb1           mean_a + sqrt(2 ln t / n_a)                                  [Auer2002, Fig. 1]
    kl-ucb         max{q >= mean_a : n_a kl(mean_a, q) <= ln t + c ln ln t}     [Garivier2011, Alg. 1]
    bernoulli-ts   theta_a ~ Beta(1 + S_a, 1 + F_a), play argmax theta_a        [Agrawal2012, Alg. 2]

with n_a the plays of arm a so far, mean_a their mean reward and t the round. Each index policy
first plays every arm once (an unplayed arm has index +inf).

References:
    [Auer2002] P. Auer, N. Cesa-Bianchi, P. Fischer. Finite-time analysis of the multiarmed
        bandit problem. Machine Learning 47, 2002.
    [Garivier2011] A. Garivier, O. Cappe. The KL-UCB algorithm for bounded stochastic bandits
        and beyond. COLT 2011.
    [Agrawal2012] S. Agrawal, N. Goyal. Analysis of Thompson sampling for the multi-armed
        bandit problem. COLT 2012.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from banditkit.core import POLICIES, Context, ContextualPolicy
from banditkit.core.lazy import special  # imported at first use
from banditkit.core.params import Real, param
from banditkit.core.types import Action, Feedback
from banditkit.core.validation import check_int, check_state_array
from banditkit.policies.parts.propensity import monte_carlo, tie_law
from banditkit.policies.parts.selection import argmax_random_tie, sampled_arm_law

__all__ = ["KLUCB", "UCB1", "BernoulliTS", "bernoulli_kl", "kl_ucb_index"]

#: Bisection steps of the KL-UCB index: the interval [mean, 1] shrinks to 2^-50.
KL_BISECTION_STEPS = 50


def bernoulli_kl(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """kl(p, q) = p ln(p/q) + (1-p) ln((1-p)/(1-q)), elementwise, with 0 ln 0 = 0.

    Example:
        >>> float(bernoulli_kl(np.array(0.5), np.array(0.5)))
        0.0
    """
    p, q = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    return np.asarray(
        special.xlogy(p, p)
        - special.xlogy(p, q)
        + special.xlogy(1 - p, 1 - p)
        - special.xlogy(1 - p, 1 - q)
    )


def kl_ucb_index(means: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Largest q in [mean, 1] with kl(mean, q) <= bound, per arm, by a vectorised bisection.

    kl(mean, .) increases on [mean, 1], so the bisection keeps the invariant
    kl(mean, low) <= bound < kl(mean, high) and stops after :data:`KL_BISECTION_STEPS` halvings.

    Args:
        means: (K,) empirical means in [0, 1].
        bounds: (K,) the budgets (ln t + c ln ln t) / n_a, >= 0.

    Example:
        >>> round(float(kl_ucb_index(np.array([0.5]), np.array([0.1]))[0]), 6)
        0.712879
    """
    low = np.asarray(means, dtype=np.float64).copy()
    high = np.ones_like(low)
    for _ in range(KL_BISECTION_STEPS):
        mid = 0.5 * (low + high)
        inside = bernoulli_kl(means, mid) <= bounds
        low = np.where(inside, mid, low)
        high = np.where(inside, high, mid)
    return low


class _PerArmPolicy(ContextualPolicy):
    """Shared part: K fixed at the first round, per-arm counts and reward sums, tie-breaking."""

    #: The arms' features are ignored: arm a is the a-th row of every context.
    uses_features: ClassVar[bool] = False

    def _setup(self, ctx: Context) -> None:
        self.n_arms = ctx.n_arms
        self.counts = np.zeros(self.n_arms)
        self.sums = np.zeros(self.n_arms)

    def _check_context(self, ctx: Context) -> None:
        super()._check_context(ctx)
        if ctx.n_arms != self.n_arms:
            raise ValueError(
                f"ctx has {ctx.n_arms} arms but this policy was built for K={self.n_arms} "
                "at its first round; a non-contextual policy needs the same arms every round."
            )

    def _update(self, ctx: Context, action: Action, feedback: Feedback) -> None:
        assert isinstance(action, int)
        self.counts[action] += 1.0
        self.sums[action] += float(feedback)
        self._n_updates += 1

    def _argmax(self, scores: np.ndarray) -> int:
        """Argmax with random tie-breaking; the propensity is 1 / (number of tied arms)."""
        self.propose(tie_law(scores))
        return argmax_random_tie(scores, self.rng)

    def _state(self) -> dict[str, Any]:
        return {
            "n_arms": self.n_arms,
            "counts": self.counts.copy(),
            "sums": self.sums.copy(),
        }

    def _load_state(self, state: dict[str, Any]) -> None:
        self.n_arms = check_int("n_arms", state["n_arms"], low=1)
        shape = (self.n_arms,)
        self.counts = check_state_array("counts", state["counts"], shape, low=0.0)
        self.sums = check_state_array("sums", state["sums"], shape)


@POLICIES.register("ucb1")
class UCB1(_PerArmPolicy):
    """UCB1 [Auer2002, Fig. 1]: play each arm once, then argmax_a mean_a + sqrt(2 ln t / n_a).

    t is the number of plays so far. The bonus is calibrated for rewards in [0, 1]; other
    bounded rewards are accepted (``reward_kind = "real"``) but should be rescaled to [0, 1]
    for the guarantee to hold.

    Args:
        seed: Seed of the policy's own stream (ties are broken at random).

    Example:
        >>> p = UCB1(seed=0)
        >>> p.act(Context(arms=np.eye(3))) in range(3)
        True
    """

    def index(self) -> np.ndarray:
        """(K,) the UCB1 index; +inf for an arm not played yet."""
        played = self.counts > 0
        n = np.where(played, self.counts, 1.0)
        log_t = math.log(max(self.t, 1))
        return np.where(played, self.sums / n + np.sqrt(2.0 * log_t / n), np.inf)

    def _act(self, ctx: Context) -> Action:
        return self._argmax(self.index())


@POLICIES.register("kl-ucb")
class KLUCB(_PerArmPolicy):
    """KL-UCB for rewards in [0, 1] [Garivier2011, Alg. 1] with the Bernoulli divergence.

        u_a = max{ q in [mean_a, 1] : n_a kl(mean_a, q) <= ln t + c ln ln t }

    t is the current round (plays so far + 1). The c ln ln t term is used from t = 3 on
    (ln ln t < 0 before); c = 0, the default, is what the paper recommends in practice.
    The index is found by a bisection vectorised over the arms (:func:`kl_ucb_index`).

    Args:
        c: The ln ln t coefficient, >= 0 (the analysis needs c = 3).
        seed: Seed of the policy's own stream (ties are broken at random).

    Example:
        >>> KLUCB(c=0.0).act(Context(arms=np.eye(2))) in (0, 1)
        True
    """

    reward_kind = "binary"

    c: float = param(Real(low=0.0), default=0.0)

    def index(self) -> np.ndarray:
        """(K,) the KL-UCB index; +inf for an arm not played yet."""
        played = self.counts > 0
        n = np.where(played, self.counts, 1.0)
        t = self.t + 1
        budget = math.log(t) + (self.c * math.log(math.log(t)) if t >= 3 else 0.0)
        means = np.clip(self.sums / n, 0.0, 1.0)
        return np.where(played, kl_ucb_index(means, budget / n), np.inf)

    def _act(self, ctx: Context) -> Action:
        return self._argmax(self.index())


@POLICIES.register("bernoulli-ts")
class BernoulliTS(_PerArmPolicy):
    """Bernoulli Thompson sampling with a Beta(1, 1) prior [Agrawal2012, Alg. 1 and 2].

        theta_a ~ Beta(1 + S_a, 1 + F_a),   a_t = argmax_a theta_a

    S_a and F_a count the successes and failures of arm a. A reward r in [0, 1] that is not 0
    or 1 is turned into a Bernoulli(r) success drawn with the policy's generator
    [Agrawal2012, Alg. 2], which keeps the Beta posterior conjugate and the regret bound.
    The propensity is a Monte Carlo estimate from ``propensity_samples`` further draws.

    Args:
        seed: Seed of the policy's own stream (posterior draws and the Bernoulli trick).

    Example:
        >>> BernoulliTS(seed=0).act(Context(arms=np.eye(4))) in range(4)
        True
    """

    reward_kind = "binary"

    def _update(self, ctx: Context, action: Action, feedback: Feedback) -> None:
        reward = float(feedback)
        if 0.0 < reward < 1.0:
            reward = float(self.rng.random() < reward)
        super()._update(ctx, action, reward)

    def posterior(self) -> tuple[np.ndarray, np.ndarray]:
        """(alpha, beta), the (K,) Beta posterior parameters."""
        return 1.0 + self.sums, 1.0 + self.counts - self.sums

    def _act(self, ctx: Context) -> Action:
        alpha, beta = self.posterior()
        action = argmax_random_tie(self.rng.beta(alpha, beta), self.rng)

        def draw(rng: np.random.Generator, n: int) -> np.ndarray:
            return rng.beta(alpha, beta, size=(n, alpha.shape[0]))

        self.propose(sampled_arm_law(draw, action, monte_carlo(self)))
        return action
