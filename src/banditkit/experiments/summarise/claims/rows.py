"""Reading claims' numbers from ``summary.json`` result rows: means and per-seed values.

A row is one (environment, policy) cell of a summary (``summarise.summary``). A claim's
``metric`` is either a declared metric (read from the row's ``metrics``, at the final round or
at a checkpoint ``at``) or one of the first version's names (``config.claims.LEGACY_METRICS``:
read from the row's ``<name>_mean`` and ``per_seed`` entries). ``claims.decide`` decides
claims on these numbers, ``claims.evidence`` pairs their per-seed values.

Example:
    >>> rows = [{"env": "e", "label": "a", "final_regret_mean": 2.0,
    ...          "per_seed": {"seed": [0, 1], "final_regret": [1.0, 3.0]}}]
    >>> metric_value(find_row(rows, "e", "a"), "final_regret")
    2.0
    >>> per_seed_values(rows, "e", "a", "final_regret")
    {0: 1.0, 1: 3.0}
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from banditkit.experiments.config.claims import (
    HIGHER_IS_BETTER,
    LEGACY_METRICS,
    declared_metric,
)

__all__ = [
    "find_row",
    "higher_is_better",
    "metric_value",
    "per_seed_values",
    "row_value",
]


def find_row(
    rows: Sequence[Mapping[str, Any]], env: str, label: str
) -> Mapping[str, Any] | None:
    """The result row of policy ``label`` on environment ``env`` (None when absent)."""
    for row in rows:
        if row["env"] == env and row["label"] == label:
            return row
    return None


def row_value(row: Mapping[str, Any] | None, key: str) -> float:
    """``row[key]`` as a float (NaN when the row or the key is missing or null)."""
    if row is None or row.get(key) is None:
        return math.nan
    return float(row[key])


def _stats(
    row: Mapping[str, Any] | None, metric: str, at: int | None
) -> Mapping[str, Any]:
    """The summary statistics of a declared metric at round ``at`` (None: final)."""
    entry = ((row or {}).get("metrics") or {}).get(metric) or {}
    if at is None:
        return entry.get("final") or {}
    return (entry.get("checkpoints") or {}).get(str(at)) or {}


def metric_value(
    row: Mapping[str, Any] | None, metric: str, at: int | None = None
) -> float:
    """Mean over seeds of ``metric`` in a summary row (NaN when absent).

    Example:
        >>> metric_value({"final_regret_mean": 2.0}, "final_regret")
        2.0
        >>> row = {"metrics": {"regret": {"checkpoints": {"10": {"mean": 1.5}}}}}
        >>> metric_value(row, "regret", 10), metric_value(row, "regret", 20)
        (1.5, nan)
    """
    name = declared_metric(metric, at)
    if name is None:
        return row_value(row, LEGACY_METRICS[metric][0])
    return row_value(_stats(row, name, at), "mean")


def higher_is_better(rows: Sequence[Mapping[str, Any]], metric: str) -> bool:
    """Whether a higher ``metric`` is better (a legacy name, or as a row declares it)."""
    if metric in LEGACY_METRICS:
        return metric in HIGHER_IS_BETTER
    for row in rows:
        entry = (row.get("metrics") or {}).get(metric)
        if entry is not None:
            return bool(entry.get("higher_is_better", False))
    return False


def per_seed_values(
    rows: Sequence[Mapping[str, Any]],
    env: str,
    label: str,
    metric: str,
    at: int | None = None,
    *,
    declared_fallback: bool = False,
) -> dict[int, float]:
    """Seed -> value of ``metric`` (at round ``at``; None: final) of one cell's seeds.

    Empty when the row or its per-seed values are missing: a row's ``per_seed`` has no
    legacy ``seconds`` nor ``n_updates``; with ``declared_fallback`` a legacy name missing
    there is read from the declared metric it stands for (``n_updates``), when it has one.

    Example:
        >>> stats = {"seeds": [0, 1], "per_seed": [4.0, 6.0]}
        >>> rows = [{"env": "e", "label": "a", "per_seed": {"seed": [0, 1]},
        ...          "metrics": {"n_updates": {"final": stats}}}]
        >>> per_seed_values(rows, "e", "a", "n_updates")
        {}
        >>> per_seed_values(rows, "e", "a", "n_updates", declared_fallback=True)
        {0: 4.0, 1: 6.0}
    """
    row = find_row(rows, env, label)
    name = declared_metric(metric, at)
    per_seed = (row or {}).get("per_seed") or {}
    if name is None and declared_fallback and metric not in per_seed:
        name = LEGACY_METRICS[metric][1]
    if name is None:
        seeds = per_seed.get("seed") or []
        values = per_seed.get(metric) or []
    else:
        stats = _stats(row, name, at)
        seeds, values = stats.get("seeds") or [], stats.get("per_seed") or []
    return {int(s): float(v) for s, v in zip(seeds, values, strict=False)}
