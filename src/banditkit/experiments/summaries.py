"""Summaries: per (environment, policy) statistics over seeds, and ``summary.json``.

For each cell the final cumulative regret of every finished seed gives its mean, its standard
deviation (n - 1 in the denominator) and a Student-t confidence interval for the mean,

    mean +- t_{(1 + level) / 2, n - 1} * std / sqrt(n),

at the config's ``ci_level`` (0.95 by default); with a single seed the interval is the point
itself. The shaded bands of the figures use the same interval at every round.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from banditkit.experiments.claims import evaluate_claims
from banditkit.experiments.resolve import Cell, ResolvedExperiment
from banditkit.experiments.store import RunStore

__all__ = [
    "CellRuns",
    "collect",
    "curve_band",
    "regret_halves",
    "summarize",
    "t_interval",
]


@dataclass
class CellRuns:
    """The stored runs of one (environment, policy) cell."""

    cell: Cell
    seeds: list[int] = field(default_factory=list)
    run_ids: list[str] = field(default_factory=list)
    tables: list[Any] = field(default_factory=list)
    metas: list[dict[str, Any]] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    def column(self, name: str) -> np.ndarray:
        """(n_seeds, T) matrix of one column, truncated to the shortest run."""
        if not self.tables:
            return np.zeros((0, 0))
        length = min(len(t) for t in self.tables)
        return np.stack(
            [np.asarray(t[name], dtype=np.float64)[:length] for t in self.tables]
        )


def collect(resolved: ResolvedExperiment, store: RunStore) -> list[CellRuns]:
    """Load the finished runs of every cell (missing or failed runs are listed as failed)."""
    out = []
    for cell in resolved.cells:
        runs = CellRuns(cell)
        for spec in cell.runs(resolved.seeds, resolved.horizon):
            rid = spec.id
            if store.is_finished(rid):
                runs.seeds.append(spec.seed)
                runs.run_ids.append(rid)
                runs.tables.append(store.read_table(rid))
                runs.metas.append(store.read_meta(rid))
            else:
                runs.failed.append(rid)
        out.append(runs)
    return out


def t_interval(
    values: Sequence[float] | np.ndarray, level: float
) -> tuple[float, float]:
    """Student-t confidence interval of the mean of ``values`` at ``level``.

    Example:
        >>> lo, hi = t_interval([1.0, 2.0, 3.0], 0.95)
        >>> round(lo, 3), round(hi, 3)
        (-0.484, 4.484)
        >>> t_interval([2.0], 0.95)
        (2.0, 2.0)
    """
    arr = np.asarray(values, dtype=np.float64)
    if arr.size == 0:
        return (float("nan"), float("nan"))
    mean = float(arr.mean())
    if arr.size == 1:
        return (mean, mean)
    from scipy import stats

    half = float(
        stats.t.ppf((1 + level) / 2, arr.size - 1) * arr.std(ddof=1) / np.sqrt(arr.size)
    )
    return (mean - half, mean + half)


def curve_band(
    matrix: np.ndarray, level: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-round mean and t-interval bounds of a (n_seeds, T) matrix."""
    mean = matrix.mean(axis=0)
    n = matrix.shape[0]
    if n < 2:
        return mean, mean.copy(), mean.copy()
    from scipy import stats

    half = stats.t.ppf((1 + level) / 2, n - 1) * matrix.std(axis=0, ddof=1) / np.sqrt(n)
    return mean, mean - half, mean + half


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


def _row(runs: CellRuns, level: float) -> dict[str, Any]:
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
    return {
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
        "per_seed": {
            "seed": list(runs.seeds),
            "final_regret": final.tolist(),
            "final_reward": rewards.tolist(),
            "ctr": ctr.tolist(),
        },
    }


def summarize(
    resolved: ResolvedExperiment, cells: Sequence[CellRuns]
) -> dict[str, Any]:
    """The ``summary.json`` mapping (DESIGN.md section 7), claims included when configured.

    Besides the contract's keys, each result row has ``label`` (the policy's label),
    ``n_failed`` (runs without a result), ``final_reward_mean`` (sum of rewards),
    ``ctr_mean`` (sum of rewards / recorded rounds: clicks per accepted event on a replay)
    and ``per_seed`` ({seed, final_regret, final_reward, ctr}: one list entry per finished
    seed, used by ``equal`` claims), and the top level has ``ci_level``, ``ci_method`` and
    ``seeds``.
    """
    from banditkit import __version__

    level = resolved.config.ci_level
    rows = [_row(runs, level) for runs in cells]
    summary: dict[str, Any] = {
        "name": resolved.config.name,
        "horizon": resolved.horizon,
        "banditkit_version": __version__,
        "ci_level": level,
        "ci_method": "student-t interval of the mean over seeds",
        "seeds": resolved.seeds,
        "results": rows,
    }
    if resolved.config.claims:
        summary["claims"] = evaluate_claims(
            resolved.config.claims, rows, regret_halves(cells)
        )
    return summary
