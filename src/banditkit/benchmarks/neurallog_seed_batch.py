"""Ten seeds of NeuralLog-UCB-2 on h1 as one batch, against one seed (issue 16, item 4).

Workload: ``neurallog-ucb2`` with its defaults (m = 20, depth 2, diagonal A, exact d_eff,
refit every 50 rounds with 100 GD steps) on ``logistic`` h1, d = 20, K = 5, pool 2500,
T = 2000 (the settings of ``neurallog_ucb2_h1``). Timed, in one process and interleaved
(``reps`` repetitions, medians), with one BLAS and one PyTorch thread: one seed by
``simulate`` (float64, the default, and float32) and the 10 seeds 0..9 as one batch by
``core.batched.simulate_seeds`` (float32 and float64). The bar: the batch of 10 seeds in
float32 within 3x the CPU time of one seed with the defaults (``within_3x``). The
batch's actions are checked against separate runs of the same dtype (seed 0 each
repetition; ``same_actions``). Quick: one repetition.

    banditkit bench --only neurallog_seed_batch --out results/bench
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from banditkit.benchmarks._common import host, single_threaded, write_outputs
from banditkit.benchmarks.neurallog_ucb2_h1 import (  # the same workload
    ENV,
    ENV_PARAMS,
    HORIZON,
    POLICY,
    POLICY_PARAMS,
)
from banditkit.core import make_env, make_policy, simulate
from banditkit.core.batched import simulate_seeds

BAR = 3.0
SEEDS = list(range(10))


def _one(dtype: str, horizon: int, seed: int = 0) -> Any:
    policy = make_policy(POLICY, **POLICY_PARAMS, dtype=dtype, seed=seed)
    env = make_env(ENV, **ENV_PARAMS)
    return simulate(policy, env, horizon, seed=seed, progress=False)


def _batch(dtype: str, horizon: int, seeds: list[int]) -> list[Any]:
    policies = [
        make_policy(POLICY, **POLICY_PARAMS, dtype=dtype, seed=s) for s in seeds
    ]
    envs = [make_env(ENV, **ENV_PARAMS) for _ in seeds]
    return simulate_seeds(policies, envs, horizon, seeds)


def _timed(fn: Any) -> tuple[float, float, Any]:
    cpu, wall = time.process_time(), time.perf_counter()
    out = fn()
    return time.process_time() - cpu, time.perf_counter() - wall, out


def main(quick: bool, out: Path) -> dict[str, Any]:
    """Time one seed and the batch of ten, interleaved; check the 3x bar."""
    reps = 1 if quick else 3
    cpu: dict[str, list[float]] = {}
    wall: dict[str, list[float]] = {}
    same: list[bool] = []
    regrets: list[float] = []
    cases = {
        "one_float64": lambda: _one("float64", HORIZON),
        "one_float32": lambda: _one("float32", HORIZON),
        "batch10_float32": lambda: _batch("float32", HORIZON, SEEDS),
        "batch10_float64": lambda: _batch("float64", HORIZON, SEEDS),
    }
    with single_threaded():
        _batch("float32", 60, [0, 1])  # warm-up (imports), not timed
        for _ in range(reps):
            results = {}
            for key, fn in cases.items():
                c, w, results[key] = _timed(fn)
                cpu.setdefault(key, []).append(c)
                wall.setdefault(key, []).append(w)
            for dtype in ("float64", "float32"):
                one, batch = results[f"one_{dtype}"], results[f"batch10_{dtype}"][0]
                same.append(bool(np.array_equal(one.actions, batch.actions)))
            regrets = [
                float(r.cumulative_regret[-1]) for r in results["batch10_float32"]
            ]
    med = {k: statistics.median(v) for k, v in cpu.items()}
    ratio = med["batch10_float32"] / med["one_float64"]
    result: dict[str, Any] = {
        "workload": "neurallog_seed_batch",
        "quick": quick,
        "policy": {"name": POLICY, "params": POLICY_PARAMS},
        "env": {"name": ENV, "params": ENV_PARAMS},
        "horizon": HORIZON,
        "seeds": SEEDS,
        "reps": reps,
        "cpu_seconds": cpu,
        "wall_seconds": wall,
        "cpu_median": med,
        "ratio_batch10_f32_to_one_f64": ratio,
        "ratio_batch10_f32_to_one_f32": med["batch10_float32"] / med["one_float32"],
        "ratio_batch10_f64_to_one_f64": med["batch10_float64"] / med["one_float64"],
        "bar": BAR,
        "within_3x": bool(ratio <= BAR),
        "same_actions": all(same),
        "regret_batch10_float32": regrets,
        "host": host(),
    }
    rows = "\n".join(
        f"| {k} | {med[k]:.2f} | {statistics.median(wall[k]):.2f} |" for k in cases
    )
    table = "\n".join(
        [
            "# neurallog_seed_batch" + (" (quick)" if quick else ""),
            "",
            f"{POLICY} {POLICY_PARAMS} on {ENV} {ENV_PARAMS}, T={HORIZON}; one thread; "
            f"medians of {reps} interleaved repetitions.",
            "",
            "| case | CPU s | wall s |",
            "|---|---|---|",
            rows,
            "",
            f"10 seeds batched (float32) / one seed (float64): {ratio:.2f}x "
            f"(bar {BAR:g}x: {'PASS' if result['within_3x'] else 'FAIL'}); / one seed "
            f"(float32): {result['ratio_batch10_f32_to_one_f32']:.2f}x; float64 batch / "
            f"one seed: {result['ratio_batch10_f64_to_one_f64']:.2f}x.",
            f"Batched actions equal the separate runs' (seed 0): {result['same_actions']}. "
            f"Load average: {result['host']['loadavg']}.",
            "",
        ]
    )
    write_outputs(out, result, table)
    return result
