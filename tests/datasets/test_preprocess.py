from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from banditkit.datasets import (
    SCALINGS,
    default_scale,
    downsample_images,
    encode_categorical,
    load_dataset,
    scale_features,
)

X = np.array([[0.0, 5.0, 1.0], [2.0, 5.0, 3.0], [4.0, 5.0, -1.0]])


def test_minmax_per_feature_with_a_constant_column() -> None:
    """2 (x - min) / (max - min) - 1 per column; the constant column becomes 0."""
    assert scale_features(X, "minmax").tolist() == [
        [-1.0, 0.0, 0.0],
        [0.0, 0.0, 1.0],
        [1.0, 0.0, -1.0],
    ]


def test_global_and_row_minmax() -> None:
    # global: min -1, max 5 -> x / 3 - 2/3
    np.testing.assert_allclose(scale_features(X, "minmax-global"), (X + 1) / 3 - 1)
    row = scale_features(X, "minmax-row")
    assert row[0].tolist() == [-1.0, 1.0, -0.6]
    assert scale_features(np.ones((1, 3)), "minmax-row").tolist() == [[0.0, 0.0, 0.0]]


def test_l2_and_zscore() -> None:
    l2 = scale_features(X, "l2")
    np.testing.assert_allclose(np.linalg.norm(l2, axis=1), 1.0)
    assert scale_features(np.zeros((1, 2)), "l2").tolist() == [[0.0, 0.0]]
    z = scale_features(X, "zscore")
    np.testing.assert_allclose(z[:, [0, 2]].mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(z[:, [0, 2]].std(axis=0), 1.0)
    assert z[:, 1].tolist() == [0.0, 0.0, 0.0]
    np.testing.assert_allclose(
        np.linalg.norm(scale_features(X, "zscore-l2"), axis=1), 1.0
    )
    assert np.array_equal(scale_features(X, "none"), X)


def test_unknown_scaling_is_rejected() -> None:
    with pytest.raises(ValueError, match="scale must be one of"):
        scale_features(X, "max")


@settings(max_examples=40, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 8), st.integers(1, 5)),
              elements=st.floats(-1e6, 1e6)))  # fmt: skip
def test_every_scaling_is_finite_and_minmax_is_bounded(x: np.ndarray) -> None:
    for scale in SCALINGS:
        out = scale_features(x, scale)
        assert out.shape == x.shape and np.isfinite(out).all()
    for scale in ("minmax", "minmax-global", "minmax-row"):
        out = scale_features(x, scale)
        assert out.min() >= -1.0 - 1e-12 and out.max() <= 1.0 + 1e-12


def test_random_categorical_map_is_seeded_and_in_range() -> None:
    sym = np.array([["a", "x"], ["b", "x"], ["a", "y"], ["?", "y"]])
    a, _ = encode_categorical(sym, "random", seed=3, missing_as_symbol=True)
    b, _ = encode_categorical(sym, "random", seed=3, missing_as_symbol=True)
    c, _ = encode_categorical(sym, "random", seed=4, missing_as_symbol=True)
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    assert np.all(np.abs(a) <= 1.0)
    assert a[0, 0] == a[2, 0] and len({a[0, 0], a[1, 0], a[3, 0]}) == 3


def test_onehot_and_ordinal_names() -> None:
    sym = np.array([["b", "x"], ["a", "?"]])
    x, names = encode_categorical(sym, "onehot")
    assert names == ["c0=a", "c0=b", "c1=x"]
    assert x.tolist() == [[0.0, 1.0, 1.0], [1.0, 0.0, 0.0]]
    x, names = encode_categorical(sym, "ordinal")
    assert x.tolist() == [[1.0, 0.0], [0.0, -1.0]]


def test_downsample_averages_blocks() -> None:
    img = np.arange(28 * 28, dtype=np.float64).reshape(1, 28, 28)
    small = downsample_images(img, 14)
    assert small.shape == (1, 14, 14)
    assert small[0, 0, 0] == img[0, :2, :2].mean()
    assert downsample_images(img, 7)[0, 6, 6] == img[0, 24:, 24:].mean()
    with pytest.raises(ValueError, match="divide"):
        downsample_images(img, 5)


def test_dataset_options_are_validated() -> None:
    with pytest.raises(ValueError, match="has no option 'image_size'"):
        load_dataset("digits", image_size=7)
    with pytest.raises(ValueError, match="categorical must be one of"):
        load_dataset("mushroom", categorical="hash")
    with pytest.raises(ValueError, match="image_size"):
        load_dataset("mnist", image_size=10)
    with pytest.raises(ValueError, match="Did you mean 'mushroom'"):
        load_dataset("mushrooms")
    assert default_scale("fashion-mnist") == "minmax-global"


def test_digits_keeps_its_public_api() -> None:
    ds = load_dataset("digits", scale="minmax")
    assert ds.features.shape == (1797, 64) and ds.n_classes == 10
    assert ds.meta["scale"] == "minmax"
    assert load_dataset("digits", scale="l2").meta["scale"] == "l2"
