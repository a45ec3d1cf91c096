"""LogdetGram (EffectiveDimension's full Gram) against Gram and a direct log-determinant."""

import numpy as np
import pytest

from banditkit.linalg import Gram
from banditkit.linalg.effdim import EffectiveDimension, LogdetGram


def test_matches_gram_and_slogdet_across_refactorisations():
    rng = np.random.default_rng(0)
    d = 7
    fast, slow = LogdetGram(d, 0.5, refactor_every=5), Gram(d, 0.5, refactor_every=5)
    direct = 0.5 * np.eye(d)
    for t in range(23):
        x, w = rng.normal(size=d), float(rng.uniform(0.1, 2.0))
        fast.update(x, w)
        slow.update(x, w)
        direct += w * np.outer(x, x)
        assert fast.logdet == pytest.approx(np.linalg.slogdet(direct)[1], rel=1e-12), t
        assert fast.logdet == pytest.approx(slow.logdet, rel=1e-12)
        np.testing.assert_allclose(fast.matrix, direct, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(fast.inverse, np.linalg.inv(direct), atol=1e-10)


def test_state_round_trips_through_gram():
    rng = np.random.default_rng(2)
    fast = LogdetGram(4, 1.0, refactor_every=3)
    for _ in range(7):
        fast.update(rng.normal(size=4))
    gram = Gram(4, 1.0)
    gram.load_state_dict(fast.state_dict())
    back = LogdetGram(4, 1.0)
    back.load_state_dict(gram.state_dict())
    x = rng.normal(size=4)
    fast.update(x)
    back.update(x)
    assert back.logdet == fast.logdet
    assert back.n_updates == 8
    with pytest.raises(ValueError):
        LogdetGram(5, 1.0).load_state_dict(fast.state_dict())


def test_effective_dimension_full_is_the_exact_logdet():
    rng = np.random.default_rng(1)
    tracker = EffectiveDimension(6, scale=0.25, gram="full")
    direct = np.eye(6)
    for _ in range(30):
        z = rng.normal(size=6)
        tracker.update(z)
        direct += 0.25 * np.outer(z, z)
        assert tracker.value == pytest.approx(np.linalg.slogdet(direct)[1], rel=1e-12)
