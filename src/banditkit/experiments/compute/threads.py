"""One BLAS thread and one PyTorch thread per run, on every backend; worker start-up.

Every run executes with one BLAS thread and one PyTorch thread: :func:`single_threaded`
around a run in this process, :func:`limit_threads_in_process` in a worker process (which
:func:`init_worker` also ties to the driver's life). This is what makes results bit-identical
across backends (multi-threaded reductions may sum in another order); parallelism comes from
running runs side by side.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from importlib import import_module

from banditkit.core.threads import limit_threads

__all__ = [
    "THREAD_VARIABLES",
    "init_worker",
    "limit_threads_in_process",
    "single_threaded",
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
