"""Which figures an environment gets, and the registry of extra (derived) figure metrics.

The figures of an environment follow from its declared records (``core.records``): each
record lists in ``plot`` which of its metrics are drawn for every environment declaring it
(the cumulative regret ``regret`` everywhere but on a replay, ``average_regret`` R(t)/t for
duels, ``reward`` and ``average_reward`` (the click-through rate) for a replay). A config
adds figures with ``metrics: [name, ...]``: any metric its environments declare
(``n_updates``, ``weak_regret``, ...) or a figure metric registered here.

A registered :class:`Metric` turns one run's stored table (a pandas DataFrame with the
columns ``t``, the declared records and ``cumulative_regret``) into one value per round;
use it for a quantity that combines columns::

    register_metric(Metric("regret-per-update", "Regret per update", "R(t) / updates",
                           lambda df: df["cumulative_regret"] / df["n_updates"].clip(1)))

A value recorded per round belongs in the environment's records instead (one place).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from banditkit.core.records import Record

__all__ = ["METRICS", "Metric", "figures_for", "register_metric"]


@dataclass(frozen=True)
class Metric:
    """A per-round figure quantity computed from a run's table.

    Attributes:
        name: Registry key and figure file prefix.
        title: Figure title prefix.
        ylabel: Y-axis label.
        compute: Table (a pandas DataFrame) -> array with one value per round.
    """

    name: str
    title: str
    ylabel: str
    compute: Callable[[Any], np.ndarray]


METRICS: dict[str, Metric] = {}
"""Registered figure metrics by name."""


def register_metric(metric: Metric) -> Metric:
    """Add ``metric`` to :data:`METRICS` (names must be new)."""
    if metric.name in METRICS and METRICS[metric.name] is not metric:
        raise ValueError(f"metric {metric.name!r} is already registered.")
    METRICS[metric.name] = metric
    return metric


def figures_for(records: Sequence[Record], extra: Sequence[str] = ()) -> list[str]:
    """The metrics drawn for an environment: those its records plot, then ``extra``.

    Example:
        >>> from banditkit.core import DuelingEnvironment
        >>> figures_for(DuelingEnvironment.declared_records(), ["weak_regret"])
        ['regret', 'average_regret', 'weak_regret']
    """
    chosen = [m for r in records for m in r.plot]
    for name in extra:
        if name not in chosen:
            chosen.append(name)
    return chosen
