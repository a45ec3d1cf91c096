"""The shared-parameter linear policies on their hot path (docs/performance.md).

Two workloads of issue 16, each with its baselines measured in the same run:

``block640``: ``linucb`` and ``lints`` through ``simulate`` on ``classification`` digits with
the default block encoding (K = 10 arms of dimension d = 640), T = 2000. Bar: a ``linucb``
run under 1 s. For comparison the same policies with the snapshot ``linalg.Gram`` that they
used before (``RidgeModel(in_place=False)``: new d x d arrays per update, theta and the
Thompson draws by Cholesky solves) are timed on the first ``SNAPSHOT_ROUNDS`` rounds.

``dense100``: ``linucb`` (nu = 1, lam = 1) on K = 20 dense arms of d = 100 (unit sphere, as the
``linear`` environment draws them), T = 1500. The contexts, mean rewards and noise are drawn
once into a table that every contestant reads, so all play the same online loop:

    banditkit   ``simulate`` on a table environment (``TableEnv``): the loop, the policy's
                ``act`` / ``update`` with their checks, the environment's bookkeeping
    bare        the same arithmetic written bare (V^-1 and theta by Sherman-Morrison in place,
                BLAS ``dger``, the same tie rule), no objects and no checks: the floor
    naive       a NumPy loop that re-inverts the Gram every round (``np.linalg.inv``), widths
                batched over the arms
    loop only   ``simulate`` with a policy that does nothing on the same table: the cost of
                the loop, the checks and the environment's bookkeeping alone
    snapshot    ``linucb`` on the snapshot ``linalg.Gram`` (the implementation before), through
                ``simulate`` on the same table

Bars: banditkit at least 8x faster than the naive loop; the per-round overhead (banditkit
minus bare) under 30 us. The ``linear`` environment itself (which draws 2000 normals a round)
is also run, by banditkit and by the naive loop, for reference.

Timing: one BLAS thread, interleaved repetitions, medians. Each run is timed in wall time and
in CPU time of the process (``time.process_time``); on a loaded machine the CPU time leaves out
the time the process waits for a core, so the ratios and overheads are taken from it (both are
in ``result.json``).

    banditkit bench --only linear_hot_path --out results/bench
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import banditkit as bk
from banditkit.core import (
    Context,
    ContextualEnvironment,
    ContextualPolicy,
    Policy,
    Step,
)
from banditkit.core.seeding import make_rng
from banditkit.core.simulate import simulate
from banditkit.core.types import Action, Feedback
from banditkit.experiments.execute import single_threaded
from banditkit.policies.baselines.linear import LinTS, LinUCB
from banditkit.policies.parts.models import RidgeModel
from banditkit.policies.parts.selection import TIE_RTOL, argmax_random_tie

BAR_BLOCK_SECONDS = 1.0
BAR_NAIVE_RATIO = 8.0
BAR_OVERHEAD_US = 30.0
SNAPSHOT_ROUNDS = 200
DENSE = {"K": 20, "d": 100, "T": 1500}
BLOCK_T = 2000


class TableEnv(ContextualEnvironment):
    """Rounds read from arrays: arms (T, K, d), mean rewards (T, K) and noise (T,).

    Reward = mean + noise; regret = max mean - mean of the action. ``reset`` rewinds.
    """

    def __init__(self, arms: np.ndarray, means: np.ndarray, noise: np.ndarray) -> None:
        super().__init__()
        self.arms, self.means, self.noise = arms, means, noise

    def _reset(self) -> None:
        pass

    def _next_context(self) -> Context | None:
        if self.round >= self.arms.shape[0]:
            return None
        return Context.unchecked(self.arms[self.round])

    def _step(self, ctx: Context, action: Action) -> Step:
        assert isinstance(action, int)
        means = self.means[self.round]
        reward = float(means[action] + self.noise[self.round])
        return Step(
            feedback=reward, reward=reward, regret=float(means.max() - means[action])
        )


class Idle(ContextualPolicy):
    """Plays arm 0 and learns nothing: ``simulate`` with it times the loop alone."""

    def _act(self, ctx: Context) -> Action:
        return 0

    def _update(self, ctx: Context, action: Action, feedback: Feedback) -> None:
        self._n_updates += 1


class SnapshotLinUCB(LinUCB):
    """``linucb`` on the snapshot ``linalg.Gram`` (the implementation before the in-place one)."""

    def _build(self) -> None:
        super()._build()
        assert self.d is not None
        self.model = RidgeModel(self.d, self.lam)


class SnapshotLinTS(LinTS):
    """``lints`` on the snapshot ``linalg.Gram``."""

    def _build(self) -> None:
        super()._build()
        assert self.d is not None
        self.model = RidgeModel(self.d, self.lam)


def dense_table(K: int, d: int, T: int, seed: int = 0) -> TableEnv:
    """T rounds of K unit-sphere arms, theta on the unit sphere, noise N(0, 0.1^2)."""
    rng = np.random.default_rng(seed)
    arms = rng.standard_normal((T, K, d))
    arms /= np.linalg.norm(arms, axis=2, keepdims=True)
    theta = rng.standard_normal(d)
    theta /= np.linalg.norm(theta)
    return TableEnv(arms, arms @ theta, 0.1 * rng.standard_normal(T))


def timed(
    fn: Callable[..., Any], *args: Any, **kwargs: Any
) -> tuple[float, float, Any]:
    """(wall seconds, CPU seconds, result) of one call ``fn(*args, **kwargs)``."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn(*args, **kwargs)
    return time.perf_counter() - wall, time.process_time() - cpu, out


def run_banditkit(policy: Policy, env: Any, T: int) -> list[int]:
    """Actions of ``policy`` through ``simulate``."""
    actions = simulate(policy, env, T, seed=0, progress=False).actions
    return [int(a) for a in np.asarray(actions)]


def run_bare(table: TableEnv, T: int) -> list[int]:
    """LinUCB written bare: V^-1 and theta by Sherman-Morrison in place, no objects."""
    import scipy.linalg.blas as blas

    d = table.arms.shape[2]
    inverse = np.eye(d)
    theta = np.zeros(d)
    rng = make_rng(0, "policy")  # the policy's stream: the same tie breaks
    actions = []
    for t in range(T):
        X = table.arms[t]
        ucb = X @ theta + np.sqrt(
            np.maximum(np.einsum("kd,kd->k", X @ inverse, X), 0.0)
        )
        a = argmax_random_tie(ucb, rng, TIE_RTOL)
        x = X[a]
        r = table.means[t, a] + table.noise[t]
        u = inverse @ x
        q = float(x @ u)
        blas.dger(-1.0 / (1.0 + q), u, u, a=inverse.T, overwrite_a=1)
        theta = theta + ((r - float(x @ theta)) / (1.0 + q)) * u
        actions.append(a)
    return actions


def run_naive(env: Any, T: int) -> list[int]:
    """LinUCB that re-inverts the Gram every round (batched widths, the same tie rule)."""
    env.reset(0)
    rng = make_rng(0, "policy")
    V: np.ndarray | None = None
    b = np.zeros(0)
    actions = []
    for _ in range(T):
        ctx = env.context()
        X = ctx.arms
        if V is None:
            V, b = np.eye(X.shape[1]), np.zeros(X.shape[1])
        inverse = np.linalg.inv(V)
        theta = inverse @ b
        ucb = X @ theta + np.sqrt(
            np.maximum(np.einsum("kd,kd->k", X @ inverse, X), 0.0)
        )
        a = argmax_random_tie(ucb, rng, TIE_RTOL)
        step = env.step(a)
        x = X[a]
        V += np.outer(x, x)
        b += float(step.feedback) * x
        actions.append(a)
    return actions


def _stats(values: list[float], T: int) -> dict[str, float]:
    return {
        "median_us_per_round": statistics.median(values) / T * 1e6,
        "min_us_per_round": min(values) / T * 1e6,
        "median_seconds": statistics.median(values),
    }


def dense100(reps: int, T: int) -> dict[str, Any]:
    """The dense workload: banditkit, bare, naive and the loop alone, interleaved."""
    K, d = DENSE["K"], DENSE["d"]
    table = dense_table(K, d, T)
    contestants: dict[str, Callable[[], list[int]]] = {
        "banditkit": lambda: run_banditkit(bk.make_policy("linucb"), table, T),
        "bare": lambda: run_bare(table, T),
        "naive": lambda: run_naive(table, T),
        "loop_only": lambda: run_banditkit(Idle(), table, T),
        "snapshot": lambda: run_banditkit(SnapshotLinUCB(), table, T),
    }
    wall: dict[str, list[float]] = {k: [] for k in contestants}
    cpu: dict[str, list[float]] = {k: [] for k in contestants}
    actions: dict[str, list[int]] = {}
    for fn in contestants.values():  # warm-up: imports, caches
        fn()
    for _ in range(reps):
        for name, fn in contestants.items():
            w, c, actions[name] = timed(fn)
            wall[name].append(w)
            cpu[name].append(c)
    row: dict[str, Any] = {"K": K, "d": d, "T": T}
    for name in contestants:
        row[name] = {"wall": _stats(wall[name], T), "cpu": _stats(cpu[name], T)}
    for clock in ("wall", "cpu"):
        med = {n: row[n][clock]["median_us_per_round"] for n in contestants}
        row[f"naive_over_banditkit_{clock}"] = med["naive"] / med["banditkit"]
        row[f"overhead_us_{clock}"] = med["banditkit"] - med["bare"]
        row[f"banditkit_over_bare_{clock}"] = med["banditkit"] / med["bare"]
    row["faster_8x"] = bool(row["naive_over_banditkit_cpu"] >= BAR_NAIVE_RATIO)
    row["overhead_under_30us"] = bool(row["overhead_us_cpu"] < BAR_OVERHEAD_US)
    row["same_actions_bare"] = actions["banditkit"] == actions["bare"]
    row["same_actions_naive"] = actions["banditkit"] == actions["naive"]
    row["same_actions_snapshot"] = actions["banditkit"] == actions["snapshot"]
    row["snapshot_over_banditkit_cpu"] = (
        row["snapshot"]["cpu"]["median_us_per_round"]
        / row["banditkit"]["cpu"]["median_us_per_round"]
    )
    # the linear environment itself (2000 normals a round), banditkit against naive
    env_params = {"d": d, "n_arms": K}
    env_w: dict[str, list[float]] = {"banditkit": [], "naive": []}
    env_c: dict[str, list[float]] = {"banditkit": [], "naive": []}
    for _ in range(max(1, reps // 2)):
        w, c, _a = timed(
            lambda: run_banditkit(
                bk.make_policy("linucb"), bk.make_env("linear", **env_params), T
            )
        )
        env_w["banditkit"].append(w)
        env_c["banditkit"].append(c)
        w, c, _a = timed(lambda: run_naive(bk.make_env("linear", **env_params), T))
        env_w["naive"].append(w)
        env_c["naive"].append(c)
    row["linear_env"] = {
        n: {"wall": _stats(env_w[n], T), "cpu": _stats(env_c[n], T)} for n in env_w
    }
    row["linear_env"]["naive_over_banditkit_cpu"] = statistics.median(
        env_c["naive"]
    ) / statistics.median(env_c["banditkit"])
    return row


def block640(reps: int, T: int, snapshot_rounds: int) -> list[dict[str, Any]]:
    """``linucb`` / ``lints`` on block-encoded digits, and their snapshot-Gram versions."""
    rows = []
    for name, snapshot in (("linucb", SnapshotLinUCB), ("lints", SnapshotLinTS)):
        env = bk.make_env("classification", dataset="digits")

        def ours(name: str = name, env: Any = env) -> Any:
            return simulate(bk.make_policy(name), env, T, seed=0, progress=False)

        simulate(bk.make_policy(name), env, 20, seed=0, progress=False)  # warm-up
        wall, cpu = [], []
        run = None
        for _ in range(reps):
            w, c, run = timed(ours)
            wall.append(w)
            cpu.append(c)
        assert run is not None
        n = min(T, snapshot_rounds)
        policy = snapshot()
        w_old, c_old, old = timed(simulate, policy, env, n, seed=0, progress=False)
        rows.append(
            {
                "policy": name,
                "K": 10,
                "d": 640,
                "T": T,
                "seconds_wall_median": statistics.median(wall),
                "seconds_cpu_median": statistics.median(cpu),
                "us_per_round_cpu": statistics.median(cpu) / T * 1e6,
                "regret": float(run.cumulative_regret[-1]),
                "snapshot_rounds": n,
                "snapshot_us_per_round_cpu": c_old / n * 1e6,
                "snapshot_us_per_round_wall": w_old / n * 1e6,
                "speedup_over_snapshot_cpu": (c_old / n) / (statistics.median(cpu) / T),
                "same_actions_as_snapshot": [int(a) for a in old.actions]
                == [int(a) for a in run.actions[:n]],
                "under_1s": bool(statistics.median(cpu) < BAR_BLOCK_SECONDS),
            }
        )
    return rows


def main(quick: bool, out: Path) -> dict[str, Any]:
    """Run both workloads; write result.json and result.md."""
    reps = 2 if quick else 5
    T_dense = DENSE["T"] // 3 if quick else DENSE["T"]
    T_block = BLOCK_T // 4 if quick else BLOCK_T
    with single_threaded():
        dense = dense100(reps, T_dense)
        block = block640(
            max(1, reps - 2), T_block, SNAPSHOT_ROUNDS // (4 if quick else 1)
        )
    result: dict[str, Any] = {
        "quick": quick,
        "reps": reps,
        "dense100": dense,
        "block640": block,
        "loadavg": list(os.getloadavg()),
        "numpy": np.__version__,
    }
    lines = [
        "# Linear hot paths" + (" (quick)" if quick else ""),
        "",
        f"One BLAS thread, {reps} interleaved repetitions, medians; CPU time of the process "
        "(wall time in result.json).",
        "",
        f"## linucb, K = {DENSE['K']}, d = {DENSE['d']}, T = {T_dense} (table of dense arms)",
        "",
        "| contestant | us / round (CPU) | us / round (wall) |",
        "|---|---|---|",
    ]
    for name in ("banditkit", "bare", "naive", "loop_only", "snapshot"):
        lines.append(
            f"| {name} | {dense[name]['cpu']['median_us_per_round']:.1f} | "
            f"{dense[name]['wall']['median_us_per_round']:.1f} |"
        )
    lines += [
        "",
        f"naive / banditkit: {dense['naive_over_banditkit_cpu']:.2f}x (bar {BAR_NAIVE_RATIO:g}x: "
        f"{'PASS' if dense['faster_8x'] else 'FAIL'}); overhead (banditkit - bare): "
        f"{dense['overhead_us_cpu']:.1f} us (bar {BAR_OVERHEAD_US:g} us: "
        f"{'PASS' if dense['overhead_under_30us'] else 'FAIL'}); same actions as bare / naive: "
        f"{dense['same_actions_bare']} / {dense['same_actions_naive']}.",
        f"On the `linear` environment itself: naive / banditkit "
        f"{dense['linear_env']['naive_over_banditkit_cpu']:.2f}x.",
        "",
        f"## Block-encoded digits, K = 10, d = 640, T = {T_block}",
        "",
        "| policy | s / run (CPU) | us / round | snapshot Gram us / round | speed-up | "
        "same actions | under 1 s |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in block:
        lines.append(
            f"| {row['policy']} | {row['seconds_cpu_median']:.3f} | "
            f"{row['us_per_round_cpu']:.0f} | {row['snapshot_us_per_round_cpu']:.0f} | "
            f"{row['speedup_over_snapshot_cpu']:.1f}x | {row['same_actions_as_snapshot']} | "
            f"{row['under_1s']} |"
        )
    lines += ["", f"Load average: {result['loadavg']}.", ""]
    out.mkdir(parents=True, exist_ok=True)
    (out / "result.json").write_text(json.dumps(result, indent=2))
    (out / "result.md").write_text("\n".join(lines))
    return result


if __name__ == "__main__":  # pragma: no cover
    import sys

    print(
        json.dumps(
            main("--quick" in sys.argv, Path("results/linear_hot_path")), indent=1
        )
    )
