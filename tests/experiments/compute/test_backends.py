"""Serial, process and Ray backends give bit-identical results for the same config."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from banditkit.experiments import run_experiment
from banditkit.experiments.store.tables import TIMING_COLUMNS
from tests.experiments.helpers import tiny, without_timing

CONFIG = tiny(
    policies=[
        {"name": "random", "label": "Random"},
        {"name": "lints", "label": "LinTS", "nu": 0.5},
        {"name": "eps-greedy", "label": "eps"},
    ],
    horizon=60,
)


def _results(out: Path) -> tuple[list[dict], dict[str, pd.DataFrame]]:
    summary = json.loads((out / "summary.json").read_text())
    rows = [without_timing(r) for r in summary["results"]]
    tables = {
        p.stem: pd.read_parquet(p).drop(columns=list(TIMING_COLUMNS))
        for p in sorted((out / "runs").glob("*.parquet"))
    }
    return rows, tables


def _assert_same(a: Path, b: Path) -> None:
    rows_a, tables_a = _results(a)
    rows_b, tables_b = _results(b)
    assert rows_a == rows_b
    assert tables_a.keys() == tables_b.keys() and len(tables_a) == 12
    for key, table in tables_a.items():
        pd.testing.assert_frame_equal(table, tables_b[key], check_exact=True)


@pytest.fixture(scope="module")
def serial_out(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("serial")
    assert run_experiment(
        CONFIG, out, backend="serial", progress="none", figures=False
    ).ok
    return out


def test_process_backend_matches_serial(serial_out, tmp_path):
    res = run_experiment(
        CONFIG, tmp_path, backend="process", jobs=2, progress="none", figures=False
    )
    assert res.ok and res.computed == 12
    _assert_same(serial_out, tmp_path)


def test_forked_process_pool_matches_serial(serial_out, tmp_path):
    # start_method="auto" (the command line's) forks the workers where it is safe
    res = run_experiment(
        CONFIG,
        tmp_path,
        backend="process",
        jobs=2,
        progress="none",
        figures=False,
        start_method="auto",
    )
    assert res.ok and res.computed == 12
    _assert_same(serial_out, tmp_path)


def test_ray_backend_matches_serial(serial_out, tmp_path):
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        res = run_experiment(
            CONFIG, tmp_path, backend="ray", progress="none", figures=False
        )
    finally:
        ray.shutdown()
    assert res.ok and res.computed == 12
    _assert_same(serial_out, tmp_path)
