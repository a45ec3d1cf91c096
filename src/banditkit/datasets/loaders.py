"""One loader per dataset: files -> raw features, labels and metadata.

Each loader receives a :class:`Source` (where files are, whether to download and verify) and
its resolved options, and returns a :class:`Raw` table before scaling. Class labels are
mapped to 0..K-1; the mapping is recorded in ``meta["classes"]``.

Label conventions follow [Bae2025, App. A, App. J]: mushroom 1 = edible "e", 0 = poisonous "p";
magic 1 = gamma "g", 0 = hadron "h"; adult 1 = ">50K"; shuttle and covertype classes 1..7
become 0..6; banknote and phoneme keep their 0/1.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from banditkit.core.lazy import pd  # imported at first use
from banditkit.datasets.preprocess import downsample_images, encode_categorical
from banditkit.datasets.readers import read_idx, read_keel, read_table, to_float
from banditkit.datasets.registry import DatasetInfo, dataset_info
from banditkit.datasets.storage import DatasetNotFoundError, data_home, require_files

__all__ = ["LOADERS", "OPTIONS", "Raw", "Source", "given_options"]


@dataclass(frozen=True)
class Source:
    """Where a loader finds its files.

    Attributes:
        root: The data home (None: ``storage.data_home()``).
        download: Download missing files when allowed.
        verify: Check every file against its reference checksums.
    """

    root: str | os.PathLike[str] | None = None
    download: bool = True
    verify: bool = True

    def files(self, info: DatasetInfo, *names: str) -> dict[str, Any]:
        """Paths of the named files of ``info``, present and verified."""
        specs = [info.file(n) for n in names]
        return require_files(
            info, specs, root=self.root, download=self.download, verify=self.verify
        )

    def has(self, info: DatasetInfo, name: str) -> bool:
        """Whether file ``name`` of ``info`` is present (nothing is checked)."""
        return (data_home(self.root) / info.directory / name).is_file()


@dataclass
class Raw:
    """A loaded table before scaling."""

    features: np.ndarray
    labels: np.ndarray
    n_classes: int
    meta: dict[str, Any] = field(default_factory=dict)


def _labels(values: np.ndarray, classes: list[Any]) -> np.ndarray:
    uniq, inverse = np.unique(np.asarray(values).astype(str), return_inverse=True)
    lookup = {str(c): i for i, c in enumerate(classes)}
    unknown = [u for u in uniq.tolist() if u not in lookup]
    if unknown:
        raise ValueError(f"unexpected class labels {unknown[:5]}; expected {classes}.")
    return np.array([lookup[u] for u in uniq.tolist()], dtype=np.int64)[inverse.ravel()]


def _split(parts: dict[str, Raw], split: str) -> Raw:
    chosen = list(parts) if split == "all" else [split]
    first = parts[chosen[0]]
    return Raw(
        features=np.concatenate([parts[s].features for s in chosen]),
        labels=np.concatenate([parts[s].labels for s in chosen]),
        n_classes=first.n_classes,
        meta={**first.meta, "split": split},
    )


# ---------------------------------------------------------------------------- loaders
def _digits(src: Source, **_: Any) -> Raw:
    from sklearn.datasets import load_digits

    bunch = load_digits()
    return Raw(
        np.asarray(bunch.data, dtype=np.float64),
        np.asarray(bunch.target, dtype=np.int64),
        10,
        {"source": "scikit-learn bundled copy of the UCI optical digits test set"},
    )


def _mushroom(src: Source, *, categorical: str, seed: int, **_: Any) -> Raw:
    info = dataset_info("mushroom")
    path = src.files(info, "agaricus-lepiota.data")["agaricus-lepiota.data"]
    table = read_table(path, dtype=str).to_numpy(dtype=str)
    if table.shape[1] != 23:
        raise ValueError(f"{path}: expected 23 columns (class + 22 attributes).")
    x, names = encode_categorical(
        table[:, 1:],
        categorical,
        missing="?",
        seed=seed,
        missing_as_symbol=categorical == "random",
    )
    meta: dict[str, Any] = {
        "classes": {"p": 0, "e": 1},
        "categorical": categorical,
        "feature_names": names,
        "missing": "'?' (stalk-root, 2480 rows): its own symbol for 'random', an all-zero "
        "block for 'onehot', -1 for 'ordinal'",
    }
    if categorical == "random":
        meta["categorical_seed"] = seed
    return Raw(x, _labels(table[:, 0], ["p", "e"]), 2, meta)


def _shuttle(src: Source, *, split: str, **_: Any) -> Raw:
    info = dataset_info("shuttle")
    names = {"train": "shuttle.trn", "test": "shuttle.tst"}
    wanted = list(names) if split == "all" else [split]
    paths = src.files(info, *(names[s] for s in wanted))
    parts = {}
    for s in wanted:
        table = read_table(paths[names[s]], sep="whitespace").to_numpy(dtype=np.float64)
        if table.shape[1] != 10:
            raise ValueError(f"{paths[names[s]]}: expected 10 columns (9 + class).")
        labels = table[:, -1].astype(np.int64)
        parts[s] = Raw(
            table[:, :-1],
            _labels(labels, list(range(1, 8))),
            7,
            {"classes": {str(c): c - 1 for c in range(1, 8)}},
        )
    return _split(parts, split)


def _magic(src: Source, **_: Any) -> Raw:
    info = dataset_info("magic")
    path = src.files(info, "magic04.data")["magic04.data"]
    table = read_table(path, dtype=str)
    if table.shape[1] != 11:
        raise ValueError(f"{path}: expected 11 columns (10 attributes + class).")
    x = to_float(table.iloc[:, :10])
    y = _labels(table.iloc[:, 10].str.strip().to_numpy(), ["h", "g"])
    return Raw(x, y, 2, {"classes": {"h": 0, "g": 1}, "missing": "non-numbers -> 0"})


_ADULT_COLUMNS = [
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
    "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
    "hours-per-week", "native-country",
]  # fmt: skip
_ADULT_NUMERIC = [0, 2, 4, 10, 11, 12]
_ADULT_CATEGORICAL = [1, 3, 5, 6, 7, 8, 9, 13]


def _adult(src: Source, *, categorical: str, split: str, **_: Any) -> Raw:
    info = dataset_info("adult")
    names = {"train": "adult.data", "test": "adult.test"}
    paths = src.files(info, *names.values())
    tables = {s: read_table(paths[names[s]], dtype=str, comment="|") for s in names}
    for s, t in tables.items():
        if t.shape[1] != 15:
            raise ValueError(f"{paths[names[s]]}: expected 15 columns (14 + income).")
    sizes = {s: t.shape[0] for s, t in tables.items()}
    # Encode train and test together so that both use the same categories.
    full = np.concatenate([t.to_numpy(dtype=str) for t in tables.values()])
    full = np.char.strip(full)
    numeric = to_float(_frame(full[:, _ADULT_NUMERIC]))
    cats, cat_names = encode_categorical(
        full[:, _ADULT_CATEGORICAL], categorical, missing="?"
    )
    if categorical == "onehot":
        x = np.hstack([numeric, cats])
        for j, col in enumerate(_ADULT_CATEGORICAL):  # "c3=x" -> "occupation=x"
            cat_names = [
                n.replace(f"c{j}=", f"{_ADULT_COLUMNS[col]}=", 1)
                if n.startswith(f"c{j}=")
                else n
                for n in cat_names
            ]
        feature_names = [_ADULT_COLUMNS[c] for c in _ADULT_NUMERIC] + cat_names
    else:
        feature_names = list(_ADULT_COLUMNS)
        x = np.zeros((full.shape[0], 14))
        x[:, _ADULT_NUMERIC] = numeric
        x[:, _ADULT_CATEGORICAL] = cats
    income = np.char.rstrip(full[:, 14], ".")
    y = _labels(income, ["<=50K", ">50K"])
    meta = {
        "classes": {"<=50K": 0, ">50K": 1},
        "categorical": categorical,
        "feature_names": feature_names,
        "missing": "'?' -> all-zero one-hot block ('onehot') or -1 ('ordinal')",
    }
    cut = sizes["train"]
    parts = {
        "train": Raw(x[:cut], y[:cut], 2, meta),
        "test": Raw(x[cut:], y[cut:], 2, meta),
    }
    return _split(parts, split)


def _frame(values: np.ndarray) -> Any:
    return pd.DataFrame(values)


_COVERTYPE_NOTES = {
    "full": "complete UCI covtype.data (581,012 rows)",
    "small": "SUBSET: mlpack's 100,000-row random subset of covtype.data (sampling not "
    "published); results are not on the complete data",
    "first15120": "SUBSET: the first 15,120 rows of covtype.data (UCI's training + "
    "validation rows, class-balanced); results are not on the complete data",
}


def _covertype_variant(src: Source, subset: str) -> str:
    info = dataset_info("covertype")
    if subset != "auto":
        return subset
    if src.has(info, "covtype.data.gz") or src.has(info, "covtype.data"):
        return "full"
    if src.has(info, "covertype_small_features.csv.gz") and src.has(
        info, "covertype_small_labels.csv.gz"
    ):
        return "small"
    if src.has(info, "covtype_first15120.data.gz"):
        return "first15120"
    return "full"


def _covertype(src: Source, *, subset: str, **_: Any) -> Raw:
    info = dataset_info("covertype")
    variant = _covertype_variant(src, subset)
    if variant == "full":
        name = "covtype.data" if src.has(info, "covtype.data") else "covtype.data.gz"
        try:
            path = src.files(info, name)[name]
        except DatasetNotFoundError as exc:
            raise DatasetNotFoundError(
                f"{exc}\nThe documented subsets can be used instead: put "
                "covertype_small_features.csv.gz + covertype_small_labels.csv.gz or "
                "covtype_first15120.data.gz in the same directory (see docs/datasets.md)."
            ) from None
        table = read_table(path).to_numpy(dtype=np.int64)
        x, y = table[:, :-1], table[:, -1]
    elif variant == "first15120":
        name = "covtype_first15120.data.gz"
        table = read_table(src.files(info, name)[name]).to_numpy(dtype=np.int64)
        x, y = table[:, :-1], table[:, -1]
    else:
        f, lab = "covertype_small_features.csv.gz", "covertype_small_labels.csv.gz"
        paths = src.files(info, f, lab)
        x = read_table(paths[f], header=True).to_numpy(dtype=np.int64)
        y = read_table(paths[lab], header=True).to_numpy(dtype=np.int64).ravel()
        if x.shape[0] != y.shape[0]:
            raise ValueError(f"{f} has {x.shape[0]} rows but {lab} has {y.shape[0]}.")
    if x.shape[1] != 54:
        raise ValueError(f"covertype: expected 54 attributes; got {x.shape[1]}.")
    meta = {
        "classes": {str(c): c - 1 for c in range(1, 8)},
        "subset": variant,
        "is_subset": variant != "full",
        "subset_note": _COVERTYPE_NOTES[variant],
    }
    return Raw(x.astype(np.float64), _labels(y, list(range(1, 8))), 7, meta)


def _idx_dataset(name: str) -> Callable[..., Raw]:
    def load(src: Source, *, image_size: int, split: str, **_: Any) -> Raw:
        info = dataset_info(name)
        files = {
            "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
            "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
        }
        wanted = list(files) if split == "all" else [split]
        parts = {}
        for s in wanted:
            img_name, lab_name = files[s]
            paths = src.files(info, img_name, lab_name)
            images, labels = read_idx(paths[img_name]), read_idx(paths[lab_name])
            if images.ndim != 3 or labels.shape != (images.shape[0],):
                raise ValueError(
                    f"{name}: {img_name} {images.shape} does not match {lab_name} "
                    f"{labels.shape}."
                )
            small = downsample_images(images, image_size)
            parts[s] = Raw(
                small.reshape(small.shape[0], -1),
                _labels(labels.astype(np.int64), list(range(10))),
                10,
                {
                    "image_size": image_size,
                    "pixels": "average-pooled, 0..255 before scaling",
                },
            )
        return _split(parts, split)

    return load


def _banknote(src: Source, **_: Any) -> Raw:
    info = dataset_info("banknote")
    name = "data_banknote_authentication.txt"
    table = to_float(read_table(src.files(info, name)[name]))
    if table.shape[1] != 5:
        raise ValueError(f"{name}: expected 5 columns (4 attributes + class).")
    y = _labels(table[:, 4].astype(np.int64), [0, 1])
    return Raw(table[:, :4], y, 2, {"classes": {"0": 0, "1": 1}})


def _phoneme(src: Source, **_: Any) -> Raw:
    info = dataset_info("phoneme")
    rows, names = read_keel(src.files(info, "phoneme.dat")["phoneme.dat"])
    if rows.shape[1] != 6:
        raise ValueError(
            f"phoneme.dat: expected 6 columns (5 attributes + class); got {names}."
        )
    x = to_float(_frame(rows[:, :5]))
    y = _labels(rows[:, 5].astype(float).astype(np.int64), [0, 1])
    return Raw(
        x,
        y,
        2,
        {
            "classes": {"0 (nasal)": 0, "1 (oral)": 1},
            "feature_names": names[:5],
            "substitution": info.notes,
        },
    )


LOADERS: dict[str, Callable[..., Raw]] = {
    "digits": _digits,
    "mushroom": _mushroom,
    "shuttle": _shuttle,
    "magic": _magic,
    "adult": _adult,
    "covertype": _covertype,
    "mnist": _idx_dataset("mnist"),
    "fashion-mnist": _idx_dataset("fashion-mnist"),
    "banknote": _banknote,
    "phoneme": _phoneme,
}

OPTIONS: dict[str, dict[str, Any]] = {
    "digits": {},
    "mushroom": {"categorical": "random"},
    "shuttle": {"split": "all"},
    "magic": {},
    "adult": {"categorical": "onehot", "split": "all"},
    "covertype": {"subset": "auto"},
    "mnist": {"image_size": 14, "split": "all"},
    "fashion-mnist": {"image_size": 14, "split": "all"},
    "banknote": {},
    "phoneme": {},
}
"""Dataset-specific options and their defaults (MNIST 14 x 14: [Bae2025, App. A]'s 196 features)."""


def given_options(**options: Any) -> list[str]:
    """The names of the dataset-specific options (``OPTIONS``) given a value, not None.

    For the sources that take none of them (the OBD logs, the user's tables).

    Example:
        >>> given_options(categorical=None, split="train")
        ['split']
    """
    return [name for name, value in options.items() if value is not None]
