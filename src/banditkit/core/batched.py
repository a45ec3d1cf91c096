"""Seed batching: S runs of one configuration as one stacked computation.

A policy class may offer a seed-batched counterpart through the class method

    batched(members: list[Policy]) -> BatchedPolicy | None

where ``members`` are S fresh policies of that class with the same hyper-parameters and
their own seeds; it returns None when that configuration has no batched implementation
(the caller then runs the seeds one by one). A ``BatchedPolicy`` plays the S members in
lockstep: ``act`` takes the S contexts' arms (S, K, d) and returns S actions, ``update``
takes the S actions and rewards. Each member's random stream is used exactly as the
separate run uses it, so the actions are those of S separate runs up to the order of
floating-point operations (docs/performance.md, "Multi-seed batching").

:func:`simulate_seeds` is the loop of :func:`simulate` for such a batch: one environment
instance per seed, reset with that seed, and one :class:`RunResult` per seed with the same
records as the separate run (the per-round policy times are the batch's divided by S).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from banditkit.core.environment import Environment
from banditkit.core.policy import Policy
from banditkit.core.simulate import (
    RunResult,
    _actions,
    _values_error,
    result_from_rows,
)
from banditkit.core.validation import check_int

__all__ = ["BatchedPolicy", "batched_policy", "simulate_seeds"]


@runtime_checkable
class BatchedPolicy(Protocol):
    """S policies of one configuration stepped together (module docstring)."""

    #: The number S of members.
    size: int

    def act(self, arms: np.ndarray) -> np.ndarray:
        """The S actions (S,) int64 for the members' arms (S, K, d)."""
        ...

    def update(
        self, arms: np.ndarray, actions: np.ndarray, rewards: np.ndarray
    ) -> None:
        """Learn from the S rewards (S,) of ``actions`` on ``arms``."""
        ...

    @property
    def n_updates(self) -> np.ndarray:
        """Parameter re-estimations of each member so far (S,)."""
        ...


def batched_policy(members: Sequence[Policy]) -> BatchedPolicy | None:
    """The batched counterpart of ``members`` offered by their class, or None.

    None when the class offers none (no ``batched`` class method), when it declines this
    configuration, or when there are fewer than two members.

    Raises:
        ValueError: If the members are not fresh policies of one class with the same
            hyper-parameters.
    """
    members = list(members)
    if len(members) < 2:
        return None
    cls = type(members[0])
    params = _params_but_seed(members[0])
    for member in members:
        if type(member) is not cls or _params_but_seed(member) != params:
            raise ValueError(
                "members must be policies of one class with the same hyper-parameters "
                f"(seeds aside); got {member!r} besides {members[0]!r}."
            )
        if member.t or member.d is not None:
            raise ValueError(f"members must be fresh policies; {member!r} has played.")
    factory = getattr(cls, "batched", None)
    return None if factory is None else factory(members)


def _params_but_seed(policy: Policy) -> dict[str, Any]:
    return {k: v for k, v in policy.get_params().items() if k != "seed"}


def simulate_seeds(
    members: Sequence[Policy],
    envs: Sequence[Environment],
    horizon: int,
    seeds: Sequence[int],
    *,
    batch: BatchedPolicy | None = None,
) -> list[RunResult]:
    """Run member s on environment s reset with ``seeds[s]``, all S as one batch.

    The result of seed s is that of ``simulate(members[s], envs[s], horizon,
    seed=seeds[s])`` up to the order of floating-point operations in the policy: the
    same contexts, noise and (so) actions and regrets. The environments must accept every
    round (not replay environments, which reject rounds) and have contextual actions.

    Args:
        members: S fresh policies of one configuration (``batched_policy``).
        envs: S environments of one configuration, reset here.
        horizon: Rounds, >= 1.
        seeds: The S seeds of the environments.
        batch: The batched policy of ``members`` (built by ``batched_policy`` if None).

    Returns:
        One ``RunResult`` per seed, in order; act and update times are the batch's
        divided by S.

    Raises:
        ValueError: If the lengths differ, the configuration has no batched policy, an
            environment is not contextual or rejects a round, or a step's values do not
            match its declared records.

    Example:
        >>> import banditkit as bk
        >>> params = {"width": 4, "steps": 5, "update_every": 10}
        >>> def members():
        ...     return [bk.make_policy("neurallog-ucb2", **params, seed=s) for s in (0, 1)]
        >>> envs = [bk.make_env("logistic", d=3, n_arms=2) for _ in (0, 1)]
        >>> runs = simulate_seeds(members(), envs, 30, [0, 1])
        >>> alone = bk.simulate(members()[1], bk.make_env("logistic", d=3, n_arms=2), 30, seed=1)
        >>> bool((runs[1].actions == alone.actions).all())
        True
    """
    horizon = check_int("horizon", horizon, low=1)
    size = len(members)
    if len(envs) != size or len(seeds) != size:
        raise ValueError(
            f"members, envs and seeds must have one entry per seed; got {size}, "
            f"{len(envs)} and {len(seeds)}."
        )
    if any(env.family != "contextual" for env in envs):
        raise ValueError("envs must be contextual environments to batch seeds.")
    if batch is None:
        batch = batched_policy(members)
        if batch is None:
            raise ValueError(
                f"members ({type(members[0]).__name__}) have no batched policy for this "
                "configuration; run the seeds one by one (simulate)."
            )
    records = envs[0].declared_records()
    names = envs[0].step_values()
    expected = set(names)
    for env, seed, member in zip(envs, seeds, members, strict=True):
        env.reset(seed)
        member.begin(horizon)
        member.attach(env)
    rows: list[list[tuple[float, ...]]] = [[] for _ in range(size)]
    actions_of: list[list[int]] = [[] for _ in range(size)]
    clock, nan = time.perf_counter, float("nan")
    rewards = np.empty(size)
    for n in range(1, horizon + 1):
        ctxs = [env.context() for env in envs]
        if any(ctx is None for ctx in ctxs):
            raise ValueError("envs must last the horizon to batch seeds.")
        arms = np.stack([ctx.arms for ctx in ctxs])  # type: ignore[union-attr]
        t0 = clock()
        actions = batch.act(arms)
        t1 = clock()
        steps = [env.step(int(a)) for env, a in zip(envs, actions, strict=True)]
        for s, step in enumerate(steps):
            if not step.accepted:
                raise ValueError(
                    f"envs must accept every round to batch seeds; {envs[s]!r} "
                    "rejected one (replay environments run seed by seed)."
                )
            rewards[s] = step.feedback
        t2 = clock()
        batch.update(arms, actions, rewards)
        t3 = clock()
        act_s, update_s = (t1 - t0) / size, (t3 - t2) / size
        n_updates = batch.n_updates
        for s, step in enumerate(steps):
            row: tuple[float, ...] = (
                step.regret,
                step.reward,
                act_s,
                update_s,
                float(n_updates[s]),
                n,
                nan,
            )
            values = step.values
            if names or values is not None:
                if values is None or values.keys() != expected:
                    _values_error(values, names, envs[s])
                row += tuple(values[k] for k in names)
            rows[s].append(row)
            actions_of[s].append(int(actions[s]))
    return [
        result_from_rows(
            rows[s],
            records,
            names,
            events_total=horizon,
            meta={
                "seed": seeds[s],
                "policy": members[s].get_params(),
                "env": envs[s].get_params(),
            },
            actions=_actions(actions_of[s], "contextual"),
        )
        for s in range(size)
    ]
