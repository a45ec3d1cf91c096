"""The store: atomic files, stale temporary files, the directory lock, unwritable outputs."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest

from banditkit.experiments.store import (
    COLUMNS,
    OutputDirError,
    RunStore,
    atomic_write_bytes,
)


def test_atomic_write_leaves_old_file_when_interrupted(tmp_path, monkeypatch):
    target = tmp_path / "f.json"
    atomic_write_bytes(target, b"old")

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        atomic_write_bytes(target, b"new")
    assert target.read_bytes() == b"old"
    assert list(tmp_path.glob("*.tmp")) == list(tmp_path.glob(".*.tmp")) == []


def test_write_and_read_run(tmp_path):
    store = RunStore(tmp_path / "out")
    store.prepare()
    columns = {name: np.arange(1, 4) for name in COLUMNS}
    store.write_error("abc", {"traceback": "x"})
    store.write_run("abc", columns, {"id": "abc", "final_regret": 1.0})
    assert store.is_finished("abc")
    assert store.read_error("abc") is None
    assert list(store.read_table("abc").columns) == list(COLUMNS)
    assert store.read_meta("abc")["final_regret"] == 1.0


def test_prepare_removes_stale_temporary_files(tmp_path):
    store = RunStore(tmp_path)
    store.prepare()
    stale = store.runs_dir / ".abc.parquet.x1y2.tmp"
    stale.write_bytes(b"partial")
    store.prepare()
    assert not stale.exists()


def test_unwritable_output_directory(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("keep me")
    with pytest.raises(OutputDirError, match="cannot write to the output directory"):
        RunStore(blocker / "out").prepare()
    assert blocker.read_text() == "keep me"


def test_lock_excludes_a_live_holder_and_takes_over_a_dead_one(tmp_path):
    store = RunStore(tmp_path)
    store.prepare()
    with (
        store.lock(),
        pytest.raises(OutputDirError, match="in use by another"),
        store.lock(),
    ):
        pass
    assert not (tmp_path / ".banditkit.lock").exists()
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    lock = {"pid": int(dead.stdout), "host": socket.gethostname()}
    (tmp_path / ".banditkit.lock").write_text(json.dumps(lock))
    with store.lock():
        assert (
            json.loads((tmp_path / ".banditkit.lock").read_text())["pid"] == os.getpid()
        )


def test_atomic_writes_get_the_umask_mode(tmp_path):
    import os

    from banditkit.experiments import store

    umask = os.umask(0o022)
    cached, store._UMASK = store._UMASK, None
    try:
        store.atomic_write_text(tmp_path / "a.txt", "x")
    finally:
        os.umask(umask)
        store._UMASK = cached
    assert (tmp_path / "a.txt").stat().st_mode & 0o777 == 0o644
