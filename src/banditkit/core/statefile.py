"""State files: a tree of NumPy arrays and JSON values in one ``.npz``, no pickle.

The container of policy files (``core.serialization``) and of run checkpoints
(``experiments.store.checkpoints``). A state (nested dicts and lists of NumPy arrays and JSON
scalars) is split into its arrays, stored as named ``.npz`` members, and a JSON skeleton in
which each array is replaced by ``{"__array__": "<member name>"}``. A header member,
``__banditkit__``, holds the format name and version, what the format adds (a policy's
registry name, a run's id) and a SHA-256 digest of the content (the skeleton, then each
array's name, dtype, shape and bytes in name order).

Reading checks, before anything is built from the file: sizes before allocation (the zip
directory and each array's ``.npy`` header must agree with the member's bytes, members must
be stored uncompressed, the arrays together must fit ``max_bytes``), dtypes (booleans,
integers and real floats only, every float finite), the format name and version, and the
digest. Every problem is the format's :class:`~banditkit.core.errors.DamagedFileError`
naming the file and the problem.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np

from banditkit.core.errors import DamagedFileError

__all__ = ["StateFormat", "pack_state", "read_state"]

_SKELETON = "__skeleton__"
_HEADER = "__banditkit__"
#: Largest size of the JSON skeleton and header members, in bytes.
_MAX_JSON_BYTES = 2**24
#: Most members a state file may hold.
_MAX_MEMBERS = 100_000
#: Array dtypes a state file may hold: booleans, integers and real floats (no complex,
#: no strings, no objects, no records); the JSON members are Unicode strings.
_ARRAY_KINDS = "biuf"
_HEADER_READERS = {
    (1, 0): np.lib.format.read_array_header_1_0,
    (2, 0): np.lib.format.read_array_header_2_0,
}


@dataclass(frozen=True)
class StateFormat:
    """A kind of state file: its header name and version, its noun, its error class."""

    name: str
    version: int
    noun: str
    error: type[DamagedFileError]


def _split(obj: Any, arrays: dict[str, np.ndarray]) -> Any:
    if isinstance(obj, np.ndarray):
        name = f"a{len(arrays)}"
        arrays[name] = obj
        return {"__array__": name}
    if isinstance(obj, dict):
        return {str(k): _split(v, arrays) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_split(v, arrays) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def _digest(skeleton: str, arrays: dict[str, np.ndarray]) -> str:
    """SHA-256 of the skeleton and of each array (name, dtype, shape, C-order bytes)."""
    h = hashlib.sha256(skeleton.encode("utf-8"))
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(json.dumps([name, a.dtype.str, list(a.shape)]).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def pack_state(state: Any, fmt: StateFormat, **header: Any) -> dict[str, Any]:
    """The ``.npz`` members of ``state`` (``np.savez(fh, **members)`` writes the file).

    ``header`` adds JSON entries to the header (a policy's name, a run's id).

    Raises:
        ValueError: If the state holds NaN, inf or non-real values, which
            :func:`read_state` refuses.
    """
    arrays: dict[str, np.ndarray] = {}
    try:
        skeleton = json.dumps(_split(state, arrays), allow_nan=False)
    except ValueError:
        skeleton = ""
    odd = [
        n
        for n, a in arrays.items()
        if a.dtype.kind not in _ARRAY_KINDS or not np.isfinite(a).all()
    ]
    if odd or not skeleton:
        raise ValueError("the state holds NaN, inf or non-real values")
    head = {
        "format": fmt.name,
        "version": fmt.version,
        **header,
        "sha256": _digest(skeleton, arrays),
    }
    return {
        **arrays,
        _SKELETON: np.array(skeleton),
        _HEADER: np.array(json.dumps(head)),
    }


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a finite number")


def _json(text: str) -> Any:
    """Parse JSON, refusing NaN and infinities (``json`` accepts them by default)."""
    return json.loads(text, parse_constant=_refuse_constant)


def _read_member(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, text: bool, noun: str
) -> np.ndarray:
    """One ``.npy`` member, its header checked against its size before it is read."""
    if info.compress_type != zipfile.ZIP_STORED:
        raise ValueError(
            f"member {info.filename} is compressed; {noun}s are written uncompressed "
            "and a compressed member could expand to any size"
        )
    with archive.open(info) as fh:
        version = np.lib.format.read_magic(fh)
        if version not in _HEADER_READERS:
            raise ValueError(f"member {info.filename} has .npy version {version}")
        shape, fortran, dtype = _HEADER_READERS[version](fh)
        kinds = "U" if text else _ARRAY_KINDS
        if dtype.kind not in kinds or dtype.fields is not None or dtype.subdtype:
            raise ValueError(
                f"member {info.filename} holds dtype {dtype}; a {noun} holds only "
                "booleans, integers and real floats"
            )
        count = math.prod(shape)
        size = count * dtype.itemsize
        if size != info.file_size - fh.tell():
            raise ValueError(
                f"member {info.filename} declares shape {shape} of {dtype}, which does "
                f"not match its {info.file_size} bytes"
            )
        data = bytearray(size)
        if cast(io.BufferedIOBase, fh).readinto(data) != size:
            raise ValueError(f"member {info.filename} is truncated")
    flat = np.frombuffer(data, dtype=dtype, count=count)
    return flat.reshape(shape, order="F" if fortran else "C")


def _read_members(
    source: Path | io.BytesIO, max_bytes: int, noun: str
) -> dict[str, np.ndarray]:
    """Every member of the file, sizes and dtypes checked before reading."""
    with zipfile.ZipFile(source) as archive:
        infos = archive.infolist()
        if len(infos) > _MAX_MEMBERS:
            raise ValueError(f"it has {len(infos)} members (at most {_MAX_MEMBERS})")
        total = sum(info.file_size for info in infos)
        if total > max_bytes:
            raise ValueError(
                f"it declares {total} bytes of arrays, more than max_bytes={max_bytes}"
            )
        members = {}
        for info in infos:
            name = info.filename.removesuffix(".npy")
            text = name in (_HEADER, _SKELETON)
            if text and info.file_size > _MAX_JSON_BYTES:
                raise ValueError(
                    f"member {info.filename} is larger than {_MAX_JSON_BYTES}"
                )
            members[name] = _read_member(archive, info, text, noun)
    return members


def _read(
    source: Path | bytes, path: Path, fmt: StateFormat, max_bytes: int
) -> tuple[dict[str, Any], str, dict[str, np.ndarray]]:
    """(header, skeleton text, arrays) of a state file, checked against its digest."""
    error = fmt.error
    if isinstance(source, Path) and not source.is_file():
        problem = "is a directory" if source.is_dir() else "no such file"
        raise error(path, f"{problem}; expected a {fmt.noun}")
    try:
        opened = io.BytesIO(source) if isinstance(source, bytes) else source
        members = _read_members(opened, max_bytes, fmt.noun)
        if _HEADER not in members or _SKELETON not in members:
            raise error(
                path,
                f"not a banditkit {fmt.noun} (no format header; files saved before "
                f"format version {fmt.version} must be saved again)",
            )
        header = _json(str(members.pop(_HEADER)))
        skeleton = str(members.pop(_SKELETON))
    except DamagedFileError:
        raise
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, KeyError) as exc:
        raise error(
            path, f"not a readable {fmt.noun}, truncated or damaged ({exc})"
        ) from None
    if not isinstance(header, dict) or header.get("format") != fmt.name:
        raise error(path, f"not a banditkit {fmt.noun} (unknown header)")
    version = header.get("version")
    if not isinstance(version, int) or version > fmt.version:
        raise error(
            path,
            f"format version {version!r} is newer than this banditkit reads "
            f"({fmt.version}); upgrade banditkit",
        )
    if _digest(skeleton, members) != header.get("sha256"):
        raise error(
            path,
            "its content does not match its digest (the file was edited or damaged)",
        )
    return header, skeleton, members


def _state_of(
    path: Path, skeleton: str, arrays: dict[str, np.ndarray], error: type[Exception]
) -> Any:
    """The state tree: the skeleton with its arrays put back, every leaf checked.

    Each array member is used exactly once; floats (arrays and scalars) must be finite.
    """
    try:
        tree = _json(skeleton)
    except (ValueError, RecursionError) as exc:
        raise error(path, f"its state is not valid JSON ({exc})") from None
    used: set[str] = set()

    def join(obj: Any, where: str) -> Any:
        if isinstance(obj, dict):
            if set(obj) == {"__array__"}:
                name = obj["__array__"]
                if name not in arrays or name in used:
                    raise error(path, f"{where} names no array of the file")
                used.add(name)
                value = arrays[name]
                if value.dtype.kind == "f" and not np.isfinite(value).all():
                    raise error(path, f"{where} holds NaN or inf")
                return value
            return {k: join(v, f"{where}[{k!r}]") for k, v in obj.items()}
        if isinstance(obj, list):
            return [join(v, f"{where}[{i}]") for i, v in enumerate(obj)]
        if isinstance(obj, float) and not math.isfinite(obj):
            raise error(path, f"{where} is {obj!r}; expected a finite number")
        return obj

    try:
        state = join(tree, "state")
    except RecursionError:
        raise error(path, "its state is nested too deeply") from None
    if used != set(arrays):
        raise error(
            path, f"arrays {sorted(set(arrays) - used)} are not part of its state"
        )
    return state


def read_state(
    source: str | Path | bytes,
    fmt: StateFormat,
    *,
    max_bytes: int,
    path: str | Path | None = None,
    check: Callable[[dict[str, Any]], object] | None = None,
) -> tuple[dict[str, Any], Any]:
    """The header and the state of a state file, every check passed (module docstring).

    Args:
        source: The file, or its bytes (read by the caller, e.g. without following links).
        fmt: The kind of file expected.
        max_bytes: Largest total size of its arrays, in bytes.
        path: The file's name in messages (default: ``source`` when it is a path).
        check: Called with the verified header before the state is built (a format's
            own header entries: it raises ``fmt.error`` to refuse the file).

    Raises:
        DamagedFileError: ``fmt.error``, naming the file and the problem.
    """
    where = Path(path if path is not None else cast(str, source))
    data = source if isinstance(source, bytes) else Path(source)
    header, skeleton, arrays = _read(data, where, fmt, max_bytes)
    if check is not None:
        check(header)
    return header, _state_of(where, skeleton, arrays, fmt.error)
