"""Per-round selection latency for K = 10 arms of input 1960 on mnist stays under 1 ms.

Workload (issue 5): the mnist task of [Bae2025, Fig. 2] (14 x 14 images, block one-hot arms:
K = 10, input 196 * 10 = 1960, a pool of 2500 rows). Each policy runs T = 500 rounds to train
its network (refits every 50 rounds), then 200 more; the bar is on the median wall time of
``policy.act`` (scores of all 10 arms, gradient features, widths and the arg-max) over the
last 200 rounds, one BLAS and one PyTorch thread. Policies: the paper's NeuralLog-UCB-2 and,
for comparison, NeuralUCB and NeuralTS, all with m = 20 and the diagonal Gram.

    banditkit bench --only mnist_selection --out results/bench
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._common import (
    host,
    run_once,
    single_threaded,
    write_outputs,
)

BAR_MS = 1.0
WARMUP, MEASURED = 500, 200
ENV = "classification"
ENV_PARAMS: dict[str, Any] = {"dataset": "mnist", "pool": 2500}
_NEURAL_V0: dict[str, Any] = {"nu": 1.0, "lam": 1.0, "steps": 100}
POLICIES: dict[str, dict[str, Any]] = {
    "neurallog-ucb2": {"width": 20, "gram": "diagonal", "update_every": 50},
    # nu, lam, steps: the neural-ucb / neural-ts defaults before they changed
    "neural-ucb": {"width": 20, "gram": "diagonal", "update_every": 50, **_NEURAL_V0},
    "neural-ts": {"width": 20, "gram": "diagonal", "update_every": 50, **_NEURAL_V0},
}


def main(quick: bool, out: Path) -> dict[str, Any]:
    """Median act latency after the warm-up, per policy (quick: 100 + 50 rounds, 1 seed)."""
    warmup, measured = (100, 50) if quick else (WARMUP, MEASURED)
    rows: dict[str, Any] = {}
    with single_threaded():
        run_once("neurallog-ucb2", POLICIES["neurallog-ucb2"], ENV, ENV_PARAMS, 5, 0)
        for name, params in POLICIES.items():
            _, run = run_once(name, params, ENV, ENV_PARAMS, warmup + measured, 0)
            act_ms = 1e3 * run.act_seconds[warmup:]
            rows[name] = {
                "params": params,
                "act_ms_median": float(np.median(act_ms)),
                "act_ms_mean": float(act_ms.mean()),
                "act_ms_p90": float(np.quantile(act_ms, 0.9)),
                "update_ms_median": float(np.median(1e3 * run.update_seconds[warmup:])),
                "under_1ms": bool(np.median(act_ms) < BAR_MS),
            }
    result: dict[str, Any] = {
        "workload": "mnist_selection",
        "quick": quick,
        "env": {"name": ENV, "params": ENV_PARAMS},
        "warmup_rounds": warmup,
        "measured_rounds": measured,
        "policies": rows,
        "bar_ms": BAR_MS,
        "under_1ms": bool(rows["neurallog-ucb2"]["under_1ms"]),
        "all_under_1ms": all(row["under_1ms"] for row in rows.values()),
        "host": host(),
    }
    lines = [
        "# mnist_selection" + (" (quick)" if quick else ""),
        "",
        f"act latency over rounds {warmup + 1}..{warmup + measured} on {ENV} {ENV_PARAMS} "
        "(K = 10, input 1960), one thread.",
        "",
        "| policy | act ms (median / mean / p90) | update ms (median) | < 1 ms |",
        "|---|---|---|---|",
    ]
    for name, row in rows.items():
        lines.append(
            f"| {name} | {row['act_ms_median']:.3f} / {row['act_ms_mean']:.3f} / "
            f"{row['act_ms_p90']:.3f} | {row['update_ms_median']:.3f} | "
            f"{'PASS' if row['under_1ms'] else 'FAIL'} |"
        )
    lines += ["", f"Load average: {result['host']['loadavg']}.", ""]
    write_outputs(out, result, "\n".join(lines))
    return result
