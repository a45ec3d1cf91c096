"""Loaders on small files written in each dataset's original format (users' own copies)."""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import numpy as np
import pytest

from banditkit.datasets import (
    DatasetNotFoundError,
    load_dataset,
    load_obd,
    obd_features,
)
from banditkit.datasets.readers import read_idx


def _write(root: Path, rel: str, data: bytes | str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    path.write_bytes(data)
    return path


def _load(name: str, root: Path, **options: object):  # type: ignore[no-untyped-def]
    return load_dataset(name, root=root, download=False, verify=False, **options)  # type: ignore[arg-type]


def test_mushroom(tmp_path: Path) -> None:
    rows = [
        "p,x,s,n,t,p,f,c,n,k,e,e,s,s,w,w,p,w,o,p,k,s,u",
        "e,x,s,y,t,a,f,c,b,k,e,c,s,s,w,w,p,w,o,p,n,n,g",
        "e,b,s,w,t,l,f,c,b,n,e,?,s,s,w,w,p,w,o,p,n,n,m",
    ]
    _write(tmp_path, "mushroom/agaricus-lepiota.data", "\n".join(rows) + "\n")
    ds = _load("mushroom", tmp_path, scale="none")
    assert ds.features.shape == (3, 22)
    assert ds.labels.tolist() == [0, 1, 1]
    assert np.all(np.abs(ds.features) <= 1.0)
    # Same symbol in the same column -> same value; "?" is a symbol of its own.
    assert ds.features[0, 0] == ds.features[1, 0] != ds.features[2, 0]
    assert ds.features[2, 10] not in (ds.features[0, 10], ds.features[1, 10])
    other = _load("mushroom", tmp_path, scale="none", seed=1)
    assert not np.array_equal(ds.features, other.features)
    same = _load("mushroom", tmp_path, scale="none", seed=0)
    assert np.array_equal(ds.features, same.features)
    onehot = _load("mushroom", tmp_path, categorical="onehot", scale="none")
    assert onehot.features.sum(axis=1).tolist() == [
        22.0,
        22.0,
        21.0,
    ]  # '?' -> zero block
    ordinal = _load("mushroom", tmp_path, categorical="ordinal", scale="none")
    assert ordinal.features[2, 10] == -1.0


def test_shuttle_space_and_tab_separated(tmp_path: Path) -> None:
    _write(
        tmp_path,
        "shuttle/shuttle.trn",
        "50 21 77 0 28 0 27 48 22 2\n55 0 92 0 0 26 36 92 56 4\n",
    )
    _write(tmp_path, "shuttle/shuttle.tst", "55\t0\t81\t0\t-6\t11\t25\t88\t64\t4\n")
    ds = _load("shuttle", tmp_path, scale="none")
    assert ds.features.shape == (3, 9)
    assert ds.labels.tolist() == [1, 3, 3]
    assert ds.n_classes == 7
    assert ds.features[2, 4] == -6.0
    assert _load("shuttle", tmp_path, split="test").features.shape == (1, 9)


def test_magic_with_a_missing_value(tmp_path: Path) -> None:
    rows = [
        "28.7967,16.0021,2.6449,0.3918,0.1982,27.7004,22.011,-8.2027,40.092,81.8828,g",
        "31.6036,11.7235,2.5185,0.5303,0.3773,26.2722,23.8238,-9.9574,6.3609,205.261,h",
        "162.052,136.031,4.0612,0.0374,0.0187,116.741,-64.858,-45.216,76.96,?,h",
    ]
    _write(tmp_path, "magic/magic04.data", "\n".join(rows) + "\n")
    ds = _load("magic", tmp_path, scale="none")
    assert ds.features.shape == (3, 10)
    assert ds.labels.tolist() == [1, 0, 0]
    assert ds.features[2, 9] == 0.0  # missing -> 0 [spec 4.3]


ADULT_TRAIN = """\
39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, Male, 2174, 0, 40, United-States, <=50K
50, Self-emp-not-inc, 83311, Bachelors, 13, Married-civ-spouse, Exec-managerial, Husband, White, Male, 0, 0, 13, United-States, >50K
38, ?, 215646, HS-grad, 9, Divorced, ?, Not-in-family, White, Female, 0, 0, 40, ?, <=50K

"""
ADULT_TEST = """\
|1x3 Cross validator
25, Private, 226802, 11th, 7, Never-married, Machine-op-inspct, Own-child, Black, Male, 0, 0, 40, United-States, >50K.
"""


def test_adult_onehot_and_ordinal(tmp_path: Path) -> None:
    _write(tmp_path, "adult/adult.data", ADULT_TRAIN)
    _write(tmp_path, "adult/adult.test", ADULT_TEST)
    ds = _load("adult", tmp_path, scale="none")
    assert ds.labels.tolist() == [0, 1, 0, 1]  # trailing dot of adult.test removed
    # 6 numeric + workclass 3 + education 3 + marital 3 + occupation 3 + relationship 3
    # + race 2 + sex 2 + country 1 categories seen
    assert ds.features.shape == (4, 6 + 3 + 3 + 3 + 3 + 3 + 2 + 2 + 1)
    assert ds.features[0, :6].tolist() == [39, 77516, 13, 2174, 0, 40]
    # '?' (three missing values in row 2) gives all-zero blocks: 8 - 3 indicators set
    assert ds.features[2, 6:].sum() == 5.0
    ordinal = _load("adult", tmp_path, categorical="ordinal", scale="none")
    assert ordinal.features.shape == (4, 14)
    assert ordinal.features[2, 1] == -1.0 and ordinal.features[2, 13] == -1.0
    assert _load("adult", tmp_path, split="test").features.shape[0] == 1


def _covtype_rows(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = np.zeros((n, 55), dtype=np.int64)
    x[:, :10] = rng.integers(0, 4000, size=(n, 10))
    x[np.arange(n), 10 + rng.integers(4, size=n)] = 1
    x[np.arange(n), 14 + rng.integers(40, size=n)] = 1
    x[:, 54] = 1 + np.arange(n) % 7
    return x


def test_covertype_full_file_wins_over_the_subsets(tmp_path: Path) -> None:
    rows = _covtype_rows(14)
    text = "\n".join(",".join(map(str, r)) for r in rows) + "\n"
    _write(
        tmp_path,
        "covertype/covtype_first15120.data.gz",
        gzip.compress(text[:200].encode()),
    )
    head = ",".join(f"c{i}" for i in range(54))
    feats = head + "\n" + "\n".join(",".join(map(str, r[:54])) for r in rows[:5]) + "\n"
    labels = "label\n" + "\n".join(str(r[54]) for r in rows[:5]) + "\n"
    _write(
        tmp_path,
        "covertype/covertype_small_features.csv.gz",
        gzip.compress(feats.encode()),
    )
    _write(
        tmp_path,
        "covertype/covertype_small_labels.csv.gz",
        gzip.compress(labels.encode()),
    )
    small = _load("covertype", tmp_path, scale="none")
    assert small.meta["subset"] == "small" and small.meta["is_subset"]
    assert small.features.shape == (5, 54)
    assert small.labels.tolist() == (rows[:5, 54] - 1).tolist()
    _write(tmp_path, "covertype/covtype.data.gz", gzip.compress(text.encode()))
    full = _load("covertype", tmp_path, scale="none")
    assert full.meta["subset"] == "full" and not full.meta["is_subset"]
    assert np.array_equal(full.features, rows[:, :54])
    assert full.labels.tolist() == (np.arange(14) % 7).tolist()


def test_covertype_explicit_full_request_without_the_file(tmp_path: Path) -> None:
    with pytest.raises(DatasetNotFoundError, match=r"covtype\.data\.gz") as info:
        _load("covertype", tmp_path, subset="full")
    assert "covertype_small_features.csv.gz" in str(info.value)


def _idx(array: np.ndarray) -> bytes:
    header = struct.pack(">BBBB", 0, 0, 0x08, array.ndim)
    header += b"".join(struct.pack(">I", s) for s in array.shape)
    return gzip.compress(header + array.astype(np.uint8).tobytes())


@pytest.mark.parametrize("name", ["mnist", "fashion-mnist"])
def test_idx_images(tmp_path: Path, name: str) -> None:
    folder = "mnist" if name == "mnist" else "fashion_mnist"
    rng = np.random.default_rng(0)
    for split, n in (("train", 4), ("t10k", 2)):
        images = rng.integers(0, 256, size=(n, 28, 28))
        _write(tmp_path, f"{folder}/{split}-images-idx3-ubyte.gz", _idx(images))
        _write(
            tmp_path, f"{folder}/{split}-labels-idx1-ubyte.gz", _idx(np.arange(n) + 3)
        )
    raw = read_idx(tmp_path / folder / "train-images-idx3-ubyte.gz")
    ds = _load(name, tmp_path, scale="none", image_size=7)
    assert ds.features.shape == (6, 49)
    assert ds.labels.tolist() == [3, 4, 5, 6, 3, 4]
    assert ds.features[0, 0] == raw[0, :4, :4].mean()
    assert _load(name, tmp_path, image_size=28, split="test").features.shape == (2, 784)


def test_idx_rejects_a_wrong_size(tmp_path: Path) -> None:
    path = _write(tmp_path, "x.gz", _idx(np.zeros((2, 3))))
    data = gzip.decompress(path.read_bytes())
    path.write_bytes(gzip.compress(data[:-1]))
    with pytest.raises(ValueError, match="header announces"):
        read_idx(path)


def test_banknote_crlf_without_final_newline(tmp_path: Path) -> None:
    _write(
        tmp_path,
        "banknote/data_banknote_authentication.txt",
        "3.6216,8.6661,-2.8073,-0.44699,0\r\n-1.3971,3.3191,-1.3927,-1.9948,1",
    )
    ds = _load("banknote", tmp_path, scale="none")
    assert ds.features.shape == (2, 4)
    assert ds.labels.tolist() == [0, 1]


def test_phoneme_keel_format(tmp_path: Path) -> None:
    text = (
        "@relation phoneme\n@attribute Aa real [-1.7, 4.107]\n@attribute Ao real [-1.327, 4.378]\n"
        "@attribute Dcl real [-1.823, 3.199]\n@attribute Iy real [-1.581, 2.826]\n"
        "@attribute Sh real [-1.284, 2.719]\n@attribute Class {0, 1}\n"
        "@inputs Aa, Ao, Dcl, Iy, Sh\n@outputs Class\n@data\n"
        "1.24, 0.875, -0.205, -0.078, 0.067, 0\n0.268, 1.352, 1.035, -0.332, 0.217, 0\n"
        "1.567, 0.867, 1.3, 1.041, 0.559, 1\n"
    )
    _write(tmp_path, "phoneme/phoneme.dat", text)
    ds = _load("phoneme", tmp_path, scale="none")
    assert ds.features.shape == (3, 5)
    assert ds.labels.tolist() == [0, 0, 1]
    assert ds.meta["feature_names"] == ["Aa", "Ao", "Dcl", "Iy", "Sh"]


def _obd_files(folder: Path, n: int = 30, n_items: int = 6) -> None:
    rng = np.random.default_rng(0)
    cols = ["", "timestamp", "item_id", "position", "click", "propensity_score"]
    cols += [f"user_feature_{j}" for j in range(3)]
    cols += [f"user-item_affinity_{i}" for i in range(n_items)]
    lines = [",".join(cols)]
    for r in range(n):
        aff = rng.choice([0.0, 0.0, 1.0, 2.0], size=n_items)
        users = [f"u{j}{rng.integers(3)}" for j in range(3)]
        vals = [str(r), f"2019-11-24 00:00:{r:02d}+00:00", str(rng.integers(n_items)),
                str(1 + r % 3), str(int(r % 7 == 0)), "0.0125", *users,
                *map(str, aff)]  # fmt: skip
        lines.append(",".join(vals))
    _write(folder, "all.csv", "\n".join(lines) + "\n")
    items = [",item_id,item_feature_0,item_feature_1,item_feature_2"]
    for i in range(n_items):
        items.append(f"{i},{i},{rng.normal():.4f},a{i % 3},b{i % 2}")
    _write(folder, "item_context.csv", "\n".join(items) + "\n")


def test_obd_sample_and_full_layouts(tmp_path: Path) -> None:
    _obd_files(tmp_path / "obd" / "random" / "all")
    log = load_obd(root=tmp_path, download=False, verify=False)
    assert log.meta["variant"] == "sample"
    assert log.n_events == 30 and log.n_items == 6
    assert log.user_codes.shape == (30, 3)
    assert log.meta["n_columns"] == 1 + 5 + 3 + 6
    features = obd_features(log, user_dim=4, item_dim=3)
    assert features.user.shape == (30, 4) and features.item.shape == (6, 3)
    assert features.position.min() == -1.0 and features.position.max() == 1.0
    assert features.affinity.min() == -1.0 and features.affinity.max() == 1.0
    with pytest.raises(ValueError, match="user_dim"):
        obd_features(log, user_dim=9)
    _obd_files(tmp_path / "obd" / "open_bandit_dataset" / "random" / "all", n=45)
    full = load_obd(root=tmp_path, download=False)
    assert full.meta["variant"] == "full" and full.n_events == 45
    assert full.meta["verified"] is False
    assert load_obd(root=tmp_path, variant="sample", verify=False).n_events == 30


def test_obd_full_requested_but_absent(tmp_path: Path) -> None:
    with pytest.raises(DatasetNotFoundError, match=r"open_bandit_dataset\.zip"):
        load_obd(root=tmp_path, variant="full")
