"""Datasets: registry, loaders, checksums, cache and preprocessing.

The registry (``DATASETS``) lists 11 datasets (docs/datasets.md section 3): ``digits`` (embedded in
scikit-learn), ``mushroom``, ``shuttle``, ``magic``, ``adult``, ``covertype``, ``mnist``,
``fashion-mnist``, ``banknote``, ``phoneme`` and the Open Bandit Dataset ``obd``.

Files are read from ``$BANDITKIT_DATA`` when it is set (layout
``<dir>/<dataset>/<file>``, docs/datasets.md section 1), else from the user cache
(``$XDG_CACHE_HOME/banditkit`` or ``~/.cache/banditkit``); a missing file is downloaded from
the dataset's official home and checked. Every file is verified against its reference
checksums before it is read: a mismatch raises :class:`ChecksumError`.

Entry points:

    load_dataset(name, ...)   a labelled table -> Dataset(name, features, labels, n_classes, meta)
    load_obd(...)             an Open Bandit Dataset log -> OBDLog
    table_dataset(data, label_column=...)  the user's CSV / Parquet / DataFrame -> Dataset
    list_datasets(kind=None)  registry names
    dataset_status()          for ``banditkit datasets list``
    verify_dataset(name)      for ``banditkit datasets verify``
    dataset_path(name)        for ``banditkit datasets path``
    fetch_dataset(name)       download what is missing
    fetch(names, mirror=...)  ``banditkit datasets fetch``: download and verify, file by file
    require_datasets(names)   one error naming every missing dataset and the fetch command
"""

from __future__ import annotations

import os
from collections import OrderedDict
from typing import Any

import numpy as np

from banditkit.core.validation import check_choice, check_int
from banditkit.datasets.dataset import Dataset
from banditkit.datasets.fetching import (
    MissingDatasetsError,
    fetch,
    fetch_command,
    missing_datasets,
    require_datasets,
)
from banditkit.datasets.loaders import LOADERS, OPTIONS, Source, given_options
from banditkit.datasets.obd import OBDFeatures, OBDLog, load_obd, obd_features
from banditkit.datasets.preprocess import (
    CATEGORICAL,
    SCALINGS,
    downsample_images,
    encode_categorical,
    scale_features,
)
from banditkit.datasets.registry import DATASETS, DataFile, DatasetInfo, dataset_info
from banditkit.datasets.storage import (
    ChecksumError,
    DatasetNotFoundError,
    DatasetStatus,
    FileStatus,
    data_home,
    dataset_path,
    dataset_status,
    fetch_dataset,
    verify_dataset,
)
from banditkit.datasets.tables import read_frame, table_dataset

__all__ = [
    "CATEGORICAL",
    "DATASETS",
    "SCALINGS",
    "ChecksumError",
    "DataFile",
    "Dataset",
    "DatasetInfo",
    "DatasetNotFoundError",
    "DatasetStatus",
    "FileStatus",
    "MissingDatasetsError",
    "OBDFeatures",
    "OBDLog",
    "clear_cache",
    "data_home",
    "dataset_info",
    "dataset_path",
    "dataset_status",
    "default_scale",
    "downsample_images",
    "encode_categorical",
    "fetch",
    "fetch_command",
    "fetch_dataset",
    "list_datasets",
    "load_dataset",
    "load_obd",
    "missing_datasets",
    "obd_features",
    "read_frame",
    "require_datasets",
    "scale_features",
    "table_dataset",
    "verify_dataset",
]


def list_datasets(kind: str | None = None) -> list[str]:
    """Registered dataset names, sorted; ``kind`` filters ("classification", "logged-bandit").

    Example:
        >>> "mushroom" in list_datasets("classification"), "obd" in list_datasets()
        (True, True)
    """
    if kind is not None:
        check_choice("kind", kind, ["classification", "logged-bandit"])
    return sorted(
        n for n, info in DATASETS.items() if kind is None or info.kind == kind
    )


_IMAGES = ("mnist", "fashion-mnist")


def default_scale(name: str) -> str:
    """The scaling ``scale="auto"`` resolves to for dataset ``name``.

    Per-feature min-max to [-1, 1] for tabular data, one global min-max for images
    (x / 127.5 - 1 on pixels): our reading of the min-max to [-1, 1] of [Bae2025, App. A].

    Example:
        >>> default_scale("mnist"), default_scale("magic")
        ('minmax-global', 'minmax')
    """
    return "minmax-global" if name in _IMAGES else "minmax"


_CACHE: OrderedDict[tuple[Any, ...], Dataset] = OrderedDict()
_CACHE_ENTRIES = 64
_CACHE_BYTES = 1 << 30


def clear_cache() -> None:
    """Forget every dataset parsed in this process."""
    _CACHE.clear()


def _fingerprint(name: str, root: str | os.PathLike[str] | None) -> tuple[Any, ...]:
    """(file, size, mtime) of the dataset's present files, part of the cache key.

    A changed or added file (e.g. the complete Covertype next to its subsets) invalidates
    the cached table.
    """
    folder = dataset_path(name, root)
    out = []
    for spec in dataset_info(name).files:
        path = folder / spec.name
        if path.is_file():
            stat = path.stat()
            out.append((spec.name, stat.st_size, stat.st_mtime_ns))
    return tuple(out)


def _resolve_options(name: str, given: dict[str, Any]) -> dict[str, Any]:
    accepted = OPTIONS[name]
    out = dict(accepted)
    for key, value in given.items():
        if value is None:
            continue
        if key not in accepted:
            usable = ", ".join(accepted) or "none"
            raise ValueError(
                f"dataset {name!r} has no option {key!r} (its options: {usable})."
            )
        out[key] = value
    if "categorical" in out:
        check_choice("categorical", out["categorical"], CATEGORICAL)
    if "split" in out:
        check_choice("split", out["split"], ["all", "train", "test"])
    if "subset" in out:
        check_choice("subset", out["subset"], ["auto", "full", "small", "first15120"])
    if "image_size" in out:
        check_choice("image_size", str(out["image_size"]), ["28", "14", "7"])
        out["image_size"] = check_int("image_size", out["image_size"], low=7, high=28)
    return out


def load_dataset(
    name: str,
    *,
    scale: str = "auto",
    categorical: str | None = None,
    image_size: int | None = None,
    subset: str | None = None,
    split: str | None = None,
    seed: int = 0,
    root: str | os.PathLike[str] | None = None,
    download: bool = True,
    verify: bool = True,
) -> Dataset:
    """Load a classification dataset, preprocessed and scaled.

    Args:
        name: A name from ``list_datasets("classification")``; "obd" gives the logged items
            as labels (use :func:`load_obd` for the full log).
        scale: One of ``SCALINGS`` or "auto" (:func:`default_scale`): "minmax" maps every
            feature to [-1, 1] (constant columns to 0), "l2" normalises each row (NeuralUCB).
        categorical: mushroom ("random" default, "onehot", "ordinal") and adult ("onehot"
            default, "ordinal"): how categorical attributes become numbers.
        image_size: mnist / fashion-mnist side after average pooling: 14 (default, 196
            features), 7 (49) or 28 (784, no pooling).
        subset: covertype: "auto" (default: the complete file when present, else the 100k
            subset, else the first 15,120 rows), "full", "small" or "first15120".
        split: shuttle, adult, mnist, fashion-mnist: "all" (default: train then test),
            "train" or "test".
        seed: Seed of mushroom's random category values (categorical="random").
        root: The data home (default: ``$BANDITKIT_DATA``, else the user cache).
        download: Download missing files (also off when ``BANDITKIT_OFFLINE=1``).
        verify: Check files against their reference checksums (a mismatch raises
            :class:`ChecksumError`). Turn off only for a copy you know differs.

    Returns:
        A :class:`Dataset`; ``meta`` records the source, options, scaling, class mapping and,
        for covertype, whether the rows are a subset.

    Raises:
        DatasetNotFoundError: A file is missing and cannot be downloaded.
        ChecksumError: A file does not match its reference.
        ValueError: An unknown name or an option the dataset does not have.

    Example:
        >>> ds = load_dataset("digits")
        >>> ds.features.shape, ds.n_classes
        ((1797, 64), 10)
    """
    check_choice("dataset", name, list(DATASETS))
    if scale != "auto":
        check_choice("scale", scale, SCALINGS)
    resolved_scale = default_scale(name) if scale == "auto" else scale
    seed = check_int("seed", seed, low=0)
    if name == "obd":
        given = given_options(
            categorical=categorical, image_size=image_size, subset=subset, split=split
        )
        if given:
            raise ValueError(f"dataset 'obd' has no option {given[0]!r}.")
        return _obd_as_dataset(resolved_scale, root, download, verify)
    options = _resolve_options(
        name,
        {
            "categorical": categorical,
            "image_size": image_size,
            "subset": subset,
            "split": split,
        },
    )
    uses_seed = options.get("categorical") == "random"
    key = (
        name,
        tuple(sorted(options.items())),
        resolved_scale,
        seed if uses_seed else None,
        str(data_home(root).resolve()),
        verify,
        _fingerprint(name, root),
    )
    if key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    info = dataset_info(name)
    raw = LOADERS[name](Source(root, download, verify), seed=seed, **options)
    features = scale_features(raw.features, resolved_scale)
    labels = np.asarray(raw.labels, dtype=np.int64)
    features.setflags(write=False)
    labels.setflags(write=False)
    meta = {
        "title": info.title,
        "home": info.home,
        "licence": info.licence,
        **raw.meta,
        "options": options,
        "scale": resolved_scale,
        "verified": bool(verify) and bool(info.files),
        "n_rows": int(features.shape[0]),
        "n_features": int(features.shape[1]),
    }
    if info.directory:
        meta["path"] = str(dataset_path(name, root))
    ds = Dataset(
        name=name, features=features, labels=labels, n_classes=raw.n_classes, meta=meta
    )
    _CACHE[key] = ds
    while len(_CACHE) > 1 and (
        len(_CACHE) > _CACHE_ENTRIES
        or sum(v.features.nbytes for v in _CACHE.values()) > _CACHE_BYTES
    ):
        _CACHE.popitem(last=False)
    return ds


def _obd_as_dataset(
    scale: str, root: str | os.PathLike[str] | None, download: bool, verify: bool
) -> Dataset:
    log = load_obd("random", "all", root=root, download=download, verify=verify)
    onehot = np.zeros((log.n_events, int(sum(log.user_levels))))
    offset = 0
    for j, levels in enumerate(log.user_levels):
        onehot[np.arange(log.n_events), offset + log.user_codes[:, j]] = 1.0
        offset += levels
    raw = np.hstack([onehot, log.position[:, None].astype(np.float64)])
    features = scale_features(raw, scale)
    return Dataset(
        name="obd",
        features=features,
        labels=log.item_id.copy(),
        n_classes=log.n_items,
        meta={
            **log.meta,
            "scale": scale,
            "features": "one-hot user features + display position",
            "labels": "the logged item (random/all log); clicks in meta['click']",
            "click": log.click.copy(),
        },
    )
