"""Test-session set-up: one BLAS/torch thread per (xdist) worker process.

The networks under test are tiny; with two workers on two cores, more threads only add
contention (the library's own process pool does the same in its workers).
"""

import torch

torch.set_num_threads(1)
