"""The thread counts a run computes with: BLAS (through threadpoolctl) and PyTorch.

A sum split across threads adds its terms in another order, so a run's last digits, and
through a near tie its actions, can depend on the number of threads; more threads also cost
more than they bring on the small matrices of a bandit round (docs/performance.md,
"Threads"). So ``simulate``, the experiment runner and the CLI run every policy with the
thread count they are given, one by default, whatever ``OMP_NUM_THREADS`` or the caller's
own settings say, and give the caller's settings back afterwards: one seed gives the same
numbers from a Python script and from ``banditkit run``.

Example:
    >>> import torch
    >>> with limit_threads(1, torch=True):
    ...     torch.get_num_threads()
    1
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Iterator

from threadpoolctl import threadpool_limits

from banditkit.core.validation import check_int

__all__ = ["limit_threads"]


@contextlib.contextmanager
def limit_threads(threads: int = 1, *, torch: bool = False) -> Iterator[None]:
    """Run the block with ``threads`` BLAS/OpenMP threads and PyTorch threads.

    The BLAS and OpenMP libraries loaded in the process (threadpoolctl) and PyTorch's
    intra-op pool are set to ``threads``; on leaving, each gets back the count it had.
    PyTorch is limited when it is already imported, or imported first when ``torch`` is
    True (a policy that computes with it, ``Policy.needs_torch``), so that its first use
    inside the block does not start with its own default.

    Args:
        threads: Threads per library, >= 1.
        torch: Import PyTorch before the block (it is otherwise left unimported).

    Raises:
        ValueError: If ``threads`` is not an int >= 1.
    """
    threads = check_int("threads", threads, low=1)
    if torch:
        importlib.import_module("torch")
    module = sys.modules.get("torch")
    before = module.get_num_threads() if module is not None else None
    with threadpool_limits(limits=threads):
        if module is not None:
            module.set_num_threads(threads)
        try:
            yield
        finally:
            if module is not None and before is not None:
                module.set_num_threads(before)
