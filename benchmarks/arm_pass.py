"""The per-arm passes of a network (``nn.ArmPass``): the explicit reverse pass against torch.func.

Every neural UCB / TS round scores its K arms (f and the squared widths
q_k = ||g(x_k; theta)||^2_{D^-1} of a diagonal Gram, ``forward_and_sq_norms``) and, after
it plays, reads the gradient g of the played arm (``forward_and_grads`` of one row). For a
network deeper than 2, or one with biases, these ran ``torch.func.vmap(torch.func.grad)``
until 2026-12-07; they now run the explicit reverse pass of ``nn.grads``
(``method="backprop"``, what "auto" chooses), with ``torch.func`` kept as the reference.

Measured, one thread, median over interleaved repetitions of many calls each, at the
ensemble paper's network (L = 3, width 20, d = 20; K = 50 arms, its Figs. 1 and 4) and at
depths 2 and 4 with biases (so that depth 2 takes the torch pass, not the NumPy one), in
float32 and float64: milliseconds per call of each method and their ratio.

    banditkit bench --only arm_pass --out results/bench
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from banditkit.nn import MLP, forward_and_grads, forward_and_sq_norms
from benchmarks._common import host, single_threaded, write_outputs

D, WIDTH, ARMS = 20, 20, 50
#: (depth, bias): the paper's network, and a shallower and a deeper one with biases
NETWORKS = ((3, False), (2, True), (4, True))
DTYPES = {"float32": torch.float32, "float64": torch.float64}
METHODS = ("backprop", "torch.func")


def _calls(model: MLP, X: torch.Tensor, u: torch.Tensor, method: str) -> dict[str, Any]:
    """The three per-round calls of a policy, by ``method``."""
    return {
        "sq_norms (K arms)": lambda: forward_and_sq_norms(
            model, X, u, method=method, validate=False
        ),
        "grads (K arms)": lambda: forward_and_grads(
            model, X, method=method, validate=False
        ),
        "grad (the played arm)": lambda: forward_and_grads(
            model, X[:1], method=method, validate=False
        ),
    }


def _ms_per_call(call: Callable[[], Any], calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        call()
    return 1e3 * (time.perf_counter() - started) / calls


def measure(repeats: int, calls: int) -> list[dict[str, Any]]:
    """Milliseconds per call of each pass, method and network, interleaved."""
    rows = []
    for (depth, bias), (dname, dtype) in (
        (n, d) for n in NETWORKS for d in DTYPES.items()
    ):
        g = torch.Generator().manual_seed(0)
        model = MLP(D, width=WIDTH, depth=depth, bias=bias, generator=g, dtype=dtype)
        X = torch.randn(ARMS, D, generator=g, dtype=dtype)
        u = torch.rand(model.n_params, generator=g, dtype=dtype)
        by_method = {m: _calls(model, X, u, m) for m in METHODS}
        for name in by_method[METHODS[0]]:
            times: dict[str, list[float]] = {m: [] for m in METHODS}
            for m in METHODS:
                _ms_per_call(by_method[m][name], 5)  # warm-up, imports included
            for _ in range(repeats):
                for m in METHODS:
                    times[m].append(_ms_per_call(by_method[m][name], calls))
            ms = {m: statistics.median(v) for m, v in times.items()}
            rows.append(
                {
                    "depth": depth,
                    "bias": bias,
                    "dtype": dname,
                    "call": name,
                    "backprop_ms": ms["backprop"],
                    "torch_func_ms": ms["torch.func"],
                    "speedup": ms["torch.func"] / ms["backprop"],
                }
            )
    return rows


def main(quick: bool, out: Path) -> dict[str, Any]:
    """Measure (quick: 3 repetitions of 20 calls; full: 7 of 200); write the result."""
    repeats, calls = (3, 20) if quick else (7, 200)
    with single_threaded():
        rows = measure(repeats, calls)
    result: dict[str, Any] = {
        "host": host(),
        "arms": ARMS,
        "width": WIDTH,
        "d": D,
        "rows": rows,
    }
    lines = [
        f"# Per-arm passes: explicit against torch.func (K = {ARMS}, width {WIDTH}, "
        f"d = {D})",
        "",
        "| depth | biases | dtype | call | explicit ms | torch.func ms | speed-up |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['depth']} | {r['bias']} | {r['dtype']} | {r['call']} | "
            f"{r['backprop_ms']:.3f} | {r['torch_func_ms']:.3f} | {r['speedup']:.1f} |"
        )
    lines += ["", f"Load average while measuring: {result['host']['loadavg']}.", ""]
    write_outputs(out, result, "\n".join(lines))
    return result
