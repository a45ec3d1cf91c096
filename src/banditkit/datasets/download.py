"""Fetching files: HTTP(S) with a progress bar, archive members, Unix-compressed (.Z) data.

Nothing here checks checksums; ``storage`` verifies everything it installs.
"""

from __future__ import annotations

import io
import os
import sys
import tarfile
import urllib.request
import zipfile
from pathlib import Path

from banditkit.core.files import atomic_write_bytes

__all__ = ["download_file", "extract_member", "fetch_bytes", "unlzw"]

_CHUNK = 1 << 20


def download_file(url: str, dest: str | os.PathLike[str]) -> Path:
    """Download ``url`` to ``dest`` atomically (temporary name, then rename); no checksum."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(dest, fetch_bytes(url))
    return dest


def fetch_bytes(url: str) -> bytes:
    """Read ``url`` into memory, showing a progress bar (rich) on stderr."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    request = urllib.request.Request(url, headers={"User-Agent": "banditkit"})
    with urllib.request.urlopen(request, timeout=60) as resp:
        total = resp.headers.get("Content-Length")
        buf = io.BytesIO()
        with Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=not sys.stderr.isatty(),
        ) as progress:
            task = progress.add_task(
                f"downloading {url.rsplit('/', 1)[-1]}",
                total=int(total) if total else None,
            )
            for chunk in iter(lambda: resp.read(_CHUNK), b""):
                buf.write(chunk)
                progress.advance(task, len(chunk))
    return buf.getvalue()


def extract_member(archive: bytes, member: str, url: str) -> bytes:
    """The bytes of ``member`` of a zip or tar archive (``url`` is for messages)."""
    if zipfile.is_zipfile(io.BytesIO(archive)):
        with zipfile.ZipFile(io.BytesIO(archive)) as zf:
            return zf.read(member)
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:*") as tf:
        fh = tf.extractfile(member)
        if fh is None:
            raise ValueError(f"{member} is not a regular file in {url}.")
        return fh.read()


def unlzw(data: bytes) -> bytes:
    """Decompress Unix ``compress`` (.Z, LZW) data, as ``gzip -d`` does.

    UCI serves ``shuttle.trn`` only in this format, which Python's standard library cannot
    read. Follows gzip's ``unlzw.c``: codes of 9..max_bits bits, least significant bit first;
    code 256 clears the table in block mode; whenever the code width changes, the rest of
    the current group of eight codes is skipped.

    Raises:
        ValueError: If ``data`` is not valid .Z data.
    """
    if len(data) < 3 or data[0] != 0x1F or data[1] != 0x9D:
        raise ValueError("not Unix-compressed (.Z) data: bad magic number.")
    max_bits = data[2] & 0x1F
    block_mode = bool(data[2] & 0x80)
    if not 9 <= max_bits <= 16:
        raise ValueError(f"unsupported .Z code width {max_bits}.")
    max_entries = 1 << max_bits
    first = 257 if block_mode else 256
    table: list[bytes] = [bytes([i]) for i in range(256)] + [b""] * (first - 256)
    body = data[3:] + b"\0\0\0"
    n_total = (len(data) - 3) * 8
    out: list[bytes] = []
    n_bits, bitpos, group_start = 9, 0, 0
    prev: bytes | None = None
    while bitpos + n_bits <= n_total:
        byte = bitpos >> 3
        word = body[byte] | (body[byte + 1] << 8) | (body[byte + 2] << 16)
        code = (word >> (bitpos & 7)) & ((1 << n_bits) - 1)
        bitpos += n_bits
        if block_mode and code == 256:
            del table[first:]
            bitpos = _align(bitpos, group_start, n_bits)
            n_bits, group_start, prev = 9, bitpos, None
            continue
        if code < len(table) and (code >= first or code < 256):
            entry = table[code]
            if prev is not None and len(table) < max_entries:
                table.append(prev + entry[:1])
        elif code == len(table) and prev is not None:
            entry = prev + prev[:1]
            table.append(entry)
        else:
            raise ValueError("corrupt .Z data: invalid code.")
        out.append(entry)
        prev = entry
        if len(table) >= (1 << n_bits) and n_bits < max_bits:
            bitpos = _align(bitpos, group_start, n_bits)
            n_bits += 1
            group_start = bitpos
    return b"".join(out)


def _align(bitpos: int, group_start: int, n_bits: int) -> int:
    """Skip to the end of the current group of 8 codes (compress writes codes in groups)."""
    group = n_bits * 8
    used = bitpos - group_start
    return group_start + -(-used // group) * group if used else bitpos
