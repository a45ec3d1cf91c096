"""Resuming over damaged result files, and two ``banditkit run`` processes on one ``--out``."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from banditkit.experiments import run_experiment
from banditkit.experiments.store.store import CorruptFileError, RunStore
from banditkit.experiments.store.tables import TIMING_COLUMNS
from tests.experiments.helpers import tiny, write_yaml

RUN = {"backend": "serial", "progress": "none", "figures": False}


def _tables(out: Path) -> dict[str, pd.DataFrame]:
    return {
        p.stem: pd.read_parquet(p).drop(columns=list(TIMING_COLUMNS))
        for p in sorted((out / "runs").glob("*.parquet"))
    }


def test_damaged_run_files_are_detected_named_and_recomputed(tmp_path, caplog):
    out = tmp_path / "out"
    first = run_experiment(tiny(), out, **RUN)
    before = _tables(out)
    ids = sorted(before)
    truncated = out / "runs" / f"{ids[0]}.parquet"
    truncated.write_bytes(truncated.read_bytes()[:-40])
    garbage = out / "runs" / f"{ids[1]}.json"
    garbage.write_text('{"id": "' + ids[1] + '", "rounds": 4')
    foreign = out / "runs" / f"{ids[2]}.json"
    foreign.write_text(json.dumps({"id": ids[3], "rounds": 40}))
    with caplog.at_level(logging.WARNING, logger="banditkit"):
        second = run_experiment(tiny(), out, **RUN)
    assert (second.computed, second.skipped) == (3, first.n_runs - 3)
    assert second.ok
    for path, why in (
        (truncated, "not a readable Parquet file"),
        (garbage, "not valid JSON"),
        (foreign, f"holds run '{ids[3]}'"),
    ):
        assert f"{str(path)!r}: {why}" in caplog.text
    assert "counts as not finished (`run` computes it again)" in caplog.text
    after = _tables(out)
    assert list(after) == ids
    for rid in ids:
        pd.testing.assert_frame_equal(after[rid], before[rid])


def test_check_run_names_the_problem(tmp_path):
    out = tmp_path / "out"
    run_experiment(tiny(seeds=1, envs=tiny()["envs"][:1]), out, **RUN)
    store = RunStore(out)
    rid = sorted(p.stem for p in store.runs_dir.glob("*.parquet"))[0]
    store.check_run(rid)
    meta = store.read_meta(rid)
    store.meta_path(rid).write_text(json.dumps({**meta, "rounds": 41}))
    with pytest.raises(CorruptFileError, match="40 rows where its metadata says 41"):
        store.check_run(rid)
    store.meta_path(rid).write_text(json.dumps({**meta, "table_sha256": "0" * 64}))
    with pytest.raises(CorruptFileError, match="SHA-256 differs"):
        store.check_run(rid)
    store.meta_path(rid).write_text("[1, 2]")
    with pytest.raises(CorruptFileError, match="expected a JSON object; got list"):
        store.read_meta(rid)
    assert not store.is_finished(rid)


def test_truncated_summary_is_rewritten_on_resume(tmp_path):
    out = tmp_path / "out"
    first = run_experiment(tiny(), out, **RUN)
    summary = out / "summary.json"
    summary.write_bytes(summary.read_bytes()[:100])
    second = run_experiment(tiny(), out, **RUN)
    assert second.computed == 0
    assert json.loads(summary.read_text())["results"] == first.summary["results"]


def _cli(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "banditkit", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_two_run_processes_on_one_out_both_finish_each_run_once(tmp_path):
    """The second process waits for the lock, then finds every run finished."""
    config = write_yaml(
        tmp_path / "c.yaml", tiny(seeds=6, horizon=300, envs=tiny()["envs"][:1])
    )
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    args = ("run", str(config), "--out", str(out), "--backend", "serial")
    procs = [_cli(*args, "--progress", "log", env=env) for _ in range(2)]
    results = [(*p.communicate(timeout=300), p.returncode) for p in procs]
    for _, stderr, code in results:
        assert code == 0, stderr
        assert "Traceback" not in stderr
    n_runs = 3 * 6
    computed = [
        int(line.split("runs: ")[1].split(" computed")[0])
        for stdout, _, _ in results
        for line in stdout.splitlines()
        if " computed, " in line
    ]
    assert sorted(computed) == [0, n_runs]  # no run computed twice
    runs = out / "runs"
    assert len(list(runs.glob("*.parquet"))) == len(list(runs.glob("*.json"))) == n_runs
    assert list(out.rglob("*.tmp")) == []
    summary = json.loads((out / "summary.json").read_text())
    assert [r["n_seeds"] for r in summary["results"]] == [6, 6, 6]


def test_truncated_figure_summary_is_rewritten_for_the_report(tmp_path, caplog):
    from banditkit.experiments.reproduce import build_report

    out = tmp_path / "paper"
    first = run_experiment(tiny(), out / "fig", **RUN)
    summary = out / "fig" / "summary.json"
    summary.write_bytes(summary.read_bytes()[:-30])
    with caplog.at_level(logging.WARNING, logger="banditkit"):
        joined, report = build_report(out, "nopaper", command="test", quick=False)
    assert f"{str(summary)!r}: not valid JSON" in caplog.text
    assert "rewriting it from the stored runs" in caplog.text
    assert json.loads(summary.read_text())["results"] == first.summary["results"]
    assert [r["figure"] for r in joined["results"]] == ["fig"] * 6
    assert report.is_file()
