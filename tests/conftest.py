"""Test-session set-up: one BLAS/torch thread per (xdist) worker process, deterministic hypothesis.

The networks under test are tiny; with two workers on two cores, more threads only add
contention (the library's own process pool does the same in its workers).

Property tests draw the same examples on every run (``derandomize``, no example database), so
the suite passes or fails the same way on every machine; ``HYPOTHESIS_PROFILE=explore`` draws
fresh examples for a local search for counter-examples.
"""

import os

import torch
from hypothesis import settings

torch.set_num_threads(1)

settings.register_profile(
    "deterministic", derandomize=True, database=None, print_blob=True
)
settings.register_profile("explore", print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))
