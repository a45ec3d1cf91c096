"""``simulate``: the bandit loop, top to bottom, and the :class:`RunResult` it returns.

There is one loop (``_play``): it plays S runs in lockstep, S = 1 being the ordinary run
(:func:`simulate`) and S seeds of one configuration the seed-batched one
(:func:`simulate_seeds`, through ``core.members``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

import numpy as np

from banditkit.core.environment import Environment
from banditkit.core.members import Members, Separate, stack
from banditkit.core.policy import Policy
from banditkit.core.records import Record
from banditkit.core.resume import Checkpoints, Resumable, Snapshot
from banditkit.core.roundbar import RoundBar
from banditkit.core.threads import limit_threads
from banditkit.core.types import Step
from banditkit.core.validation import check_int

__all__ = ["RunResult", "row_width", "simulate", "simulate_seeds"]

#: The loop's own columns of a round's record (``_row``), before the step values.
_LOOP_COLUMNS = 7


def row_width(env: Environment) -> int:
    """Columns of the loop's per-round records on ``env`` (a snapshot's ``rows``)."""
    return _LOOP_COLUMNS + len(env.step_values())


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
    checkpoints: Checkpoints | None = None,
) -> RunResult:
    """Run ``policy`` on ``env`` for ``horizon`` rounds and record every round.

    The environment is reset with ``seed``; the policy keeps its own seed. Rounds whose step is
    not ``accepted`` (replay rejections) are neither learned from nor recorded, and the loop runs
    until ``horizon`` accepted rounds or until the environment is exhausted. Every declared
    record of the environment is kept (see :class:`RunResult`). This is :func:`simulate_seeds`
    with one seed.

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
        checkpoints: Every ``checkpoints.every`` rounds, a snapshot of the run handed to
            ``checkpoints.save``; with ``checkpoints.resume``, the run goes on from that
            snapshot, and its result is the uninterrupted run's (``core.resume``).

    Returns:
        A :class:`RunResult`.

    Raises:
        ValueError: If the families differ, a step's ``values`` do not match the
            environment's declared records, or the snapshot to resume from does not fit
            the run.

    Example:
        >>> import banditkit as bk
        >>> run = bk.simulate(bk.make_policy("oracle"), bk.make_env("linear", d=3), 50, seed=0)
        >>> float(run.cumulative_regret[-1])
        0.0
    """
    with limit_threads(threads, torch=policy.needs_torch):
        return _play(
            Separate([policy]),
            [policy],
            [env],
            horizon,
            [seed],
            callback=callback,
            progress=progress,
            checkpoints=checkpoints,
        )[0]


def simulate_seeds(
    policies: Sequence[Policy],
    envs: Sequence[Environment],
    horizon: int,
    seeds: Sequence[int],
    *,
    members: Members | None = None,
    checkpoints: Checkpoints | None = None,
) -> list[RunResult]:
    """Run policy s on environment s reset with ``seeds[s]``, the S runs in lockstep.

    The runs are those of ``simulate(policies[s], envs[s], horizon, seed=seeds[s])``: the
    same contexts, noise and records. When the policies' class plays them as one stacked
    computation (``core.members.stack``), the actions are those of the separate runs up
    to the order of floating-point operations in the policy, and the per-round act and
    update times are the batch's divided by S. With S > 1 every environment must accept
    every round and last the horizon (replay environments run seed by seed).

    Args:
        policies: S fresh policies of one configuration (their own seeds).
        envs: S environments of one configuration, reset here.
        horizon: Rounds, >= 1.
        seeds: The S seeds of the environments.
        members: How the S policies play (``core.members``); None: stacked if their
            class offers it, else each on its own.
        checkpoints: As in :func:`simulate`, the S runs in one snapshot; only for
            members that can be resumed (``core.resume.Resumable``: ``Separate``).

    Returns:
        One ``RunResult`` per seed, in order.

    Raises:
        ValueError: If the lengths differ, a family differs, an environment rejects a
            round or runs out (S > 1), or a step's values do not match its records.

    Example:
        >>> import banditkit as bk
        >>> params = {"width": 4, "steps": 5, "update_every": 10}
        >>> def policies():
        ...     return [bk.make_policy("neurallog-ucb2", **params, seed=s) for s in (0, 1)]
        >>> envs = [bk.make_env("logistic", d=3, n_arms=2) for _ in (0, 1)]
        >>> runs = simulate_seeds(policies(), envs, 30, [0, 1])
        >>> alone = bk.simulate(policies()[1], bk.make_env("logistic", d=3, n_arms=2), 30, seed=1)
        >>> bool((runs[1].actions == alone.actions).all())
        True
    """
    if not len(policies) == len(envs) == len(seeds) >= 1:
        raise ValueError(
            f"policies, envs and seeds must have one entry per seed; got "
            f"{len(policies)}, {len(envs)} and {len(seeds)}."
        )
    if members is None:
        members = stack(policies) or Separate(policies)
    return _play(
        members,
        policies,
        envs,
        horizon,
        seeds,
        callback=None,
        progress=False,
        checkpoints=checkpoints,
    )


def _play(
    members: Members,
    policies: Sequence[Policy],
    envs: Sequence[Environment],
    horizon: int,
    seeds: Sequence[int],
    *,
    callback: Callable[[int], None] | None,
    progress: bool | None,
    checkpoints: Checkpoints | None = None,
) -> list[RunResult]:
    """The loop: S members on S environments, round by round (S = 1: ``simulate``)."""
    horizon = check_int("horizon", horizon, low=1)
    records, names = _declared(policies, envs)
    size = len(envs)
    rows, actions_of, n, events = _begin(
        members, envs, seeds, horizon, checkpoints, _LOOP_COLUMNS + len(names)
    )
    clock = time.perf_counter
    bar = RoundBar(horizon, progress, label=_label(policies[0]))
    try:
        while n < horizon:
            ctxs = [ctx for ctx in (env.context() for env in envs) if ctx is not None]
            if len(ctxs) < size:  # a finite log is exhausted
                _lockstep(size, "last the horizon")
                break
            events += 1
            t0 = clock()
            actions = members.act_all(ctxs)
            t1 = clock()
            steps = [env.step(a) for env, a in zip(envs, actions, strict=True)]
            if not all(step.accepted for step in steps):
                _lockstep(size, "accept every round")
                continue
            t2 = clock()
            members.update_all(ctxs, actions, [step.feedback for step in steps])
            t3 = clock()
            timing = ((t1 - t0) / size, (t3 - t2) / size)
            counts, odds = members.n_updates_all(), members.propensities_all()
            for s, step in enumerate(steps):
                rows[s].append(
                    _row(step, timing, counts[s], events, odds[s], names, envs[s])
                )
                actions_of[s].append(actions[s])
            n += 1
            if checkpoints is not None and checkpoints.due(n, horizon):
                _save(checkpoints, members, envs, rows, actions_of, events)
            if callback is not None:
                callback(n)
            bar.tick(n)
    finally:
        bar.close()
    return [
        result_from_rows(
            rows[s],
            records,
            names,
            events_total=events,
            meta={"seed": seed, "policy": policy.get_params(), "env": env.get_params()},
            actions=_actions(actions_of[s], env.family),
        )
        for s, (policy, env, seed) in enumerate(zip(policies, envs, seeds, strict=True))
    ]


Rows = list[list[tuple[float, ...]]]
"""Per run, the records of the loop's rounds (``_row``); arrays at the end."""


def _begin(
    members: Members,
    envs: Sequence[Environment],
    seeds: Sequence[int],
    horizon: int,
    checkpoints: Checkpoints | None,
    width: int,
) -> tuple[Rows, list[list[Any]], int, int]:
    """Before the first round: fresh runs, or the snapshot to resume from put back.

    Returns the rows and actions so far, the rounds recorded and the events read.
    """
    snapshot = None if checkpoints is None else checkpoints.resume
    if checkpoints is not None and not isinstance(members, Resumable):
        raise ValueError(
            f"checkpoints need members that can be resumed (core.resume.Resumable); "
            f"{type(members).__name__} cannot."
        )
    if snapshot is None:
        for env, seed in zip(envs, seeds, strict=True):
            env.reset(seed)
        members.start(horizon, envs)
        return [[] for _ in envs], [[] for _ in envs], 0, 0
    assert isinstance(members, Resumable)
    if len(snapshot.rows) != len(envs) or any(
        table.shape != (snapshot.rounds, width) for table in snapshot.rows
    ):
        raise ValueError("the snapshot to resume from holds other runs than this one.")
    for env, state, seed in zip(envs, snapshot.envs, seeds, strict=True):
        env.load_state_dict(state)
        if env.seed != seed:
            raise ValueError(
                f"the snapshot to resume from is of seed {env.seed}; this run's is {seed}."
            )
    members.resume(horizon, envs, snapshot.policies)
    rows = [[tuple(row) for row in table.tolist()] for table in snapshot.rows]
    return rows, [list(a) for a in snapshot.actions], snapshot.rounds, snapshot.events


def _save(
    checkpoints: Checkpoints,
    members: Members,
    envs: Sequence[Environment],
    rows: Rows,
    actions_of: list[list[Any]],
    events: int,
) -> None:
    """Hand ``checkpoints.save`` the snapshot of the loop after its last round."""
    assert isinstance(members, Resumable)
    width = len(rows[0][0])
    checkpoints.save(
        Snapshot(
            rounds=len(rows[0]),
            events=events,
            rows=[np.array(r, dtype=np.float64).reshape(-1, width) for r in rows],
            actions=actions_of,
            policies=members.state_dicts(),
            envs=[env.state_dict() for env in envs],
        )
    )


def _declared(
    policies: Sequence[Policy], envs: Sequence[Environment]
) -> tuple[tuple[Record, ...], tuple[str, ...]]:
    """The environments' declared records and step values, after the checks of a run."""
    for policy, env in zip(policies, envs, strict=True):
        if policy.family != env.family:
            raise ValueError(
                f"policy {policy!r} is of the {policy.family} family but the environment "
                f"{env!r} is {env.family}."
            )
    env = envs[0]
    records = env.declared_records()
    names = env.step_values()
    if any(r.dtype == "list<int64>" for r in records if r.name in set(names)):
        raise ValueError(
            f"{type(env).__name__} declares a list record besides the action; values "
            "returned in Step.values are scalars."
        )
    return records, names


def _lockstep(size: int, what: str) -> None:
    """With several runs in lockstep, every environment must ``what``."""
    if size > 1:
        raise ValueError(
            f"envs must {what} to run seeds in lockstep (replay environments run seed "
            "by seed)."
        )


def _row(
    step: Step,
    timing: tuple[float, float],
    n_updates: int,
    events: int,
    propensity: float | None,
    names: tuple[str, ...],
    env: Environment,
) -> tuple[float, ...]:
    """One round's record: the loop's values, then the environment's declared ones."""
    row: tuple[float, ...] = (
        step.regret,
        step.reward,
        *timing,
        n_updates,
        events,
        math.nan if propensity is None else propensity,
    )
    values = step.values
    if names or values is not None:
        if values is None or values.keys() != set(names):
            _values_error(values, names, env)
        row += tuple(values[k] for k in names)
    return row


def _label(policy: Policy) -> str:
    return policy.registry_name or type(policy).__name__


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
    (``env.step_values()``); the loop of ``simulate`` gathers them so (one list per
    run).
    """
    table = np.array(rows, dtype=np.float64).reshape(
        len(rows), _LOOP_COLUMNS + len(names)
    )
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
