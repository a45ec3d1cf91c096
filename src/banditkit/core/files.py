"""Atomic file writes, shared by policy files and the result store.

A file is written to a temporary name in the same directory (``.<name>.<random>.tmp``),
flushed to disk and renamed over the target with ``os.replace``: a process killed at any
moment leaves either the complete file or none. The temporary file is created with
``os.open(..., 0o666)``, so the result gets the user's umask mode, like any file they create.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import IO

__all__ = ["atomic_write", "atomic_write_bytes", "atomic_write_text"]


def atomic_write(
    path: str | os.PathLike[str],
    write: Callable[[IO[bytes]], object],
    *,
    check: Callable[[Path], object] | None = None,
) -> None:
    """Call ``write(fh)`` on a new temporary file next to ``path``, then rename it over.

    ``check``, when given, is called with the complete temporary file before the rename; an
    exception it raises discards the file and leaves ``path`` untouched (downloads are
    verified against their checksums this way). An ``OSError`` that names no file (a full
    disk) is given ``path`` as its file name.

    Example:
        >>> import tempfile
        >>> target = Path(tempfile.mkdtemp()) / "a.bin"
        >>> atomic_write(target, lambda fh: fh.write(b"ok")); target.read_bytes()
        b'ok'
    """
    target = Path(path)
    tmp = target.parent / f".{target.name}.{secrets.token_hex(6)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        if check is not None:
            check(tmp)
        os.replace(tmp, target)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.errno is not None and exc.filename is None:
            exc.filename = str(target)  # a full disk names the file it stopped
        raise


def atomic_write_bytes(
    path: str | os.PathLike[str],
    data: bytes,
    *,
    check: Callable[[Path], object] | None = None,
) -> None:
    """Write ``data`` to ``path`` atomically (``check`` as in :func:`atomic_write`)."""
    atomic_write(path, lambda fh: fh.write(data), check=check)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    atomic_write_bytes(path, text.encode("utf-8"))
