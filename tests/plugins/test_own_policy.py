"""docs/own-policy.md: a plugin in a file outside the package, through run, tune, plot,
the process backend and the contract suite, exactly as the page shows."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from banditkit.cli import app
from banditkit.core import POLICIES
from banditkit.core.registry import IMPORTS_VARIABLE
from banditkit.plugins import import_plugins

DOC = Path(__file__).parents[2] / "docs" / "own-policy.md"
runner = CliRunner()


def _block(language: str, index: int = 0) -> str:
    blocks = re.findall(rf"```{language}\n(.*?)```", DOC.read_text(), flags=re.DOTALL)
    return blocks[index]


@pytest.fixture
def plugin_dir(tmp_path, monkeypatch):
    """The page's plugin file and config in a folder outside the package; cleaned after."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(IMPORTS_VARIABLE, raising=False)
    (tmp_path / "my_policies.py").write_text(_block("python", 0))
    (tmp_path / "my.yaml").write_text(_block("yaml"))
    before = set(POLICIES._entries)
    yield tmp_path
    for name in set(POLICIES._entries) - before:
        POLICIES.unregister(name)


def _invoke(line: str):
    """Run one `banditkit ...` line of the page's bash block."""
    result = runner.invoke(app, line.split()[1:])
    assert result.exit_code == 0, result.output
    return result


def test_the_page_commands_run_the_plugin(plugin_dir):
    lines = [
        line.split("#")[0].strip()
        for line in _block("bash").splitlines()
        if line.startswith("banditkit ")
    ]
    assert len(lines) == 4
    run, run_process, tune, plot = lines

    _invoke(run)
    summary = json.loads((plugin_dir / "results/mine/summary.json").read_text())
    labels = {row["label"] for row in summary["results"]}
    assert "Mine" in labels, summary["results"]
    serial = {row["label"]: row["final_regret_mean"] for row in summary["results"]}

    # the process backend: workers must import the file again (BANDITKIT_IMPORTS)
    process_out = plugin_dir / "results/mine-process"
    _invoke(run_process.replace("results/mine ", f"{process_out} "))
    stored = list((process_out / "runs").glob("*.json"))
    assert stored and not list((process_out / "runs").glob("*.error.json"))
    summary = json.loads((process_out / "summary.json").read_text())
    assert {
        row["label"]: row["final_regret_mean"] for row in summary["results"]
    } == serial

    _invoke(tune)
    tuned = yaml.safe_load((plugin_dir / "results/mine-tune/tuned.yaml").read_text())
    assert tuned["tuned"]["linear"]["Mine"]["epsilon"] in (0.0, 0.1)

    result = _invoke(plot)
    assert ".png" in result.output


def test_the_contract_suite_one_liner_passes_on_the_plugin(plugin_dir):
    import_plugins(["my_policies.py"])
    namespace = {"MeanDirection": POLICIES.get("mean-direction")}
    exec(
        _block("python", 1), namespace
    )  # check_policy(...) raises if a contract breaks
    from banditkit.testing import check_policy

    check_policy("mean-direction")
