"""Summaries: per (environment, policy) statistics over seeds, and ``summary.json``.

For each cell, every metric the environment declares (``core.records``; ``regret`` is R(t),
``average_regret`` R(t)/t, ...) is read per finished seed at the final round and at each of
the config's ``checkpoints``; the values give a mean, a standard deviation (n - 1 in the
denominator) and a Student-t confidence interval for the mean,

    mean +- t_{(1 + level) / 2, n - 1} * std / sqrt(n),

at the config's ``ci_level`` (0.95 by default); with a single seed the interval is the point
itself. The shaded bands of the figures use the same interval at every round, or one
standard deviation or standard error (the config's ``band``); see :func:`curve_band`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from banditkit.core.records import aggregate
from banditkit.experiments.runs import Cell, ResolvedExperiment
from banditkit.experiments.store import RunStore

__all__ = [
    "BANDS",
    "FEW_SEEDS",
    "CellRuns",
    "band_label",
    "collect",
    "curve_band",
    "metric_stats",
    "regret_halves",
    "summarize",
    "t_interval",
]

BANDS = ("t-ci", "std", "se")
"""Kinds of figure band: t-interval of the mean, one standard deviation, one standard error."""

FEW_SEEDS = 5
"""An interval from fewer seeds than this is labelled as such in figures and reports."""


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

    def curves(self, metric: str) -> list[np.ndarray]:
        """One curve per seed of a declared metric (entry t-1: its value at round t)."""
        record = self.cell.env.metrics[metric]
        return [
            aggregate(record, metric, np.asarray(t[record.name])) for t in self.tables
        ]

    def curve(self, metric: str) -> np.ndarray:
        """(n_seeds, T) matrix of a declared metric, truncated to the shortest run."""
        if not self.tables:
            return np.zeros((0, 0))
        curves = self.curves(metric)
        length = min(c.shape[0] for c in curves)
        return np.stack([c[:length] for c in curves])


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
    matrix: np.ndarray, level: float, kind: str = "t-ci"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-round mean and band bounds of a (n_seeds, T) matrix.

    Args:
        matrix: One row per seed.
        level: Confidence level of a ``t-ci`` band.
        kind: ``t-ci`` (Student-t interval of the mean), ``std`` (mean +- one standard
            deviation over seeds) or ``se`` (mean +- one standard error).

    Raises:
        ValueError: For an unknown ``kind``.
    """
    if kind not in BANDS:
        raise ValueError(f"kind must be one of {BANDS}; got {kind!r}.")
    mean = matrix.mean(axis=0)
    n = matrix.shape[0]
    if n < 2:
        return mean, mean.copy(), mean.copy()
    half = matrix.std(axis=0, ddof=1)
    if kind != "std":
        half = half / np.sqrt(n)
    if kind == "t-ci":
        from scipy import stats

        half = stats.t.ppf((1 + level) / 2, n - 1) * half
    return mean, mean - half, mean + half


def band_label(kind: str, level: float, n_seeds: int) -> str:
    """How a band is described in a figure, flagging intervals from few seeds.

    Example:
        >>> band_label("t-ci", 0.95, 3)
        'mean and 95% t-interval over seeds (fewer than 5 seeds: a rough interval)'
        >>> band_label("std", 0.95, 10)
        'mean +- one standard deviation over seeds'
    """
    text = {
        "t-ci": f"mean and {level:.0%} t-interval over seeds",
        "std": "mean +- one standard deviation over seeds",
        "se": "mean +- one standard error over seeds",
    }[kind]
    if kind != "std" and n_seeds < FEW_SEEDS:
        text += f" (fewer than {FEW_SEEDS} seeds: a rough interval)"
    return text


def metric_stats(
    values: Sequence[float], seeds: Sequence[int], level: float
) -> dict[str, Any]:
    """Mean, std, t-interval and per-seed values of one metric at one round.

    Example:
        >>> metric_stats([1.0, 3.0], [0, 1], 0.95)["std"]
        1.4142135623730951
    """
    arr = np.asarray(values, dtype=np.float64)
    n = arr.size
    nan = float("nan")
    return {
        "n": n,
        "mean": float(arr.mean()) if n else nan,
        "std": float(arr.std(ddof=1)) if n > 1 else (0.0 if n else nan),
        "ci": list(t_interval(arr, level)),
        "seeds": [int(s) for s in seeds],
        "per_seed": arr.tolist(),
    }


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


def _row(runs: CellRuns, level: float, checkpoints: Sequence[int]) -> dict[str, Any]:
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
        "metrics": _metrics(runs, level, checkpoints),
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
    """The ``summary.json`` mapping (docs/architecture.md section 7), without claims (see ``claims``).

    Besides the contract's keys, each result row has ``label`` (the policy's label),
    ``n_failed`` (runs without a result), ``final_reward_mean`` (sum of rewards),
    ``ctr_mean`` (sum of rewards / recorded rounds: clicks per accepted event on a replay),
    ``per_seed`` ({seed, final_regret, final_reward, ctr}: one list entry per finished
    seed, used by ``equal`` claims) and ``metrics``: every declared metric of the
    environment, ``{name: {"higher_is_better", "final": STATS, "checkpoints": {t: STATS}}}``
    with ``STATS = {"n", "mean", "std", "ci", "seeds", "per_seed"}`` (a checkpoint past the
    end of a run leaves that seed out). The top level has ``ci_level``, ``ci_method``,
    ``band``, ``checkpoints``, ``seeds`` and ``envs``: per environment label its family and
    its declared records (``{name: {dtype, description, aggregation, running_mean,
    higher_is_better, metrics, plot}}``), enough to redraw without building the environment.
    """
    from banditkit import __version__

    level = resolved.config.ci_level
    checkpoints = [t for t in resolved.config.checkpoints if t <= resolved.horizon]
    rows = [_row(runs, level, checkpoints) for runs in cells]
    return {
        "name": resolved.config.name,
        "horizon": resolved.horizon,
        "banditkit_version": __version__,
        "ci_level": level,
        "ci_method": "student-t interval of the mean over seeds",
        "band": resolved.config.band,
        "checkpoints": checkpoints,
        "seeds": resolved.seeds,
        "envs": {
            env.label: {
                "name": env.name,
                "family": env.family,
                "records": {
                    r.name: {
                        "dtype": r.dtype,
                        "description": r.description,
                        "aggregation": r.aggregation,
                        "running_mean": r.running_mean,
                        "higher_is_better": r.higher_is_better,
                        "metrics": list(r.metrics),
                        "plot": list(r.plot),
                    }
                    for r in env.records
                },
            }
            for env in resolved.envs
        },
        "results": rows,
    }
