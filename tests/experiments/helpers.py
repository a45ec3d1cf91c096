from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pandas as pd
import yaml
from hypothesis import HealthCheck, settings

from banditkit.experiments.store.tables import TIMING_COLUMNS

HOSTILE = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
"""Hypothesis settings of the hostile-input modules: few examples, reproducible, fast."""


def tiny(**overrides: Any) -> dict[str, Any]:
    """A config of 2 envs x 3 cheap policies x 2 seeds x 40 rounds."""
    cfg: dict[str, Any] = {
        "name": "tiny",
        "horizon": 40,
        "seeds": 2,
        "envs": [
            {"name": "linear", "d": 3, "n_arms": 4},
            {"name": "logistic", "h": "h1", "d": 3, "n_arms": 3},
        ],
        "policies": [
            {"name": "random", "label": "Random"},
            {"name": "linucb", "label": "LinUCB", "nu": 0.5},
            {"name": "oracle", "label": "Oracle"},
        ],
    }
    cfg.update(overrides)
    return cfg


def sweep_config(**overrides: Any) -> dict[str, Any]:
    """Two linear environments (``base``, ``wide``) and LinUCB and eps-greedy policies."""
    return tiny(
        envs=[
            {"name": "linear", "label": "base", "d": 3, "n_arms": 4},
            {"name": "linear", "label": "wide", "d": 3, "n_arms": 4},
        ],
        policies=[
            {"name": "linucb", "label": "LinUCB"},
            {"name": "eps-greedy", "label": "eps"},
        ],
        **overrides,
    )


def write_yaml(path: Path, data: Any) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` with its bytes."""
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in folder.rglob("*")
        if p.is_file()
    }


def without_timing(row: dict[str, Any]) -> dict[str, Any]:
    """A summary row without its wall-time values (``seconds_mean``, timing metrics)."""
    from banditkit.experiments.store.tables import TIMING_COLUMNS

    out = {k: v for k, v in row.items() if k != "seconds_mean"}
    if "metrics" in out:
        out["metrics"] = {
            k: v for k, v in out["metrics"].items() if k not in TIMING_COLUMNS
        }
    return out


def brute_force_makespan(seconds: list[float], workers: int) -> float:
    """The optimal makespan of ``seconds`` on ``workers``, by trying every assignment."""
    best = float("inf")
    for assignment in itertools.product(range(workers), repeat=len(seconds)):
        loads = [0.0] * workers
        for w, sec in zip(assignment, seconds, strict=True):
            loads[w] += sec
        best = min(best, max(loads))
    return best


def untimed_tables(out: Path) -> dict[str, Any]:
    """Every stored run's table of ``out`` without its wall-time columns, by run id."""
    return {
        p.stem: pd.read_parquet(p).drop(columns=list(TIMING_COLUMNS))
        for p in sorted((out / "runs").glob("*.parquet"))
    }
