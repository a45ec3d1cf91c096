"""Tuning: a grid search on tuning seeds, written as ``tuned.yaml`` for configs to use.

``banditkit tune CONFIG --out DIR`` takes the config's ``grid:`` (per policy label or name,
a list of values per parameter), runs every combination on every environment, and keeps per
(environment, policy) the combination with the lowest mean final cumulative regret (ties:
the first in grid order).

Tuning seeds are disjoint from evaluation seeds: they are ``seed_offset + i`` for
``i < n`` (``tuning: {seeds: n, seed_offset: 10000}``; by default as many seeds as the config
evaluates, from 10000), and the command refuses a config whose evaluation seeds reach the
offset. Tuning runs use ``--horizon``, else ``tuning: {horizon: ...}``, else the config's
horizon; the horizon used is recorded in ``source``.

``DIR`` is an ordinary experiment directory (resumable; candidates are labelled
``label[param=value,...]``) plus ``DIR/tuned.yaml``::

    tuned:                      # env label -> policy label -> chosen parameters
      logistic-h1:
        LinUCB: {nu: 0.1}
    source: {config: ..., tuning_seeds: [...], horizon: ..., criterion: ..., grid: ...}
    on_grid_edge:               # env label -> policy label -> parameters chosen at an end
      logistic-h1:              # of a numeric grid axis with more than 2 values (the
        LinUCB: [nu]            # optimum may lie outside: extend the grid); {} if none

A config uses it with ``tuned: path/to/tuned.yaml`` (relative to the config): for each
(environment, policy) listed, the tuned values override the policy's parameters on that
environment. The resolved ``config.yaml`` of a run holds the values inline and the ``source``
block under ``tuned_source``, so results record how their parameters were obtained.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from banditkit.experiments.compute.progress import Progress
from banditkit.experiments.config.checks import (
    check_grid_overrides,
    check_tunable,
    tuning_seeds,
)
from banditkit.experiments.config.errors import ConfigError
from banditkit.experiments.config.load import apply_overrides, load_config
from banditkit.experiments.config.names import MAX_LINE
from banditkit.experiments.config.resolve import resolve
from banditkit.experiments.config.resolved import ResolvedExperiment, plain
from banditkit.experiments.config.schema import ExperimentConfig, PolicySpec
from banditkit.experiments.runner import ExperimentResult, execute_experiment
from banditkit.experiments.store.store import RunStore

__all__ = ["TuneResult", "candidate_label", "grid_edges", "tune"]

CRITERION = "lowest mean final cumulative regret over the tuning seeds"


@dataclass
class TuneResult:
    """What ``tune`` chose and where it wrote it."""

    out: Path
    tuned: dict[str, dict[str, dict[str, Any]]]
    tuned_path: Path
    failed: dict[str, str] = field(default_factory=dict)
    scores: list[dict[str, Any]] = field(default_factory=list)
    on_edge: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    """env label -> policy label -> the parameters chosen on their grid axis's edge."""

    @property
    def ok(self) -> bool:
        """True when every tuning run finished."""
        return not self.failed


def candidate_label(label: str, params: Mapping[str, Any]) -> str:
    """Label of one grid point.

    Example:
        >>> candidate_label("linucb", {"nu": 0.1, "lam": 1.0})
        'linucb[nu=0.1,lam=1.0]'
    """
    return f"{label}[{','.join(f'{k}={v}' for k, v in params.items())}]"


def grid_edges(grid: Mapping[str, list[Any]], point: Mapping[str, Any]) -> list[str]:
    """The parameters of ``point`` at the smallest or largest value of their grid axis.

    Only numeric axes with more than 2 values count (with 2 values every choice is an end):
    an optimum there may lie beyond the grid, which should then be extended.

    Example:
        >>> grid = {"nu": [0.1, 1, 10], "lam": [1, 10], "link": ["a", "b", "c"]}
        >>> grid_edges(grid, {"nu": 10, "lam": 1, "link": "c"})
        ['nu']
    """
    edges = []
    for name, values in grid.items():
        numeric = [
            v for v in values if isinstance(v, int | float) and not isinstance(v, bool)
        ]
        on_end = numeric and point.get(name) in (min(numeric), max(numeric))
        if len(values) > 2 and len(numeric) == len(values) and on_end:
            edges.append(name)
    return edges


def _grid_points(grid: Mapping[str, list[Any]]) -> list[dict[str, Any]]:
    keys = list(grid)
    return [
        dict(zip(keys, values, strict=True))
        for values in itertools.product(*grid.values())
    ]


def _candidate_overrides(
    base: ResolvedExperiment, owners: Mapping[str, tuple[str, dict[str, Any]]]
) -> dict[str, dict[str, dict[str, Any]]]:
    """The config's ``env_overrides`` of each policy, given to its grid candidates."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for env, per_policy in base.config.env_overrides.items():
        for label, (owner, _) in owners.items():
            if per_policy.get(owner):
                out.setdefault(env, {})[label] = dict(per_policy[owner])
    return out


Owners = dict[str, tuple[str, dict[str, Any]]]
"""Candidate label -> (its policy's label, its grid point)."""


def tune(
    config: str | Path | Mapping[str, Any] | ExperimentConfig,
    out: str | Path,
    *,
    backend: str = "auto",
    jobs: int | None = None,
    address: str | None = None,
    seeds: int | None = None,
    horizon: int | None = None,
    progress: str | Progress | None = "auto",
) -> TuneResult:
    """Grid-search the config's ``grid:`` on tuning seeds and write ``out/tuned.yaml``.

    Args:
        config: A YAML path, a mapping or an :class:`ExperimentConfig`.
        out: Output directory (resumable).
        backend: As for ``run_experiment``.
        jobs: Parallel workers.
        address: Ray address.
        seeds: Number of tuning seeds (default: ``tuning.seeds``, else as many as ``seeds``).
        horizon: Horizon of the tuning runs (default: ``tuning.horizon``, else the
            config's horizon).
        progress: As for ``run_experiment``.

    Raises:
        ConfigError: Invalid config, no ``grid:``, or evaluation seeds that reach the offset.
    """
    source = str(config) if isinstance(config, str | Path) else "<config>"
    base_dir = Path(config).parent if isinstance(config, str | Path) else None
    cfg, seed_list = _tuning_config(config, source, seeds, horizon)
    base = resolve(cfg, base_dir=base_dir, source=source)
    check_grid_overrides(base, source)
    candidates, owners = _candidates(base)
    tuning_config = cfg.model_copy(
        update={
            "name": f"{cfg.name[: MAX_LINE - 7]}-tuning",  # still a name
            "seeds": seed_list,
            "policies": candidates,
            "env_overrides": _candidate_overrides(base, owners),
            "claims": [],
            "metrics": [],
            "grid": {},
        }
    )
    result = execute_experiment(
        resolve(tuning_config, base_dir=base_dir, source=source),
        out,
        backend=backend,
        jobs=jobs,
        address=address,
        progress=progress,
        figures=False,
        title=f"{cfg.name} (tuning)",
    )
    tuned, scores = _best(result.summary["results"], owners)
    grids = {
        p.label: cfg.grid.get(p.label, cfg.grid.get(p.name)) or {}
        for p in base.policies
    }
    on_edge = {
        env: edges
        for env, per in tuned.items()
        if (
            edges := {
                label: found
                for label, point in per.items()
                if (found := grid_edges(grids[label], point))
            }
        )
    }
    path = _write_tuned(Path(out), tuned, on_edge, cfg, source, seed_list, result)
    return TuneResult(Path(out), tuned, path, result.failed, scores, on_edge)


def _tuning_config(
    config: str | Path | Mapping[str, Any] | ExperimentConfig,
    source: str,
    seeds: int | None,
    horizon: int | None,
) -> tuple[ExperimentConfig, list[int]]:
    """The config on the tuning horizon, without its tuned values; the tuning seeds."""
    cfg = load_config(config, source=source)
    try:
        # --horizon, else `tuning.horizon`, else the evaluation horizon.
        cfg = apply_overrides(cfg, horizon=horizon or cfg.tuning.horizon)
        seed_list = tuning_seeds(cfg, seeds)
    except ConfigError as exc:
        raise ConfigError(str(exc), source=source) from None
    check_tunable(cfg, source)
    # Tuning ignores earlier tuned values (the file may not exist yet).
    return cfg.model_copy(update={"tuned": None, "tuned_source": []}), seed_list


def _candidates(base: ResolvedExperiment) -> tuple[list[PolicySpec], Owners]:
    """One policy entry per grid point of every policy with a grid, and their owners."""
    grids = base.config.grid
    candidates: list[PolicySpec] = []
    owners: Owners = {}
    for policy in base.policies:
        grid = grids.get(policy.label, grids.get(policy.name))
        if grid is None:
            continue
        for point in _grid_points(grid):
            label = candidate_label(policy.label, point)
            candidates.append(
                PolicySpec(name=policy.name, label=label, **{**policy.params, **point})
            )
            owners[label] = (policy.label, point)
    return candidates, owners


def _best(
    rows: list[dict[str, Any]], owners: Owners
) -> tuple[dict[str, dict[str, dict[str, Any]]], list[dict[str, Any]]]:
    """Per (env, policy) the grid point of lowest mean final regret; every score."""
    best: dict[str, dict[str, tuple[float, dict[str, Any]]]] = {}
    scores = []
    for row in rows:
        owner, point = owners[row["label"]]
        value = row["final_regret_mean"]
        scores.append(
            {
                "env": row["env"],
                "policy": owner,
                "params": point,
                "final_regret_mean": value,
            }
        )
        if value is None or not math.isfinite(value):
            continue
        current = best.setdefault(row["env"], {}).get(owner)
        if current is None or value < current[0]:
            best[row["env"]][owner] = (value, point)
    tuned = {
        env: {label: plain(point) for label, (_, point) in per.items()}
        for env, per in best.items()
    }
    return tuned, scores


def _write_tuned(
    out: Path,
    tuned: dict[str, dict[str, dict[str, Any]]],
    on_edge: dict[str, dict[str, list[str]]],
    cfg: ExperimentConfig,
    source: str,
    seed_list: list[int],
    result: ExperimentResult,
) -> Path:
    """Write ``out/tuned.yaml``: the chosen values, how they were chosen, grid edges."""
    document = {
        "tuned": tuned,
        "source": {
            "config": source,
            "name": cfg.name,
            "horizon": cfg.horizon,
            "tuning_seeds": seed_list,
            "criterion": CRITERION,
            "grid": plain(cfg.grid),
            "banditkit_version": result.summary.get("banditkit_version"),
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
        },
        "on_grid_edge": on_edge,
    }
    header = (
        "# Written by `banditkit tune`; use it from a config with `tuned: <this file>`.\n"
        "# Tuning seeds are disjoint from evaluation seeds (docs/experiments.md, Tuning).\n"
    )
    return RunStore(out).write_text(
        "tuned.yaml", header + yaml.safe_dump(document, sort_keys=False, width=100)
    )
