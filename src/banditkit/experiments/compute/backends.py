"""Backends: where runs are computed. All yield :class:`RunRecord` objects as runs finish.

    serial    one after the other in this process
    process   a pool of ``jobs`` worker processes on this machine (``spawn``, or ``fork``
              where ``fork_is_safe``; each worker limits BLAS and PyTorch to one thread,
              and exits if the driver dies); runs are handed out longest expected first
              (``schedule``)
    ray       Ray tasks on a local Ray started here with ``jobs`` CPUs, on an already
              initialised Ray, or on a cluster given by ``address`` ("auto" or
              "ray://head:10001"), each with its resources, retried when its node dies
              (``compute.ray``)

Every backend computes each task (``plan.tasks``: a run, or the seeds of one configuration
as one batch) with :func:`~banditkit.experiments.compute.execute.compute_item`, so the same run
gives the same numbers on all of them; it yields one record per run. Each takes the tasks'
settings (``compute.resources.TaskSettings``): their threads, and their checkpoints, which
a run that finds one resumes from.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
import time
import traceback
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from banditkit.experiments.compute.execute import (
    RunRecord,
    compute_item,
    failed_record,
)
from banditkit.experiments.compute.ray import RayBackend
from banditkit.experiments.compute.resources import TaskSettings
from banditkit.experiments.compute.schedule import RunScheduler
from banditkit.experiments.compute.threads import (
    init_worker,
    warm_up,
)
from banditkit.experiments.plan.tasks import Task, specs_of

__all__ = ["BACKENDS", "ProcessBackend", "RayBackend", "fork_is_safe", "make_backend"]

BACKENDS = ("serial", "process", "ray")

_BROKEN_POOL_HINT = (
    "a worker process died before computing this run; when runs are started from a "
    'script with jobs > 1, the call must sit under `if __name__ == "__main__":` '
    "(workers re-import the script), or use jobs=1"
)


class SerialBackend:
    """Compute runs one after the other in this process."""

    name = "serial"

    def __init__(self, settings: TaskSettings | None = None) -> None:
        self.settings = settings or TaskSettings()

    def map(self, specs: Sequence[Task]) -> Iterator[RunRecord]:
        """Yield the record of each run in order."""
        checkpoints = self.settings.checkpoints()
        for spec in specs:
            threads = self.settings.resources_of(spec).cpus
            yield from compute_item(spec, checkpoints, threads)


class ProcessBackend:
    """Compute runs in a pool of ``jobs`` worker processes.

    Each worker holds one run at a time, and the next run is chosen when a worker frees
    up, longest expected first (``compute.schedule``): one run of each kind first,
    then the kinds whose runs took longest. The next run is handed to the freed worker
    before the finished one is passed on (and written by the driver), so the worker does
    not wait for the driver's write.

    :meth:`start` starts the workers ahead of :meth:`map` (``run_experiment`` does so
    before resolving the config, so that the workers' start-up overlaps it); :meth:`map`
    starts them itself otherwise, and shuts them down when it is done, as :meth:`close`
    does for a pool that is never used.

    Workers are started with ``spawn`` (a fresh interpreter that imports banditkit), or,
    when :func:`fork_is_safe` says so and the runner asks for it, with ``fork``: copies of
    the driver, which has already imported what the runs need, so that they start at once.

    Args:
        jobs: Worker processes, >= 1.
        start_method: "spawn" (default) or "fork".
        settings: The tasks' threads and checkpoints (default: one thread, none).
    """

    name = "process"

    def __init__(
        self,
        jobs: int,
        start_method: str = "spawn",
        settings: TaskSettings | None = None,
    ) -> None:
        self.jobs = max(1, int(jobs))
        self.settings = settings or TaskSettings()
        if start_method not in ("spawn", "fork"):
            raise ValueError(
                f"start_method must be 'spawn' or 'fork'; got {start_method!r}."
            )
        self.start_method = start_method
        self._pool: ProcessPoolExecutor | None = None
        self._workers = 0

    def start(self, workers: int | None = None) -> None:
        """Start ``workers`` (default ``jobs``) worker processes and warm them up."""
        if self._pool is not None:
            return
        workers = self.jobs if workers is None else max(1, min(workers, self.jobs))
        if self.start_method == "fork":  # nothing buffered is written twice
            sys.stdout.flush()
            sys.stderr.flush()
        self._pool = ProcessPoolExecutor(
            max_workers=workers,
            mp_context=multiprocessing.get_context(self.start_method),
            initializer=init_worker,
            initargs=(os.getpid(),),
        )
        self._workers = workers
        for _ in range(workers):  # each submit spawns a worker while none is idle
            self._pool.submit(warm_up)

    def close(self, wait: bool = True) -> None:
        """Shut the workers down (queued runs are cancelled).

        Args:
            wait: Wait for the workers to exit; False lets them finish starting and exit
                in the background (a pool that computed nothing, closed unused).
        """
        if self._pool is not None:
            self._pool.shutdown(wait=wait, cancel_futures=True)
            self._pool = None

    def map(self, specs: Sequence[Task]) -> Iterator[RunRecord]:
        """Yield records as runs finish (completion order)."""
        if not specs:
            self.close()
            return
        self.start(len(specs))
        pool = self._pool
        assert pool is not None
        in_flight = min(self._workers, len(specs))
        scheduler = RunScheduler([task.kind for task in specs])
        futures: dict[Future[list[RunRecord]], int] = {}
        clock = time.perf_counter
        settings = self.settings
        checkpoints = settings.checkpoints()

        def submit() -> list[RunRecord]:
            """Fill the free workers; the runs a broken pool cannot take, as failed."""
            while len(futures) < in_flight:
                index = scheduler.take(clock())
                if index is None:
                    return []
                try:
                    task = specs[index]
                    threads = settings.resources_of(task).cpus
                    futures[pool.submit(compute_item, task, checkpoints, threads)] = (
                        index
                    )
                except BrokenProcessPool:  # e.g. the workers died starting
                    message = (
                        "worker process failed:\n"
                        + traceback.format_exc()
                        + _BROKEN_POOL_HINT
                    )
                    lost = [index]
                    while (index := scheduler.take(clock())) is not None:
                        lost.append(index)
                    return [
                        failed_record(s, message)
                        for i in lost
                        for s in specs_of(specs[i])
                    ]
            return []

        try:
            yield from submit()
            while futures:
                done, _ = wait(futures, return_when=FIRST_COMPLETED)
                records = []
                for future in done:
                    index = futures.pop(future)
                    done_records = _result(future, specs[index])
                    seconds = (
                        sum(r.meta["wall_seconds"] for r in done_records)
                        if all(r.ok for r in done_records)
                        else None
                    )
                    scheduler.finish(index, seconds)
                    records.extend(done_records)
                lost = submit()  # before the driver writes the finished runs
                yield from records
                yield from lost
        finally:
            self.close()


def fork_is_safe() -> bool:
    """Whether worker processes may be forked from this one.

    True on Linux while this process runs no thread but the main one and has not
    imported PyTorch (whose thread pools do not survive a fork); elsewhere, and
    otherwise, workers are spawned.
    """
    return (
        sys.platform.startswith("linux")
        and "fork" in multiprocessing.get_all_start_methods()
        and "torch" not in sys.modules
        and threading.active_count() == 1
    )


def _result(future: Future[list[RunRecord]], item: Task) -> list[RunRecord]:
    """The records of a finished future, or failed records naming why it has none."""
    try:
        return future.result()
    except BrokenProcessPool:
        message = (
            "worker process failed:\n" + traceback.format_exc() + _BROKEN_POOL_HINT
        )
    except Exception:
        message = "worker process failed:\n" + traceback.format_exc()
    return [failed_record(spec, message) for spec in specs_of(item)]


def make_backend(
    name: str,
    jobs: int,
    address: str | None = None,
    settings: TaskSettings | None = None,
) -> Any:
    """Build a backend by name ("serial", "process" or "ray")."""
    if name == "serial":
        return SerialBackend(settings)
    if name == "process":
        return ProcessBackend(jobs, settings=settings)
    if name == "ray":
        return RayBackend(jobs, address, settings)
    raise ValueError(f"backend must be one of {', '.join(BACKENDS)}; got {name!r}.")
