"""The functional trainer on a stack of members, against one member and a bare loop.

Workload (issue [models]): the bias-free NTK network of ``nn.StackedMLP`` with d = 20,
width m = 50, depth 2, trained with BCE + (lam / 2) ||theta||^2 by 100 full-batch GD steps
on n = 2000 rows, float64, one BLAS and one PyTorch thread. Timed, each the minimum over
``repeats`` runs in one process (so the ratios compare like with like):

* ``one``: ``nn.fit`` on a stack of M = 1;
* ``stacked``: ``nn.fit`` on a stack of M = 10 (one batched computation);
* ``loop``: ten M = 1 ``nn.fit`` calls in a Python loop (what the stack replaces);
* ``bare``: a bare PyTorch loop on one member: the same network and objective by
  autograd (``loss.backward()``) and a manual SGD step, no validation.

Bars: ``stacked / one <= 3`` and ``one / bare <= 1.5``; ``loop_over_stacked`` (> 1: the
stack beats the Python loop) is reported.

Arithmetic bound: one step of one member costs 4 n d m FLOPs in its two GEMMs (forward
X W_1^T, 2 n d m; backward dW_1 = C^T X, 2 n d m) plus O(n m) elementwise work. At the
best single-thread float64 GEMM rate measured here (``gemm_gflops``: ``torch.mm`` on the
trainer's own shapes and a square 512 product), ``bound_ms`` is the time of those FLOPs
alone for one member and for M members (M times the arithmetic), and
``bound_stacked_over_one`` = (M members' bound) / (one member measured): the smallest
``stacked / one`` this CPU allows, so the 3x bar is reachable only if it is <= 3.

    banditkit bench --only stacked_trainer --out results/bench
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from banditkit.nn import BCE, L2Penalty, Rows, StackedMLP, fit
from benchmarks._common import host, single_threaded, write_outputs

D, WIDTH, DEPTH, N_ROWS, STEPS, MEMBERS = 20, 50, 2, 2000, 100, 10
LAM, LR = 1.0, 1e-4
BAR_STACKED, BAR_BARE = 3.0, 1.5


def _best(run: Callable[[], Any], repeats: int) -> float:
    """Minimum wall time of ``run`` over ``repeats`` calls (after one untimed call)."""
    run()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times)


def _gemm_gflops(repeats: int) -> dict[str, float]:
    """Single-thread float64 ``torch.mm`` rates (GFLOP/s) on the trainer's shapes."""
    gen = torch.Generator().manual_seed(1)

    def rate(n: int, k: int, j: int) -> float:
        a = torch.randn(n, k, generator=gen, dtype=torch.float64)
        b = torch.randn(k, j, generator=gen, dtype=torch.float64)
        return 2.0 * n * k * j / _best(lambda: torch.mm(a, b), 10 * repeats) / 1e9

    width = MEMBERS * WIDTH
    return {
        "forward one (n, d) (d, m)": rate(N_ROWS, D, WIDTH),
        "backward one (d, n) (n, m)": rate(D, N_ROWS, WIDTH),
        "forward stack (n, d) (d, M m)": rate(N_ROWS, D, width),
        "backward stack (d, n) (n, M m)": rate(D, N_ROWS, width),
        "square 512": rate(512, 512, 512),
    }


def _bare_loop(
    X: torch.Tensor, y: torch.Tensor, params: dict[str, torch.Tensor]
) -> tuple[torch.Tensor, torch.Tensor]:
    """One member by autograd and manual SGD: the reference a user would write."""
    w1 = params["layers.0.weight"][0].clone().requires_grad_(True)
    w2 = params["layers.1.weight"][0].clone().requires_grad_(True)
    scale = math.sqrt(WIDTH)
    for _ in range(STEPS):
        f = scale * (torch.relu(X @ w1.T) @ w2[0])
        loss = torch.nn.functional.binary_cross_entropy_with_logits(
            f, y, reduction="sum"
        ) + 0.5 * LAM * ((w1 * w1).sum() + (w2 * w2).sum())
        loss.backward()
        with torch.no_grad():
            for p in (w1, w2):
                assert p.grad is not None
                p.sub_(p.grad, alpha=LR)
                p.grad = None
    return w1, w2


def main(quick: bool, out: Path) -> dict[str, Any]:
    """Time one member, ten stacked, ten looped and the bare loop; check both bars."""
    repeats = 3 if quick else 10
    gen = torch.Generator().manual_seed(0)
    X = torch.randn(N_ROWS, D, generator=gen, dtype=torch.float64) / math.sqrt(D)
    y = (torch.rand(N_ROWS, generator=gen, dtype=torch.float64) < 0.5).double()
    net = StackedMLP(D, width=WIDTH, depth=DEPTH)
    stack = net.init(MEMBERS, gen)
    one = {name: p[:1].clone() for name, p in stack.items()}
    rows, loss, penalty = Rows(X, y), BCE(), [L2Penalty(LAM)]

    def train(params: dict[str, torch.Tensor]) -> Any:
        return fit(net, params, rows, loss, penalties=penalty, lr=LR, steps=STEPS)

    with single_threaded():
        # the stack trains what ten separate runs train (checked here, not timed)
        stacked_params = train(stack).params
        first = train(one).params
        gap = max(
            float((stacked_params[k][0] - first[k][0]).abs().max()) for k in stack
        )
        bare_w1, _ = _bare_loop(X, y, one)
        gap_bare = float((bare_w1.detach() - first["layers.0.weight"][0]).abs().max())
        seconds = {
            "one": _best(lambda: train(one), repeats),
            "stacked": _best(lambda: train(stack), repeats),
            "loop": _best(
                lambda: [
                    train({k: p[i : i + 1] for k, p in stack.items()})
                    for i in range(MEMBERS)
                ],
                repeats,
            ),
            "bare": _best(lambda: _bare_loop(X, y, one), repeats),
        }
        gflops = _gemm_gflops(repeats)
    flops_one = 4 * N_ROWS * D * WIDTH * STEPS  # the two GEMMs of every step
    peak = max(gflops.values()) * 1e9
    bound = {"one": flops_one / peak, "stacked": MEMBERS * flops_one / peak}
    ratio_stacked = seconds["stacked"] / seconds["one"]
    ratio_bare = seconds["one"] / seconds["bare"]
    result: dict[str, Any] = {
        "workload": "stacked_trainer",
        "quick": quick,
        "network": {"d": D, "width": WIDTH, "depth": DEPTH, "dtype": "float64"},
        "rows": N_ROWS,
        "steps": STEPS,
        "members": MEMBERS,
        "repeats": repeats,
        "seconds": seconds,
        "stacked_over_one": ratio_stacked,
        "loop_over_stacked": seconds["loop"] / seconds["stacked"],
        "one_over_bare": ratio_bare,
        "stacked_ok": bool(ratio_stacked <= BAR_STACKED),
        "bare_ok": bool(ratio_bare <= BAR_BARE),
        "gemm_flops_one_member": flops_one,
        "gemm_gflops": gflops,
        "bound_ms": {k: v * 1e3 for k, v in bound.items()},
        "one_over_bound": seconds["one"] / bound["one"],
        "stacked_over_bound": seconds["stacked"] / bound["stacked"],
        "bound_stacked_over_one": bound["stacked"] / seconds["one"],
        "max_gap_member0_stack_vs_alone": gap,
        "max_gap_fit_vs_bare": gap_bare,
        "host": host(),
    }
    table = "\n".join(
        [
            "# stacked_trainer" + (" (quick)" if quick else ""),
            "",
            f"{STEPS} full-batch GD steps, BCE + L2, d={D}, width={WIDTH}, "
            f"depth={DEPTH}, n={N_ROWS}, float64, one thread; min of {repeats}.",
            "",
            "| one member | 10 stacked | 10 in a loop | bare PyTorch (1) |",
            "|---|---|---|---|",
            "| "
            + " | ".join(
                f"{seconds[k] * 1e3:.1f} ms" for k in ("one", "stacked", "loop", "bare")
            )
            + " |",
            "",
            f"stacked / one = {ratio_stacked:.2f} (bar <= {BAR_STACKED:g}: "
            f"{'PASS' if result['stacked_ok'] else 'FAIL'}); one / bare = "
            f"{ratio_bare:.2f} (bar <= {BAR_BARE:g}: "
            f"{'PASS' if result['bare_ok'] else 'FAIL'}); loop / stacked = "
            f"{result['loop_over_stacked']:.2f}. Load average: "
            f"{result['host']['loadavg']}.",
            "",
            f"GEMM FLOPs per member: {flops_one / 1e6:.0f} M over {STEPS} steps; best "
            f"single-thread float64 GEMM rate {peak / 1e9:.1f} GFLOP/s, so at least "
            f"{bound['one'] * 1e3:.1f} ms for one member (measured "
            f"{result['one_over_bound']:.1f}x that) and {bound['stacked'] * 1e3:.1f} ms "
            f"for {MEMBERS} (measured {result['stacked_over_bound']:.1f}x); the smallest "
            f"stacked / one this CPU allows is {result['bound_stacked_over_one']:.2f}.",
            "",
        ]
    )
    write_outputs(out, result, table)
    return result


if __name__ == "__main__":  # pragma: no cover
    print(main("--quick" in sys.argv, Path("results/bench/stacked_trainer")))
