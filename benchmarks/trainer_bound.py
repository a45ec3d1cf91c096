"""The trainer against its FLOP bound, and the neural policies it trains, side by side.

Two measures, one thread (``single_threaded``), each the median over interleaved
repetitions:

* **fit**: a 20-step ``nn.fit`` on n = 1000 rows of d = 20 features, width m = 100 and
  m = 500, depth 2 and 3, float64 and float32, for the losses the families use: rows
  with BCE and an L2 term (GD; the NeuralLog refit), weighted pairs with Bradley-Terry
  and L2 to the initial parameters (Adam, a ``NeuralLinear`` with biases; the NVLDB
  refit) and per-member perturbed targets with L2 to the initial parameters on M = 10
  members (GD; the Neural-ES refit; m = 100 only). Against the time of the same GEMMs alone: per step
  and member, (N, n_in) x (n_in, n_out) forward and (n_out, N) x (N, n_in) backward for
  every layer but the head (a GEMV), and (N, n_out) x (n_out, n_in) for the backward
  pass through every hidden layer above the first, on preallocated outputs (members on
  shared rows: their first layers as one product, ``gemms_alone``). The ratio
  fit / GEMMs is the trainer's overhead over its arithmetic (bar: 1.5).
* **workloads**: ``nvldb-ucb`` (m = 32, the "appendix" preset, and m = 100, "main";
  T = 400, ``dueling`` with a square utility, d = 5, K = 5), ``neural-es`` on the
  quadratic task of ``ensemble_speed`` and ``neural-ts`` on ``digits``, each run in a
  fresh process (``_workload``: CPU time of ``simulate`` after an untimed warm-up run,
  one thread, at the baseline's work: ``_workload.SAME_WORK``), with the final
  regret. With ``BANDITKIT_BENCH_BASELINE=<src>`` (a checkout's ``src`` directory of
  another banditkit) each run is repeated from that source, interleaved run by run, and
  the speed-up is reported.

    export BANDITKIT_BENCH_BASELINE=/path/to/old/src
    banditkit bench --only trainer_bound --out results/bench
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from banditkit.nn import (
    BCE,
    MSE,
    BradleyTerry,
    L2Penalty,
    NeuralLinear,
    Pairs,
    Rows,
    StackedMLP,
    fit,
)
from banditkit.nn._kernels import ROW_BLOCK_ELEMENTS
from benchmarks._common import host, single_threaded, write_outputs
from benchmarks._workload import WORKLOADS

N_ROWS, D, STEPS, MEMBERS = 1000, 20, 20, 10
WIDTHS, DEPTHS = (100, 500), (2, 3)
DTYPES = {"float64": torch.float64, "float32": torch.float32}
KINDS = ("rows-bce-gd", "pairs-btl-adam", "members-mse-gd")
BAR_FIT = 1.5

BARS = {
    "nvldb-ucb m=32": 3.0,
    "nvldb-ucb m=100": 3.0,
    "neural-es quadratic": 2.0,
    "neural-ts digits": 2.0,
}


def _warm_seconds(run: Callable[[], Any]) -> float:
    """Wall time of one call of ``run`` right after an untimed one (caches warm)."""
    run()
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def fit_problem(
    kind: str, width: int, depth: int, dtype: torch.dtype
) -> tuple[Callable[[], Any], StackedMLP, int]:
    """A 20-step fit of ``kind`` (module docstring): the call, the network and M."""
    g = torch.Generator().manual_seed(0)
    X = torch.randn(N_ROWS, D, generator=g, dtype=dtype) / D**0.5
    if kind == "pairs-btl-adam":
        net: StackedMLP = NeuralLinear(D, width=width, depth=depth)
        params = net.init(1, g, dtype=dtype)
        half = N_ROWS // 2
        obs: Any = Pairs(
            X,
            torch.arange(half),
            torch.arange(half, N_ROWS),
            (torch.rand(half, generator=g) < 0.5).to(dtype),
            torch.rand(half, generator=g, dtype=dtype) + 0.5,
            dtype=dtype,
        )
        return (
            lambda: fit(
                net,
                params,
                obs,
                BradleyTerry(),
                penalties=[L2Penalty(1.0, params)],
                optimizer="adam",
                lr=1e-3,
                steps=STEPS,
                record="ends",
            ),
            net,
            1,
        )
    net = StackedMLP(D, width=width, depth=depth)
    members = MEMBERS if kind == "members-mse-gd" else 1
    params = net.init(members, g, dtype=dtype)
    if kind == "members-mse-gd":
        y = torch.randn(members, N_ROWS, generator=g, dtype=dtype)
        rows = Rows(X, y, torch.ones(N_ROWS, dtype=dtype), dtype=dtype)
        loss: Any = MSE()
        penalty = L2Penalty(1.0, params)
    else:
        labels = (torch.rand(N_ROWS, generator=g) < 0.5).to(dtype)
        rows, loss, penalty = Rows(X, labels, dtype=dtype), BCE(), L2Penalty(1.0)
    # the members' sum of squares over 1000 rows diverges at 1e-4 (its objective
    # decreases at 5e-6 for every member, dtype and depth: tests/benchmarks)
    lr = 5e-6 if kind == "members-mse-gd" else 1e-4
    return (
        lambda: fit(
            net,
            params,
            rows,
            loss,
            penalties=[penalty],
            lr=lr,
            steps=STEPS,
            record="ends",
        ),
        net,
        members,
    )


def gemms_alone(
    net: StackedMLP, members: int, dtype: torch.dtype
) -> Callable[[], None]:
    """The fit's GEMMs (module docstring) for ``STEPS`` steps, on preallocated outputs.

    With M > 1 members on shared rows the first layer is the depth-2 kernel's layout
    (``nn._kernels``, blocked): one (n, d) x (d, M m) product per block of n rows and
    the (d, n) x (n, M m) products of its gradient accumulated over the blocks, faster
    than M batched (d, m) products, so that the bound is the products' best time here.
    """
    g = torch.Generator().manual_seed(1)
    sizes = net.sizes[:-1]  # the layers but the head

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(members, *shape, generator=g, dtype=dtype)

    X = randn(N_ROWS, sizes[0])
    layers = []
    for i in range(len(sizes) - 1):
        n_in, n_out = sizes[i], sizes[i + 1]
        layers.append(
            (
                X if i == 0 else randn(N_ROWS, n_in),  # input
                randn(n_in, n_out),  # W^T
                randn(N_ROWS, n_out),  # output / delta
                randn(n_out, n_in),  # dW
                randn(N_ROWS, n_in) if i > 0 else None,  # delta below
            )
        )
    first = _shared_first_layer(members, sizes[0], sizes[1], dtype, g)
    if first is not None:
        layers = layers[1:]

    def run() -> None:
        for _ in range(STEPS):
            if first is not None:
                first()
            for h, wt, z, dw, below in layers:
                torch.matmul(h, wt, out=z)
                torch.matmul(z.mT, h, out=dw)
                if below is not None:
                    torch.matmul(z, wt.mT, out=below)

    return run


def _shared_first_layer(
    members: int, d: int, m: int, dtype: torch.dtype, g: torch.Generator
) -> Callable[[], None] | None:
    """The first layer's products of M > 1 members on shared rows (``gemms_alone``)."""
    if members == 1:
        return None
    width = members * m
    rows = max(1, min(N_ROWS, ROW_BLOCK_ELEMENTS // width))

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g, dtype=dtype)

    X, W, h, c, gt = (
        randn(N_ROWS, d),
        randn(width, d),
        randn(N_ROWS, width),
        randn(rows, width),
        randn(d, width),
    )
    blocks = [(i, min(i + rows, N_ROWS)) for i in range(0, N_ROWS, rows)]

    def first() -> None:
        for i, j in blocks:
            torch.mm(X[i:j], W.mT, out=h[i:j])
        gt.zero_()
        for i, j in blocks:
            gt.addmm_(X[i:j].mT, c[: j - i])

    return first


def measure_fits(repeats: int, widths: tuple[int, ...]) -> list[dict[str, Any]]:
    """Fit and GEMM times of every case, the two interleaved."""
    rows = []
    for kind in KINDS:
        for depth in DEPTHS:
            # M = 10 members at m = 500, depth 3 take seconds a fit: m = 100 only
            for width in widths if kind != "members-mse-gd" else widths[:1]:
                for dname, dtype in DTYPES.items():
                    run, net, members = fit_problem(kind, width, depth, dtype)
                    gemms = gemms_alone(net, members, dtype)
                    fits, alone = [], []
                    for _ in range(repeats):
                        fits.append(_warm_seconds(run))
                        alone.append(_warm_seconds(gemms))
                    t_fit, t_gemm = statistics.median(fits), statistics.median(alone)
                    rows.append(
                        {
                            "kind": kind,
                            "depth": depth,
                            "width": width,
                            "dtype": dname,
                            "fit_ms": 1e3 * t_fit,
                            "gemms_ms": 1e3 * t_gemm,
                            "ratio": t_fit / t_gemm,
                        }
                    )
    return rows


def _subprocess(
    name: str, seed: int, horizon: int, src: str | None
) -> dict[str, float]:
    """One run of ``benchmarks._workload`` in a fresh process, on ``src``'s banditkit if given."""
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    if src is not None:
        env["PYTHONPATH"] = src
    script = Path(__file__).with_name("_workload.py")
    done = subprocess.run(
        [sys.executable, str(script), name, str(seed), str(horizon)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure_workloads(
    quick: bool, seeds: int, baseline: str | None
) -> dict[str, dict[str, Any]]:
    """Seconds and regret of every workload (and of the baseline), interleaved."""
    out: dict[str, dict[str, Any]] = {}
    for name, spec in WORKLOADS.items():
        horizon = spec[5] if quick else spec[4]
        runs: dict[str, list[dict[str, float]]] = {"this": [], "baseline": []}
        for seed in range(seeds):
            runs["this"].append(_subprocess(name, seed, horizon, None))
            if baseline is not None:
                runs["baseline"].append(_subprocess(name, seed, horizon, baseline))
        row: dict[str, Any] = {"horizon": horizon}
        for key, values in runs.items():
            if values:
                row[f"{key}_seconds"] = statistics.median(v["seconds"] for v in values)
                row[f"{key}_regret"] = [v["regret"] for v in values]
        if baseline is not None:
            row["speedup"] = row["baseline_seconds"] / row["this_seconds"]
            row["bar"] = BARS[name]
        out[name] = row
    return out


def _table(fits: list[dict[str, Any]], workloads: dict[str, dict[str, Any]]) -> str:
    lines = [
        "| fit | depth | m | dtype | fit ms | GEMMs ms | ratio |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in fits:
        lines.append(
            f"| {r['kind']} | {r['depth']} | {r['width']} | {r['dtype']} | "
            f"{r['fit_ms']:.1f} | {r['gemms_ms']:.1f} | {r['ratio']:.2f} |"
        )
    lines += [
        "",
        "| workload | T | s | baseline s | speed-up | regret |",
        "|---|---|---|---|---|---|",
    ]
    for name, r in workloads.items():
        lines.append(
            f"| {name} | {r['horizon']} | {r['this_seconds']:.2f} | "
            f"{r.get('baseline_seconds', float('nan')):.2f} | "
            f"{r.get('speedup', float('nan')):.2f} | {r['this_regret']} |"
        )
    return "\n".join(lines) + "\n"


def main(quick: bool, out: Path) -> dict[str, Any]:
    """Run both measures (module docstring); write result.json and result.md."""
    baseline = os.environ.get("BANDITKIT_BENCH_BASELINE")
    with single_threaded():
        fits = measure_fits(3 if quick else 7, (100,) if quick else WIDTHS)
    workloads = measure_workloads(quick, 1 if quick else 3, baseline)
    result = {
        "host": host(),
        "bar_fit": BAR_FIT,
        "fits": fits,
        "workloads": workloads,
        "baseline": baseline,
    }
    write_outputs(out, result, _table(fits, workloads))
    return result
