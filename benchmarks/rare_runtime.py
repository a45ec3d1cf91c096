"""BLCE against RS-OFUL: select + update time at the paper's (K, d) = (1000, 5), (5000, 10).

The rare-update issue asks that BLCE's total select + update time be at most RS-OFUL's at
(K, d) = (1000, 5) and (5000, 10), T = 10,000 (the paper's Tables 2 and 4 report BLCE 7x
and 3x slower under uniform contexts, faster under normal ones at (5000, 10)). This script
measures the four cells (uniform and normal contexts, the configs' RS-OFUL C = 1 and 3)
side by side in one process: BLAS on one thread, repetitions interleaved (the policy order
alternates, seeds 0, 1, 2), only ``act`` + ``update`` timed, both as wall time (what the
reproduction's tables report) and as this thread's CPU time (less sensitive to other
processes on a shared machine). Reports medians over the repetitions, the ratio BLCE /
RS-OFUL, the share of BLCE's rounds decided without computing the surviving set (the pick
test of ``EliminationLevels.survives``) and the load average before and after.

At these sizes a round costs what its number of array operations costs (RS-OFUL: about
ten, 35 us at (1000, 5)); docs/rare.md ("The runtime bar") has the measured tables.

    banditkit bench --only rare_runtime --out results/bench   (--quick: T = 2000, 1 repetition)
"""

from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

import banditkit as bk
from banditkit.experiments.execute import single_threaded

#: The four cells of the bar: (context law, K, d, RS-OFUL's C in that config).
CELLS: list[tuple[str, int, int, float]] = [
    ("uniform", 1000, 5, 1.0),
    ("normal", 1000, 5, 3.0),
    ("uniform", 5000, 10, 1.0),
    ("normal", 5000, 10, 3.0),
]


def _timed_run(
    name: str, params: dict[str, Any], env: Any, horizon: int, seed: int
) -> dict[str, float]:
    """One run of ``horizon`` rounds; wall and thread-CPU seconds inside act + update."""
    policy = bk.make_policy(name, seed=seed, **params)
    policy.begin(horizon)
    env.reset(seed)
    wall, cpu = time.perf_counter, time.thread_time
    w_total = c_total = regret = 0.0
    picked = 0
    for t in range(1, horizon + 1):
        ctx = env.context()
        if ctx is None:  # a synthetic environment never runs out of rounds
            raise RuntimeError(f"{name} environment ended at round {t}")
        w0, c0 = wall(), cpu()
        action = policy.act(ctx)
        w1, c1 = wall(), cpu()
        step = env.step(action)
        w2, c2 = wall(), cpu()
        policy.update(ctx, action, step.feedback)
        w3, c3 = wall(), cpu()
        w_total += (w1 - w0) + (w3 - w2)
        c_total += (c1 - c0) + (c3 - c2)
        regret += step.regret
        picked += getattr(policy, "last_survivors", 0) == -1
    return {
        "wall": w_total,
        "cpu": c_total,
        "regret": regret,
        "picked": picked / horizon,
    }


def main(quick: bool, out: Path) -> dict[str, Any]:
    """Median select + update seconds of BLCE and RS-OFUL in the four cells of the bar."""
    horizon, reps = (2000, 1) if quick else (10_000, 3)
    result: dict[str, Any] = {
        "horizon": horizon,
        "repetitions": reps,
        "load_before": list(os.getloadavg()),
        "cells": {},
    }
    runs: dict[str, dict[str, list[dict[str, float]]]] = {}
    with single_threaded():
        for rep in range(reps):
            for law, K, d, C in CELLS:
                cell = f"{law} K{K}-d{d}"
                env = bk.make_env("rare-linear", n_arms=K, d=d, law=law)
                order = [("BLCE", "blce", {}), ("RS-OFUL", "rs-oful", {"C": C})]
                for label, name, params in order if rep % 2 == 0 else order[::-1]:
                    run = _timed_run(name, params, env, horizon, rep)
                    runs.setdefault(cell, {}).setdefault(label, []).append(run)
    result["load_after"] = list(os.getloadavg())
    lines = [
        f"# BLCE vs RS-OFUL, select + update seconds, T = {horizon}, "
        f"median of {reps} interleaved repetitions, one BLAS thread",
        "",
        f"Load average (1, 5, 15 min) before {result['load_before']}, "
        f"after {result['load_after']}.",
        "",
        "| cell | BLCE wall | RS-OFUL wall | ratio | BLCE CPU | RS-OFUL CPU | ratio | bar "
        "| BLCE rounds decided by the pick |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for cell, by_policy in runs.items():
        row: dict[str, Any] = {}
        for label, rs in by_policy.items():
            row[label] = {
                "wall": statistics.median(r["wall"] for r in rs),
                "cpu": statistics.median(r["cpu"] for r in rs),
                "regret": statistics.mean(r["regret"] for r in rs),
                "picked": statistics.mean(r["picked"] for r in rs),
                "runs": rs,
            }
        b, r = row["BLCE"], row["RS-OFUL"]
        row["ratio_wall"] = b["wall"] / r["wall"]
        row["ratio_cpu"] = b["cpu"] / r["cpu"]
        row["bar_met"] = bool(row["ratio_wall"] <= 1.0 and row["ratio_cpu"] <= 1.0)
        result["cells"][cell] = row
        lines.append(
            f"| {cell} | {b['wall']:.2f} | {r['wall']:.2f} | {row['ratio_wall']:.2f} "
            f"| {b['cpu']:.2f} | {r['cpu']:.2f} | {row['ratio_cpu']:.2f} "
            f"| {'met' if row['bar_met'] else 'not met'} | {b['picked']:.0%} |"
        )
    out.mkdir(parents=True, exist_ok=True)
    (out / "result.json").write_text(json.dumps(result, indent=2))
    (out / "result.md").write_text("\n".join(lines) + "\n")
    return result


if __name__ == "__main__":  # pragma: no cover
    import sys

    print(
        json.dumps(main("--quick" in sys.argv, Path("results/rare_runtime")), indent=1)
    )
