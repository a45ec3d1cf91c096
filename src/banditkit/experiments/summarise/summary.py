"""The summarise stage: per (environment, policy) statistics over seeds, and ``summary.json``.

For each cell, every metric the environment declares (``core.records``; ``regret`` is R(t),
``average_regret`` R(t)/t, ...) is read per finished seed at the final round and at each of
the config's ``checkpoints``; the values give a mean, a standard deviation and a Student-t
interval of the mean at the config's ``ci_level`` (``summarise.stats``). :func:`summarise`
then decides the config's claims on the rows (``summarise.claims``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import numpy as np

from banditkit.core import make_policy
from banditkit.experiments.config.resolved import ResolvedExperiment
from banditkit.experiments.store.runs import CellRuns
from banditkit.experiments.store.tables import record_fields
from banditkit.experiments.summarise.claims.decide import evaluate_claims
from banditkit.experiments.summarise.stats import metric_stats, t_interval

__all__ = ["regret_halves", "summarise", "summarize", "warmup_of"]


def _metrics(
    runs: CellRuns, level: float, checkpoints: Sequence[int]
) -> dict[str, Any]:
    """Metric -> {higher_is_better, final, checkpoints: {t: stats}} for one cell."""
    out: dict[str, Any] = {}
    for metric, record in runs.cell.env.metrics.items():
        curves = list(zip(runs.seeds, runs.curves(metric), strict=True))
        final = [(s, float(c[-1])) for s, c in curves if c.size]
        at = {}
        for t in checkpoints:
            reached = [(s, float(c[t - 1])) for s, c in curves if c.size >= t]
            at[str(t)] = _stats(reached, level)
        out[metric] = {
            "higher_is_better": record.higher_is_better,
            "final": _stats(final, level),
            "checkpoints": at,
        }
    return out


def _stats(pairs: list[tuple[int, float]], level: float) -> dict[str, Any]:
    return metric_stats([v for _, v in pairs], [s for s, _ in pairs], level)


def regret_halves(
    cells: Sequence[CellRuns],
) -> dict[tuple[str, str], tuple[float, float]]:
    """(env label, policy label) -> (R(T/2), R(T)) of the mean cumulative regret curve."""
    out = {}
    for runs in cells:
        if not runs.tables:
            continue
        curve = runs.column("cumulative_regret").mean(axis=0)
        half = max(len(curve) // 2, 1)
        out[(runs.cell.env.label, runs.cell.policy.label)] = (
            float(curve[half - 1]),
            float(curve[-1]),
        )
    return out


def warmup_of(name: str, params: Mapping[str, Any], horizon: int) -> int | None:
    """Rounds of a run of ``horizon`` rounds that policy ``name`` plays in warm-up.

    ``Policy.warmup_rounds`` of the policy built with ``params``; None when it cannot be
    built here (a policy registered by a module this process did not import).
    """
    try:
        return int(make_policy(name, **params).warmup_rounds(horizon))
    except (KeyError, TypeError, ValueError):
        return None


def _row(
    runs: CellRuns, level: float, checkpoints: Sequence[int], horizon: int
) -> dict[str, Any]:
    cell = runs.cell
    n = len(runs.tables)
    final = np.array([m["final_regret"] for m in runs.metas], dtype=np.float64)
    seconds = np.array([m["seconds"] for m in runs.metas], dtype=np.float64)
    updates = np.array([m["n_updates"] for m in runs.metas], dtype=np.float64)
    rewards = np.array(
        [np.asarray(t["reward"], dtype=np.float64).sum() for t in runs.tables]
    )
    lengths = np.array([len(t) for t in runs.tables], dtype=np.float64)
    ctr = rewards / np.maximum(lengths, 1.0)
    nan = float("nan")
    row: dict[str, Any] = {
        "env": cell.env.label,
        "policy": cell.policy.name,
        "label": cell.policy.label,
        "params": cell.params,
        "n_seeds": n,
        "final_regret_mean": float(final.mean()) if n else nan,
        "final_regret_std": float(final.std(ddof=1)) if n > 1 else (0.0 if n else nan),
        "final_regret_ci": list(t_interval(final, level)),
        "seconds_mean": float(seconds.mean()) if n else nan,
        "n_updates_mean": float(updates.mean()) if n else nan,
        "final_reward_mean": float(rewards.mean()) if n else nan,
        "ctr_mean": float(ctr.mean()) if n else nan,
        "n_failed": len(runs.failed),
        "metrics": _metrics(runs, level, checkpoints),
        "per_seed": {
            "seed": list(runs.seeds),
            "final_regret": final.tolist(),
            "final_reward": rewards.tolist(),
            "ctr": ctr.tolist(),
        },
    }
    # only a warm-up there is: a plugin policy this process cannot build reads as none,
    # so a summary rewritten without the plugin keeps the same rows
    warmup = warmup_of(cell.policy.name, cell.params, horizon)
    if warmup:
        row["warmup"] = warmup
    return row


def summarize(
    resolved: ResolvedExperiment, cells: Sequence[CellRuns]
) -> dict[str, Any]:
    """The ``summary.json`` mapping (docs/architecture.md section 7), without claims.

    Besides the contract's keys, each result row has ``label`` (the policy's label),
    ``n_failed`` (runs without a result), ``final_reward_mean`` (sum of rewards),
    ``ctr_mean`` (sum of rewards / recorded rounds: clicks per accepted event on a replay),
    ``warmup`` (rounds of the run the policy plays in warm-up, :func:`warmup_of`; only when
    there are some),
    ``per_seed`` ({seed, final_regret, final_reward, ctr}: one list entry per finished
    seed, used by ``equal`` claims) and ``metrics``: every declared metric of the
    environment, ``{name: {"higher_is_better", "final": STATS, "checkpoints": {t: STATS}}}``
    with ``STATS = {"n", "mean", "std", "ci", "seeds", "per_seed"}`` (a checkpoint past the
    end of a run leaves that seed out). The top level has ``ci_level``, ``ci_method``,
    ``band``, ``checkpoints``, ``seeds`` and ``envs``: per environment label its family and
    its declared records (``{name: {dtype, description, aggregation, running_mean,
    higher_is_better, metrics, plot}}``), enough to redraw without building the environment.
    """
    level = resolved.config.ci_level
    checkpoints = [t for t in resolved.config.checkpoints if t <= resolved.horizon]
    rows = [_row(runs, level, checkpoints, resolved.horizon) for runs in cells]
    return {
        "name": resolved.config.name,
        "horizon": resolved.horizon,
        "banditkit_version": _banditkit_version(),
        "ci_level": level,
        "ci_method": "student-t interval of the mean over seeds",
        "band": resolved.config.band,
        "checkpoints": checkpoints,
        "seeds": resolved.seeds,
        "envs": {
            env.label: {
                "name": env.name,
                "family": env.family,
                "records": {r.name: record_fields(r) for r in env.records},
            }
            for env in resolved.envs
        },
        "results": rows,
    }


def summarise(
    resolved: ResolvedExperiment, cells: Sequence[CellRuns]
) -> dict[str, Any]:
    """The stage: the ``summary.json`` mapping, then its claims decided on it.

    Args:
        resolved: The experiment.
        cells: Its stored runs (``store.runs.collect``).

    Returns:
        :func:`summarize`'s mapping, with ``claims`` (``summarise.claims``) when the config
        states any.
    """
    summary = summarize(resolved, cells)
    if resolved.config.claims:
        summary["claims"] = evaluate_claims(
            resolved.config.claims,
            summary["results"],
            regret_halves(cells),
            level=resolved.config.ci_level,
            horizon=resolved.horizon,
        )
    return summary


def _banditkit_version() -> str:
    """The version of the installed banditkit (what ``banditkit.__version__`` says)."""
    try:
        return version("banditkit")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0.0.0+unknown"
