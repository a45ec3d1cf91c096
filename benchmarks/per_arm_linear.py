"""Per-arm (disjoint) LinUCB and LinTS against a bare NumPy loop (docs/performance.md).

The workload is a disjoint linear bandit on shared contexts: K arms, one d-dimensional context
x_t ~ N(0, I / d) per round seen by every arm, theta_a ~ N(0, I), rewards x_t^T theta_a +
N(0, 0.1^2). Contexts and the (T, K) reward table are drawn once per size and shared by every
contestant, so all of them play the same online loop. The first K rounds play arm t mod K
(every arm once) in every contestant, so that no decision rests on an exact tie.

Contestants (one BLAS thread, interleaved repetitions; the medians of the CPU time of the
process are reported, which leave out the time spent waiting for a core on a loaded machine,
with the wall times beside them in ``result.json``):

    banditkit   ``make_policy("linucb" | "lints", per_arm=True)`` driven through the public
                ``act`` / ``update`` with ``Context.from_shared(x, n_arms=K)`` every round
    block       ``linucb`` / ``lints`` on block-encoded arms (one (K d)-dim ridge), timed once
                on the first 300 rounds
    bare        the same model written bare in NumPy: a (K, d, d) stack of inverse Grams,
                Sherman-Morrison on the played arm, no validation, no objects
    peers       MABWiser, contextualbandits and Vowpal Wabbit when installed (none is a
                dependency; absent ones are reported as not installed)

The overhead outside the arithmetic (validation, the Context, dispatch, bookkeeping) is
banditkit's per-round time minus the bare loop's (noisy: a difference of two timings), and
measured directly as ``boundary_us_per_round``: building the round's Context and the checks of
``act`` and ``update`` (CPU time, best of the passes). The bars: banditkit within 3x of the
bare loop (``within_3x``; aim 2x, ``within_2x``) at 10 x 20 x 3000 and 20 x 50 x 500 (K x d x
T), and the overhead under 20 us per round (``overhead_under_20us``); the LinUCB action
sequences of banditkit and the bare loop are compared (``same_actions``).

    banditkit bench --only per_arm_linear --out results/bench
"""

from __future__ import annotations

import importlib.util
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

import banditkit as bk
from banditkit.core import Context
from banditkit.envs.classification import encode_arms
from banditkit.experiments.execute import single_threaded

SIZES = ((10, 20, 3000), (20, 50, 500))
NU = 1.0
LAM = 1.0
BAR = 3.0
OVERHEAD_BAR_US = 20.0
PEERS = ("mabwiser", "contextualbandits", "vowpalwabbit")
WIRED_PEERS = (
    "mabwiser",
    "contextualbandits",
)  # Vowpal Wabbit: see docs/performance.md
BLOCK_ROUNDS = 300  # the block-encoded run is timed once, on the first rounds only


def workload(K: int, d: int, T: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Shared contexts (T, d) and the reward table (T, K) of a disjoint linear bandit."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(T, d)) / np.sqrt(d)
    theta = rng.normal(size=(K, d))
    R = X @ theta.T + 0.1 * rng.normal(size=(T, K))
    return X, R


def run_banditkit(
    name: str, X: np.ndarray, R: np.ndarray
) -> tuple[float, float, list[int]]:
    """Wall and CPU seconds and actions of the per-arm policy ``name`` (act / update)."""
    T, K = R.shape
    policy = bk.make_policy(name, per_arm=True, nu=NU, lam=LAM, seed=0)
    actions = []
    start, cpu = time.perf_counter(), time.process_time()
    for t in range(T):
        ctx = Context.from_shared(X[t], n_arms=K)
        a = t % K if t < K else int(policy.act(ctx))  # type: ignore[arg-type]
        policy.update(ctx, a, float(R[t, a]))
        actions.append(a)
    return time.perf_counter() - start, time.process_time() - cpu, actions


def run_block(
    name: str, X: np.ndarray, R: np.ndarray
) -> tuple[float, float, list[int]]:
    """Wall and CPU seconds and actions of ``name`` on block-encoded arms."""
    T, K = R.shape
    policy = bk.make_policy(name, nu=NU, lam=LAM, seed=0)
    actions = []
    start, cpu = time.perf_counter(), time.process_time()
    for t in range(T):
        ctx = Context(arms=encode_arms(X[t], K))
        a = t % K if t < K else int(policy.act(ctx))  # type: ignore[arg-type]
        policy.update(ctx, a, float(R[t, a]))
        actions.append(a)
    return time.perf_counter() - start, time.process_time() - cpu, actions


def run_bare(kind: str, X: np.ndarray, R: np.ndarray) -> tuple[float, float, list[int]]:
    """Wall and CPU seconds and actions of the bare NumPy loop (``kind`` "ucb" or "ts")."""
    T, K = R.shape
    d = X.shape[1]
    rng = np.random.default_rng(0)
    A_inv = np.broadcast_to(np.eye(d) / LAM, (K, d, d)).copy()
    b = np.zeros((K, d))
    theta = np.zeros((K, d))
    actions = []
    start, cpu = time.perf_counter(), time.process_time()
    for t in range(T):
        x = X[t]
        if t < K:
            a = t % K
        else:
            sd = np.sqrt((A_inv @ x) @ x)
            mean = theta @ x
            if kind == "ucb":
                a = int(np.argmax(mean + NU * sd))
            else:
                a = int(np.argmax(mean + NU * sd * rng.standard_normal(K)))
        r = R[t, a]
        u = A_inv[a] @ x
        A_inv[a] -= np.outer(u, u / (1.0 + x @ u))
        b[a] += r * x
        theta[a] = A_inv[a] @ b[a]
        actions.append(a)
    return time.perf_counter() - start, time.process_time() - cpu, actions


def boundary_us(name: str, X: np.ndarray, R: np.ndarray, reps: int) -> float:
    """Per-round time of what ``act`` / ``update`` add to the arithmetic, measured directly.

    Builds the round's ``Context.from_shared`` and runs the checks of ``act`` and ``update``
    (context, action, reward) on a fitted policy, best of ``reps`` passes over the rounds.
    """
    T, K = R.shape
    policy = bk.make_policy(name, per_arm=True, nu=NU, lam=LAM, seed=0)
    policy.act(Context.from_shared(X[0], n_arms=K))
    best = np.inf
    for _ in range(reps):
        start = time.process_time()
        for t in range(T):
            ctx = Context.from_shared(X[t], n_arms=K)
            a = t % K
            policy._check_context(ctx)  # act
            policy._check_action(a, ctx)
            policy._check_context(ctx)  # update
            policy._check_feedback(float(R[t, a]), policy._check_action(a, ctx))
        best = min(best, time.process_time() - start)
    return best / T * 1e6


def regret_of(actions: list[int], R: np.ndarray) -> float:
    """Cumulative regret of ``actions`` against the best arm's noisy reward of each round."""
    T = R.shape[0]
    return float((R.max(axis=1) - R[np.arange(T), actions]).sum())


def run_peer(peer: str, X: np.ndarray, R: np.ndarray) -> tuple[float, list[int]]:
    """CPU seconds and actions of a peer library's disjoint LinUCB on the same loop.

    Both peers need data before their first prediction, so every arm is played once in turn
    (as the bare loop does); then each round predicts one context and learns the reward of
    the arm played (``partial_fit``). alpha = nu = 1, lambda = 1, no intercept, float64.
    """
    T, K = R.shape
    first = np.arange(K)
    rewards = R[first, first]
    actions = list(range(K))
    start = time.process_time()
    if peer == "mabwiser":
        from mabwiser.mab import MAB, LearningPolicy

        mab = MAB(
            arms=list(range(K)),
            learning_policy=LearningPolicy.LinUCB(alpha=NU, l2_lambda=LAM),
            seed=0,
        )
        mab.fit(decisions=list(first), rewards=list(rewards), contexts=X[:K])
        for t in range(K, T):
            a = int(mab.predict(X[t : t + 1]))
            actions.append(a)
            mab.partial_fit(decisions=[a], rewards=[R[t, a]], contexts=X[t : t + 1])
    elif peer == "contextualbandits":
        from contextualbandits.online import LinUCB

        model = LinUCB(
            nchoices=K,
            alpha=NU,
            lambda_=LAM,
            fit_intercept=False,
            use_float=False,
            random_state=1,
        )
        model.fit(X[:K], first, rewards)
        for t in range(K, T):
            a = int(model.predict(X[t : t + 1])[0])
            actions.append(a)
            model.partial_fit(X[t : t + 1], np.array([a]), np.array([R[t, a]]))
    else:
        raise ValueError(f"peer must be one of {list(WIRED_PEERS)}; got {peer!r}.")
    return time.process_time() - start, actions


def main(quick: bool, out: Path) -> dict[str, Any]:
    """Per-round cost of per-arm LinUCB / LinTS, the bare loop, the overhead, the block run."""
    reps = 2 if quick else 5
    sizes = [(K, d, T // 5 if quick else T) for K, d, T in SIZES]
    peers = {p: importlib.util.find_spec(p) is not None for p in PEERS}
    result: dict[str, Any] = {
        "reps": reps,
        "nu": NU,
        "lam": LAM,
        "rows": [],
        "peers": {},
    }
    result["peers"] = {
        p: (
            ("installed, timed below" if p in WIRED_PEERS else "installed, not wired")
            if ok
            else "not installed"
        )
        for p, ok in peers.items()
    }
    lines = [
        "# Per-arm LinUCB / LinTS against the bare NumPy (K, d, d) loop, one thread, medians "
        f"of {reps} interleaved repetitions, CPU time (wall medians in result.json)",
        "",
        "| K x d x T | policy | banditkit us/round | bare us/round | ratio | overhead us/round "
        "| boundary us/round | within 3x | same actions | regret | block-encoded us/round |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    with single_threaded():
        for K, d, T in sizes:
            X, R = workload(K, d, T)
            for name, kind in (("linucb", "ucb"), ("lints", "ts")):
                run_banditkit(name, X[:50], R[:50])  # warm-up (imports, caches)
                run_bare(kind, X[:50], R[:50])
                ours, bare, ours_cpu, bare_cpu = [], [], [], []
                for _ in range(reps):  # interleaved
                    s, c, acts = run_banditkit(name, X, R)
                    ours.append(s)
                    ours_cpu.append(c)
                    s, c, bare_acts = run_bare(kind, X, R)
                    bare.append(s)
                    bare_cpu.append(c)
                n_block = min(T, BLOCK_ROUNDS // (3 if quick else 1))
                s_block, _c, block_acts = run_block(name, X[:n_block], R[:n_block])
                # medians of the CPU time of the process (the time spent waiting for a core
                # on a loaded machine left out); wall times beside them
                t_ours = statistics.median(ours_cpu) / T * 1e6
                t_bare = statistics.median(bare_cpu) / T * 1e6
                row = {
                    "K": K,
                    "d": d,
                    "T": T,
                    "policy": f"{name}-per-arm",
                    "us_per_round": t_ours,
                    "bare_us_per_round": t_bare,
                    "ratio": t_ours / t_bare,
                    "overhead_us_per_round": t_ours - t_bare,
                    "within_3x": t_ours <= BAR * t_bare,
                    "within_2x": t_ours <= 2.0 * t_bare,
                    "overhead_under_20us": t_ours - t_bare < OVERHEAD_BAR_US,
                    "boundary_us_per_round": boundary_us(name, X, R, reps),
                    "same_actions": acts == bare_acts,
                    "block_us_per_round": s_block / n_block * 1e6,
                    "block_rounds": n_block,
                    "block_same_actions": acts[:n_block] == block_acts,
                    "regret": regret_of(acts, R),
                    "bare_regret": regret_of(bare_acts, R),
                    "wall_median_us_per_round": statistics.median(ours) / T * 1e6,
                    "bare_wall_median_us_per_round": statistics.median(bare) / T * 1e6,
                    "wall_best_us_per_round": min(ours) / T * 1e6,
                    "bare_wall_best_us_per_round": min(bare) / T * 1e6,
                    "seconds": ours,
                    "bare_seconds": bare,
                    "cpu_seconds": ours_cpu,
                    "bare_cpu_seconds": bare_cpu,
                }
                for peer in WIRED_PEERS:
                    if name != "linucb" or not peers[peer]:
                        continue
                    times: list[float] = []
                    peer_acts: list[int] = []
                    for _ in range(reps):
                        seconds, peer_acts = run_peer(peer, X, R)
                        times.append(seconds)
                    t_peer = statistics.median(times) / T * 1e6
                    row[f"{peer}_us_per_round"] = t_peer
                    row[f"{peer}_over_banditkit"] = t_peer / t_ours
                    row[f"{peer}_same_actions"] = peer_acts == acts
                result["rows"].append(row)
                lines.append(
                    f"| {K} x {d} x {T} | {row['policy']} | {t_ours:.1f} | {t_bare:.1f} | "
                    f"{row['ratio']:.2f} | {t_ours - t_bare:.1f} | "
                    f"{row['boundary_us_per_round']:.1f} | {row['within_3x']} | "
                    f"{row['same_actions']} | {row['regret']:.1f} | "
                    f"{row['block_us_per_round']:.0f} |"
                )
    result["all_within_3x"] = all(r["within_3x"] for r in result["rows"])
    result["all_overhead_under_20us"] = all(
        r["overhead_under_20us"] for r in result["rows"]
    )
    result["loadavg"] = list(os.getloadavg())
    peer_lines = [
        f"- {r['K']} x {r['d']} x {r['T']}, {peer} LinUCB: "
        f"{r[f'{peer}_us_per_round']:.0f} us/round CPU, "
        f"{r[f'{peer}_over_banditkit']:.1f}x banditkit's, same actions: "
        f"{r[f'{peer}_same_actions']}"
        for r in result["rows"]
        for peer in WIRED_PEERS
        if f"{peer}_us_per_round" in r
    ]
    lines += ["", *peer_lines] if peer_lines else []
    lines += [
        "",
        "Peers: " + ", ".join(f"{p}: {s}" for p, s in result["peers"].items()) + ".",
        "LinTS draws differ from the bare loop's (another random stream), so its actions do too.",
        f"Block-encoded: the shared-parameter policy on (K d)-dim block arms, first "
        f"{BLOCK_ROUNDS} rounds, one run (wall time).",
        f"Load average: {result['loadavg']}.",
    ]
    out.mkdir(parents=True, exist_ok=True)
    (out / "result.json").write_text(json.dumps(result, indent=2))
    (out / "result.md").write_text("\n".join(lines) + "\n")
    return result


if __name__ == "__main__":  # pragma: no cover
    import sys

    print(
        json.dumps(
            main("--quick" in sys.argv, Path("results/per_arm_linear")), indent=1
        )
    )
