"""Where BLCE's regret comes from: per-phase regret and surviving-set sizes (docs/rare.md).

The rare-update paper reports BLCE-G and BLCE below RS-OFUL; with the theory constants we
find the opposite. This script splits the regret of BLCE-G and BLCE by phase (G-design,
uncertainty exploration, greedy) and reports the mean surviving-set size per interval,
next to RS-OFUL, on the paper's (K, d) = (1000, 5) at T = 10,000 (quick: T = 2000), for
the default scaling (unit-norm arms and theta*, N(0, 1) noise) and the variants checked
in docs/rare.md: unnormalised arms and theta*, noise sd 0.1, and c = 0.1.

    banditkit bench --only rare_diagnostics --out results/bench
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np

import banditkit as bk
from banditkit.experiments.execute import single_threaded

VARIANTS: dict[str, dict[str, Any]] = {
    "unit-norm, noise 1": {},
    "no normalisation": {"normalize": "none", "S": None},
    "noise sd 0.1": {"noise_std": 0.1},
}


def _run(
    name: str, params: dict[str, Any], env_params: dict[str, Any], T: int, seed: int
) -> dict[str, Any]:
    env = bk.make_env("rare-linear", **env_params)
    policy = bk.make_policy(name, seed=seed, **params)
    if hasattr(policy, "count_survivors"):
        policy.count_survivors = True  # the surviving set in every round, for the table
    policy.begin(T)
    env.reset(seed)
    by_phase: dict[str, float] = {}
    survivors: dict[int, list[int]] = {}
    total, seconds = 0.0, 0.0
    for t in range(1, T + 1):
        ctx = env.context()
        if ctx is None:  # a synthetic environment never runs out of rounds
            raise RuntimeError(f"{name} environment ended at round {t}")
        start = time.perf_counter()
        action = policy.act(ctx)
        seconds += time.perf_counter() - start
        step = env.step(action)
        start = time.perf_counter()
        policy.update(ctx, action, step.feedback)
        seconds += time.perf_counter() - start
        total += step.regret
        phase = getattr(policy, "last_phase", "") or "all"
        by_phase[phase] = by_phase.get(phase, 0.0) + step.regret
        if hasattr(policy, "update_times") and hasattr(policy, "last_survivors"):
            ell = int(np.searchsorted(policy.update_times, t) + 1)
            survivors.setdefault(ell, []).append(policy.last_survivors)
    return {
        "regret": total,
        "by_phase": by_phase,
        "survivors": {ell: float(np.mean(v)) for ell, v in survivors.items()},
        "n_updates": policy.n_updates,
        "seconds": seconds,
    }


def main(quick: bool, out: Path) -> dict[str, Any]:
    """Per-phase regret of BLCE / BLCE-G and RS-OFUL's regret, per variant."""
    T, seeds = (2000, [0]) if quick else (10_000, [0, 1, 2])
    base = {"n_arms": 1000, "d": 5, "law": "normal"}
    result: dict[str, Any] = {"horizon": T, "seeds": seeds, "variants": {}}
    lines = [f"# BLCE diagnostics, K = 1000, d = 5, normal contexts, T = {T}", ""]
    policies = [
        ("BLCE", "blce", {}),
        ("BLCE-G", "blce-g", {}),
        ("BLCE c=0.1", "blce", {"c": 0.1}),
        ("RS-OFUL C=1", "rs-oful", {"C": 1.0}),
    ]
    with single_threaded():
        for variant, env_extra in VARIANTS.items():
            rows = {}
            for label, name, params in policies:
                runs = [_run(name, params, {**base, **env_extra}, T, s) for s in seeds]
                phases = sorted({p for r in runs for p in r["by_phase"]})
                rows[label] = {
                    "regret": float(np.mean([r["regret"] for r in runs])),
                    "by_phase": {
                        p: float(np.mean([r["by_phase"].get(p, 0.0) for r in runs]))
                        for p in phases
                    },
                    "survivors": runs[0]["survivors"],
                    "n_updates": float(np.mean([r["n_updates"] for r in runs])),
                    "seconds": float(np.mean([r["seconds"] for r in runs])),
                }
            result["variants"][variant] = rows
            lines += [
                f"## {variant}",
                "",
                "| policy | regret | by phase | updates | s |",
                "|---|---|---|---|---|",
            ]
            for label, row in rows.items():
                split = ", ".join(f"{p} {v:.0f}" for p, v in row["by_phase"].items())
                lines.append(
                    f"| {label} | {row['regret']:.0f} | {split} | {row['n_updates']:.0f} "
                    f"| {row['seconds']:.2f} |"
                )
            surv = rows["BLCE"]["survivors"]
            lines += [
                "",
                "BLCE mean surviving arms per interval: "
                + ", ".join(f"{ell}: {v:.0f}" for ell, v in surv.items()),
                "",
            ]
    out.mkdir(parents=True, exist_ok=True)
    (out / "result.json").write_text(json.dumps(result, indent=2))
    (out / "result.md").write_text("\n".join(lines) + "\n")
    return result


if __name__ == "__main__":  # pragma: no cover
    import sys

    print(
        json.dumps(
            main("--quick" in sys.argv, Path("results/rare_diagnostics")), indent=1
        )
    )
