"""One run of NeuralLog-UCB-2 on the synthetic h1 task takes under 2 s on one core.

Workload (issue 5): ``neurallog-ucb2`` with its defaults (m = 20, depth 2, diagonal Gram,
refit every 50 rounds) on ``logistic`` h1 with d = 20, K = 5 and the pool of 2500 vectors of
[Bae2025, Fig. 1], T = 2000, 10 seeds (quick: 2 seeds). The bar is on the mean wall time of
the bandit loop (``simulate``) with one BLAS and one PyTorch thread.

    banditkit bench --only neurallog_ucb2_h1 --out results/bench
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from banditkit.benchmarks._common import host, run_once, single_threaded, write_outputs

BAR_SECONDS = 2.0
POLICY = "neurallog-ucb2"
POLICY_PARAMS: dict[str, Any] = {"width": 20}
ENV = "logistic"
ENV_PARAMS: dict[str, Any] = {"h": "h1", "d": 20, "n_arms": 5, "pool": 2500}
HORIZON = 2000


def main(quick: bool, out: Path) -> dict[str, Any]:
    """Time one run per seed (10 seeds; quick: 2) and check the 2 s bar on the mean."""
    n_seeds = 2 if quick else 10
    seconds: list[float] = []
    regrets: list[float] = []
    with single_threaded():
        run_once(POLICY, POLICY_PARAMS, ENV, ENV_PARAMS, 20, 0)  # warm-up, not timed
        for seed in range(n_seeds):
            elapsed, run = run_once(
                POLICY, POLICY_PARAMS, ENV, ENV_PARAMS, HORIZON, seed
            )
            seconds.append(elapsed)
            regrets.append(float(run.cumulative_regret[-1]))
    mean = statistics.fmean(seconds)
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
        ]
    )
    write_outputs(out, result, table)
    return result
