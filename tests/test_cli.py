"""The banditkit command: every subcommand through typer's CliRunner, plus a real process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import banditkit.core
from banditkit.cli import app
from tests.experiments.helpers import snapshot, tiny, write_yaml

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def config(tmp_path) -> Path:
    return write_yaml(tmp_path / "exp.yaml", tiny())


def test_help_lists_every_command():
    result = invoke("--help")
    assert result.exit_code == 0
    for command in ("run", "reproduce", "tune", "plot", "list", "datasets", "bench"):
        assert command in result.output
    for command in ("run", "reproduce", "tune", "plot", "list", "datasets", "bench"):
        sub = invoke(command, "--help")
        assert sub.exit_code == 0, command
    assert "--backend" in invoke("run", "--help").output


def test_run_then_resume(config, tmp_path):
    out = tmp_path / "out"
    first = invoke(
        "run", config, "--out", out, "--backend", "serial", "--progress", "log"
    )
    assert first.exit_code == 0, first.output
    assert f"summary: {out / 'summary.json'}" in first.output
    assert "regret-linear.png" in first.output
    assert "12 runs: 12 computed" in first.output
    second = invoke("run", config, "--out", out, "--backend", "serial", "--seeds", "3")
    assert second.exit_code == 0
    assert "18 runs: 6 computed, 12 already finished, 0 failed" in second.output


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"horizon": None}, "horizon: required field is missing"),
        ({"horizon": "many"}, "horizon: Input should be a valid integer"),
        ({"horizon": -3}, "horizon: Input should be greater than 0"),
        (
            {"policies": [{"name": "linucbb"}]},
            "unknown policy 'linucbb'. Did you mean 'linucb'",
        ),
        (
            {"envs": [{"name": "lineer"}]},
            "unknown environment 'lineer'. Did you mean 'linear'",
        ),
    ],
)
def test_bad_config_exits_2_and_keeps_out(config, tmp_path, change, words):
    out = tmp_path / "out"
    assert invoke("run", config, "--out", out, "--backend", "serial").exit_code == 0
    before = snapshot(out)
    data = tiny()
    for key, value in change.items():
        if value is None:
            del data[key]
        else:
            data[key] = value
    bad = write_yaml(tmp_path / "bad.yaml", data)
    result = invoke("run", bad, "--out", out, "--backend", "serial")
    assert result.exit_code == 2
    assert str(bad) in result.output and words in result.output
    assert snapshot(out) == before


def test_unwritable_out_exits_2(config, tmp_path):
    blocker = tmp_path / "afile"
    blocker.write_text("precious")
    result = invoke("run", config, "--out", blocker / "sub", "--backend", "serial")
    assert result.exit_code == 2
    assert "cannot write to the output directory" in result.output
    assert blocker.read_text() == "precious"


def test_failed_run_exits_1_and_rerun_recovers(config, tmp_path, monkeypatch):
    real = banditkit.core.simulate

    def failing(policy, env, horizon, seed=0, **kw):
        if seed == 0 and type(policy).__name__ == "RandomPolicy":
            raise ValueError("boom")
        return real(policy, env, horizon, seed, **kw)

    monkeypatch.setattr(banditkit.core, "simulate", failing)
    out = tmp_path / "out"
    result = invoke("run", config, "--out", out, "--backend", "serial")
    assert result.exit_code == 1
    assert "FAILED" in result.output and "ValueError: boom" in result.output
    monkeypatch.setattr(banditkit.core, "simulate", real)
    again = invoke("run", config, "--out", out, "--backend", "serial")
    assert again.exit_code == 0 and "2 computed, 10 already finished" in again.output


def test_plot_redraws(config, tmp_path):
    out = tmp_path / "out"
    invoke("run", config, "--out", out, "--backend", "serial")
    for fig in (out / "figures").iterdir():
        fig.unlink()
    result = invoke("plot", out)
    assert result.exit_code == 0
    assert (out / "figures" / "regret-logistic-h1.svg").is_file()
    assert invoke("plot", tmp_path / "nothing").exit_code == 2


def test_list_commands():
    policies = invoke("list", "policies")
    assert policies.exit_code == 0
    assert any(
        line.split()[:2] == ["linucb", "contextual"]
        for line in policies.output.splitlines()
    )
    assert "logistic" in invoke("list", "envs").output
    assert "digits" in invoke("list", "datasets").output
    assert "example" in invoke("list", "papers").output
    assert "average_reward" in invoke("list", "metrics").output  # the CTR
    everything = invoke("list")
    assert "policies:" in everything.output and "papers:" in everything.output
    bad = invoke("list", "polices")
    assert bad.exit_code == 2 and "Did you mean 'policies'" in bad.output


def test_datasets_commands():
    listing = invoke("datasets", "list")
    assert listing.exit_code == 0 and "digits" in listing.output
    assert invoke("datasets", "path").exit_code == 0
    assert invoke("datasets", "verify", "digits").exit_code == 0
    bad = invoke("datasets", "verify", "digitz")
    assert bad.exit_code == 2 and "Did you mean 'digits'" in bad.output


def test_tune_command(tmp_path):
    cfg = tiny(
        envs=[{"name": "linear", "d": 3}],
        grid={"LinUCB": {"nu": [0.1, 1.0]}},
        policies=[{"name": "linucb", "label": "LinUCB"}],
    )
    config = write_yaml(tmp_path / "exp.yaml", cfg)
    result = invoke("tune", config, "--out", tmp_path / "t", "--backend", "serial")
    assert result.exit_code == 0, result.output
    assert "linear / LinUCB: nu=" in result.output
    assert (tmp_path / "t" / "tuned.yaml").is_file()


def test_reproduce_strict_exits_3_on_a_false_claim(tmp_path):
    folder = tmp_path / "paper"
    folder.mkdir()
    write_yaml(
        folder / "fig.yaml",
        tiny(
            claims=[
                {
                    "id": "false-claim",
                    "kind": "below",
                    "policy": "Random",
                    "other": "Oracle",
                }
            ]
        ),
    )
    args = ("reproduce", folder, "--out", tmp_path / "out", "--backend", "serial")
    relaxed = invoke(*args)
    assert relaxed.exit_code == 0
    assert "FAIL false-claim:" in relaxed.output
    assert "0 of 1 claims PASS, 1 FAIL" in relaxed.output
    assert invoke(*args, "--strict").exit_code == 3
    unknown = invoke("reproduce", "no-such-paper", "--out", tmp_path / "o2")
    assert unknown.exit_code == 2 and "unknown paper" in unknown.output


def test_bench_discovers_scripts(tmp_path):
    bench_dir = tmp_path / "benchmarks"
    bench_dir.mkdir()
    (bench_dir / "speed.py").write_text(
        "def main(quick, out):\n"
        "    (out / 'note.txt').write_text('hi')\n"
        "    return {'quick': quick, 'rounds_per_second': 1.0}\n"
    )
    out = tmp_path / "out"
    result = invoke("bench", "--quick", "--out", out, "--dir", bench_dir)
    assert result.exit_code == 0, result.output
    data = json.loads((out / "bench.json").read_text())
    assert data["benchmarks"]["speed"]["result"] == {
        "quick": True,
        "rounds_per_second": 1.0,
    }
    assert (out / "speed" / "note.txt").read_text() == "hi"
    (bench_dir / "broken.py").write_text(
        "def main(quick, out):\n    raise RuntimeError('x')\n"
    )
    assert invoke("bench", "--out", out, "--dir", bench_dir).exit_code == 1
    assert invoke("bench", "--out", out, "--dir", tmp_path / "none").exit_code == 2


def test_console_script_in_a_real_process(config, tmp_path):
    script = Path(sys.executable).with_name("banditkit")
    command = (
        [str(script)]
        if script.exists()
        else [sys.executable, "-c", "from banditkit.cli import main; main()"]
    )
    out = tmp_path / "out"
    proc = subprocess.run(
        [*command, "run", str(config), "--out", str(out), "--backend", "serial"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "summary:" in proc.stdout
    assert "[12/12] ok" in proc.stderr  # plain log lines when not on a terminal
    bad = subprocess.run(
        [*command, "run", str(tmp_path / "missing.yaml"), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2 and "file not found" in bad.stderr
