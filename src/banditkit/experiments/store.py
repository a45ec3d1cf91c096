"""The result store: one output directory, written atomically (DESIGN.md section 7).

    DIR/config.yaml            the resolved config
    DIR/runs/<id>.parquet      per-round columns of one run (``table_columns``: ``t``, the
                               environment's declared records, ``cumulative_regret``)
    DIR/runs/<id>.json         its metadata; written last, so it marks the run finished
    DIR/runs/<id>.error.json   a run that raised: its traceback (removed once it succeeds)
    DIR/summary.json, DIR/figures/, DIR/report.md

Every file is written to a temporary name in the same directory (``.<name>.<random>.tmp``),
flushed to disk and renamed over the target with ``os.replace``, so a process killed at any
moment leaves either the complete file or none. Temporary files of a killed process are
removed when the directory is opened again. A lock file (``DIR/.banditkit.lock``, holding the
pid and host) keeps two processes from writing into one directory at the same time; a lock
left by a killed process on the same host is taken over.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import socket
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from banditkit.core.environment import ContextualEnvironment
from banditkit.core.records import Record

__all__ = [
    "COLUMNS",
    "DERIVED_COLUMNS",
    "OutputDirError",
    "RunStore",
    "arrow_table",
    "atomic_write_bytes",
    "atomic_write_text",
    "json_safe",
    "table_columns",
]

DERIVED_COLUMNS = ("t", "cumulative_regret")
"""Columns every table has besides the declared records: the round and R(t)."""


def table_columns(records: Sequence[Record]) -> tuple[str, ...]:
    """The columns of a run's table: ``t``, the declared records in order, ``cumulative_regret``.

    Example:
        >>> table_columns([Record("regret"), Record("chosen", dtype="int64",
        ...                aggregation="none")])
        ('t', 'regret', 'chosen', 'cumulative_regret')
    """
    return (DERIVED_COLUMNS[0], *(r.name for r in records), DERIVED_COLUMNS[1])


CONTEXTUAL_RECORDS: tuple[Record, ...] = ContextualEnvironment.declared_records()
"""The declaration of a plain contextual environment (the default of ``write_run``)."""

COLUMNS = table_columns(CONTEXTUAL_RECORDS)
"""Columns of a contextual run's table (other families and environments add theirs)."""


def _arrow_type(dtype: str) -> Any:
    import pyarrow as pa

    return {
        "float64": pa.float64(),
        "int64": pa.int64(),
        "bool": pa.bool_(),
        "list<int64>": pa.list_(pa.int64()),
    }[dtype]


def arrow_table(columns: Mapping[str, Any], records: Sequence[Record]) -> Any:
    """A pyarrow table of exactly the declared columns, each of its declared type.

    Raises:
        ValueError: If a column is missing, or not declared (never dropped silently).
    """
    import pyarrow as pa

    names = table_columns(records)
    undeclared = sorted(set(columns) - set(names))
    missing = [n for n in names if n not in columns]
    if undeclared or missing:
        raise ValueError(
            f"columns must be exactly the declared records {list(names)}; undeclared: "
            f"{undeclared}, missing: {missing} (declare a record on the environment)."
        )
    types = {"t": "int64", "cumulative_regret": "float64"}
    types.update({r.name: r.dtype for r in records})
    arrays = {}
    for name in names:
        kind = _arrow_type(types[name])
        values = columns[name]
        if types[name] == "list<int64>":
            values = [[int(i) for i in a] for a in values]
        else:
            values = np.asarray(values)
        arrays[name] = pa.array(values, type=kind)
    return pa.table(arrays)


TIMING_COLUMNS = ("act_seconds", "update_seconds")
LOCK_NAME = ".banditkit.lock"


class OutputDirError(OSError):
    """The output directory cannot be used (not writable, or in use by another process)."""


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


def _umask() -> int:
    """The process umask (read once: setting it briefly is not thread-safe)."""
    global _UMASK
    if _UMASK is None:
        _UMASK = os.umask(0o022)
        os.umask(_UMASK)
    return _UMASK


_UMASK: int | None = None


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: temporary file, fsync, rename."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(
        dir=target.parent, prefix=f".{target.name}.", suffix=".tmp"
    )
    try:
        # mkstemp creates the file 0600; give it the mode a plain open() would
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    atomic_write_bytes(path, text.encode("utf-8"))


def _write_json(path: Path, data: Any) -> None:
    text = json.dumps(json_safe(data), indent=2, allow_nan=False)
    atomic_write_text(path, text + "\n")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


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

    # ------------------------------------------------------------------ directory
    def prepare(self, *, subdirs: bool = True) -> None:
        """Create the directories, check they are writable, remove stale temporary files.

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
            os.unlink(probe)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise OutputDirError(
                f"cannot write to the output directory {str(self.root)!r}: {reason}"
            ) from None
        for folder in (self.root, self.runs_dir, self.figures_dir):
            for tmp in folder.glob(".*.tmp") if folder.is_dir() else ():
                tmp.unlink(missing_ok=True)

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold ``DIR/.banditkit.lock`` for the duration of the block.

        Raises:
            OutputDirError: If another live process holds it.
        """
        path = self.root / LOCK_NAME
        me = {"pid": os.getpid(), "host": socket.gethostname()}
        for _ in range(2):
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                try:
                    holder = json.loads(path.read_text())
                except (OSError, ValueError):
                    holder = {}
                pid, host = holder.get("pid"), holder.get("host")
                stale = (
                    host == me["host"] and isinstance(pid, int) and not _pid_alive(pid)
                )
                if not holder or stale:
                    path.unlink(missing_ok=True)
                    continue
                raise OutputDirError(
                    f"{str(self.root)!r} is in use by another banditkit process (pid {pid} "
                    f"on {host}). If none is running, delete {str(path)!r}."
                ) from None
            with os.fdopen(fd, "w") as fh:
                json.dump(me, fh)
            break
        else:  # pragma: no cover - lost a race twice
            raise OutputDirError(f"could not lock {str(self.root)!r}.")
        try:
            yield
        finally:
            path.unlink(missing_ok=True)

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
        """True when both files of the run exist (the metadata is written last)."""
        return self.meta_path(run_id).is_file() and self.table_path(run_id).is_file()

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
        atomic_write_bytes(self.table_path(run_id), buffer.getvalue())
        _write_json(self.meta_path(run_id), meta)
        self.error_path(run_id).unlink(missing_ok=True)

    def write_error(self, run_id: str, info: dict[str, Any]) -> None:
        """Record a failed run (its traceback and settings)."""
        _write_json(self.error_path(run_id), info)

    def read_table(self, run_id: str) -> Any:
        """The run's table as a pandas DataFrame."""
        import pyarrow.parquet as pq

        return pq.read_table(self.table_path(run_id)).to_pandas()

    def read_meta(self, run_id: str) -> dict[str, Any]:
        """The run's metadata."""
        data: dict[str, Any] = json.loads(self.meta_path(run_id).read_text())
        return data

    def read_error(self, run_id: str) -> dict[str, Any] | None:
        """The recorded failure of a run, if any."""
        path = self.error_path(run_id)
        if not path.is_file():
            return None
        data: dict[str, Any] = json.loads(path.read_text())
        return data

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
