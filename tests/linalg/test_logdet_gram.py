"""EffectiveDimension's in-place Gram against Gram, bit for bit."""

import numpy as np

from banditkit.linalg import Gram
from banditkit.linalg.effdim import EffectiveDimension, _LogdetGram


def test_in_place_updates_equal_gram_bitwise_across_refactorisations():
    rng = np.random.default_rng(0)
    d = 7
    fast, slow = _LogdetGram(d, 1.0, refactor_every=5), Gram(d, 1.0, refactor_every=5)
    for t in range(23):
        x, w = rng.normal(size=d), float(rng.uniform(0.1, 2.0))
        fast.update(x, w)
        slow.update(x, w)
        assert fast.logdet == slow.logdet, t
        np.testing.assert_array_equal(fast.inverse, slow.inverse)
        np.testing.assert_array_equal(fast.matrix, slow.matrix)
    state, want = fast.state_dict(), slow.state_dict()
    for key in ("matrix", "inverse", "cholesky"):
        np.testing.assert_array_equal(state[key], want[key])
    # the exact log-determinant, directly
    assert np.isclose(fast.logdet, np.linalg.slogdet(slow.matrix)[1], rtol=1e-12)


def test_copy_is_independent():
    gram = _LogdetGram(3, 1.0)
    gram.update(np.array([1.0, 2.0, 0.0]))
    twin = gram.copy()
    gram.update(np.array([0.0, 1.0, 1.0]))
    assert twin.n_updates == 1
    np.testing.assert_array_equal(
        twin.matrix, np.eye(3) + np.outer([1, 2, 0], [1, 2, 0])
    )


def test_effective_dimension_full_keeps_its_values():
    rng = np.random.default_rng(1)
    tracker = EffectiveDimension(6, scale=0.25, gram="full")
    reference = Gram(6, 1.0)
    for _ in range(30):
        z = rng.normal(size=6)
        tracker.update(z)
        reference.update(z, 0.25)
        assert tracker.value == reference.logdet
