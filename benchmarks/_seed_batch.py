"""Seeds of one configuration as one stack against one seed and against one by one (private).

Shared by ``nvldb_seed_batch`` and ``neural_seed_batch`` (issue [compute], item 3): in one
process, one BLAS and one PyTorch thread, the cases are timed in turn, ``reps`` times
(interleaved, so that the load of a shared machine falls on all of them alike): one seed
alone, the seeds as one stack (``core.members.stack``) and, unless quick, the seeds one by
one (``core.members.Separate``). Wall and CPU (process) seconds, medians.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from banditkit.core import make_env, make_policy
from banditkit.core.members import Separate, stack
from banditkit.core.simulate import RunResult, simulate_seeds
from benchmarks._common import host, single_threaded, write_outputs


@dataclass(frozen=True)
class SeedBatch:
    """One workload: a policy configuration on an environment, its horizon and seeds.

    ``variants`` (policy name, extra parameters) make each seed several members, one per
    variant (e.g. NVLDB's six pair rules of one network); none: the policy itself.
    """

    policy: str
    env: str
    horizon: int
    seeds: list[int]
    policy_params: dict[str, Any] = field(default_factory=dict)
    env_params: dict[str, Any] = field(default_factory=dict)
    variants: tuple[tuple[str, dict[str, Any]], ...] = ()

    def play(
        self, seeds: list[int], stacked: bool, horizon: int, one: bool = False
    ) -> list[RunResult]:
        """The runs of ``seeds`` (x the variants; ``one``: the first only), stacked or not."""
        variants = self.variants or ((self.policy, {}),)
        if one:
            variants = variants[:1]
        runs = [(name, extra, s) for name, extra in variants for s in seeds]
        policies = [
            make_policy(name, **{**self.policy_params, **extra}, seed=s)
            for name, extra, s in runs
        ]
        envs = [make_env(self.env, **self.env_params) for _ in runs]
        members = stack(policies) if stacked else Separate(policies)
        if stacked and members is None:
            raise ValueError(f"{self.policy} {self.policy_params} does not stack.")
        return simulate_seeds(
            policies, envs, horizon, [s for _, _, s in runs], members=members
        )


def _timed(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, out


def measure(name: str, work: SeedBatch, quick: bool, clock: str) -> dict[str, Any]:
    """Time the cases (module docstring); the stack's actions against the separate runs'.

    Args:
        name: The benchmark's name (``workload`` in the result).
        work: The workload.
        quick: One repetition without the separate runs (else 3 repetitions).
        clock: "wall" or "cpu": the seconds of the ratios ``ratio_stack_to_one`` and
            ``ratio_separate_to_stack`` (the latter unless quick).
    """
    reps = 1 if quick else 3
    seeds, T = work.seeds, work.horizon
    cases = {
        "one": lambda: work.play(seeds[:1], False, T, one=True),
        "stack": lambda: work.play(seeds, True, T),
    }
    if not quick:
        cases["separate"] = lambda: work.play(seeds, False, T)
    wall: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}
    results: dict[str, Any] = {}
    loads = []
    with single_threaded():
        work.play(seeds[:2], True, 5)  # warm-up (imports), not timed
        for _ in range(reps):
            for key, fn in cases.items():
                w, c, results[key] = _timed(fn)
                wall.setdefault(key, []).append(w)
                cpu.setdefault(key, []).append(c)
            loads.append(host()["loadavg"])
        separate = results.get("separate") or work.play(seeds, False, T)
    pairs = [  # per round (actions may be arms, pairs or assortments of any size)
        [np.array_equal(x, y) for x, y in zip(a.actions, b.actions, strict=True)]
        for a, b in zip(results["stack"], separate, strict=True)
    ]
    regret_gap = max(
        float(np.max(np.abs(a.cumulative_regret - b.cumulative_regret)))
        for a, b in zip(results["stack"], separate, strict=True)
    )
    med = {
        k: statistics.median(v) for k, v in (wall if clock == "wall" else cpu).items()
    }
    ratios = {"ratio_stack_to_one": med["stack"] / med["one"]}
    if "separate" in med:
        ratios["ratio_separate_to_stack"] = med["separate"] / med["stack"]
    return {
        "workload": name,
        "quick": quick,
        "clock": clock,
        **ratios,
        "policy": {"name": work.policy, "params": work.policy_params},
        "variants": [list(v) for v in work.variants],
        "env": {"name": work.env, "params": work.env_params},
        "horizon": T,
        "seeds": seeds,
        "reps": reps,
        "wall_seconds": wall,
        "cpu_seconds": cpu,
        "wall_median": {k: statistics.median(v) for k, v in wall.items()},
        "cpu_median": {k: statistics.median(v) for k, v in cpu.items()},
        "same_pairs": float(np.mean(pairs)),
        "max_regret_gap": regret_gap,
        "regret": {
            key: [float(r.regret.sum()) for r in runs]
            for key, runs in (("stack", results["stack"]), ("separate", separate))
        },
        "loadavg_per_rep": loads,
        "host": host(),
    }


def table(result: dict[str, Any], verdict: str = "") -> str:
    """The Markdown summary of ``measure``'s result (``verdict`` after its ratios)."""
    ratios = (
        f"Stacked / one seed ({result['clock']}): {result['ratio_stack_to_one']:.2f}x"
        f"{verdict}."
    )
    if "ratio_separate_to_stack" in result:
        ratios += f" One by one / stacked: {result['ratio_separate_to_stack']:.2f}x."
    rows = "\n".join(
        f"| {k} | {result['wall_median'][k]:.2f} | {result['cpu_median'][k]:.2f} |"
        for k in result["wall_median"]
    )
    policy, env = result["policy"], result["env"]
    return "\n".join(
        [
            f"# {result['workload']}" + (" (quick)" if result["quick"] else ""),
            "",
            f"{policy['name']} {policy['params']} on {env['name']} {env['params']}, "
            + (
                f"variants {[tuple(v) for v in result['variants']]}, "
                if result.get("variants")
                else ""
            )
            + f"T={result['horizon']}, seeds {result['seeds']}; one thread; medians of "
            f"{result['reps']} interleaved repetitions.",
            "",
            "| case | wall s | CPU s |",
            "|---|---|---|",
            rows,
            "",
            ratios,
            f"Pairs equal to the separate runs': {result['same_pairs']:.1%}. "
            f"Load average after each repetition: {result['loadavg_per_rep']}.",
            "",
        ]
    )


def run(name: str, work: SeedBatch, quick: bool, out: Path) -> dict[str, Any]:
    """``measure`` on CPU seconds, written to ``out`` (a benchmark's ``main``)."""
    result = measure(name, work, quick, clock="cpu")
    write_outputs(out, result, table(result))
    return result
