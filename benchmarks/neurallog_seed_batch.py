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

The floor of the ratio from the arithmetic (``floor_*``): the GEMMs alone of the 10
networks' refits in that dtype (``stacked_training_bound``: 40 refits x 100 steps, each
two batched GEMMs of the refit shapes, best of 3 per shape, CPU time) over the one-seed
run; the batch cannot be faster than its training's products.

    banditkit bench --only neurallog_seed_batch --out results/bench
"""

from __future__ import annotations

import math
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from banditkit.core import make_env, make_policy, simulate
from banditkit.core.batched import simulate_seeds
from benchmarks._common import host, single_threaded, write_outputs
from benchmarks.neurallog_ucb2_h1 import (  # the same workload
    ENV,
    ENV_PARAMS,
    HORIZON,
    POLICY,
    POLICY_PARAMS,
)

BAR = 3.0
SEEDS = list(range(10))


def stacked_training_bound(
    size: int = 10,
    dtype: torch.dtype = torch.float32,
    d: int = 20,
    width: int = 20,
    every: int = 50,
    steps: int = 100,
    horizon: int = HORIZON,
) -> float:
    """CPU seconds of the GEMMs alone of ``size`` networks' refits, batched (docstring)."""
    gen = torch.Generator().manual_seed(0)
    W = torch.randn(size, width, d, generator=gen, dtype=dtype)
    total = 0.0
    for t in range(every, horizon + 1, every):
        X = torch.randn(size, t, d, generator=gen, dtype=dtype)
        C = torch.randn(size, t, width, generator=gen, dtype=dtype)
        H = torch.empty(size, t, width, dtype=dtype)
        G = torch.empty(size, width, d, dtype=dtype)
        best = math.inf
        for _ in range(3):
            started = time.process_time()
            for _ in range(steps):
                torch.bmm(X, W.mT, out=H)
                torch.bmm(C.mT, X, out=G)
            best = min(best, time.process_time() - started)
        total += best
    return total


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
        floors = {
            dtype: stacked_training_bound(
                len(SEEDS), getattr(torch, dtype), horizon=HORIZON
            )
            for dtype in ("float32", "float64")
        }
    med = {k: statistics.median(v) for k, v in cpu.items()}
    ratio = med["batch10_float32"] / med["one_float64"]
    floor = {k: v / med["one_float64"] for k, v in floors.items()}
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
        "training_gemms_10_networks": floors,
        "floor_f32_to_one_f64": floor["float32"],
        "floor_f64_to_one_f64": floor["float64"],
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
            f"Floor from the arithmetic (the 10 networks' training GEMMs / one seed, "
            f"float64): {floor['float32']:.2f}x in float32, {floor['float64']:.2f}x in "
            "float64.",
            f"Batched actions equal the separate runs' (seed 0): {result['same_actions']}. "
            f"Load average: {result['host']['loadavg']}.",
            "",
        ]
    )
    write_outputs(out, result, table)
    return result
