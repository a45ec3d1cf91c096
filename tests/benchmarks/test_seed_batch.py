"""The seed-stack benchmarks (NVLDB, NDB, NeuralTS, Neural-ES, eps-greedy-MNL) run end to end
on tiny workloads."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

from benchmarks import (
    ensemble_seed_batch,
    mnl_seed_batch,
    ndb_seed_batch,
    neural_seed_batch,
    nvldb_rule_batch,
    nvldb_seed_batch,
)


@pytest.mark.parametrize(
    ("bench", "least_same_pairs"),
    [
        (ndb_seed_batch, 1.0),
        (nvldb_rule_batch, 1.0),  # six rules, one seed: members of one stack
        (neural_seed_batch, 1.0),  # GD in float64: the separate runs' actions
        (ensemble_seed_batch, 1.0),
        (mnl_seed_batch, 1.0),  # batched kernels: the offers of the separate runs
    ],
)
def test_tiny_workload_reports_the_ratio_and_the_equal_pairs(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    bench: ModuleType,
    least_same_pairs: float,
) -> None:
    monkeypatch.setattr(bench, "HORIZON", 40 if bench is mnl_seed_batch else 12)
    if bench is not nvldb_rule_batch:  # its members are six rules x seed 0
        monkeypatch.setattr(bench, "SEEDS", [0, 1, 2])
    # float64: where a stack takes its separate runs' actions by construction
    small = {"width": 6, "steps": 2, "dtype": "float64"}
    monkeypatch.setattr(bench, "POLICY_PARAMS", small)
    result = bench.main(True, tmp_path)
    assert set(result["wall_median"]) == set(result["cpu_median"]) == {"one", "stack"}
    assert result["ratio_stack_to_one"] > 0.0
    assert result["same_pairs"] >= least_same_pairs
    if least_same_pairs == 1.0:
        assert result["max_regret_gap"] <= 1e-9
    assert len(result["regret"]["stack"]) == (6 if bench is nvldb_rule_batch else 3)
    saved = json.loads((tmp_path / "result.json").read_text())
    assert saved["workload"] == bench.__name__.rsplit(".", 1)[-1]
    assert "(quick)" in (tmp_path / "result.md").read_text()


def test_the_nvldb_benchmark_times_the_exact_and_the_fast_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(nvldb_seed_batch, "HORIZON", 12)
    monkeypatch.setattr(nvldb_seed_batch, "SEEDS", [0, 1, 2])
    small = {"width": 6, "steps": 2}
    monkeypatch.setattr(
        nvldb_seed_batch,
        "CONFIGS",
        {k: {**v, **small} for k, v in nvldb_seed_batch.CONFIGS.items()},
    )
    result = nvldb_seed_batch.main(True, tmp_path)
    assert set(result["within_3x"]) == {"exact", "fast"}
    exact, fast = result["exact"], result["fast"]
    # float64: member by member (dueling.stacked), the separate runs' pairs bitwise
    assert exact["same_pairs"] == 1.0 and exact["max_regret_gap"] <= 1e-9
    assert fast["policy"]["params"]["dtype"] == "float32"
    for measured in (exact, fast):
        assert measured["ratio_stack_to_one"] > 0.0
        assert set(measured["wall_median"]) == {"one", "stack"}
        assert len(measured["regret"]["stack"]) == 3
    saved = json.loads((tmp_path / "result.json").read_text())
    assert saved["workload"] == "nvldb_seed_batch"
    assert (tmp_path / "result.md").read_text().count("(quick)") == 2
