"""The store: atomic files, stale temporary files, the directory lock, unwritable outputs."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

from banditkit.core.files import atomic_write_bytes
from banditkit.experiments.store.store import OutputDirError, RunStore
from banditkit.experiments.store.tables import COLUMNS


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


def test_atomic_write_check_sees_the_new_file_and_can_refuse_it(tmp_path):
    target = tmp_path / "f.bin"
    atomic_write_bytes(target, b"old")
    seen = []

    def refuse(tmp):
        seen.append(tmp.read_bytes())
        raise ValueError("bad checksum")

    with pytest.raises(ValueError, match="bad checksum"):
        atomic_write_bytes(target, b"new", check=refuse)
    assert seen == [b"new"] and target.read_bytes() == b"old"
    assert list(tmp_path.glob(".*.tmp")) == []
    atomic_write_bytes(target, b"new", check=lambda tmp: None)
    assert target.read_bytes() == b"new"


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


def test_lock_removes_stale_temporary_files_prepare_does_not(tmp_path):
    store = RunStore(tmp_path)
    store.prepare()
    stale = store.runs_dir / ".abc.parquet.x1y2.tmp"
    stale.write_bytes(b"partial")
    store.prepare()
    assert stale.exists()
    with store.lock():
        assert not stale.exists()


def test_unwritable_output_directory(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("keep me")
    with pytest.raises(OutputDirError, match="cannot write to the output directory"):
        RunStore(blocker / "out").prepare()
    assert blocker.read_text() == "keep me"


def test_lock_is_reentrant_and_released_by_a_dead_holder(tmp_path):
    store = RunStore(tmp_path)
    store.prepare()
    with store.lock(), RunStore(tmp_path).lock():
        holder = json.loads((tmp_path / ".banditkit.lock").read_text())
        assert holder == {"pid": os.getpid(), "host": socket.gethostname()}
    # A process killed while holding the lock leaves the file, but not the lock.
    code = (
        "import os, sys; from banditkit.experiments.store.store import RunStore; "
        f"s = RunStore({str(tmp_path)!r}); cm = s.lock(); cm.__enter__(); os._exit(0)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    assert "pid" in (tmp_path / ".banditkit.lock").read_text()
    with store.lock(timeout=0):
        pass


def _hold_lock(folder, seconds: float) -> subprocess.Popen[str]:
    """A process that takes the lock of ``folder``, says so, and keeps it ``seconds``."""
    code = (
        "import sys, time; from banditkit.experiments.store.store import RunStore; "
        f"s = RunStore({str(folder)!r}); s.prepare()\n"
        f"with s.lock():\n    print('held', flush=True); time.sleep({seconds})"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_writer_waits_and_destroys_nothing_in_flight(tmp_path, caplog):
    holder = _hold_lock(tmp_path, 1.5)
    in_flight = tmp_path / "runs" / ".abc.parquet.x1y2.tmp"
    in_flight.write_bytes(b"being written")
    store = RunStore(tmp_path)
    store.prepare()
    assert in_flight.exists()
    with (
        pytest.raises(OutputDirError, match=r"in use by another .* gave up after"),
        store.lock(timeout=0.3),
    ):
        pass
    assert in_flight.exists()
    assert "waiting for it to finish" in caplog.text
    assert f"pid {holder.pid}" in caplog.text
    started = time.monotonic()
    with store.lock():  # waits for the holder to release it
        assert time.monotonic() - started > 0.5
        assert not in_flight.exists()  # the holder is done: its temporaries are stale
    assert holder.wait(timeout=30) == 0


def test_atomic_writes_get_the_umask_mode(tmp_path):
    import os

    umask = os.umask(0o027)
    try:
        RunStore(tmp_path).write_text("a.txt", "x")
    finally:
        os.umask(umask)
    assert (tmp_path / "a.txt").stat().st_mode & 0o777 == 0o640
