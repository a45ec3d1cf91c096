"""linalg.BlockedLogdet against a direct log-determinant and against LogdetGram."""

import numpy as np
import pytest

from banditkit.linalg import EffectiveDimension
from banditkit.linalg.blocked import BlockedLogdet
from banditkit.linalg.effdim import LogdetGram


def rows(n: int = 70, d: int = 12, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * rng.random((n, 1))
    X[::7, : d // 2] = 0.0  # some sparse rows, as ReLU gradients are
    return X, 0.1 + rng.random(n)


@pytest.mark.parametrize("refactor_every", [16, None])
def test_value_after_every_row_equals_a_direct_logdet(refactor_every):
    X, w = rows()
    lam = 0.7
    tracker = BlockedLogdet(X.shape[1], lam, block=4, refactor_every=refactor_every)
    for i, (x, wi) in enumerate(zip(X, w, strict=True)):
        tracker.update(x, wi)
        V = lam * np.eye(X.shape[1]) + (X[: i + 1].T * w[: i + 1]) @ X[: i + 1]
        assert tracker.logdet == pytest.approx(np.linalg.slogdet(V)[1], rel=1e-12)
    reference = LogdetGram(X.shape[1], lam)
    for x, wi in zip(X, w, strict=True):
        reference.update(x, wi)
    assert tracker.logdet == pytest.approx(reference.logdet, rel=1e-12)


def test_values_do_not_depend_on_when_they_are_read():
    X, w = rows(n=45)
    every, once = BlockedLogdet(12, 1.0, block=8), BlockedLogdet(12, 1.0, block=8)
    values = []
    for x, wi in zip(X, w, strict=True):
        every.update(x, wi)
        values.append(every.logdet)
        once.update(x, wi)
        low, high = once.bounds()  # does not add the waiting rows
        assert low <= values[-1] <= high
    assert once.logdet == values[-1]  # bitwise: the same arithmetic, row by row


def test_bounds_are_equal_once_read_and_the_state_continues_bitwise():
    X, w = rows(n=30)
    a = BlockedLogdet(12, 1.0, block=8, refactor_every=None)
    for x, wi in zip(X[:13], w[:13], strict=True):
        a.update(x, wi)
    assert a.bounds()[0] < a.bounds()[1]
    value = a.logdet
    assert a.bounds() == (value, value)
    b = BlockedLogdet(12, 1.0, block=8, refactor_every=None)
    b.load_state_dict(a.state_dict())
    for x, wi in zip(X[13:], w[13:], strict=True):
        a.update(x, wi)
        b.update(x, wi)
    assert a.logdet == b.logdet


def test_arguments_are_validated():
    with pytest.raises(ValueError, match="block"):
        BlockedLogdet(3, 1.0, block=5, refactor_every=512)
    with pytest.raises(ValueError, match="lam"):
        BlockedLogdet(3, 0.0)
    with pytest.raises(ValueError, match="x"):
        BlockedLogdet(3, 1.0).update(np.array([1.0, np.nan, 0.0]))
    with pytest.raises(ValueError, match="not kept"):
        _ = BlockedLogdet(3, 1.0, refactor_every=None).matrix
    with pytest.raises(ValueError, match="BlockedLogdet"):
        BlockedLogdet(3, 1.0).load_state_dict({"kind": "Gram"})


def test_effective_dimension_block_option():
    X, _ = rows(n=50)
    exact, blocked = EffectiveDimension(12, 0.3, "full"), None
    blocked = EffectiveDimension(12, 0.3, "full", block=8)
    for x in X:
        exact.update(x)
        blocked.update_unchecked(x)
        low, high = blocked.bounds()
        assert low <= exact.value * (1 + 1e-12) and exact.value <= high * (1 + 1e-12)
    assert blocked.value == pytest.approx(exact.value, rel=1e-12)
    assert exact.bounds() == (exact.value, exact.value)
    with pytest.raises(ValueError, match="block"):
        EffectiveDimension(12, 0.3, "full", block=0)
