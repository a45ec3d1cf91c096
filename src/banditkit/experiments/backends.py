"""Backends: where runs are computed. All yield :class:`RunRecord` objects as runs finish.

    serial    one after the other in this process
    process   a pool of ``jobs`` worker processes on this machine (``spawn`` start method;
              each worker limits BLAS and PyTorch to one thread, and exits if the driver
              dies)
    ray       Ray tasks (one CPU each) on a local Ray started here with ``jobs`` CPUs, on an
              already initialised Ray, or on a cluster given by ``address`` ("auto" or
              "ray://head:10001"); results travel back to the driver, which writes them, so
              workers need banditkit installed but no shared file system

Every backend computes each run with :func:`execute.compute_run`, so the same run gives the
same numbers on all of them. A backend also takes ``execute.SeedGroup`` tasks (the seeds of
one configuration, ``execute.group_seeds``), computed as one batch by
:func:`execute.compute_seed_group`; it yields one record per run of the group.
"""

from __future__ import annotations

import multiprocessing
import os
import traceback
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from banditkit.experiments.execute import (
    RunRecord,
    SeedGroup,
    compute_item,
    init_worker,
    limit_threads_in_process,
    run_metadata,
)
from banditkit.experiments.runs import RunSpec

__all__ = ["BACKENDS", "failed_record", "make_backend"]

BACKENDS = ("serial", "process", "ray")

_BROKEN_POOL_HINT = (
    "a worker process died before computing this run; when runs are started from a "
    'script with jobs > 1, the call must sit under `if __name__ == "__main__":` '
    "(workers re-import the script), or use jobs=1"
)


def failed_record(spec: RunSpec, message: str) -> RunRecord:
    """A record for a run that could not be computed (e.g. its worker died)."""
    meta = run_metadata(spec) | {
        "status": "failed",
        "error": message.strip().splitlines()[-1] if message.strip() else "failed",
    }
    return RunRecord(spec, spec.id, None, meta, error=message)


Task = RunSpec | SeedGroup


def _specs(item: Task) -> tuple[RunSpec, ...]:
    return item.specs if isinstance(item, SeedGroup) else (item,)


class SerialBackend:
    """Compute runs one after the other in this process."""

    name = "serial"

    def map(self, specs: Sequence[Task]) -> Iterator[RunRecord]:
        """Yield the record of each run in order."""
        for spec in specs:
            yield from compute_item(spec)


class ProcessBackend:
    """Compute runs in a pool of ``jobs`` worker processes.

    Args:
        jobs: Worker processes, >= 1.
    """

    name = "process"

    def __init__(self, jobs: int) -> None:
        self.jobs = max(1, int(jobs))

    def map(self, specs: Sequence[Task]) -> Iterator[RunRecord]:
        """Yield records as runs finish (completion order)."""
        if not specs:
            return
        pool = ProcessPoolExecutor(
            max_workers=min(self.jobs, len(specs)),
            mp_context=multiprocessing.get_context("spawn"),
            initializer=init_worker,
            initargs=(os.getpid(),),
        )
        futures: dict[Future[list[RunRecord]], Task] = {}
        try:
            futures = {pool.submit(compute_item, spec): spec for spec in specs}
            pending = set(futures)
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    item = futures[future]
                    try:
                        yield from future.result()
                    except BrokenProcessPool:
                        message = (
                            "worker process failed:\n"
                            + traceback.format_exc()
                            + _BROKEN_POOL_HINT
                        )
                        for spec in _specs(item):
                            yield failed_record(spec, message)
                    except Exception:
                        message = "worker process failed:\n" + traceback.format_exc()
                        for spec in _specs(item):
                            yield failed_record(spec, message)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def _ray_task(spec: Task) -> list[RunRecord]:
    limit_threads_in_process()
    return compute_item(spec)


class RayBackend:
    """Compute runs as Ray tasks (one CPU each).

    Args:
        jobs: CPUs of a local Ray started here (ignored when connecting to ``address``
            or when Ray is already initialised).
        address: Ray cluster address ("auto", "ray://host:10001", "host:6379"), or None for
            a local Ray (or the one already initialised in this process).
    """

    name = "ray"

    def __init__(self, jobs: int, address: str | None = None) -> None:
        self.jobs = max(1, int(jobs))
        self.address = address

    def map(self, specs: Sequence[Task]) -> Iterator[RunRecord]:
        """Yield records as runs finish (completion order)."""
        try:
            import ray
        except ImportError:
            raise RuntimeError(
                "the ray backend needs Ray: pip install 'banditkit[ray]'"
            ) from None
        if not specs:
            return
        started_here = False
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
            started_here = True
        task = ray.remote(num_cpus=1, max_retries=0)(_ray_task)
        pending: dict[Any, Task] = {}
        try:
            pending = {task.remote(spec): spec for spec in specs}
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                for ref in done:
                    item = pending.pop(ref)
                    try:
                        yield from ray.get(ref)
                    except Exception:
                        message = "ray task failed:\n" + traceback.format_exc()
                        for spec in _specs(item):
                            yield failed_record(spec, message)
        finally:
            for ref in pending:
                ray.cancel(ref, force=True)
            if started_here:
                ray.shutdown()


def make_backend(name: str, jobs: int, address: str | None = None) -> Any:
    """Build a backend by name ("serial", "process" or "ray")."""
    if name == "serial":
        return SerialBackend()
    if name == "process":
        return ProcessBackend(jobs)
    if name == "ray":
        return RayBackend(jobs, address)
    raise ValueError(f"backend must be one of {', '.join(BACKENDS)}; got {name!r}.")
