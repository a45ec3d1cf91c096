"""One run of NeuralLog-UCB-2 on the synthetic h1 task takes under 2 s on one core.

Workload (issue 5): ``neurallog-ucb2`` with its defaults (m = 20, depth 2, diagonal Gram,
refit every 50 rounds) on ``logistic`` h1 with d = 20, K = 5 and the pool of 2500 vectors of
[Bae2025, Fig. 1], T = 2000, 10 seeds (quick: 2 seeds). The bar is on the mean wall time of
the bandit loop (``simulate``) with one BLAS and one PyTorch thread.

The training-FLOP bound (issue 16): a refit after observation t runs ``steps`` full-batch
steps on t rows, each two GEMMs of 2 t m d flops (X W_1^T and (v c)^T X); the bound is the
time of those GEMMs alone, on random data of the refit shapes, summed over the run's refit
rounds (``training_bound``, best of 3 per shape). It is compared with the training time of
the runs (``NeuralModel.fit``, timed around the calls) and with their whole loop.

    banditkit bench --only neurallog_ucb2_h1 --out results/bench
"""

from __future__ import annotations

import contextlib
import math
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from banditkit.benchmarks._common import host, run_once, single_threaded, write_outputs
from banditkit.policies.models import NeuralModel

BAR_SECONDS = 2.0
POLICY = "neurallog-ucb2"
POLICY_PARAMS: dict[str, Any] = {"width": 20}
ENV = "logistic"
ENV_PARAMS: dict[str, Any] = {"h": "h1", "d": 20, "n_arms": 5, "pool": 2500}
HORIZON = 2000


def training_bound(
    d: int = 20,
    width: int = 20,
    every: int = 50,
    steps: int = 100,
    horizon: int = HORIZON,
    dtype: torch.dtype = torch.float64,
) -> float:
    """Seconds of the GEMMs alone of every refit's steps (module docstring)."""
    gen = torch.Generator().manual_seed(0)
    W = torch.randn(width, d, generator=gen, dtype=dtype)
    total = 0.0
    for t in range(every, horizon + 1, every):
        X = torch.randn(t, d, generator=gen, dtype=dtype)
        C = torch.randn(t, width, generator=gen, dtype=dtype)
        H, G = torch.empty(t, width, dtype=dtype), torch.empty(width, d, dtype=dtype)
        best = math.inf
        for _ in range(3):
            started = time.perf_counter()
            for _ in range(steps):
                torch.mm(X, W.T, out=H)
                torch.mm(C.T, X, out=G)
            best = min(best, time.perf_counter() - started)
        total += best
    return total


@contextlib.contextmanager
def timed_fits() -> Iterator[list[float]]:
    """Collect the wall time of every ``NeuralModel.fit`` call made inside."""
    spent: list[float] = []
    fit = NeuralModel.fit

    def timed(self: NeuralModel, history: Any) -> None:
        started = time.perf_counter()
        try:
            fit(self, history)
        finally:
            spent.append(time.perf_counter() - started)

    NeuralModel.fit = timed  # type: ignore[method-assign]
    try:
        yield spent
    finally:
        NeuralModel.fit = fit  # type: ignore[method-assign]


def main(quick: bool, out: Path) -> dict[str, Any]:
    """Time one run per seed (10 seeds; quick: 2) and check the 2 s bar on the mean."""
    n_seeds = 2 if quick else 10
    seconds: list[float] = []
    training: list[float] = []
    regrets: list[float] = []
    with single_threaded():
        run_once(POLICY, POLICY_PARAMS, ENV, ENV_PARAMS, 20, 0)  # warm-up, not timed
        bound = training_bound(d=ENV_PARAMS["d"], width=POLICY_PARAMS["width"])
        for seed in range(n_seeds):
            with timed_fits() as spent:
                elapsed, run = run_once(
                    POLICY, POLICY_PARAMS, ENV, ENV_PARAMS, HORIZON, seed
                )
            seconds.append(elapsed)
            training.append(sum(spent))
            regrets.append(float(run.cumulative_regret[-1]))
    mean = statistics.fmean(seconds)
    train_mean = statistics.fmean(training)
    result: dict[str, Any] = {
        "workload": "neurallog_ucb2_h1",
        "quick": quick,
        "policy": {"name": POLICY, "params": POLICY_PARAMS},
        "env": {"name": ENV, "params": ENV_PARAMS},
        "horizon": HORIZON,
        "seeds": list(range(n_seeds)),
        "seconds": seconds,
        "regret": regrets,
        "seconds_mean": mean,
        "seconds_median": statistics.median(seconds),
        "seconds_max": max(seconds),
        "regret_mean": statistics.fmean(regrets),
        "regret_median": statistics.median(regrets),
        "bar_seconds": BAR_SECONDS,
        "under_2s": bool(mean < BAR_SECONDS),
        "training_seconds": training,
        "training_seconds_mean": train_mean,
        "training_bound_seconds": bound,
        "training_over_bound": train_mean / bound,
        "run_over_bound": mean / bound,
        "within_2x_of_bound": bool(mean <= 2.0 * bound),
        "host": host(),
    }
    table = "\n".join(
        [
            "# neurallog_ucb2_h1" + (" (quick)" if quick else ""),
            "",
            f"{POLICY} {POLICY_PARAMS} on {ENV} {ENV_PARAMS}, T={HORIZON}, "
            f"{n_seeds} seeds, one thread.",
            "",
            "| seconds per run (mean / median / max) | final regret (mean / median) |",
            "|---|---|",
            f"| {mean:.3f} / {result['seconds_median']:.3f} / {result['seconds_max']:.3f} "
            f"| {result['regret_mean']:.1f} / {result['regret_median']:.1f} |",
            "",
            f"Bar: mean < {BAR_SECONDS:g} s: {'PASS' if result['under_2s'] else 'FAIL'}. "
            f"Load average: {result['host']['loadavg']}.",
            "",
            f"Training-FLOP bound (the GEMMs of every refit step alone): {bound:.3f} s; "
            f"training {train_mean:.3f} s ({train_mean / bound:.2f}x the bound), whole "
            f"loop {mean:.3f} s ({mean / bound:.2f}x; bar 2x: "
            f"{'PASS' if result['within_2x_of_bound'] else 'FAIL'}).",
            "",
        ]
    )
    write_outputs(out, result, table)
    return result
