"""Every loader on ../shared/datasets returns the counts stated in its README."""

from __future__ import annotations

import numpy as np
import pytest

from banditkit.datasets import load_dataset, load_obd
from tests.datasets._data import require_reference_data

# name, options -> rows, features, class counts (label order of the loader), from README.md
EXPECTED = {
    ("mushroom", ()): (8124, 22, [3916, 4208]),  # p 3916 -> 0, e 4208 -> 1
    ("shuttle", ()): (58000, 9, [45586, 50, 171, 8903, 3267, 10, 13]),
    ("shuttle", (("split", "train"),)): (43500, 9, [34108, 37, 132, 6748, 2458, 6, 11]),
    ("shuttle", (("split", "test"),)): (14500, 9, [11478, 13, 39, 2155, 809, 4, 2]),
    ("magic", ()): (19020, 10, [6688, 12332]),  # h -> 0, g -> 1
    ("adult", (("categorical", "ordinal"),)): (48842, 14, [37155, 11687]),
    ("adult", (("split", "train"), ("categorical", "ordinal"))): (32561, 14, [24720, 7841]),
    ("adult", (("split", "test"), ("categorical", "ordinal"))): (16281, 14, [12435, 3846]),
    ("covertype", (("subset", "small"),)): (
        100000, 54, [36307, 49000, 6133, 481, 1663, 2990, 3426],
    ),
    ("covertype", (("subset", "first15120"),)): (15120, 54, [2160] * 7),
    ("mnist", ()): (
        70000, 196, [6903, 7877, 6990, 7141, 6824, 6313, 6876, 7293, 6825, 6958],
    ),
    ("mnist", (("split", "train"), ("image_size", 7))): (
        60000, 49, [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949],
    ),
    ("mnist", (("split", "test"), ("image_size", 28))): (
        10000, 784, [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009],
    ),
    ("fashion-mnist", ()): (70000, 196, [7000] * 10),
    ("fashion-mnist", (("split", "test"), ("image_size", 28))): (10000, 784, [1000] * 10),
    ("banknote", ()): (1372, 4, [762, 610]),
    ("phoneme", ()): (5404, 5, [3818, 1586]),
    ("digits", ()): (1797, 64, [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]),
}  # fmt: skip


@pytest.mark.parametrize(("name", "options"), list(EXPECTED), ids=lambda v: str(v))
def test_counts_match_the_readme(
    name: str, options: tuple[tuple[str, object], ...]
) -> None:
    if name != "digits":
        require_reference_data()
    rows, d, counts = EXPECTED[(name, options)]
    ds = load_dataset(name, **dict(options))  # type: ignore[arg-type]
    assert ds.features.shape == (rows, d)
    assert ds.features.dtype == np.float64
    assert ds.n_classes == len(counts)
    assert np.bincount(ds.labels, minlength=ds.n_classes).tolist() == counts
    assert np.isfinite(ds.features).all()
    assert (
        ds.features.min() >= -1.0 and ds.features.max() <= 1.0
    )  # "auto" min-max scaling
    assert ds.meta["verified"] is (name != "digits")


def test_default_options() -> None:
    require_reference_data()
    mnist = load_dataset("mnist")  # 14 x 14 [spec 7.10], pixels scaled globally
    assert mnist.features.shape == (70000, 196)
    assert mnist.meta["scale"] == "minmax-global"
    assert mnist.features.min() == -1.0 and mnist.features.max() == 1.0
    adult = load_dataset("adult")  # one-hot: 6 numeric + 99 category indicators
    assert adult.features.shape == (48842, 105)
    assert adult.meta["categorical"] == "onehot"
    assert load_dataset("mushroom", categorical="onehot").features.shape[0] == 8124


def test_covertype_results_on_a_subset_say_so() -> None:
    require_reference_data()
    ds = load_dataset(
        "covertype"
    )  # no complete file in the reference copy: the 100k subset
    assert ds.meta["subset"] == "small"
    assert ds.meta["is_subset"] is True
    assert "SUBSET" in ds.meta["subset_note"]


def test_covertype_first_rows_equal_the_published_first_line() -> None:
    require_reference_data()
    ds = load_dataset("covertype", subset="first15120", scale="none")
    first = [2596, 51, 3, 258, 0, 510, 221, 232, 148, 6279, 1, 0, 0, 0]
    assert ds.features[0, :14].tolist() == first
    assert ds.labels[0] == 5 - 1


def test_obd_sample_counts() -> None:
    require_reference_data("obd")
    for campaign, items, columns in (
        ("all", 80, 90),
        ("men", 34, 44),
        ("women", 46, 56),
    ):
        for policy in ("random", "bts"):
            log = load_obd(policy, campaign)
            assert log.n_events == 10000
            assert log.n_items == items
            assert log.meta["n_columns"] == columns
            assert log.meta["variant"] == "sample"
            assert set(np.unique(log.position).tolist()) == {1, 2, 3}
            assert log.item_id.min() >= 0 and log.item_id.max() < items
    ds = load_dataset("obd")
    assert ds.n_rows == 10000 and ds.n_classes == 80


def test_cache_returns_the_same_read_only_arrays() -> None:
    require_reference_data()
    a = load_dataset("magic")
    b = load_dataset("magic")
    assert a is b
    with pytest.raises(ValueError):
        a.features[0, 0] = 1.0
    assert load_dataset("magic", scale="l2") is not a
