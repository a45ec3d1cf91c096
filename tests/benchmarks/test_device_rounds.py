"""The per-device benchmark (``benchmarks.device_rounds``) on this machine's CPU."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from benchmarks import device_rounds as bench


def test_every_device_is_measured_against_its_flop_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chosen = {
        name: (*bench.WORKLOADS[name][:5], 30)  # 30 quick rounds
        for name in ("neural-ucb digits", "nvldb-ucb m=100")
    }
    monkeypatch.setattr(bench, "WORKLOADS", chosen)
    result = bench.main(True, tmp_path)
    rows = json.loads((tmp_path / "result.json").read_text())["rows"]
    assert [(r["workload"], r["device"]) for r in rows][:2] == [
        ("neural-ucb digits", "cpu"),
        ("nvldb-ucb m=100", "cpu"),
    ]
    assert len(rows) == 2 * len(bench.devices())
    for r in rows:
        # both train within 30 rounds; the block loop's products are counted too
        assert r["flops_per_round"] > 0
        # no run computes faster than its matrix products at the device's GEMM rate
        assert r["times_bound"] >= 1.0
    assert ("cuda" in bench.devices()) == torch.cuda.is_available()
    assert (result["cpu_over_gpu"] != {}) == torch.cuda.is_available()
    assert "| neural-ucb digits | cpu | 30 |" in (tmp_path / "result.md").read_text()
