"""Declared per-round records: what a run stores, summarises, checks and draws.

Every environment declares the values recorded each round as a tuple of :class:`Record`
(``Environment.records``, gathered along its class hierarchy by
``Environment.declared_records``). ``simulate`` fills them, the Parquet store writes exactly
these columns, and summaries, claims, figures and reports read them from the same declaration,
so a new metric is added in one place.

A record's *aggregation* says how its per-round values x_1..x_T become one value at round t:

    aggregation  value at round t              for example
    sum          x_1 + ... + x_t                regret -> R(t), reward, act_seconds
    last         x_t (already a running count)  n_updates, events_read
    mean         (x_1 + ... + x_t) / t          a rate recorded per round
    none         not summarised (stored only)   the action, its propensity, a chosen item

A ``sum`` record with ``running_mean`` also gives the metric ``average_<name>``,
(x_1 + ... + x_t) / t: R(t)/t for the regret, the click-through rate for a replay's reward.
``plot`` names the metrics of the record drawn in every experiment of the environment.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

import numpy as np

__all__ = [
    "AGGREGATIONS",
    "DTYPES",
    "LOOP_RECORDS",
    "Aggregation",
    "Record",
    "aggregate",
    "merge_records",
    "metric_names",
]

Aggregation: TypeAlias = Literal["sum", "last", "mean", "none"]
AGGREGATIONS: tuple[str, ...] = ("sum", "last", "mean", "none")
DTYPES: tuple[str, ...] = ("float64", "int64", "bool", "list<int64>")
"""Column types: scalars, or a list of ints (a dueling pair, an assortment)."""


@dataclass(frozen=True)
class Record:
    """One value recorded every round of a run.

    Args:
        name: Column name (snake_case); also the metric name of its aggregate.
        dtype: One of :data:`DTYPES`.
        description: What the value is, with its unit or definition.
        aggregation: How per-round values become a value at round t (module docstring).
        running_mean: ``sum`` only: also provide ``average_<name>`` = sum / t.
        higher_is_better: Direction of the metric (for rankings in claims).
        plot: Metric names of this record (``name``, ``average_<name>``) drawn for every
            environment that declares it.

    Raises:
        ValueError: For a malformed name, an unknown dtype or aggregation, or a plot that
            names a metric the record does not have.

    Example:
        >>> r = Record("regret", description="pseudo-regret", running_mean=True)
        >>> r.metrics
        ('regret', 'average_regret')
    """

    name: str
    dtype: str = "float64"
    description: str = ""
    aggregation: Aggregation = "sum"
    running_mean: bool = False
    higher_is_better: bool = False
    plot: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.name.isidentifier() or self.name != self.name.lower():
            raise ValueError(
                f"name must be a snake_case identifier; got {self.name!r}."
            )
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {DTYPES}; got {self.dtype!r}.")
        if self.aggregation not in AGGREGATIONS:
            raise ValueError(
                f"aggregation must be one of {AGGREGATIONS}; got {self.aggregation!r}."
            )
        if self.running_mean and self.aggregation != "sum":
            raise ValueError("running_mean needs aggregation 'sum'.")
        if self.aggregation != "none" and self.dtype == "list<int64>":
            raise ValueError(
                "a list column cannot be aggregated; use aggregation 'none'."
            )
        object.__setattr__(self, "plot", tuple(self.plot))
        unknown = [p for p in self.plot if p not in self.metrics]
        if unknown:
            raise ValueError(
                f"plot names {unknown} but record {self.name!r} has metrics {self.metrics}."
            )

    @property
    def metrics(self) -> tuple[str, ...]:
        """The summary metrics this record gives (none for ``aggregation='none'``)."""
        if self.aggregation == "none":
            return ()
        if self.running_mean:
            return (self.name, f"average_{self.name}")
        return (self.name,)

    @property
    def numpy_dtype(self) -> type[np.generic] | None:
        """The NumPy scalar type of the column (None for list columns)."""
        return {"float64": np.float64, "int64": np.int64, "bool": np.bool_}.get(
            self.dtype
        )


LOOP_RECORDS: tuple[Record, ...] = (
    Record(
        "regret",
        description="expected (pseudo-)regret of the round's action, the family's definition",
        running_mean=True,
        plot=("regret",),
    ),
    Record(
        "reward",
        description="realised reward of the round",
        running_mean=True,
        higher_is_better=True,
    ),
    Record("act_seconds", description="wall time of policy.act (seconds)"),
    Record("update_seconds", description="wall time of policy.update (seconds)"),
    Record(
        "n_updates",
        dtype="int64",
        aggregation="last",
        description="parameter re-estimations of the policy so far",
    ),
    Record(
        "events_read",
        dtype="int64",
        aggregation="last",
        description="environment rounds read so far, accepted or not (log events of a replay)",
    ),
    Record(
        "propensity",
        aggregation="none",
        description="probability with which the policy chose its action (NaN: unknown)",
    ),
)
"""Records ``simulate`` fills itself for every environment; ``action`` is family-declared."""


def merge_records(groups: Iterable[Sequence[Record]]) -> tuple[Record, ...]:
    """Concatenate record groups; a later record of the same name replaces an earlier one.

    The order of first appearance is kept, so a subclass can re-declare a record (to plot it
    differently, say) without moving its column.

    Example:
        >>> a, b = Record("x"), Record("x", plot=("x",))
        >>> merge_records([(a, Record("y")), (b,)])[0].plot
        ('x',)
    """
    merged: dict[str, Record] = {}
    for group in groups:
        for record in group:
            merged[record.name] = record
    return tuple(merged.values())


def metric_names(records: Sequence[Record]) -> dict[str, Record]:
    """Every metric of ``records`` -> the record it comes from.

    Example:
        >>> sorted(metric_names(LOOP_RECORDS))[:3]
        ['act_seconds', 'average_regret', 'average_reward']
    """
    return {m: r for r in records for m in r.metrics}


def aggregate(record: Record, metric: str, values: np.ndarray) -> np.ndarray:
    """The metric's curve over rounds: entry t-1 is its value at round t.

    Raises:
        ValueError: If ``metric`` is not a metric of ``record``.

    Example:
        >>> r = Record("regret", running_mean=True)
        >>> aggregate(r, "average_regret", np.array([1.0, 0.0, 2.0])).tolist()
        [1.0, 0.5, 1.0]
    """
    if metric not in record.metrics:
        raise ValueError(
            f"metric must be one of {record.metrics} for record {record.name!r}; "
            f"got {metric!r}."
        )
    x = np.asarray(values, dtype=np.float64)
    if record.aggregation == "last":
        return x
    total = np.cumsum(x)
    if record.aggregation == "mean" or metric != record.name:
        return total / np.arange(1, x.shape[0] + 1)
    return total
