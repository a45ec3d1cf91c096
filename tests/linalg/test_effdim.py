"""The exact effective dimension through the n x n Gram (``KernelLogdet``)."""

from __future__ import annotations

import numpy as np
import pytest

from banditkit.linalg import EffectiveDimension, KernelLogdet


def _direct(Z: np.ndarray, a: float) -> float:
    p = Z.shape[1]
    return float(np.linalg.slogdet(np.eye(p) + a * Z.T @ Z)[1])


@pytest.mark.parametrize(("n", "p"), [(30, 200), (80, 12)])  # p > n and n > p
def test_kernel_logdet_equals_the_p_by_p_logdet(n: int, p: int) -> None:
    rng = np.random.default_rng(n)
    Z = rng.normal(size=(n, p))
    Z[Z < 0.3] = 0.0  # sparse rows, as ReLU gradients
    tracker = EffectiveDimension(p, 0.25, "kernel")
    values = []
    for z in Z:
        tracker.update(z)
        values.append(tracker.value)
    assert values[-1] == pytest.approx(_direct(Z, 0.25), rel=1e-10)
    assert values[9] == pytest.approx(_direct(Z[:10], 0.25), rel=1e-10)
    assert np.all(np.diff(values) > 0.0)


def test_kernel_logdet_is_below_the_diagonal_one_for_correlated_rows() -> None:
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(40, 3)) @ rng.normal(size=(3, 50))  # rank 3
    kernel, diag = EffectiveDimension(50, 1.0, "kernel"), EffectiveDimension(50, 1.0)
    for z in Z:
        kernel.update(z)
        diag.update(z)
    assert kernel.value == pytest.approx(_direct(Z, 1.0), rel=1e-8)
    assert kernel.value < 0.5 * diag.value


def test_kernel_logdet_state_round_trip() -> None:
    rng = np.random.default_rng(1)
    a, b = KernelLogdet(6, 0.5), KernelLogdet(6, 0.5)
    for z in rng.normal(size=(5, 6)):
        a.update(z)
    b.load_state_dict(a.state_dict())
    z = rng.normal(size=6)
    a.update(z)
    b.update(z)
    assert b.logdet == a.logdet
    assert b.n == 6


@pytest.mark.parametrize(
    ("args", "match"), [((0, 1.0), "d must"), ((3, 0.0), "scale must")]
)
def test_kernel_logdet_rejects_bad_arguments(args: tuple, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        KernelLogdet(*args)


def test_kernel_logdet_rejects_a_wrong_shape() -> None:
    with pytest.raises(ValueError, match="z must"):
        KernelLogdet(3, 1.0).update(np.ones(4))


def test_exact_picks_the_cheaper_exact_form() -> None:
    from banditkit.linalg import EXACT_FULL_MAX

    small = EffectiveDimension(EXACT_FULL_MAX, 0.5, "exact")
    large = EffectiveDimension(EXACT_FULL_MAX + 1, 0.5, "exact")
    assert (small.kind, large.kind) == ("full", "kernel")
    rng = np.random.default_rng(2)
    Z = rng.normal(size=(6, EXACT_FULL_MAX + 1))
    for z in Z:
        large.update(z)
        small.update(z[:-1])
    assert large.value == pytest.approx(_direct(Z, 0.5), rel=1e-10)
    assert small.value == pytest.approx(_direct(Z[:, :-1], 0.5), rel=1e-10)


def test_kernel_logdet_keeps_int32_indices_while_they_fit():
    """scipy.sparse would copy int64 indices to int32 at every product (3x its time)."""
    from banditkit.linalg import effdim

    tracker = effdim.KernelLogdet(50, scale=1.0)
    rng = np.random.default_rng(0)
    for _ in range(40):  # past the first growth of the buffers
        z = rng.standard_normal(50) * (rng.random(50) < 0.3)
        tracker.update(z)
    assert tracker._indices.dtype == tracker._indptr.dtype == np.int32
    restored = effdim.KernelLogdet(50, scale=1.0)
    restored.load_state_dict(tracker.state_dict())
    assert restored._indices.dtype == np.int32 and restored.logdet == tracker.logdet
    assert effdim._index_dtype(2**31 - 1) is np.int32
    assert effdim._index_dtype(2**31) is np.int64
