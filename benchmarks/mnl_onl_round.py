"""One ONL-MNL round (act + update) after t = 1000 at N = 100, K = 5, d_w = 76.

Workload (issue [mnl]): the misspecified Gaussian setting of [Hwang2025, Fig. 2] (``mnl``
environment, d = 3, N = 100 items, capacity K = 5), ONL-MNL with width m = 15, so
d_w = d m + 2 m + 1 = 76, t0 = 100, lam_scale = 0.002, beta_scale = 0.01 (the Fig. 2
scales before the 3-seed tuning; the round's cost is the Newton solve's, and lam only
changes its iteration count), horizon 1100. The rounds
1001-1100 are timed one by one, ``act`` plus ``update``: wall time (``perf_counter``) and
the process's CPU time (``process_time``, which a shared machine's load does not inflate
as much). Bar: median under 5 ms. ``solver="newton"`` (exact Hessian every step) is timed
too for comparison. Quick mode: horizon 300, rounds 201-300 (not the bar's t).

    banditkit bench --only mnl_onl_round --out results/bench
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

import banditkit as bk
from benchmarks._common import host, single_threaded, write_outputs

BAR_MS = 5.0
ENV = {
    "utility": "misspecified",
    "features": "gaussian",
    "d": 3,
    "n_items": 100,
    "capacity": 5,
}
POLICY: dict[str, Any] = {
    "width": 15,
    "t0": 100,
    "lam_scale": 0.002,
    "beta_scale": 0.01,
}


def _round_times(solver: str, horizon: int, timed: int) -> dict[str, Any]:
    """Per-round act + update ms (wall and CPU) over the last ``timed`` rounds."""
    env = bk.make_env("mnl", **ENV)
    policy = bk.make_policy("onl-mnl", seed=0, solver=solver, **POLICY)
    env.reset(0)
    policy.begin(horizon)
    policy.attach(env)
    wall: list[float] = []
    cpu: list[float] = []
    for t in range(1, horizon + 1):
        ctx = env.context()
        assert ctx is not None
        w0, c0 = time.perf_counter(), time.process_time()
        action = policy.act(ctx)
        w1, c1 = time.perf_counter(), time.process_time()
        feedback = env.step(action).feedback
        w2, c2 = time.perf_counter(), time.process_time()
        policy.update(ctx, action, feedback)
        w3, c3 = time.perf_counter(), time.process_time()
        if t > horizon - timed:
            wall.append(1e3 * ((w1 - w0) + (w3 - w2)))
            cpu.append(1e3 * ((c1 - c0) + (c3 - c2)))
    return {
        "d_w": int(policy.net.n_params),  # type: ignore[attr-defined]
        "wall_ms": {"median": statistics.median(wall), "max": max(wall)},
        "cpu_ms": {"median": statistics.median(cpu), "max": max(cpu)},
        "rounds": [horizon - timed + 1, horizon],
    }


def main(quick: bool = False, out: Path = Path("results/bench/mnl_onl_round")) -> dict:
    """Time ONL-MNL rounds after t = 1000 (quick: after t = 200); write result files."""
    horizon, timed = (300, 100) if quick else (1100, 100)
    with single_threaded():
        times = {s: _round_times(s, horizon, timed) for s in ("lagged", "newton")}
    lagged = times["lagged"]
    result: dict[str, Any] = {
        "workload": "mnl_onl_round",
        "quick": quick,
        "env": ENV,
        "policy": POLICY,
        "ms": times,
        "bar_ms": BAR_MS,
        "fast_enough": bool(lagged["cpu_ms"]["median"] < BAR_MS),
        "fast_enough_wall": bool(lagged["wall_ms"]["median"] < BAR_MS),
        "host": host(),
    }
    write_outputs(out, result, _table(result))
    return result


def _table(result: dict[str, Any]) -> str:
    lines = [
        "# mnl_onl_round" + (" (quick)" if result["quick"] else ""),
        "",
        "ONL-MNL, N = 100, K = 5, d = 3, width 15 (d_w = 76); act + update per round, ms "
        f"(bar: median < {result['bar_ms']:g} ms); load {result['host'].get('loadavg')}.",
        "",
        "| solver | rounds | wall median | wall max | CPU median | CPU max |",
        "|---|---|---|---|---|---|",
    ]
    for name, t in result["ms"].items():
        a, b = t["rounds"]
        lines.append(
            f"| {name} | {a}-{b} | {t['wall_ms']['median']:.2f} | {t['wall_ms']['max']:.2f} "
            f"| {t['cpu_ms']['median']:.2f} | {t['cpu_ms']['max']:.2f} |"
        )
    return "\n".join(lines) + "\n"
