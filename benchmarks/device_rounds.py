"""Seconds per round of the neural policies on each device, against their FLOP bound.

For every workload (a neural policy of each family at its defaults, float32, on one of
the papers' environments) and every device this machine has (the CPU, one thread, and
the first CUDA device where PyTorch sees one):

* **s/round**: the wall time of ``simulate`` over T rounds divided by T, after an
  untimed warm-up run of ``WARMUP`` rounds on the same device (CUDA synchronised before
  the clock stops);
* **FLOPs/round**: the PyTorch FLOPs of the same run (same seed) counted by
  ``torch.utils.flop_counter.FlopCounterMode``, divided by T. Matrix products only (as
  the counter counts), and PyTorch's only: the NumPy passes of the CPU's per-arm kernel
  (``nn._arms``) are not in it, so on the CPU the bound is a little low;
* **bound**: FLOPs/round divided by the device's own rate on a large float32 matrix
  product (``gemm_rate``: 4096^3 on a GPU, 1024^3 on one CPU thread), the time the
  arithmetic needs at that rate; **x bound** = s/round / bound, the factor lost to
  everything that is not large matrix products (kernel launches, small shapes, Python).

With a GPU the table also gives each workload's CPU / GPU ratio. This is the check a
session lent a GPU runs first (``benchmarks/gpu_session.sh``); on a machine without one
it measures the CPU alone.

    banditkit bench --only device_rounds --out results/bench
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

import torch
from torch.utils.flop_counter import FlopCounterMode

import banditkit as bk
from banditkit.experiments.compute.threads import single_threaded
from benchmarks._common import host, write_outputs
from benchmarks._workload import WORKLOADS as SPEED_WORKLOADS

#: Untimed rounds on a device before its timed run (CUDA context, cuBLAS handles, caches).
WARMUP = 20


#: name -> (policy, params, environment, environment params, horizon, quick horizon), the
#: layout of ``_workload.WORKLOADS``: its workloads but ``nvldb-ucb`` m = 32, and
#: ``neural-ucb`` and ``neurallog-ucb2`` beside them.
WORKLOADS: dict[str, tuple[str, dict[str, Any], str, dict[str, Any], int, int]] = {
    "neural-ucb digits": (
        "neural-ucb", {}, "classification", {"dataset": "digits"}, 1000, 40
    ),
    **{name: w for name, w in SPEED_WORKLOADS.items() if name != "nvldb-ucb m=32"},
    "neurallog-ucb2 h1": (
        "neurallog-ucb2", {}, "logistic", {"h": "h1", "d": 5, "n_arms": 4}, 1000, 40
    ),
}  # fmt: skip


def devices() -> list[str]:
    """The CPU, and the first CUDA device where PyTorch sees one."""
    return ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def gemm_rate(device: str, quick: bool) -> float:
    """FLOP/s of a large float32 matrix product on ``device`` (median of 5 after one)."""
    n = (512 if quick else 1024) if device == "cpu" else 4096
    a = torch.randn(n, n, device=device)
    b = torch.randn(n, n, device=device)
    out = torch.empty(n, n, device=device)
    torch.mm(a, b, out=out)
    times = []
    for _ in range(5):
        _sync(device)
        started = time.perf_counter()
        torch.mm(a, b, out=out)
        _sync(device)
        times.append(time.perf_counter() - started)
    return 2.0 * n**3 / statistics.median(times)


def _play(name: str, device: str, horizon: int, seed: int) -> Any:
    policy, params, env, env_params, _, _ = WORKLOADS[name]
    agent = bk.make_policy(policy, seed=seed, device=device, **params)
    environment = bk.make_env(env, **env_params)
    return bk.simulate(agent, environment, horizon=horizon, seed=seed, progress=False)


def measure(name: str, device: str, horizon: int, rate: float) -> dict[str, Any]:
    """Time, FLOPs and bound of one workload on one device (seed 0)."""
    _play(name, device, WARMUP, 1000)
    _sync(device)
    started = time.perf_counter()
    run = _play(name, device, horizon, 0)
    _sync(device)
    seconds = time.perf_counter() - started
    counter = FlopCounterMode(display=False)
    with counter:
        _play(name, device, horizon, 0)
    flops = float(counter.get_total_flops()) / horizon
    per_round = seconds / horizon
    bound = flops / rate
    return {
        "workload": name,
        "device": device,
        "horizon": horizon,
        "seconds_per_round": per_round,
        "flops_per_round": flops,
        "achieved_flops": flops / per_round,
        "gemm_rate": rate,
        "bound_seconds_per_round": bound,
        "times_bound": per_round / bound if bound > 0 else None,
        "regret": float(run.cumulative_regret[-1]),
    }


def _table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| workload | device | T | ms/round | MFLOP/round | achieved GFLOP/s "
        "| GEMM GFLOP/s | bound ms/round | x bound | regret |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        times = r["times_bound"]
        lines.append(
            f"| {r['workload']} | {r['device']} | {r['horizon']} "
            f"| {1e3 * r['seconds_per_round']:.2f} | {r['flops_per_round'] / 1e6:.1f} "
            f"| {r['achieved_flops'] / 1e9:.2f} | {r['gemm_rate'] / 1e9:.0f} "
            f"| {1e3 * r['bound_seconds_per_round']:.3f} "
            f"| {'-' if times is None else f'{times:.1f}'} | {r['regret']:.1f} |"
        )
    return lines


def main(quick: bool, out: Path) -> dict[str, Any]:
    """Measure every workload on every device (quick: a few dozen rounds each)."""
    rows = []
    rates = {}
    with single_threaded():
        for device in devices():
            rates[device] = gemm_rate(device, quick)
            for name, (*_, horizon, quick_horizon) in WORKLOADS.items():
                T = quick_horizon if quick else horizon
                rows.append(measure(name, device, T, rates[device]))
    result: dict[str, Any] = {"quick": quick, "rows": rows, "gemm_rates": rates}
    result["host"] = host()
    if torch.cuda.is_available():
        result["host"]["gpu"] = torch.cuda.get_device_name(0)
    lines = [
        "# Seconds per round on each device" + (" (quick)" if quick else ""),
        "",
        "One CPU thread; float32 (the neural policies' default); seed 0 after a "
        f"{WARMUP}-round warm-up; FLOPs: PyTorch's matrix products (FlopCounterMode).",
        "",
        *_table(rows),
    ]
    speedups = _speedups(rows)
    if speedups:
        lines += ["", "| workload | CPU / GPU |", "|---|---|"]
        lines += [f"| {name} | {ratio:.1f}x |" for name, ratio in speedups.items()]
    lines += ["", f"Load average while measuring: {result['host']['loadavg']}.", ""]
    result["cpu_over_gpu"] = speedups
    write_outputs(out, result, "\n".join(lines))
    return result


def _speedups(rows: list[dict[str, Any]]) -> dict[str, float]:
    """CPU seconds per round over GPU seconds per round, per workload with both."""
    by = {(r["workload"], r["device"]): r["seconds_per_round"] for r in rows}
    return {
        name: by[(name, "cpu")] / by[(name, "cuda")]
        for name in WORKLOADS
        if (name, "cuda") in by and (name, "cpu") in by
    }
