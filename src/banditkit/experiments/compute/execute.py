"""Computing one run, in whichever process a backend chose: build, simulate, package.

:func:`compute_run` is the only function backends call. It never raises for a failing run:
the exception is caught and returned with its traceback, so that one bad run cannot stop an
experiment. It writes nothing to the output directory but its checkpoints, through the
sink it is given (``store.checkpoints``); the driver writes the results it returns, which
lets the Ray backend run on machines that do not share a file system with the driver.

Each run's metadata records the dtype and the device its policy computed in (``compute``:
``policies.parts.models.compute.compute_options``; float64 on the CPU for the NumPy
policies). Every run executes with one BLAS thread and one PyTorch thread
(``core.threads.limit_threads``), so results are bit-identical across backends, unless
the config's ``resources`` give its tasks more CPUs (``compute.resources``).
"""

from __future__ import annotations

import hashlib
import os
import platform
import socket
import sys
import time
import traceback
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import numpy as np

from banditkit import core
from banditkit.core.environment import Environment
from banditkit.core.members import stack
from banditkit.core.records import Record
from banditkit.core.resume import Checkpoints, Resumable, Snapshot
from banditkit.core.simulate import RunResult, row_width, simulate_seeds
from banditkit.core.threads import limit_threads
from banditkit.experiments.config.resolved import RunSpec
from banditkit.experiments.plan.tasks import SeedGroup, Task
from banditkit.experiments.store.checkpoints import (
    RunCheckpoints,
    encode_snapshot,
    read_checkpoint,
)
from banditkit.policies.parts.models.compute import compute_options

__all__ = [
    "RunRecord",
    "compute_item",
    "compute_run",
    "compute_seed_group",
    "failed_record",
    "run_metadata",
    "versions",
]


@dataclass
class RunRecord:
    """What a worker returns: the columns and metadata, or the error of a failed run.

    ``records`` is the environment's declaration the columns follow (``t`` and
    ``cumulative_regret`` are added by the store's layout, see ``store.tables``).
    """

    spec: RunSpec
    run_id: str
    columns: dict[str, np.ndarray] | None
    meta: dict[str, Any]
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    records: tuple[Record, ...] = ()

    @property
    def ok(self) -> bool:
        """True for a run that finished."""
        return self.error is None


def _version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def versions() -> dict[str, str | None]:
    """Versions of Python and the packages that shape results."""
    torch = sys.modules.get("torch")
    return {
        "python": platform.python_version(),
        "banditkit": _version("banditkit"),
        "numpy": np.__version__,
        "scipy": _version("scipy"),
        "torch": getattr(torch, "__version__", None) or _version("torch"),
        "scikit-learn": _version("scikit-learn"),
    }


def run_metadata(spec: RunSpec) -> dict[str, Any]:
    """The run's identity for ``meta.json``: id, environment, policy, seed, horizon, versions."""
    return {
        "id": spec.id,
        "env": {
            "name": spec.env_name,
            "label": spec.env_label,
            "params": spec.env_params,
        },
        "policy": {
            "name": spec.policy_name,
            "label": spec.policy_label,
            "params": spec.policy_params,
        },
        "seed": spec.seed,
        "horizon": spec.horizon,
        "versions": versions(),
    }


def failed_record(spec: RunSpec, message: str) -> RunRecord:
    """A record for a run that could not be computed (e.g. its worker died)."""
    meta = run_metadata(spec) | {
        "status": "failed",
        "error": message.strip().splitlines()[-1] if message.strip() else "failed",
    }
    return RunRecord(spec, spec.id, None, meta, error=message)


def compute_item(
    item: Task, checkpoints: RunCheckpoints | None = None, threads: int = 1
) -> list[RunRecord]:
    """The records of a task (``plan.tasks``): one run or a group of seeds.

    ``checkpoints`` and ``threads`` as in :func:`compute_run`; a group given
    ``checkpoints`` is computed run by run, each run checkpointed (``compute_seed_group``).
    """
    if isinstance(item, SeedGroup):
        return compute_seed_group(item, checkpoints, threads)
    return [compute_run(item, checkpoints, threads)]


def compute_seed_group(
    group: SeedGroup, checkpoints: RunCheckpoints | None = None, threads: int = 1
) -> list[RunRecord]:
    """Compute the runs of ``group`` as one batch (``core.simulate.simulate_seeds``).

    Each record is that of ``compute_run`` for its spec up to the order of floating-point
    operations in the policy; its ``meta`` adds ``batched_seeds`` (the group's size), and
    ``wall_seconds`` is the group's divided by its size. Given ``checkpoints``, a batch
    whose members can be resumed (``core.resume.Resumable``: the neural dueling stacks)
    is checkpointed as one: every ``checkpoints.every`` rounds all its runs go into one
    checkpoint (:func:`group_checkpoint_id`), a group that finds it resumes from it
    (``meta["resumed_at"]``), and it is dropped once the group is done. A group whose
    policy does not stack, or whose stack cannot be resumed, is computed run by run,
    each run checkpointed. When the batch raises, every run of the group is returned
    failed with the traceback.
    """
    specs = list(group.specs)
    size = len(specs)
    metas = [
        run_metadata(spec) | {"host": socket.gethostname(), "pid": os.getpid()}
        for spec in specs
    ]
    started = time.time()
    clock = time.perf_counter()
    try:
        with limit_threads(threads):
            policies = [
                core.make_policy(s.policy_name, **s.policy_params, seed=s.seed)
                for s in specs
            ]
            batch = stack(policies)
            if batch is None or (
                checkpoints is not None and not isinstance(batch, Resumable)
            ):  # run by run, each run checkpointed
                return [compute_run(spec, checkpoints, threads) for spec in specs]
            for meta, policy in zip(metas, policies, strict=True):
                meta["compute"] = compute_options(policy)
            envs = [core.make_env(s.env_name, **s.env_params) for s in specs]
            if policies[0].needs_torch:  # the one-time import, outside the clock
                import_module("torch")
            key = group_checkpoint_id(group.specs)
            saving = None
            if checkpoints is not None:  # the group's runs in one checkpoint
                saving = _checkpointing(
                    key, size, specs[0].horizon, envs[0], checkpoints
                )
                if saving.resume is not None:
                    for meta in metas:
                        meta["resumed_at"] = saving.resume.rounds
            results = simulate_seeds(
                policies,
                envs,
                specs[0].horizon,
                [s.seed for s in specs],
                members=batch,
                checkpoints=saving,
            )
            if checkpoints is not None:  # its runs are about to be stored
                checkpoints.sink.drop(key)
    except Exception as exc:
        records = []
        for spec, meta in zip(specs, metas, strict=True):
            meta["started"] = datetime.fromtimestamp(started, timezone.utc).isoformat()
            meta["wall_seconds"] = (time.perf_counter() - clock) / size
            meta["status"] = "failed"
            meta["error"] = f"{type(exc).__name__}: {exc}"
            meta["batched_seeds"] = size
            records.append(
                RunRecord(spec, spec.id, None, meta, error=traceback.format_exc())
            )
        return records
    wall = (time.perf_counter() - clock) / size
    finished = datetime.now(timezone.utc).isoformat()
    records = []
    for spec, meta, result in zip(specs, metas, results, strict=True):
        meta["started"] = datetime.fromtimestamp(started, timezone.utc).isoformat()
        meta.update(_result_meta(result))
        meta.update({"wall_seconds": wall, "finished": finished, "batched_seeds": size})
        records.append(
            RunRecord(spec, spec.id, _columns(result), meta, records=result.records)
        )
    return records


def _columns(result: RunResult) -> dict[str, np.ndarray]:
    return {
        "t": np.arange(1, result.horizon + 1, dtype=np.int64),
        **result.columns(),
        "cumulative_regret": result.cumulative_regret,
    }


def _result_meta(result: RunResult) -> dict[str, Any]:
    rounds = result.horizon
    return {
        "status": "ok",
        "rounds": rounds,
        "final_regret": float(result.cumulative_regret[-1]) if rounds else 0.0,
        "seconds": result.seconds,
        "n_updates": int(result.n_updates[-1]) if rounds else 0,
        "acceptance_rate": result.acceptance_rate if rounds else None,
    }


def compute_run(
    spec: RunSpec, checkpoints: RunCheckpoints | None = None, threads: int = 1
) -> RunRecord:
    """Build the environment and the policy of ``spec``, simulate, and package the result.

    The policy is built with ``seed=spec.seed`` and the environment is reset with the same
    seed; ``core.seeding`` derives the policy's stream independently of the environment's.

    Args:
        spec: The run.
        checkpoints: Every ``checkpoints.every`` rounds the run's snapshot goes to
            ``checkpoints.sink``; a run that finds one there resumes from it (its
            ``meta["resumed_at"]`` is the round it resumed after), with the results of
            the uninterrupted run (``store.checkpoints``).
        threads: BLAS and PyTorch threads of the run (1, the default, gives the same
            numbers on every backend; more can change the last digits).

    Returns:
        A :class:`RunRecord`; for a run that raised, ``error`` holds the traceback.
    """
    run_id = spec.id
    meta = run_metadata(spec) | {"host": socket.gethostname(), "pid": os.getpid()}
    started = time.time()
    clock = time.perf_counter()
    cpu = time.process_time()
    meta["started"] = datetime.fromtimestamp(started, timezone.utc).isoformat()
    try:
        with limit_threads(threads):
            env = core.make_env(spec.env_name, **spec.env_params)
            policy = core.make_policy(
                spec.policy_name, **spec.policy_params, seed=spec.seed
            )
            if policy.needs_torch:  # the one-time import, outside the run's clock
                import_module("torch")
            saving = _checkpoints(spec, env, checkpoints)
            if saving is not None and saving.resume is not None:
                meta["resumed_at"] = saving.resume.rounds
            meta["compute"] = compute_options(policy)
            result = core.simulate(
                policy,
                env,
                spec.horizon,
                seed=spec.seed,
                progress=False,
                checkpoints=saving,
            )
    except Exception as exc:
        meta["wall_seconds"] = time.perf_counter() - clock
        meta["status"] = "failed"
        meta["error"] = f"{type(exc).__name__}: {exc}"
        return RunRecord(spec, run_id, None, meta, error=traceback.format_exc())
    meta.update(_result_meta(result))
    meta.update(
        {
            "wall_seconds": time.perf_counter() - clock,
            "cpu_seconds": time.process_time() - cpu,
            "finished": datetime.now(timezone.utc).isoformat(),
        }
    )
    meta["threads"] = threads
    return RunRecord(spec, run_id, _columns(result), meta, records=result.records)


def _checkpoints(
    spec: RunSpec, env: Environment, checkpoints: RunCheckpoints | None
) -> Checkpoints | None:
    """The run's checkpointing: saves into the sink, from the snapshot found there."""
    if checkpoints is None:
        return None
    return _checkpointing(spec.id, 1, spec.horizon, env, checkpoints)


def group_checkpoint_id(specs: tuple[RunSpec, ...]) -> str:
    """The checkpoint id of a seed group: its runs' ids, in order, hashed.

    A group formed again of the same runs (a retried task, a resumed experiment) finds its
    checkpoint; another grouping starts its runs from round 1.
    """
    digest = hashlib.sha256(" ".join(s.id for s in specs).encode()).hexdigest()
    return f"group-{digest[:16]}"


def _checkpointing(
    key: str, runs: int, horizon: int, env: Environment, checkpoints: RunCheckpoints
) -> Checkpoints:
    """Checkpoints of ``runs`` runs in lockstep under ``key``, from the one found there."""
    sink, family = checkpoints.sink, env.family

    def save(snapshot: Snapshot) -> None:
        sink.save(key, encode_snapshot(snapshot, key, family))

    resume = read_checkpoint(
        checkpoints,
        key,
        width=row_width(env),
        horizon=horizon,
        family=family,
        runs=runs,
    )
    return Checkpoints(checkpoints.every, save, resume)
