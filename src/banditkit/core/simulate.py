"""``simulate``: the bandit loop, top to bottom, and the :class:`RunResult` it returns."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from banditkit.core.environment import Environment
from banditkit.core.policy import Policy
from banditkit.core.validation import check_int

__all__ = ["RunResult", "simulate"]


@dataclass
class RunResult:
    """Per-round records of one run; every array has one entry per (accepted) round.

    Attributes:
        regret: Expected (pseudo-)regret of each round's action.
        reward: Realised reward of each round.
        cumulative_regret: Running sum of ``regret``.
        act_seconds: Wall time of ``policy.act``.
        update_seconds: Wall time of ``policy.update``.
        n_updates: The policy's parameter re-estimations so far, after each round.
        events_read: Replay only: log events read so far (accepted or not), after each round.
        events_total: Events read in the whole run, including rejected ones after the last
            accepted round.
    """

    regret: np.ndarray
    reward: np.ndarray
    act_seconds: np.ndarray
    update_seconds: np.ndarray
    n_updates: np.ndarray
    events_read: np.ndarray
    events_total: int = 0
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def cumulative_regret(self) -> np.ndarray:
        """Running sum of the per-round regret."""
        return np.cumsum(self.regret)

    @property
    def horizon(self) -> int:
        """Rounds recorded."""
        return int(self.regret.shape[0])

    @property
    def acceptance_rate(self) -> float:
        """Fraction of the events read that were accepted (1.0 outside replay)."""
        if self.events_total == 0:
            return float("nan")
        return float(self.horizon / self.events_total)

    @property
    def seconds(self) -> float:
        """Total time spent inside the policy."""
        return float(self.act_seconds.sum() + self.update_seconds.sum())


def simulate(
    policy: Policy,
    env: Environment,
    horizon: int,
    seed: int = 0,
    *,
    callback: Callable[[int], None] | None = None,
) -> RunResult:
    """Run ``policy`` on ``env`` for ``horizon`` rounds and record every round.

    The environment is reset with ``seed``; the policy keeps its own seed. Rounds whose step is
    not ``accepted`` (replay rejections) are neither learned from nor recorded, and the loop runs
    until ``horizon`` accepted rounds or until the environment is exhausted.

    Args:
        policy: A fresh policy of the environment's family.
        env: The environment; reset here.
        horizon: Number of (accepted) rounds, >= 1.
        seed: Seed of the environment's instance, context and noise streams.
        callback: Called with the number of recorded rounds after each one (progress bars).

    Returns:
        A :class:`RunResult`.

    Example:
        >>> import banditkit as bk
        >>> run = bk.simulate(bk.make_policy("oracle"), bk.make_env("linear", d=3), 50, seed=0)
        >>> float(run.cumulative_regret[-1])
        0.0
    """
    horizon = check_int("horizon", horizon, low=1)
    if policy.family != env.family:
        raise ValueError(
            f"policy {policy!r} is of the {policy.family} family but the environment "
            f"{env!r} is {env.family}."
        )
    env.reset(seed)
    policy.begin(horizon)
    policy.attach(env)
    rows = np.zeros((horizon, 6))
    clock = time.perf_counter
    n, events = 0, 0
    while n < horizon:
        ctx = env.context()
        if ctx is None:
            break
        events += 1
        t0 = clock()
        action = policy.act(ctx)
        t1 = clock()
        step = env.step(action)
        if not step.accepted:
            continue
        t2 = clock()
        policy.update(ctx, action, step.feedback)
        t3 = clock()
        rows[n] = (step.regret, step.reward, t1 - t0, t3 - t2, policy.n_updates, events)
        n += 1
        if callback is not None:
            callback(n)
    rows = rows[:n]
    return RunResult(
        regret=rows[:, 0].copy(),
        reward=rows[:, 1].copy(),
        act_seconds=rows[:, 2].copy(),
        update_seconds=rows[:, 3].copy(),
        n_updates=rows[:, 4].astype(np.int64),
        events_read=rows[:, 5].astype(np.int64),
        events_total=events,
        meta={"seed": seed, "policy": policy.get_params(), "env": env.get_params()},
    )
