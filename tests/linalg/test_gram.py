import json

import numpy as np
import pytest

from banditkit.linalg import Gram


def stream(d: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)), rng.uniform(0.1, 3.0, size=n)


def direct(lam: float, X: np.ndarray, w: np.ndarray) -> np.ndarray:
    V = lam * np.eye(X.shape[1])
    for x, wi in zip(X, w, strict=True):
        V += wi * np.outer(x, x)
    return V


def rel_err(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


@pytest.mark.parametrize("d", [8, 30])
@pytest.mark.parametrize("refactor_every", [10**9, 7])
def test_thousand_rank1_updates_match_direct_factorisation(d, refactor_every):
    X, w = stream(d, 1000, seed=d)
    lam = 0.5
    gram = Gram(d, lam, refactor_every=refactor_every)
    for x, wi in zip(X, w, strict=True):
        gram.update(x, wi)
    V = direct(lam, X, w)
    assert gram.n_updates == 1000
    # With refactor_every = 10**9 every quantity below is the incremental one.
    assert gram.state_dict()["since_refactor"] == 1000 % refactor_every
    assert rel_err(gram.matrix, V) < 1e-13
    assert rel_err(gram.inverse, np.linalg.inv(V)) < 1e-8
    assert rel_err(gram.cholesky, np.linalg.cholesky(V)) < 1e-8
    sign, logdet = np.linalg.slogdet(V)
    assert sign == 1.0
    assert abs(gram.logdet - logdet) / abs(logdet) < 1e-8


def test_initial_state_is_lam_identity():
    gram = Gram(3, 2.0)
    assert np.array_equal(gram.matrix, 2.0 * np.eye(3))
    assert np.array_equal(gram.inverse, 0.5 * np.eye(3))
    assert np.allclose(gram.cholesky, np.sqrt(2.0) * np.eye(3))
    assert gram.logdet == pytest.approx(3 * np.log(2.0), rel=1e-15)
    assert (gram.d, gram.lam, gram.n_updates) == (3, 2.0, 0)


def test_norms_and_solve_match_direct_computation():
    X, w = stream(6, 40, seed=1)
    gram = Gram(6, 1.0)
    gram.update_batch(X, w)
    V_inv = np.linalg.inv(gram.matrix)
    arms = np.random.default_rng(2).normal(size=(9, 6))
    expected = [np.sqrt(x @ V_inv @ x) for x in arms]
    assert np.allclose(gram.norms(arms), expected, rtol=1e-12, atol=0)
    b = arms[0]
    B = arms[:4].T
    assert np.allclose(gram.solve(b), np.linalg.solve(gram.matrix, b), rtol=1e-12)
    assert np.allclose(gram.solve(B), np.linalg.solve(gram.matrix, B), rtol=1e-12)
    assert gram.solve(B).shape == (6, 4)


@pytest.mark.parametrize("n", [2, 50])  # 2 <= d / 4: sequential path; 50: one shot
def test_update_batch_equals_sequential_updates(n):
    d = 12
    X, w = stream(d, n, seed=n)
    batch, seq = Gram(d, 1.0), Gram(d, 1.0)
    batch.update_batch(X, w)
    for x, wi in zip(X, w, strict=True):
        seq.update(x, wi)
    assert batch.n_updates == seq.n_updates == n
    for name in ("matrix", "inverse", "cholesky"):
        assert rel_err(getattr(batch, name), getattr(seq, name)) < 1e-12, name
    assert batch.logdet == pytest.approx(seq.logdet, rel=1e-12)


def test_update_batch_default_weights_and_empty_batch():
    X, _ = stream(4, 10, seed=5)
    a, b = Gram(4, 1.0), Gram(4, 1.0)
    a.update_batch(X)
    b.update_batch(X, np.ones(10))
    assert np.array_equal(a.matrix, b.matrix)
    a.update_batch(np.empty((0, 4)))
    assert a.n_updates == 10


def test_sample_normal_covariance_is_inverse_gram():
    X, w = stream(4, 30, seed=9)
    gram = Gram(4, 1.0)
    gram.update_batch(X, w)
    n_draws = 200_000
    draws = gram.sample_normal(np.random.default_rng(0), size=n_draws)
    assert draws.shape == (n_draws, 4)
    target = gram.inverse
    scale = np.sqrt(np.outer(np.diag(target), np.diag(target)))
    # Entries of the empirical covariance, scaled to correlations, have standard
    # error <= sqrt(2 / n_draws) = 0.0032; the tolerance 0.016 is five of those.
    cov = draws.T @ draws / n_draws
    assert np.max(np.abs(cov - target) / scale) < 0.016
    assert np.max(np.abs(draws.mean(axis=0)) / np.sqrt(np.diag(target))) < 0.016


def test_sample_normal_shapes_and_reproducibility():
    gram = Gram(3, 1.0)
    gram.update(np.array([1.0, 2.0, 3.0]))
    assert gram.sample_normal(np.random.default_rng(1)).shape == (3,)
    assert gram.sample_normal(np.random.default_rng(1), size=0).shape == (0, 3)
    a = gram.sample_normal(np.random.default_rng(1), size=5)
    b = gram.sample_normal(np.random.default_rng(1), size=5)
    assert np.array_equal(a, b)
    # One draw uses the same z as the first row of a batch (up to BLAS round-off).
    assert np.allclose(a[0], gram.sample_normal(np.random.default_rng(1)), rtol=1e-14)


def test_state_dict_round_trips_exactly():
    X, w = stream(5, 23, seed=4)
    gram = Gram(5, 0.3, refactor_every=10)
    for x, wi in zip(X[:3], w[:3], strict=True):
        gram.update(x, wi)
    gram.update_batch(X[3:], w[3:])
    gram.update(X[0], 2.0)
    state = gram.state_dict()
    scalars = {k: v for k, v in state.items() if not isinstance(v, np.ndarray)}
    assert json.loads(json.dumps(scalars)) == scalars
    restored = Gram.from_state_dict(state)
    state["matrix"][0, 0] = 1e9  # the restored Gram holds its own copies
    for name in ("matrix", "inverse", "cholesky"):
        assert np.array_equal(getattr(restored, name), getattr(gram, name))
    assert restored.logdet == gram.logdet
    assert restored.n_updates == gram.n_updates == 24
    assert restored.refactor_every == 10
    # Both continue identically, including the next scheduled refactorisation.
    for g in (gram, restored):
        for x in X[:12]:
            g.update(x, 0.7)
    assert np.array_equal(restored.inverse, gram.inverse)
    assert restored.logdet == gram.logdet


def test_load_state_dict_rejects_mismatch():
    state = Gram(3, 1.0).state_dict()
    with pytest.raises(ValueError, match="d=3"):
        Gram(4, 1.0).load_state_dict(state)
    with pytest.raises(ValueError, match="expected 'Gram'"):
        Gram(3, 1.0).load_state_dict({**state, "kind": "DiagonalGram"})
    with pytest.raises(ValueError, match="missing keys"):
        Gram(3, 1.0).load_state_dict({"kind": "Gram", "d": 3})
    with pytest.raises(TypeError, match="state must be a dict"):
        Gram.from_state_dict([("kind", "Gram")])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"inverse must have shape \(3, 3\)"):
        Gram(3, 1.0).load_state_dict({**state, "inverse": np.eye(2)})


def test_copy_is_independent_and_properties_are_read_only_snapshots():
    gram = Gram(3, 1.0)
    gram.update(np.array([1.0, 0.0, 0.0]))
    twin = gram.copy()
    before = gram.inverse
    gram.update(np.array([0.0, 1.0, 0.0]))
    assert np.array_equal(twin.matrix, np.diag([2.0, 1.0, 1.0]))
    assert twin.n_updates == 1
    assert np.array_equal(before, np.diag([0.5, 1.0, 1.0]))
    with pytest.raises(ValueError, match="read-only"):
        gram.matrix[0, 0] = 5.0


def test_bad_input_raises_with_named_problem():
    with pytest.raises(ValueError, match=r"lam must be a float in \(0, inf\)"):
        Gram(3, 0.0)
    with pytest.raises(ValueError, match="lam"):
        Gram(3, -1.0)
    with pytest.raises(ValueError, match=r"d must be an int in \[1, inf\)"):
        Gram(0, 1.0)
    with pytest.raises(ValueError, match="refactor_every"):
        Gram(3, 1.0, refactor_every=0)
    gram = Gram(3, 1.0)
    with pytest.raises(ValueError, match="x contains NaN"):
        gram.update(np.array([1.0, np.nan, 0.0]))
    with pytest.raises(ValueError, match="x contains inf"):
        gram.update(np.array([1.0, np.inf, 0.0]))
    with pytest.raises(ValueError, match=r"x must have shape \(3,\); got shape \(4,\)"):
        gram.update(np.ones(4))
    with pytest.raises(ValueError, match="x must be a 1-d array"):
        gram.update(np.ones((1, 3)))
    with pytest.raises(ValueError, match=r"weight must be a float in \(0, inf\)"):
        gram.update(np.ones(3), weight=0.0)
    with pytest.raises(ValueError, match="weight"):
        gram.update(np.ones(3), weight=-2.0)
    with pytest.raises(ValueError, match="weights must be positive"):
        gram.update_batch(np.ones((2, 3)), np.array([1.0, -1.0]))
    with pytest.raises(ValueError, match=r"X must have shape \(n, 3\)"):
        gram.update_batch(np.ones((2, 4)))
    with pytest.raises(ValueError, match=r"X must have shape \(n, 3\)"):
        gram.norms(np.ones((2, 2)))
    with pytest.raises(ValueError, match=r"b must have shape \(3,\) or \(3, n\)"):
        gram.solve(np.ones(2))
    with pytest.raises(TypeError, match=r"rng must be a numpy\.random\.Generator"):
        gram.sample_normal(np.random.RandomState(0))  # type: ignore[arg-type]
    assert gram.n_updates == 0  # no rejected input changed the state


def reference_update(gram_state: dict, x: np.ndarray, w: float) -> dict:
    """The eager update (factor, inverse and log det through p = L^-1 sqrt(w) x)."""
    from scipy.linalg import solve_triangular

    from banditkit.linalg.rank1 import cholesky_update

    L, inv = gram_state["cholesky"], gram_state["inverse"]
    root_w_x = np.sqrt(w) * x
    p = solve_triangular(L, root_w_x, lower=True)
    wq = float(p @ p)
    u = inv @ x
    return {
        "matrix": gram_state["matrix"] + w * np.outer(x, x),
        "inverse": inv - w / (1.0 + wq) * np.outer(u, u),
        "cholesky": cholesky_update(L, root_w_x, p),
        "logdet": gram_state["logdet"] + np.log1p(wq),
    }


@pytest.mark.parametrize("d", [3, 20, 300])
def test_lazy_factor_matches_the_eager_update(d):
    # The factor is applied when read; every quantity must match the eager rank-1
    # update step by step (to round-off), whether L is read every round or rarely.
    X, w = stream(d, 40, seed=11)
    lazy = Gram(d, 0.7, refactor_every=10**9)
    eager = {
        "matrix": 0.7 * np.eye(d),
        "inverse": np.eye(d) / 0.7,
        "cholesky": np.sqrt(0.7) * np.eye(d),
        "logdet": d * np.log(0.7),
    }
    for i, (x, wi) in enumerate(zip(X, w, strict=True)):
        lazy.update(x, wi)
        eager = reference_update(eager, x, wi)
        if i % 7 == 0 or i == len(X) - 1:
            for name in ("matrix", "inverse", "cholesky"):
                assert rel_err(getattr(lazy, name), eager[name]) < 1e-10, name
            assert lazy.logdet == pytest.approx(eager["logdet"], rel=1e-10)


def test_lazy_factor_is_flushed_by_solve_sample_and_a_read_and_kept_by_copy():
    X, w = stream(4, 6, seed=5)
    gram = Gram(4, 1.0)
    for x, wi in zip(X, w, strict=True):
        gram.update(x, wi)
    twin = gram.copy()  # copies the queue: reading one does not affect the other
    b = np.arange(4.0)
    np.testing.assert_allclose(gram.solve(b), np.linalg.solve(gram.matrix, b))
    twin.update(X[0], 1.0)
    V = gram.matrix
    assert rel_err(gram.cholesky, np.linalg.cholesky(V)) < 1e-12
    assert rel_err(twin.cholesky, np.linalg.cholesky(twin.matrix)) < 1e-12
    state = twin.state_dict()
    assert rel_err(state["cholesky"], np.linalg.cholesky(twin.matrix)) < 1e-12
    # The sample uses the flushed factor: same draw as from L computed directly.
    fresh = Gram(4, 1.0)
    for x, wi in zip(X, w, strict=True):
        fresh.update(x, wi)
    draw = fresh.sample_normal(np.random.default_rng(0))
    z = np.random.default_rng(0).standard_normal(4)
    expected = np.linalg.solve(np.linalg.cholesky(V).T, z)
    np.testing.assert_allclose(draw, expected, rtol=1e-10)
