"""The training-FLOP bound of the neurallog_ucb2_h1 benchmark and its fit timer."""

from __future__ import annotations

import math
import time

from banditkit.policies.parts.models import NeuralModel
from benchmarks._common import run_once
from benchmarks.neurallog_ucb2_h1 import timed_fits, training_bound


def test_bound_is_positive_and_zero_without_refits() -> None:
    small = training_bound(d=4, width=4, every=10, steps=2, horizon=20)
    assert math.isfinite(small)
    assert small > 0.0
    assert training_bound(d=4, width=4, every=10, steps=2, horizon=5) == 0.0  # no refit
    cpu = training_bound(
        d=4, width=4, every=10, steps=2, horizon=20, clock=time.process_time
    )
    assert math.isfinite(cpu)
    assert cpu >= 0.0


def test_timed_fits_counts_every_refit_and_restores_fit() -> None:
    original = NeuralModel.fit
    with timed_fits() as spent:
        _, run = run_once(
            "neurallog-ucb2",
            {"width": 4, "steps": 2, "update_every": 5},
            "logistic",
            {"h": "h1", "d": 3, "n_arms": 2},
            12,
            0,
        )
    assert len(spent) == 2  # refits after rounds 5 and 10
    assert all(s >= 0.0 for s in spent)
    assert NeuralModel.fit is original
    assert len(run.actions) == 12
