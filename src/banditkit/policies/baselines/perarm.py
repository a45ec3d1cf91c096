"""Per-arm (disjoint) linear bandits: one ridge model per arm, held as a (K, d, d) stack.

LinUCB's disjoint model [Li2010, Sec. 3.1, Alg. 1] keeps, for every arm a, its own Gram
A_a = lam I + sum_{t: a_t = a} x_t x_t^T, response b_a = sum x_t r_t and theta_a = A_a^-1 b_a.
The arm of a round is scored on its own features x_a (``ctx.arms[a]``); on a shared context
(``Context.from_shared(x, n_arms=K)``) every arm sees the same x. This is the block-encoded
shared-parameter model of the classification bandits without the (K d)-dimensional block: its
Gram is block-diagonal, so both make the same decisions, at O(K d^2) per round instead of
O((K d)^2).

The stack A_a^-1 (K, d, d) is updated by Sherman-Morrison on the played arm only,

    A_a^-1 <- A_a^-1 - (A_a^-1 x)(A_a^-1 x)^T / (1 + x^T A_a^-1 x),

and every arm is scored at once by batched products (no Python loop over arms). Thompson
sampling needs only the scalar x_a^T theta_a~ per arm, which is Gaussian with mean
x_a^T theta_a and variance nu^2 x_a^T A_a^-1 x_a: it draws those K scalars, not K d-vectors.

The catalogue may change while the policy runs: :meth:`PerArmRidgePolicy.add_arm` appends a
fresh arm, :meth:`PerArmRidgePolicy.remove_arm` drops one; the other arms keep their state.
Logged rounds are learned in one call by :meth:`~PerArmRidgePolicy.partial_fit` (and
:meth:`~PerArmRidgePolicy.fit`, which starts afresh), with the same result as feeding them to
``update`` one at a time.

References:
    In the package's docstring (``banditkit.policies.baselines``): [Li2010], [Agrawal2013].
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from banditkit.core import POLICIES, Context
from banditkit.core.params import POSITIVE, Real, fixed, learned, param
from banditkit.core.types import Action
from banditkit.policies.baselines.catalogue import PerArmPolicy, ask_shared, check_batch
from banditkit.policies.parts.selection import (
    TIE_RTOL,
    Optimistic,
    Rule,
    Sampled,
    epsilon_greedy,
    epsilon_greedy_law,
    play,
)

__all__ = [
    "PerArmEpsGreedy",
    "PerArmLinTS",
    "PerArmLinUCB",
    "PerArmRidgePolicy",
    "ask_shared",
    "check_batch",
    "linear_scores",
]


def linear_scores(
    theta: np.ndarray, inverse: np.ndarray, X: np.ndarray, shared: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Per-arm means x_a^T theta_a (K,) and squared widths x_a^T M_a x_a (K,), all arms at once.

    Args:
        theta: (K, d) per-arm estimates.
        inverse: (K, d, d) per-arm matrices M_a (A_a^-1, or a Laplace H_a^-1).
        X: (K, d) the arms' rows (one shared row when ``shared``: row 0 for every arm).
        shared: Whether every arm sees the same context.

    Example:
        >>> mean, width2 = linear_scores(np.eye(2), np.stack([np.eye(2)] * 2),
        ...                              np.ones((2, 2)), True)
        >>> mean.tolist(), width2.tolist()
        ([1.0, 1.0], [2.0, 2.0])
    """
    if shared:
        x = X[0]
        mean = theta @ x
        width2 = (inverse @ x) @ x
    else:
        mean = np.einsum("kj,kj->k", theta, X)
        width2 = np.einsum("ki,kij,kj->k", X, inverse, X, optimize=False)
    return mean, np.maximum(width2, 0.0)


class PerArmRidgePolicy(PerArmPolicy):
    """Shared part of the per-arm ridge policies: the (K, d, d) stack, its update and state.

    The number of arms K is fixed at the first round (``ctx.n_arms``) and changed only by
    :meth:`add_arm` / :meth:`remove_arm`; a context with another number of arms is refused.

    Args:
        lam: Ridge weight of every arm, A_a = lam I at the start, > 0.
        seed: Seed of the policy's own stream.

    Attributes:
        n_arms: K, the arms the policy models (None before the first round).
        A_inv: (K, d, d) inverse Grams A_a^-1.
        b: (K, d) responses b_a = sum x r.
        theta: (K, d) ridge estimates theta_a = A_a^-1 b_a.
        counts: (K,) rounds each arm was played.
    """

    nu: float = param(Real(low=0.0), default=1.0)
    lam: float = param(POSITIVE, default=1.0)

    #: The selection rule on the means and widths nu * sqrt(x_a^T A_a^-1 x_a).
    rule: ClassVar[Rule]

    A_inv: np.ndarray = learned()
    b: np.ndarray = learned()
    theta: np.ndarray = learned()
    counts: np.ndarray = learned()

    _stacks: ClassVar[tuple[str, ...]] = ("A_inv", "b", "theta", "counts")
    _spd_stacks: ClassVar[tuple[str, ...]] = ("A_inv",)
    #: The stacks of symmetric positive-definite matrices (checked when a state loads).

    def _fresh_arm(self) -> dict[str, np.ndarray]:
        assert self.d is not None
        d = self.d
        return {
            "A_inv": np.eye(d) / self.lam,
            "b": np.zeros(d),
            "theta": np.zeros(d),
            "counts": np.zeros((), dtype=np.int64),
        }

    # ------------------------------------------------------------------ learning
    def _learn(self, arm: int, x: np.ndarray, reward: float) -> None:
        """Sherman-Morrison update of arm ``arm`` on features ``x`` and reward ``reward``."""
        A_inv = self.A_inv[arm]
        u = A_inv @ x
        A_inv -= np.outer(u, u / (1.0 + x @ u))
        self.b[arm] += reward * x
        self.theta[arm] = A_inv @ self.b[arm]
        self.counts[arm] += 1

    def _learned(self) -> None:
        """Called after each learned round: the ridge estimate is re-estimated every round."""
        self._n_updates += 1

    def _means_widths2(
        self, X: np.ndarray, shared: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        """Per-arm means x_a^T theta_a and squared widths x_a^T A_a^-1 x_a, all arms at once."""
        return linear_scores(self.theta, self.A_inv, X, shared)

    def _act(self, ctx: Context) -> Action:
        mean, width2 = self._means_widths2(ctx.arms, ctx.is_shared)
        return play(self, self.rule, mean, self.nu * np.sqrt(width2))


@POLICIES.register("linucb-per-arm")
class PerArmLinUCB(PerArmRidgePolicy):
    """Disjoint LinUCB [Li2010, Alg. 1]: one ridge model per arm, optimism per arm.

        score(a) = x_a^T theta_a + nu * sqrt(x_a^T A_a^-1 x_a)

    ``make_policy("linucb", per_arm=True)``. On a shared context it makes the decisions of
    ``linucb`` on the block-encoded arms (a block-diagonal Gram).

    Args:
        nu: Exploration scale (alpha of [Li2010]), >= 0; 0 is greedy.
        lam: Ridge weight, > 0.
        seed: Seed of the policy's own stream (ties are broken at random).

    Example:
        >>> p = PerArmLinUCB(nu=0.5)
        >>> p.act(Context.from_shared(np.ones(2), n_arms=3)) in range(3)
        True
    """

    rule = Optimistic(TIE_RTOL)


@POLICIES.register("lints-per-arm")
class PerArmLinTS(PerArmRidgePolicy):
    """Disjoint linear Thompson sampling [Agrawal2013, Alg. 1] with one posterior per arm.

        s_a ~ N(x_a^T theta_a, nu^2 x_a^T A_a^-1 x_a),   a = argmax_a s_a

    The scalar s_a = x_a^T theta_a~ with theta_a~ ~ N(theta_a, nu^2 A_a^-1) is drawn directly
    (K standard normals per round). ``make_policy("lints", per_arm=True)``.

    Args:
        nu: Posterior scale, >= 0; 0 is greedy.
        lam: Ridge weight, > 0.
        seed: Seed of the policy's own stream (the posterior draws).

    Notes:
        Deviation from ``lints`` on block-encoded arms: the same per-arm distribution of
        scores, but drawn as K scalars instead of one (K d)-vector, so the random draws (and
        hence the actions of a seed) differ.

    Example:
        >>> PerArmLinTS(nu=0.1).act(Context.from_shared(np.ones(2), n_arms=2)) in (0, 1)
        True
    """

    rule = Sampled(TIE_RTOL)


@POLICIES.register("eps-greedy-per-arm")
class PerArmEpsGreedy(PerArmRidgePolicy):
    """Epsilon-greedy over one ridge model per arm.

        a = uniform(K)                   with probability epsilon
        a = argmax_a x_a^T theta_a       otherwise (ties broken uniformly)

    The propensity of the played arm is recorded as by ``eps-greedy`` (``last_propensity``).
    ``make_policy("eps-greedy", per_arm=True)``; on a shared context its decisions are those
    of ``eps-greedy`` on block-encoded arms.

    Args:
        epsilon: Exploration rate in [0, 1].
        lam: Ridge weight, > 0.
        seed: Seed of the policy's own stream.

    Example:
        >>> PerArmEpsGreedy().act(Context.from_shared(np.ones(2), n_arms=4)) in range(4)
        True
    """

    epsilon: float = param(Real(low=0.0, high=1.0), default=0.1)
    nu = fixed(0.0)  # no widths: the greedy arm, or a uniform one

    def _act(self, ctx: Context) -> Action:
        X = ctx.arms
        scores = (
            self.theta @ X[0] if ctx.is_shared else np.einsum("kj,kj->k", self.theta, X)
        )
        action, _ = epsilon_greedy(scores, self.epsilon, self.rng)
        self.propose(epsilon_greedy_law(scores, self.epsilon))
        return action
