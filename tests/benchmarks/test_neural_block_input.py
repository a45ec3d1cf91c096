"""The block-input benchmark's pieces on a tiny grid (``benchmarks.neural_block_input``)."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import neural_block_input as bench


def test_integral_sums_the_refits_over_t() -> None:
    # constant 2 ms per refit over t = 1..10; a linear one: sum of t = 55
    assert bench.integral({1: 0.002, 10: 0.002}, 10) == pytest.approx(0.02)
    assert bench.integral({1: 1.0, 10: 10.0}, 10) == pytest.approx(55.0)


def test_task_rows_are_block_encoded_and_refits_are_timed() -> None:
    workload = bench.WORKLOADS[1]  # NeuralTS on mushroom, K = 2
    rows = bench.task_rows(workload, 12)
    assert rows.X.shape == (12, 44)
    nonzero_blocks = (rows.X != 0).reshape(12, 2, 22).any(-1).sum(1)
    assert np.all(nonzero_blocks == 1)
    seconds = bench.refit_seconds(workload, rows, (5, 12), reps=1)
    assert set(seconds) == {bench.label(*v) for v in bench.VARIANTS}
    assert all(set(v) == {5, 12} and min(v.values()) > 0 for v in seconds.values())
