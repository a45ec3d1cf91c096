"""banditkit reproduce --plan: a cost table, nothing run or written."""

from __future__ import annotations

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
