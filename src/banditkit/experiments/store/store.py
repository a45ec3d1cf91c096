"""The result store: one output directory, written atomically (docs/architecture.md section 7).

    DIR/config.yaml            the resolved config
    DIR/cells.json             its environments, policies and cells (``store.stored``)
    DIR/runs/<id>.parquet      per-round columns of one run (``tables.table_columns``: ``t``,
                               the environment's declared records, ``cumulative_regret``)
    DIR/runs/<id>.json         its metadata; written last, so it marks the run finished
    DIR/runs/<id>.error.json   a run that raised: its traceback (removed once it succeeds)
    DIR/checkpoints/<id>.npz   a run's last checkpoint (``store.checkpoints``; removed once
                               the run is stored)
    DIR/summary.json, DIR/figures/, DIR/report.md

Every file is written to a temporary name in the same directory (``.<name>.<random>.tmp``),
flushed to disk and renamed over the target with ``os.replace``, so a process killed at any
moment leaves either the complete file or none.

One writer at a time: :meth:`RunStore.lock` holds an exclusive ``fcntl.flock`` on
``DIR/.banditkit.lock`` (which also records the holder's pid and host for messages). A second
process on the same directory waits until the first releases it (a message says so), then
sees the runs the first finished and skips them. The operating system drops the lock when its
holder exits, however it exits, so there are no stale locks to clean up. Temporary files of a
killed process are removed only once the lock is held, so nothing a live writer has in
flight is ever touched. ``flock`` is POSIX: on other systems, or on network filesystems that
do not support it, the directory is not protected.

Reading back is checked (:meth:`RunStore.check_run`): a run whose metadata is not a JSON
object for that run, or whose table is not a readable Parquet file with the expected columns
and row count (and, when the metadata records ``table_sha256``, the same digest), counts as
not finished; a warning names the file and the run is computed again on the next ``run``.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import json
import logging
import os
import socket
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from banditkit.core.errors import BanditkitError, DamagedFileError
from banditkit.core.files import atomic_write_bytes, atomic_write_text
from banditkit.core.records import Record
from banditkit.experiments.store.checkpoints import CHECKPOINTS_DIR, CheckpointFiles
from banditkit.experiments.store.tables import (
    COLUMNS,
    CONTEXTUAL_RECORDS,
    arrow_table,
)

__all__ = [
    "CorruptFileError",
    "OutputDirError",
    "RunStore",
    "atomic_write_text",
    "json_safe",
    "read_json_object",
]

LOCK_NAME = ".banditkit.lock"
LOCK_POLL_SECONDS = 0.2
"""How often a process waiting for the lock of a directory tries again."""

_log = logging.getLogger("banditkit")


class OutputDirError(BanditkitError, OSError):
    """The output directory cannot be used (not writable, or in use by another process)."""


class CorruptFileError(DamagedFileError):
    """A stored result file cannot be read back (truncated, not the expected format or content)."""


def json_safe(value: Any) -> Any:
    """Replace NaN and infinities by None and NumPy scalars by Python ones (strict JSON).

    Example:
        >>> json_safe({"a": float("nan"), "b": [np.float64(1.5)]})
        {'a': None, 'b': [1.5]}
    """
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


def _write_json(path: Path, data: Any) -> None:
    text = json.dumps(json_safe(data), indent=2, allow_nan=False)
    atomic_write_text(path, text + "\n")


def read_json_object(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a JSON file that must hold an object (a run's metadata, ``summary.json``).

    Raises:
        CorruptFileError: If it is not valid UTF-8 JSON, or not an object.
        FileNotFoundError: If it does not exist.
    """
    path = Path(path)
    try:
        data = json.loads(path.read_bytes())
    except (ValueError, UnicodeDecodeError) as exc:
        raise CorruptFileError(path, f"not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise CorruptFileError(
            path, f"expected a JSON object; got {type(data).__name__}"
        )
    return data


_HELD: dict[str, int] = {}
"""Lock files held by this process (resolved path -> depth), for re-entrant locking."""


class RunStore:
    """Reads and writes the files of one output directory.

    Args:
        root: The output directory (``--out``).

    Example:
        >>> import tempfile
        >>> store = RunStore(tempfile.mkdtemp())
        >>> store.prepare()
        >>> store.is_finished("0123456789abcdef")
        False
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.runs_dir = self.root / "runs"
        self.figures_dir = self.root / "figures"
        self.checkpoints = CheckpointFiles(self.root / CHECKPOINTS_DIR)
        self._warned: set[str] = set()

    # ------------------------------------------------------------------ directory
    def prepare(self, *, subdirs: bool = True) -> None:
        """Create the directories and check they are writable.

        Nothing is removed here: stale temporary files are cleaned by :meth:`lock`, once no
        other writer can be using them.

        Args:
            subdirs: Also create ``runs/`` and ``figures/``.

        Raises:
            OutputDirError: If the directory cannot be created or written.
        """
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            if subdirs:
                self.runs_dir.mkdir(exist_ok=True)
                self.figures_dir.mkdir(exist_ok=True)
            fd, probe = tempfile.mkstemp(dir=self.root, prefix=".probe.", suffix=".tmp")
            os.close(fd)
            Path(probe).unlink(missing_ok=True)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise OutputDirError(
                f"cannot write to the output directory {str(self.root)!r}: {reason}"
            ) from None

    def _remove_stale_temporaries(self) -> None:
        for folder in (
            self.root,
            self.runs_dir,
            self.figures_dir,
            self.checkpoints.folder,
        ):
            for tmp in folder.glob(".*.tmp") if folder.is_dir() else ():
                tmp.unlink(missing_ok=True)

    @contextlib.contextmanager
    def lock(self, *, timeout: float | None = None) -> Iterator[None]:
        """Hold the directory's lock for the duration of the block (one writer at a time).

        Takes an exclusive ``fcntl.flock`` on ``DIR/.banditkit.lock``. When another process
        holds it, this one logs a warning (logger ``banditkit``) naming the holder and waits.
        Once the lock is held, temporary files left by killed processes are removed. The
        lock is re-entrant within a process (a nested call on the same directory returns at
        once) and is dropped by the operating system if the process dies.

        Args:
            timeout: Seconds to wait for another holder (None: as long as it takes).

        Raises:
            OutputDirError: If the lock file cannot be opened, or ``timeout`` passed.
        """
        path = self.root / LOCK_NAME
        key = str(path.resolve())
        if key in _HELD:
            _HELD[key] += 1
            try:
                yield
            finally:
                _HELD[key] -= 1
            return
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as exc:
            raise OutputDirError(
                f"cannot open the lock file {str(path)!r}: {exc.strerror or exc}"
            ) from None
        try:
            self._acquire(fd, path, timeout)
            holder = json.dumps({"pid": os.getpid(), "host": socket.gethostname()})
            os.ftruncate(fd, 0)
            os.pwrite(fd, holder.encode(), 0)
            self._remove_stale_temporaries()
            _HELD[key] = 1
            try:
                yield
            finally:
                del _HELD[key]
                os.ftruncate(fd, 0)
        finally:
            os.close(fd)  # closing the descriptor releases the flock

    def _acquire(self, fd: int, path: Path, timeout: float | None) -> None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        try:
            holder = json.loads(path.read_text() or "{}")
        except (OSError, ValueError):
            holder = {}
        who = f"pid {holder.get('pid', '?')} on {holder.get('host', '?')}"
        _log.warning(
            "banditkit: %s is in use by another banditkit process (%s); waiting for it "
            "to finish (Ctrl-C to stop).",
            self.root,
            who,
        )
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if deadline is not None and time.monotonic() >= deadline:
                    raise OutputDirError(
                        f"{str(self.root)!r} is in use by another banditkit process "
                        f"({who}); gave up after {timeout:g} s."
                    ) from None
                time.sleep(LOCK_POLL_SECONDS)

    # ------------------------------------------------------------------ paths
    def table_path(self, run_id: str) -> Path:
        """``runs/<id>.parquet``."""
        return self.runs_dir / f"{run_id}.parquet"

    def meta_path(self, run_id: str) -> Path:
        """``runs/<id>.json``."""
        return self.runs_dir / f"{run_id}.json"

    def error_path(self, run_id: str) -> Path:
        """``runs/<id>.error.json``."""
        return self.runs_dir / f"{run_id}.error.json"

    # ------------------------------------------------------------------ runs
    def is_finished(self, run_id: str) -> bool:
        """True when both files of the run exist and read back correctly.

        A run whose files exist but fail :meth:`check_run` is not finished: a warning
        (logger ``banditkit``, once per run and store) names the file and what is wrong,
        and ``run`` computes it again, replacing both files.
        """
        if not (self.meta_path(run_id).is_file() and self.table_path(run_id).is_file()):
            return False
        try:
            self.check_run(run_id)
        except CorruptFileError as exc:
            if run_id not in self._warned:
                self._warned.add(run_id)
                _log.warning(
                    "banditkit: %s; run %s counts as not finished (`run` computes it "
                    "again).",
                    exc,
                    run_id,
                )
            return False
        return True

    def check_run(self, run_id: str) -> None:
        """Check that the stored files of a run read back as a complete run.

        The metadata must be a JSON object whose ``id`` (when present) is ``run_id``; the
        table must be a Parquet file whose footer reads, with every column the metadata's
        ``columns`` lists (``COLUMNS`` for metadata written before it did) and as many rows
        as its ``rounds`` (when present); when the metadata records ``table_sha256`` (as
        :meth:`write_run` does), the table's bytes must have that SHA-256.

        Raises:
            CorruptFileError: Naming the first file that fails and why.
        """
        import pyarrow as pa
        import pyarrow.parquet as pq

        meta = self.read_meta(run_id)
        if meta.get("id", run_id) != run_id:
            raise CorruptFileError(
                self.meta_path(run_id), f"holds run {meta.get('id')!r}, not {run_id!r}"
            )
        path = self.table_path(run_id)
        try:
            parquet = pq.ParquetFile(path)
        except (pa.ArrowException, OSError) as exc:
            raise CorruptFileError(
                path, f"not a readable Parquet file ({exc})"
            ) from None
        info = parquet.metadata
        names = set(parquet.schema_arrow.names)  # top-level names (list columns too)
        expected = meta.get("columns")
        if not isinstance(expected, list):
            expected = list(COLUMNS)
        missing = [c for c in expected if c not in names]
        if missing:
            raise CorruptFileError(path, f"missing columns {', '.join(missing)}")
        digest = meta.get("table_sha256")
        if digest is not None:
            actual = hashlib.sha256(path.read_bytes()).hexdigest()
            if actual != digest:
                raise CorruptFileError(
                    path, "its SHA-256 differs from the one recorded in its metadata"
                )
        rounds = meta.get("rounds")
        if isinstance(rounds, int) and info.num_rows != rounds:
            raise CorruptFileError(
                path, f"{info.num_rows} rows where its metadata says {rounds}"
            )

    def write_run(
        self,
        run_id: str,
        columns: Mapping[str, Any],
        meta: dict[str, Any],
        records: Sequence[Record] = CONTEXTUAL_RECORDS,
    ) -> None:
        """Write a finished run: the table first, then its metadata, then drop any error.

        Args:
            run_id: The run's id.
            columns: Column name -> per-round values: exactly ``table_columns(records)``.
            meta: The run's metadata.
            records: The environment's declared records (``Environment.declared_records``).

        Raises:
            ValueError: If ``columns`` has an undeclared column or lacks a declared one.
        """
        import pyarrow.parquet as pq

        table = arrow_table(columns, records)
        buffer = io.BytesIO()
        pq.write_table(table, buffer, compression="zstd")
        data = buffer.getvalue()
        atomic_write_bytes(self.table_path(run_id), data)
        meta = {
            **meta,
            "columns": list(table.column_names),
            "table_sha256": hashlib.sha256(data).hexdigest(),
        }
        _write_json(self.meta_path(run_id), meta)
        self.error_path(run_id).unlink(missing_ok=True)
        self.checkpoints.drop(run_id)

    def write_error(self, run_id: str, info: dict[str, Any]) -> None:
        """Record a failed run (its traceback and settings)."""
        _write_json(self.error_path(run_id), info)

    def read_table(self, run_id: str) -> Any:
        """The run's table as a pandas DataFrame.

        Raises:
            CorruptFileError: If the file is not a readable Parquet file.
        """
        import pyarrow as pa
        import pyarrow.parquet as pq

        path = self.table_path(run_id)
        try:
            return pq.read_table(path).to_pandas()
        except pa.ArrowException as exc:
            raise CorruptFileError(
                path, f"not a readable Parquet file ({exc})"
            ) from None

    def read_meta(self, run_id: str) -> dict[str, Any]:
        """The run's metadata.

        Raises:
            CorruptFileError: If the file is not a JSON object.
        """
        return read_json_object(self.meta_path(run_id))

    def read_error(self, run_id: str) -> dict[str, Any] | None:
        """The recorded failure of a run, if any (None also for an unreadable record)."""
        path = self.error_path(run_id)
        if not path.is_file():
            return None
        try:
            return read_json_object(path)
        except CorruptFileError:
            return None

    # ------------------------------------------------------------------ other files
    def write_json(self, name: str, data: Any) -> Path:
        """Write ``DIR/<name>`` as JSON atomically."""
        path = self.root / name
        _write_json(path, data)
        return path

    def write_text(self, name: str, text: str) -> Path:
        """Write ``DIR/<name>`` atomically."""
        path = self.root / name
        atomic_write_text(path, text)
        return path
