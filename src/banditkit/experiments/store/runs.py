"""The stored runs of an experiment, read back cell by cell for summaries and figures.

:func:`collect` reads, for every (environment, policy) cell of a resolved experiment, the
finished runs of its seeds from the store (tables and metadata); a run missing from the store,
or failed, is listed as such. Nothing is computed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from banditkit.core.records import aggregate
from banditkit.experiments.config.resolved import Cell, ResolvedExperiment
from banditkit.experiments.store.store import RunStore

__all__ = ["CellRuns", "collect"]


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
