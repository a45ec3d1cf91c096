import tracemalloc

import numpy as np
import pytest

from banditkit.linalg import DiagonalGram, Gram


def test_matches_direct_diagonal_computation():
    rng = np.random.default_rng(0)
    d, lam = 7, 0.4
    X = rng.normal(size=(25, d))
    w = rng.uniform(0.1, 2.0, size=25)
    gram = DiagonalGram(d, lam)
    for x, wi in zip(X[:5], w[:5], strict=True):
        gram.update(x, wi)
    gram.update_batch(X[5:], w[5:])
    diag = lam + np.sum(w[:, None] * X**2, axis=0)
    assert gram.n_updates == 25
    assert np.allclose(gram.diagonal, diag, rtol=1e-14, atol=0)
    assert np.allclose(gram.matrix, np.diag(diag), rtol=1e-14, atol=0)
    assert np.allclose(gram.inverse, np.diag(1 / diag), rtol=1e-14, atol=0)
    assert np.allclose(gram.cholesky, np.diag(np.sqrt(diag)), rtol=1e-14, atol=0)
    assert gram.logdet == pytest.approx(np.sum(np.log(diag)), rel=1e-14)
    arms = rng.normal(size=(4, d))
    expected = [np.sqrt(np.sum(x**2 / diag)) for x in arms]
    assert np.allclose(gram.norms(arms), expected, rtol=1e-14, atol=0)
    assert np.allclose(gram.solve(arms[0]), arms[0] / diag, rtol=1e-14)
    assert np.allclose(gram.solve(arms.T), arms.T / diag[:, None], rtol=1e-14)


def test_equals_full_gram_for_axis_aligned_features():
    rng = np.random.default_rng(1)
    d = 6
    X = np.eye(d)[rng.integers(0, d, size=40)] * rng.normal(size=(40, 1))
    w = rng.uniform(0.5, 2.0, size=40)
    diag, full = DiagonalGram(d, 1.0), Gram(d, 1.0)
    for x, wi in zip(X, w, strict=True):
        diag.update(x, wi)
        full.update(x, wi)
    V = np.eye(d) + (X.T * w) @ X
    sign, logdet = np.linalg.slogdet(V)
    assert sign == 1.0
    assert diag.logdet == pytest.approx(logdet, rel=1e-13)
    assert full.logdet == pytest.approx(logdet, rel=1e-13)
    arms = rng.normal(size=(5, d))
    assert np.allclose(diag.norms(arms), full.norms(arms), rtol=1e-12)
    assert np.allclose(diag.inverse, full.inverse, rtol=0, atol=1e-14)
    # Same z from the same seed, and L = diag(sqrt(D)), so the draws coincide.
    a = diag.sample_normal(np.random.default_rng(5), size=3)
    b = full.sample_normal(np.random.default_rng(5), size=3)
    assert np.allclose(a, b, rtol=1e-12)


def test_sample_normal_variance():
    gram = DiagonalGram(3, 1.0)
    gram.update(np.array([0.0, 1.0, 3.0]))
    n_draws = 100_000
    draws = gram.sample_normal(np.random.default_rng(0), size=n_draws)
    # Relative standard error of a variance estimate is sqrt(2 / n) = 0.0045; the
    # tolerance 0.025 is between five and six of those.
    ratio = draws.var(axis=0) * gram.diagonal
    assert np.all(np.abs(ratio - 1.0) < 0.025)
    assert gram.sample_normal(np.random.default_rng(0)).shape == (3,)


def test_large_d_never_builds_a_square_matrix():
    d = 40_000  # a d x d float64 matrix would need 12.8 GB
    rng = np.random.default_rng(2)
    X = rng.normal(size=(8, d))
    arms = rng.normal(size=(10, d))
    gram = DiagonalGram(d, 1.0)
    tracemalloc.start()
    try:
        gram.update(X[0])
        gram.update_batch(X[1:])
        norms = gram.norms(arms)
        draw = gram.sample_normal(rng, size=4)
        solved = gram.solve(arms[0])
        logdet = gram.logdet
        state = gram.state_dict()
        twin = DiagonalGram.from_state_dict(state)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 30e6
    assert norms.shape == (10,)
    assert draw.shape == (4, d)
    assert solved.shape == (d,)
    assert np.isfinite(logdet)
    assert np.array_equal(twin.diagonal, gram.diagonal)


def test_state_dict_copy_and_read_only():
    gram = DiagonalGram(3, 2.0)
    gram.update(np.array([1.0, 0.0, 2.0]), 0.5)
    state = gram.state_dict()
    assert state["kind"] == "DiagonalGram"
    restored = DiagonalGram.from_state_dict(state)
    assert np.array_equal(restored.diagonal, gram.diagonal)
    assert (restored.lam, restored.n_updates) == (2.0, 1)
    twin = gram.copy()
    gram.update(np.ones(3))
    assert np.array_equal(twin.diagonal, [2.5, 2.0, 4.0])
    with pytest.raises(ValueError, match="read-only"):
        gram.diagonal[0] = 1.0
    with pytest.raises(ValueError, match="expected 'DiagonalGram'"):
        DiagonalGram.from_state_dict(Gram(3, 1.0).state_dict())
    with pytest.raises(ValueError, match="d=3"):
        DiagonalGram(2, 1.0).load_state_dict(state)


def test_bad_input_raises_with_named_problem():
    with pytest.raises(ValueError, match="lam must be a float in"):
        DiagonalGram(3, 0.0)
    with pytest.raises(ValueError, match="d must be an int in"):
        DiagonalGram(0, 1.0)
    gram = DiagonalGram(3, 1.0)
    with pytest.raises(ValueError, match="x contains NaN"):
        gram.update(np.array([np.nan, 0.0, 0.0]))
    with pytest.raises(ValueError, match=r"x must have shape \(3,\)"):
        gram.update(np.ones(2))
    with pytest.raises(ValueError, match="weight must be a float in"):
        gram.update(np.ones(3), weight=-1.0)
    with pytest.raises(ValueError, match="weights must be positive"):
        gram.update_batch(np.ones((2, 3)), np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match=r"weights must have shape \(2,\)"):
        gram.update_batch(np.ones((2, 3)), np.ones(3))
    assert gram.n_updates == 0
