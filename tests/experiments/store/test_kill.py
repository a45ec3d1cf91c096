"""SIGKILL part-way, restart: identical results, and never a partial file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from banditkit.experiments import run_experiment
from banditkit.experiments.store.store import RunStore
from tests.experiments.helpers import tiny, untimed_tables, without_timing, write_yaml

CONFIG = tiny(
    envs=[{"name": "linear", "d": 5, "n_arms": 5}],
    policies=[
        {"name": "linucb", "label": "LinUCB"},
        {"name": "lints", "label": "LinTS"},
    ],
    seeds=30,
    horizon=300,
)
BANDITKIT = [sys.executable, "-c", "from banditkit.cli import main; main()"]


def _check_no_partial_files(out: Path) -> int:
    """Every visible result file is complete; returns the number of finished runs."""
    runs = out / "runs"
    if not runs.is_dir():
        return 0
    finished = 0
    for path in list(runs.iterdir()):
        try:
            if path.name.endswith(".parquet"):
                pq.read_table(path)
            elif path.name.endswith(".json"):
                json.loads(path.read_text())
                finished += not path.name.endswith(".error.json")
        except FileNotFoundError:  # renamed over between listing and reading
            continue
    return finished


def _children(pid: int) -> list[int]:
    """Pids whose parent is ``pid`` (Linux /proc; empty elsewhere)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.parametrize("backend", ["serial", "process"])
def test_sigkill_then_resume_gives_identical_results(tmp_path, backend):
    config = write_yaml(tmp_path / "exp.yaml", CONFIG)
    out = tmp_path / "killed"
    command = [
        *BANDITKIT,
        "run",
        str(config),
        "--out",
        str(out),
        "--backend",
        backend,
        "--jobs",
        "2",
        "--progress",
        "log",
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 60
    try:
        while _check_no_partial_files(out) < 6:
            assert proc.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.01)
        workers = _children(proc.pid)
        if backend == "process" and Path("/proc").is_dir():
            assert len(workers) >= 2  # the pool's workers (and its resource tracker)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # Process-pool workers notice that their driver died and exit (no orphans).
    deadline = time.monotonic() + 15
    while any(_alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [w for w in workers if _alive(w)]
    done_at_kill = _check_no_partial_files(out)
    assert 6 <= done_at_kill < 60
    assert not (out / "summary.json").exists()

    resumed = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=120
    )
    assert resumed.returncode == 0, resumed.stderr
    assert f"({done_at_kill} already finished)" in resumed.stderr
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")]
    with RunStore(out).lock(timeout=0):  # released (the lock file itself stays)
        pass

    reference = tmp_path / "reference"
    assert run_experiment(config, reference, backend="serial", progress="none").ok
    killed, ref = untimed_tables(out), untimed_tables(reference)
    assert killed.keys() == ref.keys() and len(ref) == 60
    for key, table in ref.items():
        pd.testing.assert_frame_equal(killed[key], table, check_exact=True)
    s1 = json.loads((out / "summary.json").read_text())["results"]
    s2 = json.loads((reference / "summary.json").read_text())["results"]
    assert [without_timing(r) for r in s1] == [without_timing(r) for r in s2]
