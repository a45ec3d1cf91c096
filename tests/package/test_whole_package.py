"""The installed package is whole: examples and paper configs ship inside it; benchmarks not."""

from __future__ import annotations

import fnmatch
import json
import sys
from pathlib import Path

import pytest
import tomllib
from typer.testing import CliRunner

from banditkit.cli import app
from banditkit.errors import UnknownNameError
from banditkit.experiments import bench
from banditkit.experiments.bench import checkout_benchmarks, discover
from banditkit.experiments.examples import list_examples, write_example

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "banditkit"
runner = CliRunner()


def _package_data_globs() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return config["tool"]["setuptools"]["package-data"]["banditkit"]


@pytest.mark.parametrize("folder", ["experiments/papers", "examples"])
def test_every_data_file_is_matched_by_a_package_data_glob(folder: str) -> None:
    """A family adding a config (or another data file) under these folders ships it."""
    globs = _package_data_globs()
    files = [
        p.relative_to(PACKAGE).as_posix()
        for p in (PACKAGE / folder).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    ]
    assert files
    unmatched = [f for f in files if not any(fnmatch.fnmatch(f, g) for g in globs)]
    assert unmatched == [], f"add a package-data glob in pyproject.toml for {unmatched}"


def test_the_checkout_benchmarks_are_discovered_outside_the_package() -> None:
    folder = checkout_benchmarks()
    assert folder == ROOT / "benchmarks"
    assert not (PACKAGE / "benchmarks").exists()
    names = [p.stem for p in discover()]
    assert "assortment_opt" in names and "reference_logistic_ucb1" in names
    assert not any(n.startswith("_") for n in names)
    assert discover(only=["assortment_opt"]) == [folder / "assortment_opt.py"]
    with pytest.raises(UnknownNameError, match="Did you mean 'assortment_opt'"):
        discover(only=["assortment"])


def test_bench_from_a_wheel_says_what_to_do(tmp_path: Path, monkeypatch) -> None:
    """Without a checkout around the package, bench names the clone and --dir."""
    monkeypatch.setattr(bench, "_ROOT", tmp_path)
    assert checkout_benchmarks() is None
    result = runner.invoke(app, ["bench", "--quick", "--out", str(tmp_path / "b")])
    assert result.exit_code == 2
    assert "clone of the repository" in result.output and "--dir" in result.output
    assert "Traceback" not in result.output


def test_a_benchmark_package_imports_its_helpers(tmp_path: Path, monkeypatch) -> None:
    """Scripts of a folder with an __init__.py share modules, as benchmarks/ does."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    folder = tmp_path / "mybench"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "_helper.py").write_text("VALUE = 7\n")
    (folder / "uses.py").write_text(
        "from mybench._helper import VALUE\n"
        "def main(quick, out):\n"
        "    return {'value': VALUE}\n"
    )
    out = tmp_path / "out"
    document = bench.run_benchmarks(discover(folder), out, quick=True)
    assert document["benchmarks"]["uses"]["result"] == {"value": 7}


def test_bench_resumes_keeping_what_finished(tmp_path: Path) -> None:
    scripts = tmp_path / "mine"
    scripts.mkdir()
    calls = tmp_path / "calls.txt"
    for name in ("a", "b"):
        (scripts / f"{name}.py").write_text(
            "import os\n"
            "def main(quick, out):\n"
            f"    with open({str(calls)!r}, 'a') as fh:\n"
            f"        fh.write('{name}')\n"
            f"    if os.environ.get('FAIL_B') and {name!r} == 'b':\n"
            "        raise RuntimeError('b broke')\n"
            "    return {'ok': True}\n"
        )
    out = tmp_path / "out"
    first = runner.invoke(
        app,
        ["bench", "--quick", "--dir", str(scripts), "--out", str(out)],
        env={"FAIL_B": "1"},
    )
    assert first.exit_code == 1 and calls.read_text() == "ab"
    second = runner.invoke(
        app,
        ["bench", "--quick", "--dir", str(scripts), "--out", str(out)],
        env={"FAIL_B": ""},
    )
    assert second.exit_code == 0, second.output
    assert calls.read_text() == "abb"  # a kept, the failed b run again
    assert "a: kept" in second.output
    data = json.loads((out / "bench.json").read_text())
    assert {k: v["status"] for k, v in data["benchmarks"].items()} == {
        "a": "ok",
        "b": "ok",
    }
    third = runner.invoke(
        app, ["bench", "--quick", "--rerun", "--dir", str(scripts), "--out", str(out)]
    )
    assert third.exit_code == 0 and calls.read_text() == "abbab"
    # another mode (not --quick) does not reuse quick results
    runner.invoke(app, ["bench", "--dir", str(scripts), "--out", str(out)])
    assert calls.read_text() == "abbabab"


def test_examples_are_listed_and_written_out(tmp_path: Path, monkeypatch) -> None:
    names = [e.name for e in list_examples()]
    assert {"demo.yaml", "quickstart.py", "own_data.py"} <= set(names)
    monkeypatch.chdir(tmp_path)
    listed = runner.invoke(app, ["examples"])
    assert listed.exit_code == 0 and "demo.yaml" in listed.output
    assert all(len(line) <= 100 for line in listed.output.splitlines())
    wrote = runner.invoke(app, ["examples", "demo"])
    assert wrote.exit_code == 0, wrote.output
    assert (tmp_path / "demo.yaml").read_text() == (
        PACKAGE / "examples" / "demo.yaml"
    ).read_text()
    assert "banditkit run demo.yaml --out results/demo" in wrote.output
    again = runner.invoke(app, ["examples", "demo.yaml"])
    assert again.exit_code == 2 and "--force" in again.output
    assert runner.invoke(app, ["examples", "demo.yaml", "--force"]).exit_code == 0
    unknown = runner.invoke(app, ["examples", "dmeo"])
    assert unknown.exit_code == 2 and "Did you mean 'demo" in unknown.output
    path = write_example("quickstart", tmp_path / "sub" / "qs.py")
    assert path.name == "qs.py" and "def main" in path.read_text()


def test_ci_builds_installs_and_uses_the_package() -> None:
    """.ci/run ends with `make package`, which runs .ci/check_package (valid bash)."""
    import subprocess

    script = ROOT / ".ci" / "check_package"
    assert subprocess.run(["bash", "-n", str(script)], check=False).returncode == 0
    text = script.read_text()
    for step in (
        "-m build --no-isolation --outdir dist",
        "venv",
        '"$bk" --help',
        "examples demo.yaml",
        "bench --quick --out",
        "bench --quick --dir",
        "reproduce logistic",
    ):
        assert step in text, step
    assert "make package" in (ROOT / ".ci" / "run").read_text()
    makefile = (ROOT / "Makefile").read_text()
    assert ".ci/check_package" in makefile
    # the demo installs the package alone; the dev tools come with setup/test
    assert "demo: $(BIN)/.installed\n" in makefile
    assert "setup: $(BIN)/.installed-dev" in makefile
