"""Block-encoded inputs: the neural identical-work variants with and without the block loop.

The identical-work variants of ``reference_neural_ucb_shuttle`` (MLP 63-100-1, 50 GD
steps every round) and ``reference_neural_ts_mushroom`` (MLP 44-100-1, 100 steps every
round) train on block-encoded arms (K = 7 and K = 2 blocks). "blocks" (what ``nn.fit``
chooses on such rows) multiplies each row by its block of the first layer only
(``nn._blocks``); "dense" forces the dense computation (``dense_only``). Two measures,
each in float64 and float32, the variants interleaved, CPU time of the process
(``time.process_time``: on a loaded machine the wall time also counts the waits for a
core):

* **runs**: whole runs (quick: T = 300, seeds 0-1; full: T = 2000, seeds 0-1), with
  their final regrets;
* **refit integral**: the CPU time of one refit (``NeuralModel.fit`` as the policy
  builds it, on the rows of the first N rounds of the task with uniformly drawn arms)
  on a grid of history sizes N, interpolated and summed over the refits after
  t = 1..2000 observations: the training time of a full run (the estimate of
  docs/performance.md). The per-round rest (scores, Grams, environment) is the run's
  CPU time minus the integral over its own T rounds, per round; the full-run estimate
  adds it for 2000 rounds.

The reference times are those of ``Reference`` (152 s and 224 s per 2000-round run), the
bar 3x (``IDENTICAL_WORK_BAR``).

    banditkit bench --quick --only neural_block_input --out results/bench-quick
"""

from __future__ import annotations

import contextlib
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

import banditkit as bk
from banditkit.core.simulate import simulate
from banditkit.policies.baselines.neural import NeuralUCB
from banditkit.policies.parts.history import History
from benchmarks import reference_neural_ts_mushroom as ts
from benchmarks import reference_neural_ucb_shuttle as ucb
from benchmarks._common import (
    IDENTICAL_WORK_BAR,
    Workload,
    host,
    single_threaded,
    write_outputs,
)

WORKLOADS = (ucb.IDENTICAL_WORK, ts.IDENTICAL_WORK)
#: (dtype, blocks allowed) of each variant, in the order they are interleaved.
VARIANTS = (
    ("float64", False),
    ("float64", True),
    ("float32", False),
    ("float32", True),
)
#: History sizes of the refit integral (199 / 200: either side of BLOCK_MIN_ROWS).
GRID = (25, 50, 100, 199, 200, 300, 500, 800, 1200, 1600, 2000)
FULL_T = 2000


def label(dtype: str, block_input: bool) -> str:
    """The variant's key: "float64/dense", "float32/blocks", ..."""
    return f"{dtype}/{'blocks' if block_input else 'dense'}"


def _params(workload: Workload, dtype: str) -> dict[str, Any]:
    return {**workload.policy_params, "dtype": dtype}


def dense_only(block_input: bool) -> contextlib.AbstractContextManager[Any]:
    """Force ``nn.fit``'s dense loop unless ``block_input`` (the kernel choice of nn)."""
    if block_input:
        return contextlib.nullcontext()
    from unittest import mock

    return mock.patch("banditkit.nn.fit.choose_blocks", return_value=None)


def task_rows(workload: Workload, n: int, seed: int = 0) -> History:
    """The played rows of n rounds of the workload's task, arms drawn uniformly."""
    env = bk.make_env(workload.env, **workload.env_params)
    env.reset(seed)
    rng = np.random.default_rng(seed)
    history: History | None = None
    for _ in range(n):
        ctx = env.context()
        assert ctx is not None
        arms = np.asarray(ctx.arms)
        action = int(rng.integers(len(arms)))
        reward = float(env.step(action).feedback)
        if history is None:
            history = History(arms.shape[1])
        history.append(arms[action], reward)
    assert history is not None
    return history


def refit_seconds(
    workload: Workload, rows: History, grid: tuple[int, ...], reps: int
) -> dict[str, dict[int, float]]:
    """Median CPU seconds of one refit on the first N rows, per variant and N."""
    out: dict[str, dict[int, float]] = {label(*v): {} for v in VARIANTS}
    for n in grid:
        history = History(rows.X.shape[1])
        for x, y in zip(rows.X[:n], rows.y[:n], strict=True):
            history.append(x, float(y))
        times: dict[str, list[float]] = {k: [] for k in out}
        for _ in range(reps):
            for dtype, block_input in VARIANTS:
                policy = bk.make_policy(
                    workload.policy,
                    seed=0,
                    **{**_params(workload, dtype), "backtrack": 0},
                )
                assert isinstance(policy, NeuralUCB)  # NeuralTS too
                model = policy._make_model(rows.X.shape[1], torch.Generator())
                with dense_only(block_input):
                    started = time.process_time()
                    model.fit(history)
                    spent = time.process_time() - started
                times[label(dtype, block_input)].append(spent)
        for key, values in times.items():
            out[key][n] = statistics.median(values)
    return out


def integral(per_refit: dict[int, float], horizon: int) -> float:
    """Sum over refits after t = 1..horizon observations (linear interpolation)."""
    grid = sorted(per_refit)
    t = np.arange(1, horizon + 1)
    return float(np.interp(t, grid, [per_refit[n] for n in grid]).sum())


def measure_runs(workload: Workload, horizon: int, seeds: int) -> dict[str, Any]:
    """CPU seconds and final regret of each variant, interleaved seed by seed."""
    seconds: dict[str, list[float]] = {label(*v): [] for v in VARIANTS}
    regret: dict[str, list[float]] = {label(*v): [] for v in VARIANTS}
    for seed in range(seeds):
        for dtype, block_input in VARIANTS:
            env = bk.make_env(workload.env, **workload.env_params)
            agent = bk.make_policy(
                workload.policy, seed=seed, **_params(workload, dtype)
            )
            with dense_only(block_input):
                started = time.process_time()
                run = simulate(agent, env, horizon=horizon, seed=seed, progress=False)
                spent = time.process_time() - started
            seconds[label(dtype, block_input)].append(spent)
            regret[label(dtype, block_input)].append(float(run.cumulative_regret[-1]))
    return {"seconds": seconds, "regret": regret}


def measure(
    workload: Workload, horizon: int, seeds: int, grid: tuple[int, ...], reps: int
) -> dict[str, Any]:
    """Runs and refit integral of one workload; the estimates against the reference."""
    assert workload.reference is not None
    runs = measure_runs(workload, horizon, seeds)
    rows = task_rows(workload, max(grid))
    per_refit = refit_seconds(workload, rows, grid, reps)
    variants: dict[str, Any] = {}
    for key in per_refit:
        run_s = statistics.median(runs["seconds"][key])
        train_run = integral(per_refit[key], horizon)
        per_round = max(run_s - train_run, 0.0) / horizon
        train_full = integral(per_refit[key], FULL_T)
        full = train_full + per_round * FULL_T
        variants[key] = {
            "run_seconds": runs["seconds"][key],
            "regret": runs["regret"][key],
            "refit_seconds": per_refit[key],
            "training_full_seconds": train_full,
            "per_round_seconds": per_round,
            "full_run_estimate_seconds": full,
            "speedup_vs_reference": workload.reference.seconds / full,
            "meets_bar": workload.reference.seconds / full >= IDENTICAL_WORK_BAR,
        }
    return {
        "workload": workload.name,
        "policy": {"name": workload.policy, "params": workload.policy_params},
        "reference_seconds": workload.reference.seconds,
        "variants": variants,
    }


def main(quick: bool, out: Path) -> dict[str, Any]:
    """Measure both workloads (quick: T = 300 runs, 2 seeds; full: T = 2000 runs)."""
    horizon, seeds, reps = (300, 2, 3) if quick else (FULL_T, 2, 5)
    with single_threaded():
        rows = [measure(w, horizon, seeds, GRID, reps) for w in WORKLOADS]
    result: dict[str, Any] = {
        "quick": quick,
        "horizon": horizon,
        "seeds": seeds,
        "bar": IDENTICAL_WORK_BAR,
        "rows": rows,
        "host": host(),
    }
    lines = [
        "# Block-encoded inputs: identical work" + (" (quick)" if quick else ""),
        "",
        f"Runs: T = {horizon}, seeds 0-{seeds - 1}, variants interleaved, CPU time. "
        f"Full-run estimate: refit times integrated over t = 1..{FULL_T} plus the "
        "per-round rest of the runs.",
        "",
        "| workload | variant | s / run (CPU, median) | final regret | training, "
        "T = 2000 (s) | full run estimate (s) | reference (s) | speed-up |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        for key, v in r["variants"].items():
            lines.append(
                f"| {r['workload']} | {key} | {statistics.median(v['run_seconds']):.2f} "
                f"| {', '.join(f'{x:.0f}' for x in v['regret'])} "
                f"| {v['training_full_seconds']:.1f} "
                f"| {v['full_run_estimate_seconds']:.1f} | {r['reference_seconds']:.0f} "
                f"| {v['speedup_vs_reference']:.2f}x |"
            )
    lines += ["", f"Load average while measuring: {result['host']['loadavg']}.", ""]
    write_outputs(out, result, "\n".join(lines))
    return result
