"""The command line as a new user meets it: --version, overrides, widths, datasets, tuning."""

from __future__ import annotations

import re

import torch
import yaml
from typer.testing import CliRunner

import banditkit
from banditkit.cli import app
from banditkit.experiments.report.console import TERMINAL_WIDTH, results_lines
from banditkit.experiments.tuning import grid_edges
from tests.experiments.helpers import tiny, write_yaml

runner = CliRunner()

LONG = "a statement far longer than any terminal line " * 12


def invoke(*args: object):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def assert_fits(output: str) -> None:
    too_long = [line for line in output.splitlines() if len(line) > TERMINAL_WIDTH]
    assert not too_long, too_long


def test_version_prints_the_package_version():
    result = invoke("--version")
    assert result.exit_code == 0
    assert result.output.strip() == f"banditkit {banditkit.__version__}"


def test_run_prints_lines_of_at_most_100_characters(tmp_path):
    cfg = tiny(
        envs=[{"name": "logistic", "h": "h1", "d": 3, "n_arms": 3, "label": "x" * 70}],
        policies=[
            {"name": "random", "label": "Random"},
            {"name": "linucb", "label": "L" * 60, "nu": 0.5, "lam": 1.0},
            {"name": "eps-greedy", "label": "eps", "epsilon": 0.123456789, "lam": 3.0},
        ],
        claims=[
            {"id": "c1", "kind": "below", "policy": "eps", "other": "Random"},
            {
                "id": "c2",
                "kind": "below",
                "policy": "Random",
                "other": "eps",
                "text": LONG,
            },
        ],
    )
    out = tmp_path / "out"
    result = invoke(
        "run", write_yaml(tmp_path / "exp.yaml", cfg), "--out", out, "--backend", "serial",
        "--progress", "none",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert_fits(result.output)
    # parameters are shown as differences from the defaults (lam=1.0 is linucb's default)
    assert "nu=0.5" in result.output and "lam=1.0" not in result.output
    assert "defaults" in result.output
    # the long claim is cut with an ellipsis; summary.json keeps it whole
    assert "…" in result.output and str(out / "summary.json") in result.output
    summary = yaml.safe_load((out / "summary.json").read_text())
    assert summary["claims"][1]["text"] == LONG


def test_results_lines_cut_long_parameters_to_the_width():
    row = {
        "env": "e" * 40,
        "label": "p" * 30,
        "policy": "unregistered",
        "params": {f"param_{i}": i for i in range(30)},
        "n_seeds": 10,
        "final_regret_mean": 123.456,
        "final_regret_std": 7.89,
        "final_regret_ci": [100.0, 150.0],
        "seconds_mean": 0.000123,
        "n_updates_mean": 2000.0,
    }
    lines = results_lines({"results": [row]})
    assert all(len(line) <= TERMINAL_WIDTH for line in lines)
    # too wide for a column: the parameters go on their own line below the table
    assert "param_0" not in lines[1] and "123.5 ± 7.89" in lines[1]
    assert lines[-1].startswith("  ppp") and lines[-1].endswith("…")
    assert "param_0=0, param_1=1" in lines[-1]


def test_reproduce_quick_with_seeds_and_horizon_overrides(tmp_path):
    out = tmp_path / "r"
    result = invoke(
        "reproduce", "example", "--quick", "--figure", "regret", "--seeds", "1",
        "--horizon", "30", "--out", out, "--backend", "serial", "--progress", "none",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert_fits(result.output)
    resolved = yaml.safe_load((out / "config.yaml").read_text())["figures"]["regret"]
    # --quick alone would give the figure's quick settings (2 seeds, 300 rounds)
    assert resolved["horizon"] == 30 and resolved["seeds"] == [0]
    assert "--seeds 1 --horizon 30" in (out / "report.md").read_text()


def test_reproduce_wraps_long_claims_and_points_to_the_report(tmp_path):
    folder = tmp_path / "paper"
    folder.mkdir()
    claim = {"id": "long", "kind": "below", "policy": "Oracle", "other": "Random"}
    write_yaml(folder / "fig.yaml", tiny(seeds=1, claims=[{**claim, "text": LONG}]))
    out = tmp_path / "r"
    result = invoke(
        "reproduce", folder, "--out", out, "--backend", "serial", "--progress", "none"
    )
    assert result.exit_code == 0, result.output
    assert_fits(result.output)
    # one seed: the verdict is indicative; the statement wraps, never cut
    assert "PASS (indicative) long: a statement" in result.output
    assert " ".join(LONG.split()) in " ".join(result.output.split())
    assert str(out / "report.md") in result.output
    assert LONG.strip() in (out / "report.md").read_text()


def _per_dataset(output: str) -> dict[str, str]:
    found = {}
    for line in output.splitlines():
        match = re.match(r"(\S+)\s+\S+\s+files (\d+/\d+)", line)
        if match:
            found[match[1]] = match[2]
    return found


def test_datasets_list_and_verify_count_the_same_datasets(tmp_path, monkeypatch):
    home = tmp_path / "data"
    (home / "banknote").mkdir(parents=True)
    (home / "banknote" / "data_banknote_authentication.txt").write_text("1,2,3,4,0\n")
    monkeypatch.setenv("BANDITKIT_DATA", str(home))
    listing = invoke("datasets", "list")
    verify = invoke("datasets", "verify")
    assert listing.exit_code == 0
    listed, verified = _per_dataset(listing.output), _per_dataset(verify.output)
    assert list(listed) == banditkit.list_datasets() == list(verified)
    assert listed == verified
    assert listed["digits"] == "0/0" and listed["mnist"] == "0/4"


def test_grid_edges_only_on_numeric_axes_of_more_than_two_values():
    grid = {"nu": [0.1, 1.0, 10.0], "lam": [1.0, 10.0], "link": ["a", "b", "c"]}
    assert grid_edges(grid, {"nu": 0.1, "lam": 10.0, "link": "a"}) == ["nu"]
    assert grid_edges(grid, {"nu": 1.0, "lam": 1.0, "link": "c"}) == []
    assert grid_edges({"k": [5, 1, 3]}, {"k": 5}) == ["k"]  # unsorted axes too


def test_tune_prints_scores_and_flags_an_optimum_on_the_grid_edge(tmp_path):
    cfg = tiny(
        envs=[{"name": "linear", "d": 3}],
        grid={"eps": {"epsilon": [0.0, 0.5, 1.0]}, "LinUCB": {"nu": [0.1, 1.0]}},
        policies=[
            {"name": "eps-greedy", "label": "eps"},
            {"name": "linucb", "label": "LinUCB"},
        ],
    )
    config = write_yaml(tmp_path / "exp.yaml", cfg)
    out = tmp_path / "t"
    result = invoke(
        "tune", config, "--out", out, "--backend", "serial", "--progress", "none"
    )
    assert result.exit_code == 0, result.output
    assert_fits(result.output)
    lines = result.output.splitlines()
    assert "linear / eps: epsilon=0.0" in lines
    # one score line per grid point, the chosen one starred
    scores = [
        line
        for line in lines
        if line.startswith(" ") and "epsilon=" in line and "warning" not in line
    ]
    assert len(scores) == 3 and scores[0].lstrip().startswith("*")
    warnings = [line for line in lines if "warning" in line]
    assert len(warnings) == 1 and "extend the grid of epsilon" in warnings[0]
    assert "…" not in warnings[0]
    document = yaml.safe_load((out / "tuned.yaml").read_text())
    assert document["on_grid_edge"] == {"linear": {"eps": ["epsilon"]}}


def test_run_device_and_dtype_set_the_neural_policies(tmp_path):
    cfg = tiny(
        horizon=6,
        seeds=1,
        envs=[{"name": "logistic", "h": "h1", "d": 3, "n_arms": 3}],
        policies=[
            {"name": "linucb", "label": "LinUCB"},
            {"name": "neural-ucb", "label": "NeuralUCB", "width": 4, "steps": 2},
        ],
    )
    path = write_yaml(tmp_path / "c.yaml", cfg)
    out = tmp_path / "out"
    args = ("run", path, "--out", out, "--backend", "serial", "--progress", "none")
    result = invoke(*args, "--device", "auto", "--dtype", "float64")
    assert result.exit_code == 0, result.output
    policies = yaml.safe_load((out / "config.yaml").read_text())["policies"]
    assert [p.get("dtype") for p in policies] == [None, "float64"]
    assert [p.get("device") for p in policies] == [None, "auto"]
    if not torch.cuda.is_available():  # a device this machine lacks: exit 2 naming it
        bad = invoke(*args[:3], tmp_path / "gpu", *args[4:], "--device", "cuda:0")
        assert bad.exit_code == 2
        assert "'cuda:0' is not available" in bad.output
        assert not (tmp_path / "gpu").exists()
    wrong = invoke(*args, "--device", "gpu")
    assert wrong.exit_code == 2 and "'gpu'" in wrong.output


def test_reproduce_names_its_dtype_in_the_report(tmp_path):
    out = tmp_path / "r"
    result = invoke(
        "reproduce", "example", "--quick", "--figure", "regret", "--seeds", "1",
        "--horizon", "20", "--dtype", "float64", "--out", out, "--backend", "serial",
        "--progress", "none",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "--horizon 20 --dtype float64 --out" in (out / "report.md").read_text()
