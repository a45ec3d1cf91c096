"""Computing one run, in whichever process a backend chose: build, simulate, package.

:func:`compute_run` is the only function backends call. It never raises for a failing run:
the exception is caught and returned with its traceback, so that one bad run cannot stop an
experiment. It also never touches the output directory; the driver writes what it returns,
which lets the Ray backend run on machines that do not share a file system with the driver.

Every run executes with one BLAS thread and one PyTorch thread (:func:`single_threaded`),
on every backend. This is what makes results bit-identical across backends (multi-threaded
reductions may sum in another order); parallelism comes from running runs side by side.
"""

from __future__ import annotations

import contextlib
import os
import platform
import socket
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import numpy as np

from banditkit.core.records import Record
from banditkit.core.simulate import RunResult
from banditkit.core.threads import limit_threads
from banditkit.experiments.runs import RunSpec
from banditkit.experiments.schedule import cost_kind

__all__ = [
    "BATCH_SEEDS",
    "THREAD_VARIABLES",
    "RunRecord",
    "SeedGroup",
    "compute_item",
    "compute_run",
    "compute_seed_group",
    "group_seeds",
    "run_metadata",
    "single_threaded",
    "versions",
    "warm_up",
]

THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)
"""Environment variables set to 1 in worker processes."""

#: Values of the runner's ``batch_seeds`` option (docs/experiments.md, "Seed batching").
BATCH_SEEDS = ("auto", "on", "off")


@dataclass
class RunRecord:
    """What a worker returns: the columns and metadata, or the error of a failed run.

    ``records`` is the environment's declaration the columns follow (``t`` and
    ``cumulative_regret`` are added by the store's layout, see ``store.table_columns``).
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


def _exit_with_parent(parent: int, interval: float = 1.0) -> None:
    while True:
        time.sleep(interval)
        if os.getppid() != parent:
            os._exit(1)


def init_worker(driver: int) -> None:
    """Process-pool initializer: one BLAS/PyTorch thread, and exit if the driver dies.

    A driver killed with SIGKILL cannot shut its pool down; a daemon thread in each worker
    notices that its parent is no longer ``driver`` (the driver's pid, passed explicitly in
    case it died before this worker started) and ends the worker, so no orphan keeps running.
    """
    if os.getppid() != driver:
        os._exit(1)
    limit_threads_in_process()
    watchdog = threading.Thread(
        target=_exit_with_parent,
        args=(driver,),
        name="banditkit-watchdog",
        daemon=True,
    )
    watchdog.start()


def warm_up() -> int:
    """A worker's first task: import the registries every run needs; return the pid.

    A process pool started before the config is resolved runs it, so that the workers'
    imports overlap the driver's work instead of delaying the first runs.
    """
    import_module("banditkit.policies")
    import_module("banditkit.envs")
    return os.getpid()


def limit_threads_in_process() -> None:
    """Worker initializer: one thread for BLAS and PyTorch in this whole process."""
    for name in THREAD_VARIABLES:
        os.environ[name] = "1"
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=1)
    except ImportError:  # pragma: no cover - threadpoolctl ships with scikit-learn
        pass
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)


def single_threaded() -> contextlib.AbstractContextManager[None]:
    """Run the block with one BLAS thread and one PyTorch thread, then restore both."""
    return limit_threads(1)


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


@dataclass(frozen=True)
class SeedGroup:
    """Runs that differ only in their seed, computed as one batch (``compute_seed_group``)."""

    specs: tuple[RunSpec, ...]


def _batchable(spec: RunSpec) -> bool:
    """Whether the policy of ``spec`` offers a batched counterpart for its configuration.

    Only on contextual environments that accept every round (not replay environments).
    """
    from banditkit.core import ENVIRONMENTS, make_policy
    from banditkit.core.batched import batched_policy
    from banditkit.envs.replay import ReplayEnv

    try:
        env_cls = ENVIRONMENTS.get(spec.env_name)
        if getattr(env_cls, "family", None) != "contextual" or (
            isinstance(env_cls, type) and issubclass(env_cls, ReplayEnv)
        ):
            return False
        members = [
            make_policy(spec.policy_name, **spec.policy_params, seed=s) for s in (0, 1)
        ]
        return batched_policy(members) is not None
    except Exception:  # the run itself will report the error
        return False


def group_seeds(
    specs: list[RunSpec], batch_seeds: str = "auto", jobs: int = 1
) -> list[RunSpec | SeedGroup]:
    """The tasks for ``specs``: runs that differ only in their seed as ``SeedGroup``s.

    "off" keeps every run on its own. "on" and "auto" group the seeds of each
    configuration whose policy offers a batched counterpart (``core.batched``); other
    runs stay single. "auto" also splits a group into up to ``jobs`` parts when there
    are fewer tasks than workers (each part keeps at least two seeds), so that batching
    does not leave workers idle; "on" keeps one group per configuration.

    Raises:
        ValueError: For an unknown ``batch_seeds``.
    """
    if batch_seeds not in BATCH_SEEDS:
        raise ValueError(
            f"batch_seeds must be one of {', '.join(BATCH_SEEDS)}; got {batch_seeds!r}."
        )
    if batch_seeds == "off":
        return list(specs)
    groups: dict[str, list[RunSpec]] = {}
    for spec in specs:
        groups.setdefault(cost_kind(spec), []).append(spec)
    batchable = {
        key: len(group) > 1 and _batchable(group[0]) for key, group in groups.items()
    }
    n_tasks = sum(1 if batchable[k] else len(g) for k, g in groups.items())
    tasks: list[RunSpec | SeedGroup] = []
    done: set[str] = set()
    for spec in specs:
        key = cost_kind(spec)
        if not batchable[key]:
            tasks.append(spec)
            continue
        if key in done:
            continue
        done.add(key)
        group = groups[key]
        parts = 1
        if batch_seeds == "auto" and n_tasks < jobs:
            parts = max(1, min(len(group) // 2, jobs - n_tasks + 1))
            n_tasks += parts - 1
        size = -(-len(group) // parts)
        for i in range(0, len(group), size):
            chunk = tuple(group[i : i + size])
            tasks.append(SeedGroup(chunk) if len(chunk) > 1 else chunk[0])
    return tasks


def compute_item(item: RunSpec | SeedGroup) -> list[RunRecord]:
    """The records of a task of ``group_seeds``: one run or a group of seeds."""
    if isinstance(item, SeedGroup):
        return compute_seed_group(item)
    return [compute_run(item)]


def compute_seed_group(group: SeedGroup) -> list[RunRecord]:
    """Compute the runs of ``group`` as one batch (``core.batched.simulate_seeds``).

    Each record is that of ``compute_run`` for its spec up to the order of floating-point
    operations in the policy; its ``meta`` adds ``batched_seeds`` (the group's size), and
    ``wall_seconds`` is the group's divided by its size. A group whose configuration has
    no batched policy is computed run by run. When the batch raises, every run of the
    group is returned failed with the traceback.
    """
    from banditkit.core import make_env, make_policy
    from banditkit.core.batched import batched_policy, simulate_seeds

    specs = list(group.specs)
    size = len(specs)
    metas = [
        run_metadata(spec) | {"host": socket.gethostname(), "pid": os.getpid()}
        for spec in specs
    ]
    started = time.time()
    clock = time.perf_counter()
    try:
        with single_threaded():
            policies = [
                make_policy(s.policy_name, **s.policy_params, seed=s.seed)
                for s in specs
            ]
            batch = batched_policy(policies)
            if batch is None:
                return [compute_run(spec) for spec in specs]
            envs = [make_env(s.env_name, **s.env_params) for s in specs]
            if policies[0].needs_torch:  # the one-time import, outside the clock
                import_module("torch")
            results = simulate_seeds(
                policies, envs, specs[0].horizon, [s.seed for s in specs], batch=batch
            )
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


def compute_run(spec: RunSpec) -> RunRecord:
    """Build the environment and the policy of ``spec``, simulate, and package the result.

    The policy is built with ``seed=spec.seed`` and the environment is reset with the same
    seed; ``core.seeding`` derives the policy's stream independently of the environment's.

    Returns:
        A :class:`RunRecord`; for a run that raised, ``error`` holds the traceback.
    """
    from banditkit.core import make_env, make_policy, simulate

    run_id = spec.id
    meta = run_metadata(spec) | {"host": socket.gethostname(), "pid": os.getpid()}
    started = time.time()
    clock = time.perf_counter()
    cpu = time.process_time()
    meta["started"] = datetime.fromtimestamp(started, timezone.utc).isoformat()
    try:
        with single_threaded():
            env = make_env(spec.env_name, **spec.env_params)
            policy = make_policy(spec.policy_name, **spec.policy_params, seed=spec.seed)
            if policy.needs_torch:  # the one-time import, outside the run's clock
                import_module("torch")
            result = simulate(policy, env, spec.horizon, seed=spec.seed, progress=False)
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
    return RunRecord(spec, run_id, _columns(result), meta, records=result.records)
