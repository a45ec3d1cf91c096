"""The NeuralTS seed-stack benchmark runs end to end on a tiny workload."""

from __future__ import annotations

import json

import pytest

from benchmarks import neural_seed_batch as bench


def test_tiny_workload_reports_the_ratios_and_the_equal_actions(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bench, "HORIZON", 12)
    monkeypatch.setattr(bench, "SEEDS", [0, 1, 2])
    monkeypatch.setattr(bench, "POLICY_PARAMS", {"width": 6, "steps": 2})
    result = bench.main(True, tmp_path)
    assert set(result["cpu_median"]) == {"one", "stack"}
    assert result["ratio_stack_to_one"] > 0.0
    assert result["same_pairs"] == 1.0  # float64: the separate runs' actions
    assert result["max_regret_gap"] <= 1e-9
    assert len(result["regret"]["stack"]) == 3
    saved = json.loads((tmp_path / "result.json").read_text())
    assert saved["workload"] == "neural_seed_batch"
    assert "neural_seed_batch (quick)" in (tmp_path / "result.md").read_text()
