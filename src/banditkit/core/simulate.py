"""``simulate``: the bandit loop, top to bottom, and the :class:`RunResult` it returns."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

import numpy as np

from banditkit.core.environment import Environment
from banditkit.core.policy import Policy
from banditkit.core.records import Record
from banditkit.core.roundbar import RoundBar
from banditkit.core.threads import limit_threads
from banditkit.core.validation import check_int

__all__ = ["RunResult", "simulate"]


@dataclass
class RunResult:
    """Per-round records of one run; every array has one entry per (accepted) round.

    The arrays are the environment's declared records (``Environment.declared_records``):
    the loop records ``simulate`` fills (``core.records.LOOP_RECORDS``), the action, and the
    values the environment returns in ``Step.values`` (in ``values``).

    Attributes:
        regret: Expected (pseudo-)regret of each round's action.
        reward: Realised reward of each round.
        cumulative_regret: Running sum of ``regret``.
        act_seconds: Wall time of ``policy.act``.
        update_seconds: Wall time of ``policy.update``.
        n_updates: The policy's parameter re-estimations so far, after each round.
        events_read: Environment rounds read so far (accepted or not), after each round.
        actions: The action of each round: int64 (T,) for the contextual family, int64
            (T, 2) for duels, a list of tuples for assortments (their sizes may differ).
        propensities: ``policy.last_propensity`` after each ``act``; NaN where None.
        values: The environment's other declared records, name -> (T,) array of its dtype.
        records: The declaration the run was recorded under.
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
    actions: np.ndarray | list[tuple[int, ...]] = field(
        default_factory=lambda: np.zeros(0, dtype=np.int64)
    )
    propensities: np.ndarray = field(default_factory=lambda: np.zeros(0))
    values: dict[str, np.ndarray] = field(default_factory=dict)
    records: tuple[Record, ...] = ()

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

    def column(self, name: str) -> Any:
        """The per-round values of the declared record ``name``.

        Raises:
            ValueError: If the run has no record of that name.
        """
        if name == "action":
            return self.actions
        if name == "propensity":
            return self.propensities
        if name in self.values:
            return self.values[name]
        if name in _LOOP_ATTRIBUTES:
            return getattr(self, name)
        known = [r.name for r in self.records]
        raise ValueError(f"name must be a record of this run {known}; got {name!r}.")

    def columns(self) -> dict[str, Any]:
        """Every declared record of the run, name -> per-round values, in declared order."""
        return {r.name: self.column(r.name) for r in self.records}


_LOOP_ATTRIBUTES = (
    "regret",
    "reward",
    "act_seconds",
    "update_seconds",
    "n_updates",
    "events_read",
)


def _values_error(
    values: Mapping[str, float] | None, names: tuple[str, ...], env: Environment
) -> NoReturn:
    raise ValueError(
        f"{type(env).__name__}._step returned values for {sorted(values or ())} but the "
        f"environment declares {sorted(names)} (Environment.records); an undeclared "
        "or missing record is an error."
    )


def simulate(
    policy: Policy,
    env: Environment,
    horizon: int,
    seed: int = 0,
    *,
    callback: Callable[[int], None] | None = None,
    progress: bool | None = None,
    threads: int = 1,
) -> RunResult:
    """Run ``policy`` on ``env`` for ``horizon`` rounds and record every round.

    The environment is reset with ``seed``; the policy keeps its own seed. Rounds whose step is
    not ``accepted`` (replay rejections) are neither learned from nor recorded, and the loop runs
    until ``horizon`` accepted rounds or until the environment is exhausted. Every declared
    record of the environment is kept (see :class:`RunResult`).

    Args:
        policy: A fresh policy of the environment's family.
        env: The environment; reset here.
        horizon: Number of (accepted) rounds, >= 1.
        seed: Seed of the environment's instance, context and noise streams.
        callback: Called with the number of recorded rounds after each one (progress bars).
        progress: A bar over the rounds on standard error: None (default) when that is a
            terminal and the run has lasted 2 s, True at once, False never
            (``banditkit.core.roundbar``). It does not change the results.
        threads: BLAS and PyTorch threads of the run, >= 1 (``core.threads``); the
            caller's settings are restored afterwards. One (default) is what
            ``banditkit run`` uses, so a seed gives the same numbers from both; more
            threads can change the last digits (docs/performance.md, "Threads").

    Returns:
        A :class:`RunResult`.

    Raises:
        ValueError: If the families differ, or a step's ``values`` do not match the
            environment's declared records.

    Example:
        >>> import banditkit as bk
        >>> run = bk.simulate(bk.make_policy("oracle"), bk.make_env("linear", d=3), 50, seed=0)
        >>> float(run.cumulative_regret[-1])
        0.0
    """
    with limit_threads(threads, torch=policy.needs_torch):
        return _simulate(
            policy, env, horizon, seed, callback=callback, progress=progress
        )


def _simulate(
    policy: Policy,
    env: Environment,
    horizon: int,
    seed: int,
    *,
    callback: Callable[[int], None] | None,
    progress: bool | None,
) -> RunResult:
    """The loop of :func:`simulate`, run under its thread counts."""
    horizon = check_int("horizon", horizon, low=1)
    if policy.family != env.family:
        raise ValueError(
            f"policy {policy!r} is of the {policy.family} family but the environment "
            f"{env!r} is {env.family}."
        )
    records = env.declared_records()
    names = env.step_values()
    expected = set(names)
    if any(r.dtype == "list<int64>" for r in records if r.name in expected):
        raise ValueError(
            f"{type(env).__name__} declares a list record besides the action; values "
            "returned in Step.values are scalars."
        )
    env.reset(seed)
    policy.begin(horizon)
    policy.attach(env)
    rows: list[tuple[float, ...]] = []  # one tuple per round; an array at the end
    actions: list[Any] = []
    clock, nan = time.perf_counter, float("nan")
    n, events = 0, 0
    bar = RoundBar(
        horizon, progress, label=policy.registry_name or type(policy).__name__
    )
    try:
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
            propensity = policy.last_propensity
            row: tuple[float, ...] = (
                step.regret,
                step.reward,
                t1 - t0,
                t3 - t2,
                policy.n_updates,
                events,
                nan if propensity is None else propensity,
            )
            values = step.values
            if names or values is not None:
                if values is None or values.keys() != expected:
                    _values_error(values, names, env)
                row += tuple(values[k] for k in names)
            rows.append(row)
            actions.append(action)
            n += 1
            if callback is not None:
                callback(n)
            bar.tick(n)
    finally:
        bar.close()
    return result_from_rows(
        rows,
        records,
        names,
        events_total=events,
        meta={"seed": seed, "policy": policy.get_params(), "env": env.get_params()},
        actions=_actions(actions, env.family),
    )


def result_from_rows(
    rows: list[tuple[float, ...]],
    records: tuple[Record, ...],
    names: Sequence[str],
    *,
    events_total: int,
    meta: dict[str, Any],
    actions: np.ndarray | list[tuple[int, ...]],
) -> RunResult:
    """A :class:`RunResult` from the per-round tuples gathered by the simulation loop.

    Each row is (regret, reward, act seconds, update seconds, n_updates, events read,
    propensity, *values) with the environment's step values in the order of ``names``
    (``env.step_values()``); ``simulate`` and
    ``core.batched.simulate_seeds`` (one list per seed) gather them so.
    """
    table = np.array(rows, dtype=np.float64).reshape(len(rows), 7 + len(names))
    dtypes = {r.name: r.numpy_dtype for r in records}
    return RunResult(
        regret=table[:, 0].copy(),
        reward=table[:, 1].copy(),
        act_seconds=table[:, 2].copy(),
        update_seconds=table[:, 3].copy(),
        n_updates=table[:, 4].astype(np.int64),
        events_read=table[:, 5].astype(np.int64),
        events_total=events_total,
        meta=meta,
        actions=actions,
        propensities=table[:, 6].copy(),
        values={k: table[:, 7 + i].astype(dtypes[k]) for i, k in enumerate(names)},
        records=records,
    )


def _actions(actions: list[Any], family: str) -> np.ndarray | list[tuple[int, ...]]:
    if family == "contextual":
        return np.asarray(actions, dtype=np.int64).reshape(-1)
    if family == "dueling":
        return np.asarray(actions, dtype=np.int64).reshape(-1, 2)
    return [tuple(int(i) for i in a) for a in actions]
