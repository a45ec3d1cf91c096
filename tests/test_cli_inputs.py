"""Hostile inputs through a real ``python -m banditkit`` process: exit 2, one clear message,
no traceback, nothing written; and result files with the user's umask mode."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.experiments.helpers import tiny, write_yaml

MEMORY_CAP = 4 * 2**30
"""Address-space cap of the child: a regression fails instead of exhausting the machine."""


def _banditkit(
    *args: str, env: dict[str, str] | None = None, umask: int | None = None
) -> subprocess.CompletedProcess[str]:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))
        if umask is not None:
            os.umask(umask)

    full_env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(sys.path),
        "BANDITKIT_MAX_MEMORY": "16G",
        **(env or {}),
    }
    return subprocess.run(
        [sys.executable, "-m", "banditkit", *args],
        capture_output=True,
        text=True,
        env=full_env,
        preexec_fn=limit,
        timeout=300,
    )


def _refused(result: subprocess.CompletedProcess[str], out: Path, *words: str) -> None:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("error: ")
    for word in words:
        assert word in result.stderr
    assert not out.exists()


def test_missing_dataset_exits_2_with_two_lines(tmp_path):
    empty = tmp_path / "data"
    empty.mkdir()
    config = write_yaml(
        tmp_path / "c.yaml",
        tiny(envs=[{"name": "classification", "dataset": "mushroom"}]),
    )
    out = tmp_path / "out"
    result = _banditkit(
        "run",
        str(config),
        "--out",
        str(out),
        env={"BANDITKIT_DATA": str(empty), "BANDITKIT_OFFLINE": "1"},
    )
    _refused(
        result,
        out,
        "missing dataset mushroom",
        "banditkit datasets fetch mushroom",
        str(empty),
        "BANDITKIT_DATA",
    )
    assert len(result.stderr.strip().splitlines()) <= 2


def test_duplicate_key_names_both_lines(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text(
        "name: dup\nhorizon: 10\nseeds: 2\nenv: {name: linear}\n"
        "policies:\n  - {name: linucb, nu: 1.0, nu: 2.0}\n"
    )
    out = tmp_path / "out"
    result = _banditkit("run", str(config), "--out", str(out))
    _refused(result, out, "line 6", "duplicate key 'nu' (first given on line 6)")


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"seeds": "1e9"}, ["6,000,000,000 runs", "TiB"]),
        (
            {"envs": [{"name": "linear", "d": 3, "n_arms": "1e9"}]},
            ["n_arms=1,000,000,000", "GiB"],
        ),
    ],
    ids=["seeds", "n_arms"],
)
def test_oversized_experiment_is_refused_quickly_with_an_estimate(
    tmp_path, change, words
):
    text = write_yaml(tmp_path / "c.yaml", tiny(**change)).read_text()
    config = tmp_path / "c.yaml"
    config.write_text(text.replace("'1e9'", "1e9"))  # a plain YAML scalar, as typed
    out = tmp_path / "out"
    started = time.monotonic()
    result = _banditkit("run", str(config), "--out", str(out))
    assert time.monotonic() - started < 60
    _refused(
        result,
        out,
        "needs an estimated",
        "limit of 16.0 GiB (set by BANDITKIT_MAX_MEMORY)",
        *words,
    )


def test_unmatched_tuned_file_is_refused(tmp_path):
    (tmp_path / "tuned.yaml").write_text(
        "tuned:\n  some-other-env:\n    LinUCB: {nu: 0.1}\n"
    )
    config = write_yaml(tmp_path / "c.yaml", tiny(tuned="tuned.yaml"))
    out = tmp_path / "out"
    result = _banditkit("run", str(config), "--out", str(out))
    _refused(result, out, "tuned.yaml", "matches no policy", "some-other-env / LinUCB")


def test_results_get_the_umask_mode(tmp_path):
    config = write_yaml(tmp_path / "c.yaml", tiny(seeds=1, horizon=10))
    out = tmp_path / "out"
    result = _banditkit(
        "run", str(config), "--out", str(out), "--backend", "serial", umask=0o027
    )
    assert result.returncode == 0, result.stderr
    files = [p for p in out.rglob("*") if p.is_file()]
    assert any(p.suffix == ".parquet" for p in files)
    assert {p.name: p.stat().st_mode & 0o777 for p in files} == {
        p.name: 0o640 for p in files
    }
