"""UCB-MNL, TS-MNL and OFU-MNL+ on the workload of the public OFU-MNL+ code (Lee & Oh 2024).

Workload (issue [mnl]): N = 100 items, capacity K = 5, d = 3, T = 1000; linear utilities
x^T theta* with theta* ~ U[-1/sqrt(d), 1/sqrt(d)]^d drawn once per seed; each round item
features N(0, 1) clipped to [-1/sqrt(d), 1/sqrt(d)]; uniform revenues, outside weight 1
(``mnl`` environment, ``utility="linear"``, ``features="clipped-normal"``). The reference
code, on one core, loop only: OFU-MNL+ 0.142 s per run (median regret 13.5), UCB-MNL 3.59 s
(15.9), TS-MNL 4.15 s (60.5); its UCB/TS-MNL refit the full MLE on all history every round.
banditkit's ``ofu-mnl-plus`` must be no slower, ``ucb-mnl`` and ``ts-mnl`` at least 10x
faster, each at equal or lower mean regret over 10 seeds.

Hyper-parameters: the defaults (the constants of the reference code: alpha and beta at
t = 1, kappa = e^-1 / (1 + K e)^2, lam = 1 for UCB/TS-MNL, M = 1 sample). A 4-seed look
(seeds 100-103) at UCB-MNL's alpha_scale in {1, 0.5, 0.25, 0.1} gave mean regrets 19.1,
19.5, 16.4, 12.6; it stays at 1, the reference's constant, for a like-for-like comparison.

Besides the per-workload comparisons with those published numbers (``simulate`` wall
time), the benchmark times banditkit's policies **interleaved** with re-implementations of
the reference code's per-round work (``_mnl_reference_loops``) on the same seeds, contexts
and choice draws: process CPU time (``time.process_time``) of act + update, one thread,
median over the seeds; final regrets mean / median and the paired differences
(banditkit minus reference loop, mean and standard error). The reference loops pick the
top K by the code's ``argsort(u)[::-1]`` (``ties="reference"``); a second pass with the
lower index winning ties (``"low"``, banditkit's rule) isolates the estimator from the
tie rule (see docs/mnl.md).

    banditkit bench --only mnl_reference --out results/bench
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any

from banditkit.experiments.execute import single_threaded
from benchmarks._common import (
    Reference,
    Workload,
    compare_to_reference,
    host,
    write_outputs,
)
from benchmarks._mnl_reference_loops import run_banditkit, run_reference

TASK = {
    "utility": "linear",
    "features": "clipped-normal",
    "d": 3,
    "n_items": 100,
    "capacity": 5,
}
CODE = "public code of Lee & Oh (2024), github.com/oh-lab/OFU-MNL-plus"
WORKLOADS = [
    Workload(
        name="mnl_reference_ofu_mnl_plus",
        policy="ofu-mnl-plus",
        policy_params={},
        env="mnl",
        env_params=TASK,
        horizon=1000,
        reference=Reference(seconds=0.142, regret=13.5, statistic="median", code=CODE),
        chosen="defaults (the reference code's constants)",
    ),
    Workload(
        name="mnl_reference_ucb_mnl",
        policy="ucb-mnl",
        policy_params={},
        env="mnl",
        env_params=TASK,
        horizon=1000,
        reference=Reference(seconds=3.59, regret=15.9, statistic="median", code=CODE),
        chosen="defaults (the reference code's constants)",
    ),
    Workload(
        name="mnl_reference_ts_mnl",
        policy="ts-mnl",
        policy_params={},
        env="mnl",
        env_params=TASK,
        horizon=1000,
        reference=Reference(seconds=4.15, regret=60.5, statistic="median", code=CODE),
        chosen="defaults (the reference code's constants)",
    ),
]


#: Speed bars of the side-by-side comparison: reference CPU / banditkit CPU at least this.
BARS = {"ofu-mnl-plus": 1.0, "ucb-mnl": 10.0, "ts-mnl": 10.0}


def main(quick: bool, out: Path) -> dict[str, Any]:
    """Run the three workloads and the side-by-side comparison (quick: 2 seeds, T = 200)."""
    result: dict[str, Any] = {
        w.name: compare_to_reference(w, quick=quick, out=out / w.name)
        for w in WORKLOADS
    }
    result["side_by_side"] = side_by_side(quick, out / "mnl_reference_side_by_side")
    return result


def side_by_side(quick: bool, out: Path) -> dict[str, Any]:
    """Time banditkit's policies interleaved with the reference loops, per seed."""
    seeds = list(range(2 if quick else 10))
    horizon = 200 if quick else 1000
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in BARS}
    with single_threaded():
        run_banditkit("ucb-mnl", TASK, 20, 99)  # warm-up: imports, first allocations
        run_reference("ucb-mnl", TASK, 20, 99, "reference")
        for seed in seeds:
            for name in BARS:
                ours = run_banditkit(name, TASK, horizon, seed)
                ref = run_reference(name, TASK, horizon, seed, "reference")
                low = run_reference(name, TASK, horizon, seed, "low")
                runs[name].append(
                    {
                        "seed": seed,
                        "cpu_s": ours["cpu_s"],
                        "regret": ours["regret"],
                        "reference_cpu_s": ref["cpu_s"],
                        "reference_regret": ref["regret"],
                        "reference_low_ties_cpu_s": low["cpu_s"],
                        "reference_low_ties_regret": low["regret"],
                        "same_actions_as_low_ties": ours["actions"] == low["actions"],
                    }
                )
    result: dict[str, Any] = {
        "workload": "mnl_reference_side_by_side",
        "quick": quick,
        "horizon": horizon,
        "seeds": seeds,
        "timer": "time.process_time of act + update, one thread",
        "policies": {
            name: _summarise(name, rows, quick) for name, rows in runs.items()
        },
        "runs": runs,
        "host": host(),
    }
    write_outputs(out, result, _table(result))
    return result


def _paired(a: list[float], b: list[float]) -> dict[str, float]:
    diff = [x - y for x, y in zip(a, b, strict=True)]
    se = statistics.stdev(diff) / math.sqrt(len(diff)) if len(diff) > 1 else 0.0
    return {"mean": statistics.fmean(diff), "se": se}


def _summarise(name: str, rows: list[dict[str, Any]], quick: bool) -> dict[str, Any]:
    """Medians, means and paired differences of one policy's runs.

    The verdicts are None in quick mode: the bars are stated at T = 1000 over 10 seeds.
    """

    def col(key: str) -> list[float]:
        return [float(r[key]) for r in rows]

    ours, ref = (
        statistics.median(col("cpu_s")),
        statistics.median(col("reference_cpu_s")),
    )
    regret, ref_regret = col("regret"), col("reference_regret")
    low_regret = col("reference_low_ties_regret")
    return {
        "cpu_s_median": ours,
        "reference_cpu_s_median": ref,
        "reference_low_ties_cpu_s_median": statistics.median(
            col("reference_low_ties_cpu_s")
        ),
        "speedup": ref / ours,
        "bar": BARS[name],
        "fast_enough": None if quick else ref / ours >= BARS[name],
        "regret_mean": statistics.fmean(regret),
        "regret_median": statistics.median(regret),
        "reference_regret_mean": statistics.fmean(ref_regret),
        "reference_regret_median": statistics.median(ref_regret),
        "reference_low_ties_regret_mean": statistics.fmean(low_regret),
        "reference_low_ties_regret_median": statistics.median(low_regret),
        "paired_vs_reference": _paired(regret, ref_regret),
        "paired_vs_reference_low_ties": _paired(regret, low_regret),
        "regret_ok": None
        if quick
        else statistics.fmean(regret) <= statistics.fmean(ref_regret),
        "same_actions_as_low_ties": sum(
            bool(r["same_actions_as_low_ties"]) for r in rows
        ),
    }


def _table(result: dict[str, Any]) -> str:
    lines = [
        "# mnl_reference side by side" + (" (quick)" if result["quick"] else ""),
        "",
        f"T = {result['horizon']}, seeds {result['seeds'][0]}-{result['seeds'][-1]}, "
        f"{result['timer']}; load {result['host'].get('loadavg')}. Reference: the "
        "reference code's per-round work (ties as its argsort); low ties: the same with "
        "the lower index winning ties. Paired: banditkit minus reference, mean +- s.e.",
        "",
        "| policy | CPU s (median) | reference CPU s | speed-up | bar | regret mean / median "
        "| reference mean / median | paired | low-ties mean / median | paired | "
        "regret <= reference |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, s in result["policies"].items():
        p, q = s["paired_vs_reference"], s["paired_vs_reference_low_ties"]
        lines.append(
            f"| `{name}` | {s['cpu_s_median']:.3f} | {s['reference_cpu_s_median']:.3f} | "
            f"{s['speedup']:.1f}x | {s['bar']:g}x: {_verdict(s['fast_enough'])} | "
            f"{s['regret_mean']:.2f} / "
            f"{s['regret_median']:.2f} | {s['reference_regret_mean']:.2f} / "
            f"{s['reference_regret_median']:.2f} | {p['mean']:+.2f} +- {p['se']:.2f} | "
            f"{s['reference_low_ties_regret_mean']:.2f} / "
            f"{s['reference_low_ties_regret_median']:.2f} | {q['mean']:+.2f} +- "
            f"{q['se']:.2f} | {_verdict(s['regret_ok'])} |"
        )
    return "\n".join(lines) + "\n"


def _verdict(ok: bool | None) -> str:
    return "n/a (quick)" if ok is None else "PASS" if ok else "FAIL"
