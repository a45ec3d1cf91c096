"""Shallow against full-gradient exploration: NVLDB's D x D step against NDB's p x p step.

Workload [Oh2025, Sec. 4.2 "Shallow exploration", App. E.3]: the square task, d = 5, K = 5,
the paper's network sizes (m = 32, depth 3: NVLDB D = 32, NDB p = 1281; and m = 100 for
NVLDB, D = 100), a history of n duels. Timed, each the median over ``repeats`` rounds:

* ``select``: the pair rule's inputs and choice, ``act`` (f, the K x K bonuses, UCB-ASYM);
* ``gram``: building the uncertainty for the next round: NVLDB rebuilds
  V = lam I + sum_i w_i dphi_i dphi_i^T from the n duels with the current features
  (``gram_mode="rebuild"``, App. E.2.1); NDB adds one p x p rank-1 term (Sherman-Morrison,
  ``exact_inverse=False``) or refactorises V (``exact_inverse=True``, the per-round inverse
  of the reference code);
* ``round``: a whole round, act + update, training (20 Adam steps on the n duels) included.

Bar (issue [dueling]): NVLDB's exploration (select + gram) at least 10x cheaper than NDB's.

    banditkit bench --only dueling_exploration --out results/bench
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

import banditkit as bk
from benchmarks._common import host, single_threaded, write_outputs


def _fill(policy: Any, env: Any, n: int, rng: np.random.Generator) -> None:
    """Play one round, then add n random duels to the history (no training)."""
    ctx = env.context()
    action = policy.act(ctx)
    policy.update(ctx, action, env.step(action).feedback)
    d = ctx.arms.shape[1]
    weighted = policy.registry_name.startswith("nvldb")
    for _ in range(n):
        x1, x2 = rng.uniform(-1, 1, (2, d))
        policy.history.append(
            x1, x2, float(rng.random() < 0.5), 4.0 if weighted else 1.0
        )


def _time_policy(name: str, n: int, repeats: int, **params: Any) -> dict[str, float]:
    rng = np.random.default_rng(0)
    env = bk.make_env("dueling", utility="square", d=5, n_arms=5)
    env.reset(0)
    # the benchmark reaches into the policies' parts (model, design, rebuild)
    policy: Any = bk.make_policy(name, seed=0, **params)
    policy.begin(100_000)
    _fill(policy, env, n, rng)
    select, gram, round_ = [], [], []
    for _ in range(repeats):
        ctx = env.context()
        if ctx is None:  # a synthetic environment never runs out of rounds
            raise RuntimeError("the dueling environment ended")
        t0 = time.perf_counter()
        action = policy.act(ctx)
        t1 = time.perf_counter()
        feedback = env.step(action).feedback
        if name.startswith("nvldb"):
            policy.update(ctx, action, feedback)
            t2 = time.perf_counter()
            policy._rebuild_design()  # the rebuild alone, timed again
            t3 = time.perf_counter()
            gram.append(t3 - t2)
            round_.append((t2 - t1) + (t1 - t0))
        else:
            arms = np.array(ctx.arms[np.asarray(action)])
            G = policy.model.features(arms)
            t2 = time.perf_counter()
            policy.design.update(policy.scale * (G[0] - G[1]))
            t3 = time.perf_counter()
            gram.append(t3 - t2)
            t4 = time.perf_counter()
            policy.update(ctx, action, feedback)
            t5 = time.perf_counter()
            round_.append((t1 - t0) + (t5 - t4))
        select.append(t1 - t0)
    return {
        "select_ms": 1e3 * float(np.median(select)),
        "gram_ms": 1e3 * float(np.median(gram)),
        "round_ms": 1e3 * float(np.median(round_)),
    }


def main(quick: bool, out: Path) -> dict[str, Any]:
    """Time both explorations at n = 100 and n = 2000 duels (quick: n = 100 only)."""
    sizes = [100] if quick else [100, 2000]
    repeats = 3 if quick else 5
    rows: dict[str, Any] = {}
    with single_threaded():
        for n in sizes:
            cases: dict[str, tuple[str, dict[str, Any]]] = {
                "NVLDB m=32 (D=32)": ("nvldb-ucb", {}),
                "NVLDB m=100 (D=100)": ("nvldb-ucb", {"preset": "main"}),
                "NDB m=32 (p=1281)": ("ndb-ucb", {}),
                "NDB m=32 exact inverse": ("ndb-ucb", {"exact_inverse": True}),
            }
            for label, (name, params) in cases.items():
                rows[f"{label}, n={n}"] = _time_policy(name, n, repeats, **params)
    ratios: dict[str, dict[str, float]] = {}
    for n in sizes:
        nvldb = rows[f"NVLDB m=32 (D=32), n={n}"]
        ndb = rows[f"NDB m=32 (p=1281), n={n}"]
        ndb_exact = rows[f"NDB m=32 exact inverse, n={n}"]
        explore = nvldb["select_ms"] + nvldb["gram_ms"]
        ratios[f"n={n}"] = {
            "ndb_over_nvldb_exploration": (ndb["select_ms"] + ndb["gram_ms"]) / explore,
            "ndb_exact_over_nvldb_exploration": (
                ndb_exact["select_ms"] + ndb_exact["gram_ms"]
            )
            / explore,
            "ndb_exact_over_nvldb_round": ndb_exact["round_ms"] / nvldb["round_ms"],
        }
    result = {"host": host(), "rows": rows, "ratios": ratios}
    lines = [
        "| case | select (ms) | gram (ms) | round (ms) |",
        "|---|---|---|---|",
        *(
            f"| {k} | {v['select_ms']:.3f} | {v['gram_ms']:.3f} | {v['round_ms']:.1f} |"
            for k, v in rows.items()
        ),
        "",
        *(f"- {k}: {v}" for k, v in ratios.items()),
    ]
    write_outputs(out, result, "\n".join(lines) + "\n")
    return result
