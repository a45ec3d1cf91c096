"""Results as data: the stored runs of an output directory as one tidy pandas DataFrame.

:func:`load_runs` reads ``DIR/runs/*.parquet`` with their metadata into one table, one row
per (run, round), or with ``summaries=True`` one row per run with the final value of every
declared metric. The experiment of the directory is read from its stored files alone
(``store.stored``), without building any environment or policy, so this needs neither
their classes nor the datasets the runs were computed on.

Identification columns, in front of the run's own columns:

    run_id        the run's id (a hash of its settings, ``config.resolved.run_id``)
    env           the environment's label in the config
    env_name      its registry name
    policy        the policy's label in the config
    policy_name   its registry name
    seed          the run's seed
    param.<name>  one column per effective policy parameter (tuned values applied); a
                  parameter another policy lacks is missing (None) on that policy's rows

Runs are listed through the config's cells, so a run two labels share (identical settings)
appears under each label, and runs left in ``runs/`` by an earlier config are not listed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from banditkit.core.lazy import pd  # imported at first use
from banditkit.core.records import aggregate
from banditkit.experiments.config.resolved import Cell, ResolvedExperiment
from banditkit.experiments.store.store import CorruptFileError, RunStore
from banditkit.experiments.store.stored import stored_experiment
from banditkit.experiments.store.tables import table_columns

__all__ = ["ID_COLUMNS", "load_runs"]

ID_COLUMNS = ("run_id", "env", "env_name", "policy", "policy_name", "seed")
"""Columns identifying a run, first in every frame of :func:`load_runs`."""

PARAM_PREFIX = "param."
"""Prefix of the policy-parameter columns."""


def _finished(
    resolved: ResolvedExperiment, store: RunStore
) -> list[tuple[Cell, int, str]]:
    """(cell, seed, run id) of every finished run, cell by cell, seeds in config order."""
    return [
        (cell, spec.seed, spec.id)
        for cell in resolved.cells
        for spec in cell.runs(resolved.seeds, resolved.horizon)
        if store.is_finished(spec.id)
    ]


def _ids(cell: Cell, seed: int, run_id: str) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "env": cell.env.label,
        "env_name": cell.env.name,
        "policy": cell.policy.label,
        "policy_name": cell.policy.name,
        "seed": seed,
        **{f"{PARAM_PREFIX}{k}": v for k, v in cell.params.items()},
    }


def _read_table(store: RunStore, run_id: str, columns: list[str] | None) -> Any:
    """One run's table; list columns (pair and set actions) as Python lists."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = store.table_path(run_id)
    try:
        table = pq.read_table(path, columns=columns)
    except (pa.ArrowException, OSError) as exc:
        raise CorruptFileError(path, f"not a readable Parquet file ({exc})") from None
    frame = table.to_pandas()
    for name in table.column_names:
        if pa.types.is_list(table.schema.field(name).type):
            frame[name] = table.column(name).to_pylist()
    return frame


def _check_columns(columns: Sequence[str] | None, known: set[str]) -> list[str] | None:
    if columns is None:
        return None
    if isinstance(columns, str) or not all(isinstance(c, str) for c in columns):
        raise ValueError(
            f"columns must be a list of column names or None; got {columns!r}."
        )
    unknown = [c for c in columns if c not in known]
    if unknown:
        raise ValueError(
            f"columns: no stored column {', '.join(map(repr, unknown))}; the runs have "
            f"{', '.join(sorted(known))}."
        )
    return list(columns)


def _summary_row(cell: Cell, seed: int, run_id: str, table: Any) -> dict[str, Any]:
    row = _ids(cell, seed, run_id)
    row["rounds"] = len(table)
    for metric, record in cell.env.metrics.items():
        curve = aggregate(record, metric, np.asarray(table[record.name]))
        row[metric] = float(curve[-1]) if curve.size else float("nan")
    return row


def load_runs(
    directory: str | os.PathLike[str],
    *,
    summaries: bool = False,
    columns: Sequence[str] | None = None,
) -> Any:
    """The stored runs of an output directory as one tidy pandas DataFrame.

    Reads only stored files (``store.stored``): no run is computed, no environment or
    policy built, no dataset read. Unfinished or damaged runs are left out (a warning
    names a damaged one, as ``run`` does).

    Args:
        directory: An output directory of ``banditkit run`` (or one figure of
            ``reproduce``: ``DIR/<figure>``).
        summaries: False: one row per (run, round), with the identification columns (module
            docstring) followed by the run's stored columns (``t``, the environment's
            declared records, e.g. ``regret``, ``reward``, ``action``, ``propensity``, and
            ``cumulative_regret``); list columns (pair and set actions) hold Python lists.
            True: one row per run, with the identification columns, ``rounds`` and the
            value at the final round of every metric the environment declares (``regret``
            is R(T), ``average_regret`` R(T)/T, ...), the values ``summary.json`` gives per
            seed.
        columns: Stored columns to read (per-round mode only; None: all). The
            identification columns are always included.

    Returns:
        A ``pandas.DataFrame``; empty (with the identification columns) when no run is
        finished.

    Raises:
        ValueError: If ``columns`` names a column no run stores, or is given with
            ``summaries=True``.
        ConfigError: If ``directory`` holds no valid ``config.yaml``.

    Example:
        >>> import tempfile, banditkit as bk
        >>> out = tempfile.mkdtemp()
        >>> cfg = {"name": "doc", "horizon": 5, "seeds": 2,
        ...        "env": {"name": "linear", "d": 3}, "policies": [{"name": "random"}]}
        >>> _ = bk.run_experiment(cfg, out, backend="serial", progress="none",
        ...                       figures=False)
        >>> frame = bk.load_runs(out, columns=["t", "reward"])
        >>> len(frame), list(frame.columns[:6])
        (10, ['run_id', 'env', 'env_name', 'policy', 'policy_name', 'seed'])
        >>> len(bk.load_runs(out, summaries=True))
        2
    """
    if not isinstance(summaries, bool):
        raise ValueError(f"summaries must be True or False; got {summaries!r}.")
    if summaries and columns is not None:
        raise ValueError(
            "columns applies to per-round rows; drop it with summaries=True."
        )
    resolved = stored_experiment(directory)
    store = RunStore(directory)
    runs = _finished(resolved, store)
    if summaries:
        rows = [
            _summary_row(cell, seed, rid, _read_table(store, rid, None))
            for cell, seed, rid in runs
        ]
        return _ordered(pd.DataFrame(rows, columns=None if rows else list(ID_COLUMNS)))
    known = {n for e in resolved.envs for n in table_columns(e.records)}
    wanted = _check_columns(columns, known)
    frames = []
    for cell, seed, rid in runs:
        present = set(table_columns(cell.env.records))
        table = _read_table(
            store, rid, None if wanted is None else [c for c in wanted if c in present]
        )
        ids = _ids(cell, seed, rid)
        head = pd.DataFrame({k: [v] * len(table) for k, v in ids.items()})
        frames.append(pd.concat([head, table.reset_index(drop=True)], axis=1))
    if not frames:
        return pd.DataFrame(columns=list(ID_COLUMNS))
    return _ordered(pd.concat(frames, ignore_index=True))


def _ordered(frame: Any) -> Any:
    """Identification columns first, then the parameter columns, then the rest."""
    params = [c for c in frame.columns if c.startswith(PARAM_PREFIX)]
    head = [*ID_COLUMNS, *params]
    return frame[head + [c for c in frame.columns if c not in head]]
