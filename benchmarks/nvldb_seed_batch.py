"""Ten seeds of NVLDB-UCB at m = 32 as one stack, against one seed (issue [compute], item 3).

Workload: ``nvldb-ucb`` with its defaults (preset "appendix": m = 32, depth 3, 20 Adam steps
every round, rule ASYM) on ``dueling`` cos, d = 5, K = 5, T = 300. Timed in one process,
interleaved (``reps`` repetitions, medians), one BLAS and one PyTorch thread: one seed
alone, the 10 seeds 0..9 as one stack (``policies.dueling.stacked``) and the 10 seeds one by
one (``core.members.Separate``; skipped in quick mode). The bar: the stack within 3x the
time of one seed (``within_3x``). The share of the stack's pairs equal to the separate runs'
is reported (``same_pairs``; Adam amplifies rounding on the network's head bias, so a seed
may part after a while: docs/performance.md, "Devices, dtype and batched duels").

    banditkit bench --only nvldb_seed_batch --out results/bench
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from banditkit.core import make_env, make_policy
from banditkit.core.members import Separate, stack
from banditkit.core.simulate import simulate_seeds
from benchmarks._common import host, single_threaded, write_outputs

POLICY = "nvldb-ucb"
POLICY_PARAMS: dict[str, Any] = {}
ENV = "dueling"
ENV_PARAMS: dict[str, Any] = {"utility": "cos", "d": 5, "n_arms": 5}
HORIZON = 300
BAR = 3.0
SEEDS = list(range(10))


def _play(seeds: list[int], stacked: bool, horizon: int) -> list[Any]:
    policies = [make_policy(POLICY, **POLICY_PARAMS, seed=s) for s in seeds]
    envs = [make_env(ENV, **ENV_PARAMS) for _ in seeds]
    members = stack(policies) if stacked else Separate(policies)
    return simulate_seeds(policies, envs, horizon, seeds, members=members)


def _timed(fn: Any) -> tuple[float, Any]:
    wall = time.perf_counter()
    out = fn()
    return time.perf_counter() - wall, out


def main(quick: bool, out: Path) -> dict[str, Any]:
    """Time one seed, the stack of ten and (full mode) ten one by one, interleaved."""
    reps = 1 if quick else 3
    cases = {
        "one": lambda: _play(SEEDS[:1], False, HORIZON),
        "stack10": lambda: _play(SEEDS, True, HORIZON),
    }
    if not quick:
        cases["separate10"] = lambda: _play(SEEDS, False, HORIZON)
    wall: dict[str, list[float]] = {}
    results: dict[str, Any] = {}
    with single_threaded():
        _play(SEEDS[:2], True, 5)  # warm-up (imports), not timed
        for _ in range(reps):
            for key, fn in cases.items():
                seconds, results[key] = _timed(fn)
                wall.setdefault(key, []).append(seconds)
        separate = results.get("separate10") or _play(SEEDS, False, HORIZON)
    pairs = [
        np.all(np.asarray(a.actions) == np.asarray(b.actions), axis=-1)
        for a, b in zip(results["stack10"], separate, strict=True)
    ]
    med = {k: statistics.median(v) for k, v in wall.items()}
    ratio = med["stack10"] / med["one"]
    result: dict[str, Any] = {
        "workload": "nvldb_seed_batch",
        "quick": quick,
        "policy": {"name": POLICY, "params": POLICY_PARAMS},
        "env": {"name": ENV, "params": ENV_PARAMS},
        "horizon": HORIZON,
        "seeds": SEEDS,
        "reps": reps,
        "wall_seconds": wall,
        "wall_median": med,
        "ratio_stack10_to_one": ratio,
        "bar": BAR,
        "within_3x": bool(ratio <= BAR),
        "same_pairs": float(np.mean(pairs)),
        "regret": {
            key: [float(r.regret.sum()) for r in runs]
            for key, runs in (("stack10", results["stack10"]), ("separate10", separate))
        },
        "host": host(),
    }
    rows = "\n".join(f"| {k} | {v:.2f} |" for k, v in med.items())
    table = "\n".join(
        [
            "# nvldb_seed_batch" + (" (quick)" if quick else ""),
            "",
            f"{POLICY} {POLICY_PARAMS} on {ENV} {ENV_PARAMS}, T={HORIZON}; one thread; "
            f"medians of {reps} interleaved repetitions (wall seconds).",
            "",
            "| case | wall s |",
            "|---|---|",
            rows,
            "",
            f"10 seeds stacked / one seed: {ratio:.2f}x (bar {BAR:g}x: "
            f"{'PASS' if result['within_3x'] else 'FAIL'}). Pairs equal to the separate "
            f"runs': {result['same_pairs']:.1%}. Load average: {result['host']['loadavg']}.",
            "",
        ]
    )
    write_outputs(out, result, table)
    return result
