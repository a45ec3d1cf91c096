"""banditkit reproduce --plan: a cost table, nothing run or written."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from banditkit.cli import app

runner = CliRunner()


def test_plan_prints_the_cost_of_each_figure_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(
        app,
        [
            "reproduce",
            "example",
            "--plan",
            "--jobs",
            "2",
            "--nodes",
            "3",
            "--node-cpus",
            "4",
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert any(
        line.startswith("| Figure | Runs | Rounds | CPU-hours") for line in lines
    )
    assert "--jobs 2" in result.output and "3 nodes x 4 CPUs" in result.output
    (row,) = [line for line in lines if line.startswith("| regret |")]
    assert row.split("|")[2].strip() == "30"  # the example's 30 runs
    assert "estimate from FLOPs" in result.output
    assert not list(tmp_path.iterdir())


def test_reproduce_without_out_or_plan_is_a_usage_error():
    result = runner.invoke(app, ["reproduce", "example"])
    assert result.exit_code == 2
    assert "--out" in result.output


def test_plan_with_out_writes_the_table_and_each_kinds_measured_costs(tmp_path):
    out = tmp_path / "plan"
    result = runner.invoke(
        app,
        ["reproduce", "example", "--plan", "--out", str(out)],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == ["plan.json", "plan.md"]
    table = (out / "plan.md").read_text()
    assert table.startswith("| Figure | Runs |") and table in result.output
    record = json.loads((out / "plan.json").read_text())
    (figure,) = record["figures"]
    assert figure["figure"] == "regret" and figure["runs"] == 30
    kinds = figure["kinds"]
    assert sum(k["runs"] for k in kinds) == 30
    for kind in kinds:
        assert kind["error"] is None and kind["rounds"] > 0 and kind["a"] > 0
        priced = kind["setup"] + kind["horizon"] * kind["a"]  # b = 0 where flat
        assert kind["cpu_seconds_per_run"] >= priced * (1 - 1e-9) or kind["warm"] > 0
    hours = sum(k["runs"] * k["cpu_seconds_per_run"] for k in kinds) / 3600
    assert hours == pytest.approx(figure["cpu_hours"])
