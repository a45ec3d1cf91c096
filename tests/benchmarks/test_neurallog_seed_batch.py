"""The seed-batching benchmark runs end to end on a tiny workload and checks its actions."""

from __future__ import annotations

import json

import pytest

from benchmarks import neurallog_seed_batch as bench


def test_tiny_workload_reports_ratios_and_equal_actions(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bench, "HORIZON", 40)
    monkeypatch.setattr(bench, "SEEDS", [0, 1, 2])
    monkeypatch.setattr(
        bench, "POLICY_PARAMS", {"width": 6, "steps": 5, "update_every": 10}
    )
    monkeypatch.setattr(bench, "ENV_PARAMS", {"h": "h1", "d": 4, "n_arms": 3})
    result = bench.main(True, tmp_path)
    assert result["same_actions"] is True
    assert set(result["cpu_median"]) == {
        "one_float64",
        "one_float32",
        "batch10_float32",
        "batch10_float64",
    }
    assert result["ratio_batch10_f32_to_one_f64"] > 0.0
    assert result["floor_f32_to_one_f64"] >= 0.0  # no refit of 50 rows at T = 40
    assert len(result["regret_batch10_float32"]) == 3
    assert json.loads((tmp_path / "result.json").read_text())["workload"] == (
        "neurallog_seed_batch"
    )
