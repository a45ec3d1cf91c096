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
object for that run (its ``id`` and the settings it records must give the run's id), or
whose table is not a readable Parquet file with the expected columns and row count (and the
digest the metadata records in ``table_sha256``; a run written before the digest existed
must end at the ``final_regret`` its metadata records), counts as not finished; a warning
names the file and the run is computed again on the next ``run``. Summaries, figures and
``load_runs`` read only runs that pass.

Nothing under the directory is followed out of it: the lock file and every stored file are
opened with ``O_NOFOLLOW`` (a symbolic link planted as ``.banditkit.lock`` or as a run's
file is refused, or counts as damaged, never written through), ``runs/`` and ``figures/``
must be real directories, and files are replaced by renaming, which replaces a link
rather than its target. A file that cannot be written (a directory in its place, a full
disk, no permission) is an :class:`OutputDirError` naming it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import io
import json
import logging
import math
import os
import socket
import stat
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from banditkit.core.errors import BanditkitError, DamagedFileError
from banditkit.core.files import atomic_write_bytes, atomic_write_text
from banditkit.core.records import Record
from banditkit.experiments.config.names import check_file_id
from banditkit.experiments.config.resolved import run_id as run_id_of
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
    "read_stored_file",
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


def _json_text(data: Any) -> str:
    return json.dumps(json_safe(data), indent=2, allow_nan=False) + "\n"


def _write(root: Path, path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically, inside ``root``.

    Raises:
        OutputDirError: If ``path``'s folder resolves outside ``root`` (a linked folder),
            or on any failure to write.
    """
    base, folder = root.resolve(), path.parent.resolve()
    if not folder.is_relative_to(base):
        raise OutputDirError(
            f"{str(path)!r} would be written to {str(folder)!r}, outside the output "
            f"directory {str(base)!r} (a symbolic link?); banditkit writes only inside it"
        )
    try:
        atomic_write_bytes(path, data)
    except OSError as exc:
        raise OutputDirError(
            f"cannot write {str(path)!r}: {exc.strerror or exc}"
            + (" (remove it, or use another --out)" if path.is_dir() else "")
        ) from None


def read_stored_file(path: str | os.PathLike[str]) -> bytes:
    """The bytes of a stored file, opened without following a symbolic link.

    Raises:
        FileNotFoundError: If it does not exist.
        CorruptFileError: If it is a symbolic link, not a regular file, or unreadable.
    """
    path = Path(path)
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK  # NONBLOCK: a FIFO never waits
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise CorruptFileError(
                path,
                "is a symbolic link (links are not followed in an output directory)",
            ) from None
        raise CorruptFileError(path, f"cannot be read: {exc.strerror or exc}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise CorruptFileError(path, "is not a regular file")
        with os.fdopen(os.dup(fd), "rb") as fh:
            return fh.read()
    finally:
        os.close(fd)


def read_json_object(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a JSON file that must hold an object (a run's metadata, ``summary.json``).

    The file is opened without following a symbolic link (:func:`read_stored_file`).

    Raises:
        CorruptFileError: If it is not valid UTF-8 JSON, nested too deep, not an object,
            a link or not a regular file.
        FileNotFoundError: If it does not exist.
    """
    path = Path(path)
    try:
        data = json.loads(read_stored_file(path))
    except CorruptFileError:
        raise
    except (ValueError, UnicodeDecodeError) as exc:
        raise CorruptFileError(path, f"not valid JSON ({exc})") from None
    except RecursionError:
        raise CorruptFileError(path, "not valid JSON (nested too deep)") from None
    if not isinstance(data, dict):
        raise CorruptFileError(
            path, f"expected a JSON object; got {type(data).__name__}"
        )
    return data


def _check_final_regret(path: Path, parquet: Any, meta: Mapping[str, Any]) -> None:
    """A table without a recorded digest ends at the metadata's ``final_regret``."""
    final = meta.get("final_regret")
    if isinstance(final, bool) or not isinstance(final, int | float):
        raise CorruptFileError(
            path,
            "its metadata records neither table_sha256 nor final_regret to check it",
        )
    column = parquet.read(columns=["cumulative_regret"]).column(0)
    last = float(column[-1].as_py()) if len(column) else 0.0
    if not math.isclose(last, float(final), rel_tol=1e-12, abs_tol=1e-12):
        raise CorruptFileError(
            path,
            f"ends at cumulative regret {last!r} where its metadata records {final!r} "
            "(the table of another run?)",
        )


def _open_lock(path: Path) -> int:
    """Open (or create) the lock file without following a symbolic link; its descriptor.

    Raises:
        OutputDirError: If it is a link or not a regular file, or cannot be opened.
    """
    try:
        fd = os.open(
            path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o666
        )
    except OSError as exc:
        why = (
            "it is a symbolic link (remove it: banditkit does not follow links there)"
            if exc.errno == errno.ELOOP
            else (exc.strerror or str(exc))
        )
        raise OutputDirError(
            f"cannot open the lock file {str(path)!r}: {why}"
        ) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OutputDirError(
            f"cannot open the lock file {str(path)!r}: it is not a regular file "
            "(remove it)"
        )
    return fd


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
            OutputDirError: If the directory cannot be created or written, or ``runs/`` or
                ``figures/`` is a symbolic link or not a directory (what is written there
                would land elsewhere).
        """
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            if subdirs:
                self.subfolder("runs")
                self.subfolder("figures")
            fd, probe = tempfile.mkstemp(dir=self.root, prefix=".probe.", suffix=".tmp")
            os.close(fd)
            Path(probe).unlink(missing_ok=True)
        except OSError as exc:
            if isinstance(exc, OutputDirError):
                raise
            reason = exc.strerror or str(exc)
            raise OutputDirError(
                f"cannot write to the output directory {str(self.root)!r}: {reason}"
            ) from None

    def subfolder(self, name: str) -> Path:
        """``DIR/<name>``, created if missing: a real folder of the directory.

        ``name`` is one id (``config.names.ID_PATTERN``): no separator, no ``..``.

        Raises:
            OutputDirError: If ``name`` is no id, or ``DIR/<name>`` is a symbolic link or
                not a directory (what is written there would land elsewhere).
        """
        try:
            check_file_id(name)
        except ValueError as exc:
            raise OutputDirError(
                f"cannot make a folder of {str(self.root)!r}: {exc}"
            ) from None
        folder = self.root / name
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            what = "a symbolic link" if folder.is_symlink() else "not a directory"
            raise OutputDirError(
                f"{str(folder)!r} is {what}; banditkit writes only into real folders "
                "of the output directory (remove it, or use another --out)"
            )
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputDirError(
                f"cannot create {str(folder)!r}: {exc.strerror or exc}"
            ) from None
        return folder

    def _check_run_files(self) -> None:
        """Refuse a run file in ``runs/`` that is a directory or another non-file.

        Such an entry can be neither read nor replaced, so its run would be computed and
        then lost; a symbolic link is only damage (replaced when its run is written).
        """
        if not self.runs_dir.is_dir():
            return
        for entry in os.scandir(self.runs_dir):
            if entry.name.endswith((".json", ".parquet")) and not (
                entry.is_symlink() or entry.is_file(follow_symlinks=False)
            ):
                raise OutputDirError(
                    f"{entry.path!r} is not a file, so its run cannot be stored; remove "
                    "it, or use another --out"
                )

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
        fd = _open_lock(path)
        try:
            self._acquire(fd, path, timeout)
            holder = json.dumps({"pid": os.getpid(), "host": socket.gethostname()})
            os.ftruncate(fd, 0)
            os.pwrite(fd, holder.encode(), 0)
            self._remove_stale_temporaries()
            self._check_run_files()
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
            holder = json.loads(os.pread(fd, 4096, 0) or b"{}")
        except (OSError, ValueError):
            holder = {}
        if not isinstance(holder, dict):
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
        """Check that the stored files of a run read back as that complete run.

        The metadata must be a JSON object whose ``id`` (when present) is ``run_id`` and
        whose settings (``env``, ``policy``, ``seed``, ``horizon``, when present) give
        ``run_id`` (:func:`~banditkit.experiments.config.resolved.run_id`). The table must
        be a Parquet file whose footer reads, with every column the metadata's ``columns``
        lists (``COLUMNS`` for metadata written before it did) and as many rows as its
        ``rounds`` (when present); when the metadata records ``table_sha256`` (as
        :meth:`write_run` does), the table's bytes must have that SHA-256, and otherwise
        (a run written before the digest existed) its last ``cumulative_regret`` must be the
        metadata's ``final_regret``, so another run's table in its place is found out.
        Both files are read without following symbolic links.

        Raises:
            CorruptFileError: Naming the first file that fails and why.
        """
        import pyarrow as pa
        import pyarrow.parquet as pq

        meta = self.read_meta(run_id)
        self._check_identity(run_id, meta)
        path = self.table_path(run_id)
        data = self._read(path)
        try:
            parquet = pq.ParquetFile(pa.BufferReader(data))
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
        rounds = meta.get("rounds")
        if isinstance(rounds, int) and info.num_rows != rounds:
            raise CorruptFileError(
                path, f"{info.num_rows} rows where its metadata says {rounds}"
            )
        digest = meta.get("table_sha256")
        if digest is not None:
            if hashlib.sha256(data).hexdigest() != digest:
                raise CorruptFileError(
                    path, "its SHA-256 differs from the one recorded in its metadata"
                )
            return
        _check_final_regret(path, parquet, meta)

    def _check_identity(self, run_id: str, meta: Mapping[str, Any]) -> None:
        """The metadata is that of ``run_id``: its id, and the id of its settings."""
        path = self.meta_path(run_id)
        if meta.get("id", run_id) != run_id:
            raise CorruptFileError(
                path, f"holds run {meta.get('id')!r}, not {run_id!r}"
            )
        settings = ("env", "policy", "seed", "horizon")
        if not any(key in meta for key in settings):
            return
        try:
            env, policy = meta["env"], meta["policy"]
            recorded = run_id_of(
                env["name"],
                env["params"],
                policy["name"],
                policy["params"],
                meta["seed"],
                meta["horizon"],
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptFileError(
                path, f"its run settings cannot be read ({type(exc).__name__}: {exc})"
            ) from None
        if recorded != run_id:
            raise CorruptFileError(
                path, f"records the settings of run {recorded!r}, not of {run_id!r}"
            )

    @staticmethod
    def _read(path: Path) -> bytes:
        """A stored file's bytes; a missing one is damage too (:func:`read_stored_file`)."""
        try:
            return read_stored_file(path)
        except FileNotFoundError:
            raise CorruptFileError(path, "missing") from None

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
        _write(self.root, self.table_path(run_id), data)
        meta = {
            **meta,
            "columns": list(table.column_names),
            "table_sha256": hashlib.sha256(data).hexdigest(),
        }
        _write(self.root, self.meta_path(run_id), _json_text(meta).encode())
        self.error_path(run_id).unlink(missing_ok=True)
        self.checkpoints.drop(run_id)

    def write_error(self, run_id: str, info: dict[str, Any]) -> None:
        """Record a failed run (its traceback and settings)."""
        _write(self.root, self.error_path(run_id), _json_text(info).encode())

    def read_table(self, run_id: str) -> Any:
        """The run's table as a pandas DataFrame.

        Raises:
            CorruptFileError: If the file is not a readable Parquet file.
        """
        import pyarrow as pa
        import pyarrow.parquet as pq

        path = self.table_path(run_id)
        try:
            return pq.read_table(pa.BufferReader(self._read(path))).to_pandas()
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
        _write(self.root, path, _json_text(data).encode())
        return path

    def write_text(self, name: str, text: str) -> Path:
        """Write ``DIR/<name>`` atomically."""
        path = self.root / name
        _write(self.root, path, text.encode("utf-8"))
        return path

    def copy_file(self, source: Path, target: Path) -> bool:
        """Copy ``source`` to ``target`` atomically; True when it was copied.

        A ``source`` that is a symbolic link or not a regular file is not copied (False).
        """
        try:
            data = read_stored_file(source)
        except (FileNotFoundError, CorruptFileError):
            return False
        _write(self.root, target, data)
        return True
