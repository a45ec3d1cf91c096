"""Exact static-MNL assortment optimisation at N = 1000 items, capacity K = 50.

Workload (issue [mnl]): utilities ``u ~ N(-2, 1)``, revenues ``r ~ U(0.5, 2)``, outside
weight 1, seed 0, one BLAS thread. The capacity binds (the unconstrained optimum holds 101
items) and the best revenue-ordered set is strictly worse than the optimum. Timed per call, ``repeats`` calls after one untimed call, through
the public ``optimal_assortment`` (validation included):

* ``dinkelbach``: the default for item revenues (``method="auto"``); bar: median < 10 ms;
* ``topk``: equal revenues (r = 1), the default there;
* ``lp``: the Davis-Gallego-Topaloglu LP with HiGHS (a cross-check);
* ``rss``: the Rusmevichientong-Shen-Shmoys breakpoint sweep at N = 200, K = 10 (it
  evaluates O(N^2) candidate sets, a cross-check rather than a production path);
* ``revenue_ordered``: the best revenue-ordered set (a heuristic; its revenue gap to the
  optimum is reported as ``revenue_ordered_gap``).

Each timed method's revenue is checked against Dinkelbach's (``agree``).

    banditkit bench --only assortment_opt --out results/bench
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from banditkit.assortment import optimal_assortment, revenue_ordered_assortment
from benchmarks._common import host, single_threaded, write_outputs

N_ITEMS, CAPACITY, RSS_ITEMS, RSS_CAPACITY = 1000, 50, 200, 10
BAR_MS = 10.0


def _times_ms(run: Callable[[], Any], repeats: int) -> dict[str, float]:
    """Median / min / max wall time (ms) of ``run`` over ``repeats`` calls."""
    run()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        times.append(1e3 * (time.perf_counter() - started))
    return {
        "median": statistics.median(times),
        "min": min(times),
        "max": max(times),
        "repeats": repeats,
    }


def main(quick: bool = False, out: Path = Path("results/bench/assortment_opt")) -> dict:
    """Time the assortment methods; write result.json and result.md into ``out``."""
    repeats = 20 if quick else 200
    rng = np.random.default_rng(0)
    u, r = rng.normal(-2.0, 1.0, N_ITEMS), rng.uniform(0.5, 2.0, N_ITEMS)
    small_u, small_r = u[:RSS_ITEMS], r[:RSS_ITEMS]
    with single_threaded():
        best = optimal_assortment(u, r, capacity=CAPACITY)
        best_small = optimal_assortment(small_u, small_r, capacity=RSS_CAPACITY)
        lp = optimal_assortment(u, r, capacity=CAPACITY, method="lp")
        rss = optimal_assortment(small_u, small_r, capacity=RSS_CAPACITY, method="rss")
        heuristic = revenue_ordered_assortment(u, r, capacity=CAPACITY)
        timings = {
            "dinkelbach": _times_ms(
                lambda: optimal_assortment(u, r, capacity=CAPACITY), repeats
            ),
            "topk": _times_ms(
                lambda: optimal_assortment(u, capacity=CAPACITY), repeats
            ),
            "revenue_ordered": _times_ms(
                lambda: revenue_ordered_assortment(u, r, capacity=CAPACITY), repeats
            ),
            "lp": _times_ms(
                lambda: optimal_assortment(u, r, capacity=CAPACITY, method="lp"),
                max(3, repeats // 10),
            ),
            "rss_n200_k10": _times_ms(
                lambda: optimal_assortment(
                    small_u, small_r, capacity=RSS_CAPACITY, method="rss"
                ),
                max(3, repeats // 20),
            ),
        }
    result: dict[str, Any] = {
        "workload": "assortment_opt",
        "quick": quick,
        "n_items": N_ITEMS,
        "capacity": CAPACITY,
        "ms": timings,
        "bar_ms": BAR_MS,
        "fast_enough": bool(timings["dinkelbach"]["median"] < BAR_MS),
        "optimal_size": len(best.items),
        "optimal_revenue": best.revenue,
        "unconstrained_size": len(optimal_assortment(u, r, capacity=N_ITEMS).items),
        "agree": {
            "lp": bool(np.isclose(lp.revenue, best.revenue, rtol=1e-9)),
            "rss": bool(np.isclose(rss.revenue, best_small.revenue, rtol=1e-9)),
        },
        "revenue_ordered_gap": best.revenue - heuristic.revenue,
        "host": host(),
    }
    write_outputs(out, result, _table(result))
    return result


def _table(result: dict[str, Any]) -> str:
    lines = [
        "# assortment_opt" + (" (quick)" if result["quick"] else ""),
        "",
        f"N = {result['n_items']} items, capacity K = {result['capacity']}, "
        "one thread; ms per call (median / min / max).",
        "",
        "| method | median | min | max |",
        "|---|---|---|---|",
    ]
    for name, t in result["ms"].items():
        lines.append(
            f"| {name} | {t['median']:.3f} | {t['min']:.3f} | {t['max']:.3f} |"
        )
    lines += [
        "",
        f"Dinkelbach median < {result['bar_ms']:g} ms: "
        f"{'PASS' if result['fast_enough'] else 'FAIL'}; optimal set of "
        f"{result['optimal_size']} items, revenue {result['optimal_revenue']:.6f}; "
        f"revenue-ordered gap {result['revenue_ordered_gap']:.3g}; "
        f"LP / RSS agree: {result['agree']}.",
        "",
        f"Load average while measuring: {result['host']['loadavg']}.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    import json

    print(json.dumps(main(quick="--quick" in sys.argv), indent=2))
