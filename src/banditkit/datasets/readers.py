"""Parsers for the datasets' original file formats (no checksums, no preprocessing here).

read_table       comma / whitespace separated text, with or without a header
                 (UCI .data files, shuttle .trn/.tst, Covertype, banknote)
read_keel        KEEL .dat: ARFF-like '@' header lines, then comma-separated rows (phoneme)
read_idx         IDX (gzipped or not): MNIST and Fashion-MNIST images and labels
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path
from typing import Any

import numpy as np

from banditkit.core.lazy import pd  # imported at first use

__all__ = ["read_idx", "read_keel", "read_table", "to_float"]


def read_table(
    path: str | os.PathLike[str],
    *,
    sep: str = ",",
    header: bool = False,
    dtype: type | None = None,
    comment: str | None = None,
) -> pd.DataFrame:
    """Read a text table; ``sep="whitespace"`` splits on runs of blanks and tabs.

    Compression (.gz) is inferred from the name. Leading blanks after a separator are dropped
    (adult's ", " separator). Empty lines and lines starting with ``comment`` are skipped.
    """
    kwargs: dict[str, object] = {
        "header": 0 if header else None,
        "skip_blank_lines": True,
        "comment": comment,
    }
    if dtype is not None:
        kwargs["dtype"] = dtype
    if sep == "whitespace":
        kwargs["sep"] = r"\s+"
    else:
        kwargs["sep"] = sep
        kwargs["skipinitialspace"] = True
    frame = pd.read_csv(Path(path), **kwargs)
    if frame.shape[0] == 0:
        raise ValueError(f"{path} holds no data rows.")
    return frame


def to_float(frame: pd.DataFrame) -> np.ndarray:
    """Numeric matrix of a frame; entries that are not numbers (missing, "?") become 0.

    As [Bae2025, App. J] for magic and phoneme: cast to float, missing -> 0.
    """
    out = frame.apply(pd.to_numeric, errors="coerce").to_numpy(dtype=np.float64)
    return np.nan_to_num(out, nan=0.0)


def read_keel(path: str | os.PathLike[str]) -> tuple[np.ndarray, list[str]]:
    r"""Read a KEEL ``.dat`` file: its '@attribute' names and the data rows as strings.

    Example:
        >>> import tempfile, os
        >>> p = os.path.join(tempfile.mkdtemp(), "x.dat")
        >>> _ = open(p, "w").write("@relation x\n@attribute A real\n@attribute Class {0,1}\n"
        ...                        "@data\n0.5,1\n-1,0\n")
        >>> rows, names = read_keel(p)
        >>> rows.tolist(), names
        ([['0.5', '1'], ['-1', '0']], ['A', 'Class'])
    """
    names: list[str] = []
    rows: list[list[str]] = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            if line.startswith("@"):
                if line.lower().startswith("@attribute"):
                    names.append(line.split()[1])
                continue
            rows.append([v.strip() for v in line.split(",")])
    if not rows:
        raise ValueError(f"{path} holds no data rows.")
    widths = {len(r) for r in rows}
    if len(widths) != 1:
        raise ValueError(
            f"{path}: rows have different numbers of fields {sorted(widths)}."
        )
    return np.array(rows, dtype=str), names


_IDX_TYPES: dict[int, Any] = {
    0x08: np.uint8,
    0x09: np.int8,
    0x0B: ">i2",
    0x0C: ">i4",
    0x0D: ">f4",
    0x0E: ">f8",
}


def read_idx(path: str | os.PathLike[str]) -> np.ndarray:
    """Read an IDX file (gzipped when its name ends in .gz), as MNIST is distributed.

    The header is two zero bytes, a type code, the number of dimensions, then each dimension
    as a big-endian int32.

    Raises:
        ValueError: On a bad magic number or a size that does not match the header.
    """
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        data = fh.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] not in _IDX_TYPES:
        raise ValueError(f"{path} is not an IDX file (bad magic number).")
    ndim = data[3]
    shape = tuple(
        int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim)
    )
    dtype = np.dtype(_IDX_TYPES[data[2]])
    offset = 4 + 4 * ndim
    expected = int(np.prod(shape)) * dtype.itemsize
    if len(data) - offset != expected:
        raise ValueError(
            f"{path}: the header announces {shape} ({expected} bytes) but the file holds "
            f"{len(data) - offset} bytes of data."
        )
    return np.frombuffer(data, dtype=dtype, offset=offset).reshape(shape)
