"""One run of NeuralLog-UCB-2 on the synthetic h1 task takes under 2 s on one core.

Workload (issue 5): ``neurallog-ucb2`` with its defaults (m = 20, depth 2, diagonal Gram,
refit every 50 rounds) on ``logistic`` h1 with d = 20, K = 5 and the pool of 2500 vectors of
[Bae2025, Fig. 1], T = 2000, 10 seeds (quick: 2 seeds). The bar is on the mean wall time of
the bandit loop (``simulate``) with one BLAS and one PyTorch thread.

The training-FLOP bound (issue 16): a refit after observation t runs ``steps`` full-batch
steps on t rows, each two GEMMs of 2 t m d flops (X W_1^T and (v c)^T X); the bound is the
time of those GEMMs alone, on random data of the refit shapes, summed over the run's refit
rounds (``training_bound``, best of 3 per shape). It is compared with the training time of
the runs (``NeuralModel.fit``, timed around the calls) and with their whole loop. The
ratios and the 2x verdict use CPU time (``time.process_time``: the bound, and the medians
over the seeds of the runs and of their training), which a shared machine disturbs less
than the wall clock; the wall-clock ratios are reported beside them (``*_wall``).

    banditkit bench --only neurallog_ucb2_h1 --out results/bench
"""

from __future__ import annotations

import contextlib
import math
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch

from banditkit.policies.parts.models import NeuralModel
from benchmarks._common import host, run_once, single_threaded, write_outputs

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
    clock: Callable[[], float] = time.perf_counter,
) -> float:
    """Seconds of the GEMMs alone of every refit's steps (module docstring).

    ``clock`` times them: the wall clock (default) or ``time.process_time`` (CPU time).
    """
    gen = torch.Generator().manual_seed(0)
    W = torch.randn(width, d, generator=gen, dtype=dtype)
    total = 0.0
    for t in range(every, horizon + 1, every):
        X = torch.randn(t, d, generator=gen, dtype=dtype)
        C = torch.randn(t, width, generator=gen, dtype=dtype)
        H, G = torch.empty(t, width, dtype=dtype), torch.empty(width, d, dtype=dtype)
        best = math.inf
        for _ in range(3):
            started = clock()
            for _ in range(steps):
                torch.mm(X, W.T, out=H)
                torch.mm(C.T, X, out=G)
            best = min(best, clock() - started)
        total += best
    return total


@contextlib.contextmanager
def timed_fits(
    clock: Callable[[], float] = time.perf_counter,
) -> Iterator[list[float]]:
    """Collect the time (``clock``: wall by default) of every ``NeuralModel.fit`` inside."""
    spent: list[float] = []
    fit = NeuralModel.fit

    def timed(self: NeuralModel, history: Any) -> None:
        started = clock()
        try:
            fit(self, history)
        finally:
            spent.append(clock() - started)

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
    cpu: list[float] = []
    training_cpu: list[float] = []
    regrets: list[float] = []
    with single_threaded():
        run_once(POLICY, POLICY_PARAMS, ENV, ENV_PARAMS, 20, 0)  # warm-up, not timed
        bound = training_bound(d=ENV_PARAMS["d"], width=POLICY_PARAMS["width"])
        bound_cpu = training_bound(
            d=ENV_PARAMS["d"], width=POLICY_PARAMS["width"], clock=time.process_time
        )
        for seed in range(n_seeds):
            with timed_fits() as spent:
                elapsed, run = run_once(
                    POLICY, POLICY_PARAMS, ENV, ENV_PARAMS, HORIZON, seed
                )
            seconds.append(elapsed)
            training.append(sum(spent))
            regrets.append(float(run.cumulative_regret[-1]))
            # the same run again, in CPU time (the ratios below)
            with timed_fits(time.process_time) as spent:
                started = time.process_time()
                run_once(POLICY, POLICY_PARAMS, ENV, ENV_PARAMS, HORIZON, seed)
                cpu.append(time.process_time() - started)
            training_cpu.append(sum(spent))
    mean = statistics.fmean(seconds)
    train_mean = statistics.fmean(training)
    run_cpu = statistics.median(cpu)
    train_cpu = statistics.median(training_cpu)
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
        "cpu_seconds": cpu,
        "training_cpu_seconds": training_cpu,
        "training_bound_cpu_seconds": bound_cpu,
        "training_over_bound": train_cpu / bound_cpu,
        "run_over_bound": run_cpu / bound_cpu,
        "within_2x_of_bound": bool(run_cpu <= 2.0 * bound_cpu),
        "training_over_bound_wall": train_mean / bound,
        "run_over_bound_wall": mean / bound,
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
            "Training-FLOP bound (the GEMMs of every refit step alone), CPU time: "
            f"{bound_cpu:.3f} s; training {train_cpu:.3f} s "
            f"({result['training_over_bound']:.2f}x the bound), whole loop "
            f"{run_cpu:.3f} s ({result['run_over_bound']:.2f}x; bar 2x: "
            f"{'PASS' if result['within_2x_of_bound'] else 'FAIL'}; medians over the "
            f"seeds). Wall clock: bound {bound:.3f} s, training {train_mean:.3f} s "
            f"({train_mean / bound:.2f}x), loop {mean:.3f} s ({mean / bound:.2f}x).",
            "",
        ]
    )
    write_outputs(out, result, table)
    return result
