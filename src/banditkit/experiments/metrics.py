"""Per-round metrics drawn as figures, and the registry that makes them pluggable.

A :class:`Metric` turns one run's stored table (the Parquet columns ``t``, ``regret``,
``reward``, ``cumulative_regret``, ``act_seconds``, ``update_seconds``, ``n_updates``,
``events_read``) into one value per round, and says for which environments it is drawn
automatically. Every experiment gets the cumulative regret figure; the family metrics are

    name               drawn for                         value at round t
    average-regret     dueling environments              R(t) / t
    n-updates          rare-update environments (rare-*) parameter updates so far
    cumulative-reward  replay environments (*-replay)    sum of rewards so far
    ctr                replay environments (*-replay)    sum of rewards / accepted rounds

A config may ask for any registered metric on every environment with ``metrics: [name]``.
New metrics register with :func:`register_metric`::

    register_metric(Metric("my-metric", "My metric", "value", lambda df: ...,
                           applies=lambda env_name, family: family == "assortment"))
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["METRICS", "Metric", "metrics_for", "register_metric"]


def _never(env_name: str, family: str) -> bool:
    return False


@dataclass(frozen=True)
class Metric:
    """A per-round quantity computed from a run's table.

    Attributes:
        name: Registry key and figure file prefix.
        title: Figure title prefix.
        ylabel: Y-axis label.
        compute: Table (a pandas DataFrame) -> array with one value per round.
        applies: (env registry name, family) -> drawn automatically for that environment.
    """

    name: str
    title: str
    ylabel: str
    compute: Callable[[Any], np.ndarray]
    applies: Callable[[str, str], bool] = _never


METRICS: dict[str, Metric] = {}
"""Registered metrics by name."""


def register_metric(metric: Metric) -> Metric:
    """Add ``metric`` to :data:`METRICS` (names must be new)."""
    if metric.name in METRICS and METRICS[metric.name] is not metric:
        raise ValueError(f"metric {metric.name!r} is already registered.")
    METRICS[metric.name] = metric
    return metric


def metrics_for(
    env_name: str, family: str, extra: list[str] | None = None
) -> list[Metric]:
    """The metrics drawn for an environment: those that apply, then those asked for.

    Example:
        >>> [m.name for m in metrics_for("dueling", "dueling")]
        ['average-regret']
        >>> [m.name for m in metrics_for("linear", "contextual", ["n-updates"])]
        ['n-updates']
    """
    chosen = [m for m in METRICS.values() if m.applies(env_name, family)]
    for name in extra or []:
        if METRICS[name] not in chosen:
            chosen.append(METRICS[name])
    return chosen


def _rounds(df: Any) -> np.ndarray:
    return np.asarray(df["t"], dtype=np.float64)


register_metric(
    Metric(
        "average-regret",
        "Average regret R(t)/t",
        "R(t) / t",
        lambda df: np.asarray(df["cumulative_regret"], dtype=np.float64) / _rounds(df),
        applies=lambda env_name, family: family == "dueling",
    )
)
register_metric(
    Metric(
        "n-updates",
        "Parameter updates",
        "updates so far",
        lambda df: np.asarray(df["n_updates"], dtype=np.float64),
        applies=lambda env_name, family: env_name.startswith("rare-"),
    )
)
register_metric(
    Metric(
        "cumulative-reward",
        "Cumulative reward",
        "reward so far",
        lambda df: np.cumsum(np.asarray(df["reward"], dtype=np.float64)),
        applies=lambda env_name, family: env_name.endswith("-replay"),
    )
)
register_metric(
    Metric(
        "ctr",
        "Click-through rate",
        "CTR (reward / accepted rounds)",
        lambda df: np.cumsum(np.asarray(df["reward"], dtype=np.float64)) / _rounds(df),
        applies=lambda env_name, family: env_name.endswith("-replay"),
    )
)
