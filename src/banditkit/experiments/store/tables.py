"""The table of one run: its columns and their Arrow types (docs/experiments.md, section 3).

A run's table has ``t``, the environment's declared records in order (``core.records``), and
``cumulative_regret``; :func:`arrow_table` builds exactly those columns with their declared
types, so a column is never added or dropped silently.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from banditkit.core.environment import ContextualEnvironment
from banditkit.core.records import Record

__all__ = [
    "COLUMNS",
    "CONTEXTUAL_RECORDS",
    "DERIVED_COLUMNS",
    "TIMING_COLUMNS",
    "arrow_table",
    "record_fields",
    "stored_record",
    "table_columns",
]

DERIVED_COLUMNS = ("t", "cumulative_regret")
"""Columns every table has besides the declared records: the round and R(t)."""


def table_columns(records: Sequence[Record]) -> tuple[str, ...]:
    """The columns of a run's table: ``t``, the declared records in order, ``cumulative_regret``.

    Example:
        >>> table_columns([Record("regret"), Record("chosen", dtype="int64",
        ...                aggregation="none")])
        ('t', 'regret', 'chosen', 'cumulative_regret')
    """
    return (DERIVED_COLUMNS[0], *(r.name for r in records), DERIVED_COLUMNS[1])


CONTEXTUAL_RECORDS: tuple[Record, ...] = ContextualEnvironment.declared_records()
"""The declaration of a plain contextual environment (the default of ``write_run``)."""

COLUMNS = table_columns(CONTEXTUAL_RECORDS)
"""Columns of a contextual run's table (other families and environments add theirs)."""


def _arrow_type(dtype: str) -> Any:
    import pyarrow as pa

    return {
        "float64": pa.float64(),
        "int64": pa.int64(),
        "bool": pa.bool_(),
        "list<int64>": pa.list_(pa.int64()),
    }[dtype]


def arrow_table(columns: Mapping[str, Any], records: Sequence[Record]) -> Any:
    """A pyarrow table of exactly the declared columns, each of its declared type.

    Raises:
        ValueError: If a column is missing, or not declared (never dropped silently).
    """
    import pyarrow as pa

    names = table_columns(records)
    undeclared = sorted(set(columns) - set(names))
    missing = [n for n in names if n not in columns]
    if undeclared or missing:
        raise ValueError(
            f"columns must be exactly the declared records {list(names)}; undeclared: "
            f"{undeclared}, missing: {missing} (declare a record on the environment)."
        )
    types = {"t": "int64", "cumulative_regret": "float64"}
    types.update({r.name: r.dtype for r in records})
    arrays = {}
    for name in names:
        kind = _arrow_type(types[name])
        values = columns[name]
        if types[name] == "list<int64>":
            values = [[int(i) for i in a] for a in values]
        else:
            values = np.asarray(values)
        arrays[name] = pa.array(values, type=kind)
    return pa.table(arrays)


TIMING_COLUMNS = ("act_seconds", "update_seconds")
"""Columns of wall times (they differ between two computations of the same run)."""


def record_fields(record: Record) -> dict[str, Any]:
    """A declared record as the stored files keep it (``summary.json``, ``cells.json``).

    Example:
        >>> record_fields(Record("regret", running_mean=True))["metrics"]
        ['regret', 'average_regret']
    """
    return {
        "dtype": record.dtype,
        "description": record.description,
        "aggregation": record.aggregation,
        "running_mean": record.running_mean,
        "higher_is_better": record.higher_is_better,
        "metrics": list(record.metrics),
        "plot": list(record.plot),
    }


def stored_record(
    name: str, fields: Mapping[str, Any], higher: Mapping[str, bool] | None = None
) -> Record:
    """The record of :func:`record_fields` read back.

    A ``summary.json`` written before records kept ``running_mean`` and
    ``higher_is_better`` gives them through the record's metric names and the result rows
    (``higher``: metric -> higher is better).

    Example:
        >>> r = Record("reward", running_mean=True, higher_is_better=True)
        >>> stored_record("reward", record_fields(r)) == r
        True
    """
    metrics = list(fields.get("metrics") or [])
    higher = higher or {}
    return Record(
        name,
        dtype=str(fields.get("dtype", "float64")),
        description=str(fields.get("description", "")),
        aggregation=fields.get("aggregation", "sum"),
        running_mean=bool(fields.get("running_mean", f"average_{name}" in metrics)),
        higher_is_better=bool(fields.get("higher_is_better", higher.get(name, False))),
        plot=tuple(fields.get("plot") or ()),
    )
