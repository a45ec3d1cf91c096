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
    [Li2010] L. Li, W. Chu, J. Langford, R. Schapire. A contextual-bandit approach to
        personalized news article recommendation. WWW 2010.
    [Agrawal2013] S. Agrawal, N. Goyal. Thompson sampling for contextual bandits with linear
        payoffs. ICML 2013.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from banditkit.core import POLICIES, Context, ContextualPolicy
from banditkit.core.environment import Environment
from banditkit.core.types import Action, Feedback
from banditkit.core.validation import (
    ArgumentTypeError,
    check_finite_array,
    check_int,
    check_scalar,
)
from banditkit.policies.selection import TIE_RTOL, argmax_random_tie, tied

__all__ = [
    "PerArmEpsGreedy",
    "PerArmLinTS",
    "PerArmLinUCB",
    "PerArmRidgePolicy",
    "ask_shared",
    "check_batch",
]


def check_batch(
    policy: ContextualPolicy,
    contexts: Any,
    actions: Any,
    rewards: Any,
    n_arms: int | None,
    *,
    fresh: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Validate a logged batch for ``partial_fit`` / ``fit`` of a per-arm ``policy``.

    Args:
        policy: The policy (its ``d`` and ``n_arms`` are checked unless ``fresh``; its
            ``_check_feedback`` checks each reward).
        contexts: (n, d) shared contexts, (n, K, d) per-arm features or n Contexts.
        actions: (n,) int arms played.
        rewards: (n,) rewards.
        n_arms: K, or None to take it from the contexts or the policy.
        fresh: Check for a policy that forgets what it knows (``fit``).

    Returns:
        (rows, actions, rewards, K): rows (n, d) shared or (n, K, d) per-arm features,
        int64 actions, float64 rewards, the number of arms.

    Raises:
        ValueError: A bad batch; the message names the argument.
    """
    known_d = None if fresh else policy.d
    known_k = None if fresh else getattr(policy, "n_arms", None)
    if isinstance(contexts, np.ndarray):
        rows = check_finite_array("contexts", contexts)
        if rows.ndim not in (2, 3) or 0 in rows.shape[1:]:
            raise ValueError(
                "contexts must be an (n, d) array of shared contexts or an (n, K, d) "
                f"array of per-arm features; got shape {rows.shape}."
            )
    elif isinstance(contexts, Sequence) and all(
        isinstance(c, Context) for c in contexts
    ):
        if len(contexts) == 0:
            rows = np.zeros((0, 1 if known_d is None else known_d))
        else:
            shapes = {c.arms.shape for c in contexts}
            if len(shapes) != 1:
                raise ValueError(
                    f"contexts must all have the same number of arms and dimension; got {sorted(shapes)}."
                )
            rows = np.stack([c.arms for c in contexts])
    else:
        raise ArgumentTypeError(
            "contexts must be a numpy array or a list of banditkit Contexts; got "
            f"{type(contexts).__name__}."
        )
    n = rows.shape[0]
    d = rows.shape[-1]
    if known_d is not None and d != known_d:
        raise ValueError(
            f"contexts have dimension {d} but this policy was built for d={known_d}."
        )
    k = rows.shape[1] if rows.ndim == 3 else None
    if n_arms is not None:
        n_arms = check_int("n_arms", n_arms, low=1)
        if k is not None and n_arms != k:
            raise ValueError(f"n_arms={n_arms} but contexts have {k} arms.")
        k = n_arms
    if known_k is not None:
        if k is not None and k != known_k:
            raise ValueError(
                f"contexts have {k} arms (n_arms) but this policy models {known_k}."
            )
        k = known_k
    if k is None:
        raise ValueError(
            "n_arms is needed: the policy has not seen a round and (n, d) shared "
            "contexts do not say how many arms there are."
        )
    acts = np.asarray(actions)
    if acts.shape != (n,) or (n and acts.dtype.kind not in "iu"):
        raise ValueError(
            f"actions must be an (n,) array of int arm indices with n = {n} (the number "
            f"of contexts); got {acts.dtype} of shape {acts.shape}."
        )
    if n and (acts.min() < 0 or acts.max() >= k):
        raise ValueError(
            f"actions must lie in [0, {k}); got {acts.min()}..{acts.max()}."
        )
    rews = np.asarray(rewards)
    if rews.shape != (n,):
        raise ValueError(
            f"rewards must be an (n,) array with n = {n}; got shape {rews.shape}."
        )
    if n:
        rews = np.array(
            [
                policy._check_feedback(float(r), int(a))
                for r, a in zip(rews, acts, strict=True)
            ]
        )
    return rows, acts.astype(np.int64), rews.astype(np.float64), k


def ask_shared(env: Environment) -> bool:
    """Ask ``env`` to serve shared contexts to a per-arm policy, if it can.

    Calls ``env.serve_shared()`` where the environment has it (the classification
    environments) and returns what it answers; False for any other environment.
    """
    serve = getattr(env, "serve_shared", None)
    return bool(serve()) if callable(serve) else False


class PerArmRidgePolicy(ContextualPolicy):
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

    def __init__(self, *, lam: float = 1.0, seed: int = 0) -> None:
        super().__init__(seed=seed)
        self.lam = check_scalar("lam", lam, low=0.0, low_open=True)
        self.n_arms: int | None = None

    A_inv: np.ndarray
    b: np.ndarray
    theta: np.ndarray
    counts: np.ndarray

    #: The (K, ...) arrays that hold one entry per arm, in the saved state.
    _stacks: ClassVar[tuple[str, ...]] = ("A_inv", "b", "theta", "counts")

    # ------------------------------------------------------------------ state
    def _fresh_arm(self) -> dict[str, np.ndarray]:
        """The entry of each stack for an arm that has never been played."""
        assert self.d is not None
        d = self.d
        return {
            "A_inv": np.eye(d) / self.lam,
            "b": np.zeros(d),
            "theta": np.zeros(d),
            "counts": np.zeros((), dtype=np.int64),
        }

    def _setup(self, ctx: Context) -> None:
        self._allocate(ctx.n_arms)

    def _allocate(self, n_arms: int) -> None:
        self.n_arms = n_arms
        for name, value in self._fresh_arm().items():
            setattr(self, name, np.repeat(value[None], n_arms, axis=0))

    def _check_context(self, ctx: Context) -> None:
        super()._check_context(ctx)
        if ctx.n_arms != self.n_arms:
            raise ValueError(
                f"ctx has {ctx.n_arms} arms but this per-arm policy models {self.n_arms}; "
                "change the catalogue with add_arm() / remove_arm() first."
            )

    def _state(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self._stacks}

    def _load_state(self, state: dict[str, Any]) -> None:
        fresh = self._fresh_arm()
        for name in self._stacks:
            setattr(self, name, np.array(state[name], dtype=fresh[name].dtype))
        self.n_arms = int(self.counts.shape[0])

    # ------------------------------------------------------------------ learning
    def _learn(self, arm: int, x: np.ndarray, reward: float) -> None:
        """Sherman-Morrison update of arm ``arm`` on features ``x`` and reward ``reward``."""
        A_inv = self.A_inv[arm]
        u = A_inv @ x
        A_inv -= np.outer(u, u / (1.0 + x @ u))
        self.b[arm] += reward * x
        self.theta[arm] = A_inv @ self.b[arm]
        self.counts[arm] += 1

    def _update(self, ctx: Context, action: Action, feedback: Feedback) -> None:
        assert isinstance(action, int)
        self._learn(action, ctx.arms[action], float(feedback))
        self._learned()

    def _learned(self) -> None:
        """Called after each learned round: the ridge estimate is re-estimated every round."""
        self._n_updates += 1

    def _means_widths2(
        self, X: np.ndarray, shared: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        """Per-arm means x_a^T theta_a and squared widths x_a^T A_a^-1 x_a, all arms at once."""
        if shared:
            x = X[0]
            mean = self.theta @ x
            width2 = (self.A_inv @ x) @ x
        else:
            mean = np.einsum("kj,kj->k", self.theta, X)
            width2 = np.einsum("ki,kij,kj->k", X, self.A_inv, X, optimize=False)
        return mean, np.maximum(width2, 0.0)

    def attach(self, env: Environment) -> None:
        """Ask the environment for shared contexts (``simulate`` calls this first).

        A classification environment with the block encoding then hands this policy
        ``Context.from_shared(x, n_arms=K)`` (``ClassificationEnv.serve_shared``); other
        environments are not asked anything.
        """
        ask_shared(env)

    # ------------------------------------------------------------------ catalogue
    def add_arm(self) -> int:
        """Append a fresh arm (A = lam I, b = 0) and return its index, K before the call.

        The other arms keep their state; contexts must then have K + 1 arms.

        Raises:
            ValueError: Before the first round (the feature dimension is not known yet).
        """
        self._require_started("add_arm")
        assert self.n_arms is not None
        for name, value in self._fresh_arm().items():
            setattr(
                self, name, np.concatenate([getattr(self, name), value[None]], axis=0)
            )
        self.n_arms += 1
        return self.n_arms - 1

    def remove_arm(self, arm: int) -> None:
        """Drop arm ``arm``; the arms after it move down one index and keep their state.

        Raises:
            ValueError: Before the first round, if ``arm`` is not in [0, K), or if it is the
                last arm left.
        """
        self._require_started("remove_arm")
        assert self.n_arms is not None
        arm = check_int("arm", arm, low=0, high=self.n_arms - 1)
        if self.n_arms == 1:
            raise ValueError("arm cannot be removed: it is the only arm left.")
        keep = np.arange(self.n_arms) != arm
        for name in self._stacks:
            setattr(self, name, getattr(self, name)[keep])
        self._removed(arm)
        self.n_arms -= 1

    def _removed(self, arm: int) -> None:
        """React to the removal of ``arm`` from the stacks (override)."""

    def _require_started(self, what: str) -> None:
        if self.d is None:
            raise ValueError(
                f"{what}() needs the feature dimension: play a round or fit() logged "
                "rounds first."
            )

    # ------------------------------------------------------------------ batch fits
    def partial_fit(
        self,
        contexts: np.ndarray | Sequence[Context],
        actions: Any,
        rewards: Any,
        *,
        n_arms: int | None = None,
    ) -> PerArmRidgePolicy:
        """Learn from logged rounds, as ``update`` on each of them in order would.

        Args:
            contexts: (n, d) shared contexts (every arm sees row t), (n, K, d) per-arm
                features, or a list of n :class:`Context`.
            actions: (n,) arms played, in [0, K).
            rewards: (n,) rewards, as ``update`` accepts them.
            n_arms: K, needed only when the policy has not seen a round and ``contexts`` is
                an (n, d) array; otherwise it must match.

        Returns:
            The policy itself.

        Raises:
            ValueError: Mismatched lengths, a bad row, action or reward (the message names
                the argument); nothing is learned from a rejected batch.
        """
        rows, acts, rews = self._check_batch(contexts, actions, rewards, n_arms)
        if self.d is None:
            self.d = rows.shape[-1]
            self._allocate(self._batch_arms)
        shared = rows.ndim == 2
        for i in range(acts.shape[0]):
            a = int(acts[i])
            self._learn(a, rows[i] if shared else rows[i, a], float(rews[i]))
            self.t += 1
            self._learned()
        return self

    def fit(
        self,
        contexts: np.ndarray | Sequence[Context],
        actions: Any,
        rewards: Any,
        *,
        n_arms: int | None = None,
    ) -> PerArmRidgePolicy:
        """Forget what was learned and learn from logged rounds (see :meth:`partial_fit`).

        The random stream is not reset: a fresh policy that is fitted acts as the same policy
        fed the rounds through ``update``. K is taken from the batch (``n_arms`` or the
        contexts), not from the previous fit.
        """
        self._check_batch(contexts, actions, rewards, n_arms, fresh=True)
        self.d, self.n_arms, self.t, self._n_updates = None, None, 0, 0
        return self.partial_fit(contexts, actions, rewards, n_arms=n_arms)

    def _check_batch(
        self,
        contexts: Any,
        actions: Any,
        rewards: Any,
        n_arms: int | None,
        *,
        fresh: bool = False,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rows, acts, rews, self._batch_arms = check_batch(
            self, contexts, actions, rewards, n_arms, fresh=fresh
        )
        return rows, acts, rews


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

    def __init__(self, *, nu: float = 1.0, lam: float = 1.0, seed: int = 0) -> None:
        super().__init__(lam=lam, seed=seed)
        self.nu = check_scalar("nu", nu, low=0.0)

    def _act(self, ctx: Context) -> Action:
        mean, width2 = self._means_widths2(ctx.arms, ctx.is_shared)
        return argmax_random_tie(mean + self.nu * np.sqrt(width2), self.rng, TIE_RTOL)


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

    def __init__(self, *, nu: float = 1.0, lam: float = 1.0, seed: int = 0) -> None:
        super().__init__(lam=lam, seed=seed)
        self.nu = check_scalar("nu", nu, low=0.0)

    def _act(self, ctx: Context) -> Action:
        mean, width2 = self._means_widths2(ctx.arms, ctx.is_shared)
        draws = mean + self.nu * np.sqrt(width2) * self.rng.standard_normal(
            mean.shape[0]
        )
        return argmax_random_tie(draws, self.rng, TIE_RTOL)


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

    def __init__(
        self, *, epsilon: float = 0.1, lam: float = 1.0, seed: int = 0
    ) -> None:
        super().__init__(lam=lam, seed=seed)
        self.epsilon = check_scalar("epsilon", epsilon, low=0.0, high=1.0)

    def _act(self, ctx: Context) -> Action:
        explore = self.rng.random() < self.epsilon
        X = ctx.arms
        scores = (
            self.theta @ X[0] if ctx.is_shared else np.einsum("kj,kj->k", self.theta, X)
        )
        if explore:
            action = int(self.rng.integers(ctx.n_arms))
        else:
            action = argmax_random_tie(scores, self.rng, TIE_RTOL)
        ties = tied(scores, rtol=TIE_RTOL)
        greedy = (1.0 - self.epsilon) / np.count_nonzero(ties) if ties[action] else 0.0
        self.last_propensity = self.epsilon / ctx.n_arms + greedy
        return action
