"""Shared machinery of the speed benchmarks (the leading "_" keeps it out of discovery).

A reference workload runs one banditkit policy on one environment for several seeds, times
the bandit loop (the wall time of ``simulate``, one BLAS and one PyTorch thread), and
compares the mean time and the mean final regret with the numbers measured for the public
reference code. Each benchmark module imports it and calls :func:`compare_to_reference`
from its ``main``.
"""

from __future__ import annotations

import json
import math
import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

import banditkit as bk
from banditkit.core.simulate import RunResult, simulate
from banditkit.experiments.execute import single_threaded

SPEEDUP_BAR = 10.0
#: The bar of the identical-work variants (issue 16): at least 3x faster than the reference
#: doing the same refits and training steps.
IDENTICAL_WORK_BAR = 3.0

#: The logistic task of the Logistic-UCB-1 / ada-OFU-ECOLog reference runs (issue 5): d = 20,
#: K = 5 fresh arms per round uniform in the unit ball, theta* = (4 / sqrt(d)) * 1, Bernoulli
#: rewards mu(x^T theta*).
LOGISTIC_TASK_D = 20
LOGISTIC_TASK = {
    "h": "linear",
    "d": LOGISTIC_TASK_D,
    "n_arms": 5,
    "law": "unit-ball",
    "theta": 4.0 / math.sqrt(LOGISTIC_TASK_D),
}


@dataclass(frozen=True)
class Reference:
    """What the public reference code measured on the workload (issue 5).

    Attributes:
        seconds: Wall time of one run's bandit loop, one core.
        regret: Final cumulative regret as reported (median over its seeds for the
            neural tasks, the reported value for the logistic ones).
        statistic: "median" or "mean": which statistic ``regret`` is.
        code: The algorithm and its settings in the reference code.
    """

    seconds: float
    regret: float
    statistic: str
    code: str


@dataclass(frozen=True)
class Workload:
    """One policy on one environment for ``horizon`` rounds, against a reference."""

    name: str
    policy: str
    policy_params: dict[str, Any]
    env: str
    env_params: dict[str, Any]
    horizon: int
    reference: Reference
    chosen: str = ""  # how the policy's hyper-parameters were chosen
    extra: dict[str, Any] = field(default_factory=dict)
    bar: float = SPEEDUP_BAR  # speed-up asked of this variant over the reference


def identical_work(best: Workload, note: str, **params: Any) -> Workload:
    """The variant of ``best`` that does the reference code's work.

    Same task, network and exploration settings as ``best``; ``params`` override the
    ones that set the work (refit schedule ``update_every``, training ``steps``, width)
    to the reference's. Its bar is ``IDENTICAL_WORK_BAR``.
    """
    return replace(
        best,
        name=f"{best.name}_identical_work",
        policy_params={**best.policy_params, **params},
        chosen=note,
        bar=IDENTICAL_WORK_BAR,
    )


def work_done(agent: Any, horizon: int) -> dict[str, Any]:
    """The work of one run: refits, training steps and rows the refits read.

    ``refits`` is the policy's own count (``n_updates``). A refit after observation t
    reads the t rows of the history; ``refit_rows`` sums them over the refit rounds of
    the policy's ``update_every`` schedule. Neural policies take ``steps`` full-batch
    steps per refit, each reading every row: ``train_steps`` = refits * steps and
    ``rows_touched`` = refit_rows * steps (retries of a diverging refit,
    ``backtrack``, are not counted). Policies without ``steps`` (the logistic MLE
    refits, whose iteration count depends on the data) report ``train_steps`` and
    ``rows_touched`` as None.
    """
    refits = int(agent.n_updates)
    every = int(getattr(agent, "update_every", 1))
    rounds = [t for t in range(every, horizon + 1, every)][:refits]
    refit_rows = int(sum(rounds))
    steps = getattr(agent, "steps", None)
    return {
        "update_every": every,
        "refits": refits,
        "refit_rows": refit_rows,
        "steps_per_refit": None if steps is None else int(steps),
        "train_steps": None if steps is None else refits * int(steps),
        "rows_touched": None if steps is None else refit_rows * int(steps),
    }


def run_once(
    policy: str,
    policy_params: dict[str, Any],
    env: str,
    env_params: dict[str, Any],
    horizon: int,
    seed: int,
) -> tuple[float, RunResult]:
    """Build a fresh policy and environment and return (loop seconds, run)."""
    elapsed, run, _ = run_policy(policy, policy_params, env, env_params, horizon, seed)
    return elapsed, run


def run_policy(
    policy: str,
    policy_params: dict[str, Any],
    env: str,
    env_params: dict[str, Any],
    horizon: int,
    seed: int,
) -> tuple[float, RunResult, Any]:
    """``run_once`` that also returns the policy after the run (for ``work_done``)."""
    environment = bk.make_env(env, **env_params)
    agent = bk.make_policy(policy, seed=seed, **policy_params)
    started = time.perf_counter()
    run = simulate(agent, environment, horizon=horizon, seed=seed, progress=False)
    return time.perf_counter() - started, run, agent


def host() -> dict[str, Any]:
    """Where and under which load the numbers were taken."""
    try:
        load = list(os.getloadavg())
    except OSError:  # pragma: no cover - not on every platform
        load = []
    return {
        "machine": platform.machine(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "cpus": os.cpu_count(),
        "loadavg": load,
        "threads": 1,
    }


def _summary(values: list[float]) -> dict[str, float]:
    return {
        "mean": float(statistics.fmean(values)),
        "median": float(statistics.median(values)),
        "min": float(min(values)),
        "max": float(max(values)),
        "std": float(statistics.stdev(values)) if len(values) > 1 else 0.0,
    }


def compare_to_reference(
    workload: Workload,
    *,
    quick: bool,
    out: Path,
    seeds: int = 10,
    quick_seeds: int = 2,
    quick_horizon: int | None = None,
    log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Time ``workload`` over its seeds and compare with the reference; write out/.

    Quick mode runs ``quick_seeds`` seeds and, if ``quick_horizon`` is given, fewer rounds;
    then the reference time is scaled by quick_horizon / horizon (linear in T: generous
    to the reference for the neural tasks, whose cost per round grows with t) and
    ``regret_ok`` is None, as regrets of different horizons do not compare.

    Returns:
        The JSON-able result: per-seed ``seconds`` and ``regret``, their summaries, the
        reference, ``speedup`` (reference seconds / our mean seconds), ``bar`` (the
        workload's) and ``faster`` (speedup >= bar), ``faster_10x``, ``regret_ok``
        (our mean final regret <= the reference's) and ``work`` (``work_done``).
    """
    n_seeds = quick_seeds if quick else seeds
    horizon = quick_horizon if (quick and quick_horizon) else workload.horizon
    seconds: list[float] = []
    regrets: list[float] = []
    act_ms: list[float] = []
    update_ms: list[float] = []
    work: dict[str, Any] = {}
    with single_threaded():
        # Warm-up (not timed): loads the dataset into the process cache, imports lazily
        # imported modules and lets PyTorch allocate its first buffers.
        run_once(
            workload.policy,
            workload.policy_params,
            workload.env,
            workload.env_params,
            min(20, horizon),
            0,
        )
        for seed in range(n_seeds):
            elapsed, run, agent = run_policy(
                workload.policy,
                workload.policy_params,
                workload.env,
                workload.env_params,
                horizon,
                seed,
            )
            work = work_done(agent, horizon)  # the same for every seed
            seconds.append(elapsed)
            regrets.append(float(run.cumulative_regret[-1]))
            act_ms.append(1e3 * float(run.act_seconds.mean()))
            update_ms.append(1e3 * float(run.update_seconds.mean()))
            if log is not None:
                log(
                    f"{workload.name} seed {seed}: {elapsed:.3f} s, regret {regrets[-1]:.1f}"
                )
    ref = workload.reference
    ref_seconds = ref.seconds * horizon / workload.horizon
    time_stats = _summary(seconds)
    regret_stats = _summary(regrets)
    speedup = ref_seconds / time_stats["mean"]
    comparable = horizon == workload.horizon
    result: dict[str, Any] = {
        "workload": workload.name,
        "quick": quick,
        "policy": {"name": workload.policy, "params": workload.policy_params},
        "env": {"name": workload.env, "params": workload.env_params},
        "horizon": horizon,
        "seeds": list(range(n_seeds)),
        "seconds": seconds,
        "regret": regrets,
        "seconds_stats": time_stats,
        "regret_stats": regret_stats,
        "act_ms_mean": float(statistics.fmean(act_ms)),
        "update_ms_mean": float(statistics.fmean(update_ms)),
        "reference": {**asdict(ref), "seconds_at_horizon": ref_seconds},
        "speedup": speedup,
        "bar": workload.bar,
        "faster": bool(speedup >= workload.bar),
        "faster_10x": bool(speedup >= SPEEDUP_BAR),
        "work": work,
        "regret_ok": bool(regret_stats["mean"] <= ref.regret) if comparable else None,
        "chosen": workload.chosen,
        "host": host(),
        **workload.extra,
    }
    write_outputs(out, result, reference_table(result))
    return result


def reference_table(result: dict[str, Any]) -> str:
    """A small markdown table of one reference comparison."""
    ref = result["reference"]
    t, r = result["seconds_stats"], result["regret_stats"]
    regret_ok = result["regret_ok"]
    lines = [
        f"# {result['workload']}" + (" (quick)" if result["quick"] else ""),
        "",
        f"{result['policy']['name']} {json.dumps(result['policy']['params'])} on "
        f"{result['env']['name']} {json.dumps(result['env']['params'])}, "
        f"T={result['horizon']}, {len(result['seeds'])} seeds, one thread.",
        "",
        "| | seconds per run (mean / median) | final regret (mean / median) |",
        "|---|---|---|",
        f"| banditkit | {t['mean']:.3f} / {t['median']:.3f} | {r['mean']:.1f} / {r['median']:.1f} |",
        f"| reference | {ref['seconds_at_horizon']:.3f} | {ref['regret']:g} ({ref['statistic']}) |",
        "",
        f"Work per run: {_work_line(result['work'])}.",
        "",
        f"speed-up {result['speedup']:.1f}x (bar {result['bar']:g}x): "
        f"{'PASS' if result['faster'] else 'FAIL'}; "
        "regret <= reference: "
        + (
            "n/a (quick horizon)"
            if regret_ok is None
            else ("PASS" if regret_ok else "FAIL")
        ),
        "",
        f"Load average while measuring: {result['host']['loadavg']}.",
        "",
    ]
    return "\n".join(lines)


def _work_line(work: dict[str, Any]) -> str:
    line = (
        f"refit every {work['update_every']} rounds, {work['refits']} refits "
        f"reading {work['refit_rows']} rows in all"
    )
    if work.get("train_steps") is not None:
        line += (
            f", {work['steps_per_refit']} full-batch steps per refit: "
            f"{work['train_steps']} training steps touching {work['rows_touched']} rows"
        )
    return line


def compare_variants(
    best: Workload,
    same_work: Workload,
    *,
    quick: bool,
    out: Path,
    quick_horizon: int | None = None,
) -> dict[str, Any]:
    """Run the best-settings workload and its identical-work variant; write out/.

    ``out/result.json`` and ``result.md`` hold the best-settings comparison (its keys
    unchanged) with the identical-work one under ``"identical_work"``; each variant
    also writes its own files in ``out/best`` and ``out/identical_work``.

    Returns:
        The best-settings result with ``"identical_work"``: the other's result.
    """
    kwargs: dict[str, Any] = {"quick": quick, "quick_horizon": quick_horizon}
    result = compare_to_reference(best, out=Path(out) / "best", **kwargs)
    other = compare_to_reference(same_work, out=Path(out) / "identical_work", **kwargs)
    combined = {**result, "identical_work": other}
    table = "\n".join(
        [
            reference_table(result),
            "## Identical work: the reference's refit schedule and training steps",
            "",
            reference_table(other).split("\n", 2)[2],
        ]
    )
    write_outputs(out, combined, table)
    return combined


def write_outputs(out: Path, result: dict[str, Any], table: str) -> None:
    """Write result.json and result.md into ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "result.json").write_text(json.dumps(result, indent=2, default=str) + "\n")
    (out / "result.md").write_text(table)
