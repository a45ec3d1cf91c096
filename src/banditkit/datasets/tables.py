"""The user's own tables: a CSV / Parquet file or a pandas DataFrame, checked column by column.

    read_frame(data)                     a path (.csv, .parquet) or a DataFrame -> DataFrame
    numeric_columns(frame, columns)      the columns as a float matrix, or a ValueError naming
                                         the column (missing, non-numeric, NaN rows)
    table_dataset(data, label_column=...) a labelled table -> Dataset, as the built-in ones

Features are used as they are (numbers only; encode categorical columns first, e.g. with
``pandas.get_dummies``) and scaled as the built-in tables are (``scale="auto"``: per-feature
min-max to [-1, 1]). Class labels (numbers or strings) are mapped to 0..K-1 in sorted order;
the mapping is recorded in ``meta["classes"]``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from banditkit.core.lazy import pd  # imported at first use
from banditkit.core.validation import check_choice
from banditkit.datasets.dataset import Dataset
from banditkit.datasets.preprocess import SCALINGS, scale_features

__all__ = [
    "SUFFIXES",
    "describe_source",
    "numeric_columns",
    "params_repr",
    "read_frame",
    "source_stem",
    "table_dataset",
]

SUFFIXES = (".csv", ".parquet")


def describe_source(data: Any) -> str:
    """How messages name a table: its path, or "the DataFrame"."""
    return str(data) if isinstance(data, str | os.PathLike) else "the DataFrame"


def source_stem(data: Any) -> str:
    """A short name of a table for labels: the file stem, or "dataframe"."""
    return Path(data).stem if isinstance(data, str | os.PathLike) else "dataframe"


def params_repr(name: str, params: dict[str, Any]) -> str:
    """``Name(k=v, ...)`` with a DataFrame shown by its shape, not its rows."""

    def show(value: Any) -> str:
        if type(value).__name__ == "DataFrame":
            return f"<DataFrame {value.shape[0]} x {value.shape[1]}>"
        return repr(value)

    return f"{name}({', '.join(f'{k}={show(v)}' for k, v in params.items())})"


def read_frame(data: Any) -> pd.DataFrame:
    """Read ``data``: a path to a ``.csv`` / ``.parquet`` file, or a pandas DataFrame.

    Raises:
        ValueError: Another type or suffix, a missing file, or a table without rows.
    """
    if isinstance(data, pd.DataFrame):
        frame = data
    elif isinstance(data, str | os.PathLike):
        path = Path(data)
        if path.suffix.lower() not in SUFFIXES:
            raise ValueError(
                f"data must be a .csv or .parquet file; got {str(path)!r}."
            )
        if not path.is_file():
            raise ValueError(f"data file {str(path)!r} not found.")
        if path.suffix.lower() == ".parquet":
            frame = pd.read_parquet(path)
        else:
            frame = pd.read_csv(path)
    else:
        raise ValueError(
            "data must be a path to a .csv or .parquet file or a pandas DataFrame; "
            f"got {type(data).__name__}."
        )
    if frame.shape[0] == 0:
        raise ValueError(f"data {describe_source(data)} holds no rows.")
    return frame


def _check_present(
    frame: pd.DataFrame, columns: list[str], role: str, source: str
) -> None:
    have = [str(c) for c in frame.columns]
    for c in columns:
        if c not in frame.columns:
            raise ValueError(
                f"{role} column {c!r} is not in {source}; its columns: {have}."
            )


def numeric_columns(
    frame: pd.DataFrame, columns: list[str], *, role: str, source: str
) -> np.ndarray:
    """The columns as a float64 matrix (n, len(columns)).

    Booleans count as numbers (0 / 1).

    Raises:
        ValueError: A column is missing, is not numeric (the message shows a value), has
            missing values (the message gives their count and the first row's index) or an
            infinite value.
    """
    _check_present(frame, columns, role, source)
    for c in columns:
        col = frame[c]
        if not (pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col)):
            bad = col[pd.to_numeric(col, errors="coerce").isna() & col.notna()]
            example = bad.iloc[0] if len(bad) else col.dropna().iloc[0]
            raise ValueError(
                f"{role} column {c!r} of {source} is not numeric (dtype {col.dtype}, e.g. "
                f"{example!r}); encode it as numbers first (e.g. pandas.get_dummies)."
            )
        _check_complete(frame, c, role, source)
    out = frame[columns].to_numpy(dtype=np.float64)
    infinite = ~np.isfinite(out)
    if infinite.any():
        row, j = np.argwhere(infinite)[0]
        raise ValueError(
            f"{role} column {columns[j]!r} of {source} has an infinite value in row "
            f"{frame.index[row]!r}."
        )
    return out


def _check_complete(frame: pd.DataFrame, column: str, role: str, source: str) -> None:
    """Raise a ValueError giving the count and the first row of ``column``'s missing values."""
    missing = frame[column].isna().to_numpy()
    if missing.any():
        first = frame.index[np.flatnonzero(missing)[0]]
        raise ValueError(
            f"{role} column {column!r} of {source} has {int(missing.sum())} missing "
            f"(NaN) values, the first in row {first!r}; drop or fill those rows."
        )


def table_dataset(
    data: Any,
    *,
    label_column: str,
    features: list[str] | None = None,
    scale: str = "auto",
) -> Dataset:
    """A labelled :class:`banditkit.datasets.Dataset` from the user's table.

    Args:
        data: A ``.csv`` / ``.parquet`` path or a pandas DataFrame.
        label_column: The column of the classes (numbers or strings; K >= 2 distinct values).
        features: Numeric feature columns (None: every column but ``label_column``).
        scale: One of ``SCALINGS`` or "auto" (per-feature min-max to [-1, 1]).

    Raises:
        ValueError: Naming the column: a missing label or feature column, a non-numeric
            feature, missing values, or fewer than two classes.

    Example:
        >>> import pandas as pd
        >>> ds = table_dataset(pd.DataFrame({"x": [0.0, 1.0, 2.0], "y": ["b", "a", "b"]}),
        ...                    label_column="y")
        >>> ds.features.ravel().tolist(), ds.labels.tolist(), ds.meta["classes"]
        ([-1.0, 0.0, 1.0], [1, 0, 1], {'a': 0, 'b': 1})
    """
    if scale != "auto":
        check_choice("scale", scale, SCALINGS)
    resolved = "minmax" if scale == "auto" else scale
    frame = read_frame(data)
    source = describe_source(data)
    label = label_column
    if not isinstance(label, str):
        raise ValueError(f"label_column must be a column name; got {label!r}.")
    _check_present(frame, [label], "label", source)
    if features is None:
        columns = [str(c) for c in frame.columns if c != label]
    else:
        if isinstance(features, str) or not all(isinstance(c, str) for c in features):
            raise ValueError(
                f"features must be a list of column names; got {features!r}."
            )
        columns = list(features)
        if label in columns:
            raise ValueError(f"features must not include the label column {label!r}.")
    if not columns:
        raise ValueError(f"{source} has no feature column besides the label {label!r}.")
    x = numeric_columns(frame, columns, role="feature", source=source)
    _check_complete(frame, label, "label", source)
    values = frame[label].to_numpy()
    if values.dtype.kind not in "iufb":
        values = values.astype(str)
    classes, labels = np.unique(values, return_inverse=True)
    if classes.shape[0] < 2:
        raise ValueError(
            f"label column {label!r} of {source} has {classes.shape[0]} class "
            f"({classes.tolist()}); a classification bandit needs at least 2."
        )
    scaled = scale_features(x, resolved)
    labels = labels.astype(np.int64).ravel()
    scaled.setflags(write=False)
    labels.setflags(write=False)
    meta = {
        "source": source,
        "label": label,
        "feature_names": columns,
        "classes": {str(c): i for i, c in enumerate(classes.tolist())},
        "scale": resolved,
        "n_rows": int(x.shape[0]),
        "n_features": int(x.shape[1]),
    }
    return Dataset(
        name=source_stem(data),
        features=scaled,
        labels=labels,
        n_classes=int(classes.shape[0]),
        meta=meta,
    )
