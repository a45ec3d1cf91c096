"""The NVLDB seed-stack benchmark runs end to end on a tiny workload."""

from __future__ import annotations

import json

import pytest

from benchmarks import nvldb_seed_batch as bench


def test_tiny_workload_reports_the_ratio_and_the_equal_pairs(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bench, "HORIZON", 12)
    monkeypatch.setattr(bench, "SEEDS", [0, 1, 2])
    monkeypatch.setattr(bench, "POLICY_PARAMS", {"width": 6, "steps": 2})
    result = bench.main(True, tmp_path)
    assert set(result["wall_median"]) == {"one", "stack10"}
    assert result["ratio_stack10_to_one"] > 0.0
    assert result["same_pairs"] >= 0.75  # tests/policies/dueling/test_stacked.py
    assert len(result["regret"]["stack10"]) == 3
    saved = json.loads((tmp_path / "result.json").read_text())
    assert saved["workload"] == "nvldb_seed_batch"
