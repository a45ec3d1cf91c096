"""Per-arm policies: arms that come and go, and logged batches learned in one call.

A per-arm policy keeps one model per arm (``policies.perarm``: a (K, d, d) ridge stack;
``policies.sklearn_arms``: one scikit-learn estimator per arm). ``PerArmPolicy`` is what they
share: K fixed at the first round and changed only by :meth:`~PerArmPolicy.add_arm` /
:meth:`~PerArmPolicy.remove_arm` (the other arms keep their state), logged rounds learned by
:meth:`~PerArmPolicy.partial_fit` with the result of feeding them to ``update`` one at a time
(:meth:`~PerArmPolicy.fit` starts afresh), and the request for shared contexts from the
classification environments (:func:`ask_shared`).

A subclass keeps its per-arm state as named (K, ...) stacks (``_stacks``, each entry
``_fresh_arm()`` for an arm never played: allocated, grown, cut and saved here) or provides
``_allocate(n_arms)``, ``_add_arm()``, ``_drop_arm(arm)`` and the state itself; it provides
``_learn(arm, x, reward)`` (one round) and may override ``_learned()`` (called after each
round).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Self

import numpy as np

from banditkit.core import Context, ContextualPolicy
from banditkit.core.environment import Environment
from banditkit.core.params import learned
from banditkit.core.types import Action, Feedback
from banditkit.core.validation import (
    ArgumentTypeError,
    check_finite_array,
    check_int,
    check_spd,
    check_state_array,
)
from banditkit.policies.parts.history import Buffers

__all__ = ["PerArmPolicy", "ask_shared", "check_batch", "drop_logged_arm"]


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
    rows = _rows_of(contexts, known_d)
    n = rows.shape[0]
    k = _arm_count(rows, n_arms, known_k)
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


def _rows_of(contexts: Any, known_d: int | None) -> np.ndarray:
    """The (n, d) shared contexts or (n, K, d) per-arm features of a logged batch."""
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
    d = rows.shape[-1]
    if known_d is not None and d != known_d:
        raise ValueError(
            f"contexts have dimension {d} but this policy was built for d={known_d}."
        )
    return rows


def _arm_count(rows: np.ndarray, n_arms: int | None, known_k: int | None) -> int:
    """K of a batch: from its per-arm rows, ``n_arms`` or the policy, which must agree."""
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
    return k


def ask_shared(env: Environment) -> bool:
    """Ask ``env`` to serve shared contexts to a per-arm policy, if it can.

    Calls ``env.serve_shared()`` where the environment has it (the classification
    environments) and returns what it answers; False for any other environment.
    """
    serve = getattr(env, "serve_shared", None)
    return bool(serve()) if callable(serve) else False


class PerArmPolicy(ContextualPolicy):
    """One model per arm on a catalogue that may change: see the module docstring.

    Attributes:
        n_arms: K, the arms the policy models (None before the first round).
    """

    n_arms: int | None = learned(default=None)

    #: The (K, ...) arrays that hold one entry per arm, in the saved state.
    _stacks: ClassVar[tuple[str, ...]] = ()
    #: The stacks of symmetric positive-definite matrices (checked when a state loads).
    _spd_stacks: ClassVar[tuple[str, ...]] = ()

    # ------------------------------------------------------------------ subclass hooks
    def _fresh_arm(self) -> dict[str, np.ndarray]:
        """The entry of each stack for an arm that has never been played."""
        raise NotImplementedError

    def _learn(self, arm: int, x: np.ndarray, reward: float) -> None:
        """Learn one round: arm ``arm`` played on features ``x`` gave ``reward``."""
        raise NotImplementedError

    def _learned(self) -> None:
        """Called after each learned round (override)."""

    def _removed(self, arm: int) -> None:
        """React to the removal of ``arm`` from the stacks (override)."""

    # ------------------------------------------------------------------ the stacks
    def _allocate(self, n_arms: int) -> None:
        """Fresh state for ``n_arms`` arms (``self.d`` is known)."""
        self.n_arms = n_arms
        for name, value in self._fresh_arm().items():
            setattr(self, name, np.repeat(value[None], n_arms, axis=0))

    def _add_arm(self) -> None:
        """Append the state of an arm that has never been played to every stack."""
        for name, value in self._fresh_arm().items():
            setattr(
                self, name, np.concatenate([getattr(self, name), value[None]], axis=0)
            )

    def _drop_arm(self, arm: int) -> None:
        """Drop the state of arm ``arm`` (``self.n_arms`` is still K)."""
        keep = np.arange(self.n_arms or 0) != arm
        for name in self._stacks:
            setattr(self, name, getattr(self, name)[keep])
        self._removed(arm)

    def _state(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self._stacks}

    def _load_state(self, state: dict[str, Any]) -> None:
        """Restore the stacks, each checked against a fresh arm's entry (K, ...).

        Every stack must hold K entries of a fresh arm's shape and dtype (K from
        ``counts``, which must be >= 0), and each matrix of :attr:`_spd_stacks` must be
        symmetric positive-definite.
        """
        fresh = self._fresh_arm()
        counts = check_state_array("counts", state["counts"], (None,), low=0)
        stacks = {
            name: check_state_array(
                name,
                state[name],
                (counts.shape[0], *fresh[name].shape),
                dtype=fresh[name].dtype,
                low=0 if name == "counts" else None,
            )
            for name in self._stacks
        }
        for name in self._spd_stacks:
            for a, matrix in enumerate(stacks[name]):
                check_spd(f"{name}[{a}]", matrix, matrix.shape[0])
        for name, value in stacks.items():
            setattr(self, name, value)
        self.n_arms = int(counts.shape[0])

    # ------------------------------------------------------------------ rounds
    def _setup(self, ctx: Context) -> None:
        self._allocate(ctx.n_arms)

    def _check_context(self, ctx: Context) -> None:
        super()._check_context(ctx)
        if ctx.n_arms != self.n_arms:
            raise ValueError(
                f"ctx has {ctx.n_arms} arms but this per-arm policy models {self.n_arms}; "
                "change the catalogue with add_arm() / remove_arm() first."
            )

    def _update(self, ctx: Context, action: Action, feedback: Feedback) -> None:
        assert isinstance(action, int)
        self._learn(action, ctx.arms[action], float(feedback))
        self._learned()

    def attach(self, env: Environment) -> None:
        """Ask the environment for shared contexts (``simulate`` calls this first).

        A classification environment with the block encoding then hands this policy
        ``Context.from_shared(x, n_arms=K)`` (``ClassificationEnv.serve_shared``); other
        environments are not asked anything.
        """
        ask_shared(env)

    # ------------------------------------------------------------------ catalogue
    def add_arm(self) -> int:
        """Append an arm that has never been played and return its index, K before the call.

        The other arms keep their state; contexts must then have K + 1 arms.

        Raises:
            ValueError: Before the first round (the feature dimension is not known yet).
        """
        self._require_started("add_arm")
        assert self.n_arms is not None
        self._add_arm()
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
        self._drop_arm(arm)
        self.n_arms -= 1

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
    ) -> Self:
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
        rows, acts, rews, k = check_batch(self, contexts, actions, rewards, n_arms)
        if self.d is None:
            self.d = int(rows.shape[-1])
            self._allocate(k)
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
    ) -> Self:
        """Forget what was learned and learn from logged rounds (see :meth:`partial_fit`).

        The random stream is not reset: a fresh policy that is fitted acts as the same policy
        fed the rounds through ``update``. K is taken from the batch (``n_arms`` or the
        contexts), not from the previous fit.
        """
        check_batch(self, contexts, actions, rewards, n_arms, fresh=True)
        self.d, self.n_arms, self.t, self._n_updates = None, None, 0, 0
        return self.partial_fit(contexts, actions, rewards, n_arms=n_arms)


def drop_logged_arm(log: Buffers, arm: int) -> None:
    """Drop the rows of ``arm`` from a per-arm policy's log; later arms move down by one.

    ``log`` holds the learned rounds in order, with their arm in ``row_arms``.
    """
    arms = log.view("row_arms")
    keep = arms != arm
    kept = {name: log.view(name)[keep] for name in log.names}
    kept["row_arms"] = kept["row_arms"] - (kept["row_arms"] > arm)
    log.load(kept)
