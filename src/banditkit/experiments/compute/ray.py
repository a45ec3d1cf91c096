"""The Ray backend: runs as Ray tasks on a local Ray or a cluster, surviving lost nodes.

Each task reserves its resources (``compute.resources``: the config's ``resources: {cpus,
gpus}`` or its policy family's defaults) and runs with that many threads. The tasks are
handed to Ray longest expected first (``compute.schedule``: a probe of each kind, the
longest horizons first, then the kinds whose runs took longest), never more at a time than
the cluster has CPUs, so that the order is the scheduler's and not Ray's queue's; seed
groups are split for the cluster's CPUs, not the local ``--jobs`` (``plan``).

A task whose worker or node dies is started again by Ray, up to ``retries`` times. With
``checkpoint_every``, each run sends its snapshot every N rounds to a keeper: an actor on the
driver's node that writes it atomically into the result store (``DIR/checkpoints/``,
``store.checkpoints``); a restarted run asks it for its last snapshot and goes on from
there, so a lost node costs at most N rounds per run, and the run's results are those of
an uninterrupted run. Results travel back to the driver, which writes them, so workers need
banditkit installed but no shared file system.
"""

from __future__ import annotations

import importlib.util
import time
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from banditkit.experiments.compute.execute import (
    RunRecord,
    compute_item,
    failed_record,
)
from banditkit.experiments.compute.resources import TaskSettings
from banditkit.experiments.compute.schedule import RunScheduler
from banditkit.experiments.compute.threads import limit_threads_in_process
from banditkit.experiments.plan.tasks import Task, specs_of, task_cost
from banditkit.experiments.store.checkpoints import CheckpointFiles, RunCheckpoints

if TYPE_CHECKING:
    import ray
else:
    from banditkit.core.lazy import lazy_import

    ray = lazy_import("ray")

__all__ = ["RayBackend"]


def _ray_task(
    spec: Task, checkpoints: RunCheckpoints | None, threads: int
) -> list[RunRecord]:
    limit_threads_in_process()
    return compute_item(spec, checkpoints, threads)


class _Keeper:
    """The actor keeping the checkpoints: the store's files, on the driver's node."""

    def __init__(self, folder: str) -> None:
        self.files = CheckpointFiles(Path(folder))

    def save(self, run_id: str, data: bytes) -> None:
        self.files.save(run_id, data)

    def load(self, run_id: str) -> bytes | None:
        return self.files.load(run_id)

    def drop(self, run_id: str) -> None:
        self.files.drop(run_id)


@dataclass(frozen=True)
class KeeperSink:
    """A checkpoint sink that hands the bytes to the keeper and waits until written."""

    keeper: Any

    def save(self, run_id: str, data: bytes) -> None:
        """Write the checkpoint (through the keeper), then return."""
        ray.get(self.keeper.save.remote(run_id, data))

    def load(self, run_id: str) -> bytes | None:
        """The run's last checkpoint, or None."""
        return ray.get(self.keeper.load.remote(run_id))

    def drop(self, run_id: str) -> None:
        """Forget the checkpoint (a finished seed group's), then return."""
        ray.get(self.keeper.drop.remote(run_id))


class RayBackend:
    """Compute runs as Ray tasks (module docstring).

    Args:
        jobs: CPUs of a local Ray started here (ignored when connecting to ``address``
            or when Ray is already initialised).
        address: Ray cluster address ("auto", "ray://host:10001", "host:6379"), or None for
            a local Ray (or the one already initialised in this process).
        settings: Resources, checkpoints and retries of the tasks.
    """

    name = "ray"

    def __init__(
        self,
        jobs: int,
        address: str | None = None,
        settings: TaskSettings | None = None,
    ) -> None:
        self.jobs = max(1, int(jobs))
        self.address = address
        self.settings = settings or TaskSettings()
        self._started_here = False

    def connect(self) -> int:
        """Connect to Ray (or start a local one); the cluster's CPUs.

        Raises:
            RuntimeError: If Ray is not installed.
        """
        if importlib.util.find_spec("ray") is None:
            raise RuntimeError(
                "the ray backend needs Ray: pip install 'banditkit[ray]'"
            )
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {
                "include_dashboard": False,
                "log_to_driver": False,
            }
            if self.address:
                kwargs["address"] = self.address
            else:
                kwargs["num_cpus"] = self.jobs
            ray.init(**kwargs)
            self._started_here = True
        return max(1, int(ray.cluster_resources().get("CPU", 1)))

    def close(self) -> None:
        """Disconnect from a Ray this backend started or connected to."""
        if self._started_here:
            ray.shutdown()
            self._started_here = False

    def _keeper(self) -> Any:
        """The checkpoint keeper on this (the driver's) node, or None without checkpoints."""
        folder = self.settings.checkpoint_dir
        if self.settings.checkpoint_every is None or folder is None:
            return None
        here = ray.get_runtime_context().get_node_id()
        strategy = ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy(
            here, soft=False
        )
        actor = ray.remote(num_cpus=0)(_Keeper)
        return actor.options(scheduling_strategy=strategy).remote(str(folder))

    def map(self, specs: Sequence[Task]) -> Iterator[RunRecord]:
        """Yield records as runs finish (completion order)."""
        if not specs:
            return
        slots = self.connect()
        keeper = self._keeper()
        settings = self.settings
        checkpoints = settings.checkpoints(KeeperSink(keeper)) if keeper else None
        remote = ray.remote(max_retries=settings.retries, retry_exceptions=False)(
            _ray_task
        )
        scheduler = RunScheduler(
            [task.kind for task in specs], costs=[task_cost(t) for t in specs]
        )
        pending: dict[Any, int] = {}
        clock = time.perf_counter
        try:
            while True:
                while len(pending) < slots:
                    index = scheduler.take(clock())
                    if index is None:
                        break
                    need = settings.resources_of(specs[index])
                    ref = remote.options(num_cpus=need.cpus, num_gpus=need.gpus).remote(
                        specs[index], checkpoints, need.cpus
                    )
                    pending[ref] = index
                if not pending:
                    return
                done, _ = ray.wait(list(pending), num_returns=1)
                for ref in done:
                    index = pending.pop(ref)
                    yield from _records(ref, index, specs[index], scheduler)
        finally:
            for ref in pending:
                ray.cancel(ref, force=True)
            if keeper is not None:
                ray.kill(keeper)
            self.close()


def _records(
    ref: Any, index: int, task: Task, scheduler: RunScheduler
) -> list[RunRecord]:
    """The records of a finished task (failed ones when it raised)."""
    try:
        records: list[RunRecord] = ray.get(ref)
    except Exception:
        message = "ray task failed:\n" + traceback.format_exc()
        scheduler.finish(index, None)
        return [failed_record(spec, message) for spec in specs_of(task)]
    ok = all(r.ok for r in records)
    scheduler.finish(
        index, sum(r.meta["wall_seconds"] for r in records) if ok else None
    )
    return records
