"""float32 against float64 for the neural policies: time and regret, interleaved.

The two neural reference workloads (``reference_neural_ucb_shuttle``,
``reference_neural_ts_mushroom``), each in its best-settings and its identical-work
variant, run with ``dtype="float64"`` and ``dtype="float32"`` on the same seeds, the two
dtypes interleaved seed by seed so that the load of the machine hits both alike. The
Grams are float64 in both (``NeuralModel``); only the network, its training and its
gradients change precision. Reported per workload: mean seconds per run of each dtype,
their ratio, the per-seed final regrets, and the mean regret difference with its
standard error over seeds (float32 changes the actions from the first rounds where two
scores are close, so runs differ; the question is whether the regret moves beyond the
seed-to-seed noise).

Quick mode: T = 300, 4 seeds. Full: T = 2000, 10 seeds (long: the identical-work
variants train every round).

    banditkit bench --only neural_dtype --quick --out results/bench-quick
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any

from benchmarks import reference_neural_ts_mushroom as ts
from benchmarks import reference_neural_ucb_shuttle as ucb
from benchmarks._common import (
    Workload,
    host,
    run_policy,
    single_threaded,
    write_outputs,
)

WORKLOADS = (ucb.WORKLOAD, ucb.IDENTICAL_WORK, ts.WORKLOAD, ts.IDENTICAL_WORK)
DTYPES = ("float64", "float32")


def measure(workload: Workload, horizon: int, seeds: int) -> dict[str, Any]:
    """Run ``workload`` in both dtypes on seeds 0..seeds-1, interleaved."""
    seconds: dict[str, list[float]] = {d: [] for d in DTYPES}
    regret: dict[str, list[float]] = {d: [] for d in DTYPES}
    for dtype in DTYPES:  # untimed warm-up of each dtype
        params = {**workload.policy_params, "dtype": dtype}
        run_policy(workload.policy, params, workload.env, workload.env_params, 20, 0)
    for seed in range(seeds):
        for dtype in DTYPES:
            params = {**workload.policy_params, "dtype": dtype}
            elapsed, run, _ = run_policy(
                workload.policy,
                params,
                workload.env,
                workload.env_params,
                horizon,
                seed,
            )
            seconds[dtype].append(elapsed)
            regret[dtype].append(float(run.cumulative_regret[-1]))
    diffs = [a - b for a, b in zip(regret["float32"], regret["float64"], strict=True)]
    sd = statistics.stdev(diffs) if len(diffs) > 1 else 0.0
    sd64 = statistics.stdev(regret["float64"]) if seeds > 1 else 0.0
    return {
        "workload": workload.name,
        "policy": {"name": workload.policy, "params": workload.policy_params},
        "seconds": seconds,
        "regret": regret,
        "mean_seconds": {d: statistics.fmean(v) for d, v in seconds.items()},
        "mean_regret": {d: statistics.fmean(v) for d, v in regret.items()},
        "float64_over_float32": statistics.fmean(seconds["float64"])
        / statistics.fmean(seconds["float32"]),
        "regret_diff_mean": statistics.fmean(diffs),
        "regret_diff_se": sd / math.sqrt(len(diffs)),
        "regret_sd_float64": sd64,
    }


def main(quick: bool, out: Path) -> dict[str, Any]:
    """Measure every workload (quick: T = 300, 4 seeds; full: T = 2000, 10 seeds)."""
    horizon, seeds = (300, 4) if quick else (2000, 10)
    with single_threaded():
        rows = [measure(w, horizon, seeds) for w in WORKLOADS]
    result: dict[str, Any] = {
        "quick": quick,
        "horizon": horizon,
        "seeds": seeds,
        "rows": rows,
    }
    result["host"] = host()
    lines = [
        "# float32 against float64" + (" (quick)" if quick else ""),
        "",
        f"T = {horizon}, seeds 0-{seeds - 1}, dtypes interleaved per seed, one thread.",
        "",
        "| workload | s/run f64 | s/run f32 | f64 / f32 | regret f64 | regret f32 "
        "| f32 - f64 (mean +- se) | sd f64 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['workload']} | {r['mean_seconds']['float64']:.2f} "
            f"| {r['mean_seconds']['float32']:.2f} | {r['float64_over_float32']:.2f} "
            f"| {r['mean_regret']['float64']:.1f} | {r['mean_regret']['float32']:.1f} "
            f"| {r['regret_diff_mean']:+.1f} +- {r['regret_diff_se']:.1f} "
            f"| {r['regret_sd_float64']:.1f} |"
        )
    lines += ["", f"Load average while measuring: {result['host']['loadavg']}.", ""]
    write_outputs(out, result, "\n".join(lines))
    return result
