"""The speed bars of ensemble sampling: selection and update seconds, interleaved.

Workload (issue [ensemble], Fig. 1(f) of [Sun2025]): the quadratic bandit h(x) =
0.01 x^T A A^T x, d = 20, K = 50 fixed arms, noise 0.5; the paper's network (L = 3,
N = 20, bias-free, sqrt(N) output scale) trained by 100 full-batch GD steps of 0.01 every
round after a warm-up of 50 rounds; one thread. Per seed, the policies run one after the
other on the same instance (interleaved, so the machine's load hits them alike); the
``act_seconds`` and ``update_seconds`` records of each run are summed:

* ``neural-es``: m = 10 members stacked (one ``nn.fit`` per round);
* ``neural-es-m1``: the same with m = 1;
* ``neural-ucb``, ``neural-ts``: diagonal Gram, grouped rows, ``grad_method="auto"``
  (torch.func) and ``"backprop"`` (the reproduction's setting, the same iterates);
* ``neural-phe``: one network, all perturbations redrawn every round.

Bars: act(Neural-ES) / act(Neural-UCB) < 0.5 (the paper's "much less computational cost
at inference") and update(m = 10) / update(m = 1) < 3 (the vectorisation at work).
Reported besides: act(Neural-ES) / act(Neural-TS), update(Neural-ES) / update(Neural-PHE)
(the paper's "model update considerably faster", which one CPU thread does not show:
docs/ensemble.md, section 7) and update(backprop) / update(auto) of Neural-UCB / TS.

Quick: T = 150, 2 seeds; full: T = 600, 3 seeds.

    banditkit bench --only ensemble_speed --quick --out results/bench-quick

References:
    [Sun2025] J. Sun, W. Wang, P. Xu. Provable anytime ensemble sampling algorithms in
        nonlinear contextual bandits. arXiv:2510.10730.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from benchmarks._common import (
    host,
    run_policy,
    single_threaded,
    write_outputs,
)

ENV = "nonlinear"
ENV_PARAMS = {"function": "quadratic", "d": 20, "n_arms": 50, "noise_std": 0.5}
# lam, steps and update_every: the neural-ucb / neural-ts defaults before they changed
_NN = {
    "nu": 0.1,
    "depth": 3,
    "width": 20,
    "grouped": True,
    "lam": 1.0,
    "steps": 100,
    "update_every": 1,
}
POLICIES: dict[str, tuple[str, dict[str, Any]]] = {
    "neural-es": ("neural-es", {}),
    "neural-es-m1": ("neural-es", {"m": 1}),
    "neural-ucb": ("neural-ucb", _NN),
    "neural-ucb-backprop": ("neural-ucb", {**_NN, "grad_method": "backprop"}),
    "neural-ts": ("neural-ts", _NN),
    "neural-ts-backprop": ("neural-ts", {**_NN, "grad_method": "backprop"}),
    "neural-phe": ("neural-phe", {}),
}
BAR_SELECT, BAR_MEMBERS = 0.5, 3.0


def measure(horizon: int, seeds: int) -> dict[str, dict[str, list[float]]]:
    """Seconds in act and update, and the final regret, per policy; seeds interleaved."""
    for name, params in POLICIES.values():  # untimed warm-up (imports, first calls)
        run_policy(name, params, ENV, ENV_PARAMS, 60, 0)
    out: dict[str, dict[str, list[float]]] = {
        k: {"act": [], "update": [], "regret": []} for k in POLICIES
    }
    for seed in range(seeds):
        for key, (name, params) in POLICIES.items():
            _, run, _ = run_policy(name, params, ENV, ENV_PARAMS, horizon, seed)
            out[key]["act"].append(float(run.act_seconds.sum()))
            out[key]["update"].append(float(run.update_seconds.sum()))
            out[key]["regret"].append(float(run.cumulative_regret[-1]))
    return out


def _ratio(rows: dict[str, dict[str, list[float]]], a: str, b: str, what: str) -> float:
    return statistics.fmean(rows[a][what]) / statistics.fmean(rows[b][what])


def main(quick: bool, out: Path) -> dict[str, Any]:
    """Measure (quick: T = 150, 2 seeds; full: T = 600, 3 seeds); write out/."""
    horizon, seeds = (150, 2) if quick else (600, 3)
    with single_threaded():
        rows = measure(horizon, seeds)
    ratios = {
        "select_es_over_ucb": _ratio(rows, "neural-es", "neural-ucb", "act"),
        "select_es_over_ts": _ratio(rows, "neural-es", "neural-ts", "act"),
        "update_m10_over_m1": _ratio(rows, "neural-es", "neural-es-m1", "update"),
        "update_es_over_phe": _ratio(rows, "neural-es", "neural-phe", "update"),
        "update_ucb_backprop_over_auto": _ratio(
            rows, "neural-ucb-backprop", "neural-ucb", "update"
        ),
        "update_ts_backprop_over_auto": _ratio(
            rows, "neural-ts-backprop", "neural-ts", "update"
        ),
    }
    bars = {
        "select_es_over_ucb": ratios["select_es_over_ucb"] < BAR_SELECT,
        "update_m10_over_m1": ratios["update_m10_over_m1"] < BAR_MEMBERS,
    }
    result: dict[str, Any] = {
        "quick": quick,
        "horizon": horizon,
        "seeds": seeds,
        "rows": rows,
        "ratios": ratios,
        "bars": bars,
        "host": host(),
    }
    lines = [
        "# Ensemble sampling: selection and update seconds"
        + (" (quick)" if quick else ""),
        "",
        f"Quadratic bandit, d = 20, K = 50, L = 3, N = 20, T = {horizon}, seeds "
        f"0-{seeds - 1} interleaved, one thread; mean seconds per run.",
        "",
        "| policy | act s | update s | final regret |",
        "|---|---|---|---|",
    ]
    for key, r in rows.items():
        lines.append(
            f"| {key} | {statistics.fmean(r['act']):.3f} "
            f"| {statistics.fmean(r['update']):.2f} "
            f"| {statistics.fmean(r['regret']):.2f} |"
        )
    lines += ["", "| ratio | value | bar |", "|---|---|---|"]
    for key, value in ratios.items():
        bar = {"select_es_over_ucb": "< 0.5", "update_m10_over_m1": "< 3"}.get(key, "")
        verdict = "" if key not in bars else (" PASS" if bars[key] else " FAIL")
        lines.append(f"| {key} | {value:.3f} | {bar}{verdict} |")
    lines += ["", f"Load average while measuring: {result['host']['loadavg']}.", ""]
    write_outputs(out, result, "\n".join(lines))
    return result
