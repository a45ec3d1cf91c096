"""InPlaceGram against direct factorisations, dense and block-encoded, and against Gram."""

import numpy as np
import pytest

from banditkit.envs.classification import encode_arms
from banditkit.linalg import Gram, InPlaceGram
from banditkit.linalg.spans import diagonal_blocks
from banditkit.policies.parts.history import History
from banditkit.policies.parts.models import RidgeModel


def rel_err(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def dense_stream(d: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)), rng.uniform(0.1, 3.0, size=n)


def block_stream(d0: int, k: int, n: int, seed: int) -> np.ndarray:
    """Rows of block-encoded arms: x in block a of a (k d0)-vector, a at random."""
    rng = np.random.default_rng(seed)
    return np.stack(
        [encode_arms(rng.normal(size=d0), k)[rng.integers(k)] for _ in range(n)]
    )


def direct(lam: float, X: np.ndarray, w: np.ndarray) -> np.ndarray:
    V = lam * np.eye(X.shape[1])
    for x, wi in zip(X, w, strict=True):
        V += wi * np.outer(x, x)
    return V


def check_against_direct(gram: InPlaceGram, V: np.ndarray) -> None:
    assert rel_err(gram.matrix, V) < 1e-13
    assert rel_err(gram.inverse, np.linalg.inv(V)) < 1e-8
    assert rel_err(gram.cholesky, np.linalg.cholesky(V)) < 1e-8
    sign, logdet = np.linalg.slogdet(V)
    assert sign == 1.0
    assert abs(gram.logdet - logdet) / abs(logdet) < 1e-8


@pytest.mark.parametrize(
    "d", [8, 60, 120]
)  # numpy slices below 48 coordinates, BLAS above
@pytest.mark.parametrize("refactor_every", [10**9, 37])
def test_dense_updates_match_direct_factorisation(d, refactor_every):
    X, w = dense_stream(d, 300, seed=d)
    gram = InPlaceGram(d, 0.5, refactor_every=refactor_every)
    for i, (x, wi) in enumerate(zip(X, w, strict=True)):
        gram.update(x, wi)
        if i % 50 == 7:  # read L now and then: the queued updates are applied in order
            assert np.allclose(gram.cholesky @ gram.cholesky.T, gram.matrix)
    check_against_direct(gram, direct(0.5, X, w))
    assert gram.since_refactor == 300 % refactor_every
    for arr in (gram.matrix, gram.inverse):  # exactly symmetric on NumPy slices
        sym = (
            np.array_equal(arr, arr.T)
            if d < 48
            else np.allclose(arr, arr.T, rtol=1e-12)
        )
        assert sym


@pytest.mark.parametrize("refactor_every", [10**9, 50])
def test_block_encoded_updates_touch_one_block_and_match_direct(refactor_every):
    d0, k = 12, 5
    X = block_stream(d0, k, 200, seed=3)
    gram = InPlaceGram(d0 * k, 1.0, refactor_every=refactor_every)
    for x in X:
        gram.update(x)
    V = direct(1.0, X, np.ones(len(X)))
    check_against_direct(gram, V)
    # V, V^-1 and L stay exactly block-diagonal
    bounds = list(range(0, d0 * k + 1, d0))
    for arr in (gram.matrix, gram.inverse, gram.cholesky):
        assert diagonal_blocks(np.asarray(arr)).tolist() == bounds


def test_norms_of_block_and_irregular_rows_match_direct():
    d0, k = 10, 6
    gram = InPlaceGram(d0 * k, 1.0)
    for x in block_stream(d0, k, 80, seed=4):
        gram.update(x)
    V_inv = np.linalg.inv(np.asarray(gram.matrix))
    rng = np.random.default_rng(5)
    regular = encode_arms(rng.normal(size=d0), k)  # one batched product
    irregular = regular[[3, 0, 5]].copy()  # spans not in arithmetic progression: a loop
    irregular[1, 2] = 0.0  # a narrower span
    dense = rng.normal(size=(4, d0 * k))
    mixed = np.vstack([regular[:2], np.zeros((1, d0 * k))])  # an empty row
    for X in (regular, irregular, dense, mixed, regular[:1]):
        expected = np.sqrt(np.einsum("kd,de,ke->k", X, V_inv, X))
        assert np.allclose(gram.norms(X), expected, rtol=1e-10, atol=1e-14)


def test_agrees_with_gram_and_with_direct_solve():
    X, w = dense_stream(7, 40, seed=6)
    fast, ref = InPlaceGram(7, 2.0), Gram(7, 2.0)
    fast.update_batch(X, w)
    ref.update_batch(X, w)
    b = np.random.default_rng(7).normal(size=7)
    assert np.allclose(fast.solve(b), np.linalg.solve(ref.matrix, b))
    assert np.allclose(fast.norms(X[:5]), ref.norms(X[:5]))
    assert np.allclose(fast.pair_norms(X[:4]), ref.pair_norms(X[:4]))
    assert fast.logdet == pytest.approx(ref.logdet, rel=1e-12)
    # the same draws as Gram.sample_normal for the same stream (same z, same factor)
    s1 = fast.sample_normal(np.random.default_rng(8), size=3)
    s2 = ref.sample_normal(np.random.default_rng(8), size=3)
    assert np.allclose(s1, s2, rtol=1e-9)


def test_zero_vector_and_views():
    gram = InPlaceGram(3, 1.0)
    view = gram.inverse
    gram.update(np.zeros(3))
    assert gram.n_updates == 1 and gram.logdet == 0.0
    gram.update(np.array([0.0, 2.0, 0.0]))
    assert view[1, 1] == pytest.approx(0.2)  # a view: it follows the updates
    assert not view.flags.writeable


def test_bad_input_names_the_argument():
    gram = InPlaceGram(3, 1.0)
    with pytest.raises(ValueError, match="x"):
        gram.update(np.array([1.0, np.nan, 0.0]))
    with pytest.raises(ValueError, match="weight"):
        gram.update(np.ones(3), weight=0.0)
    with pytest.raises(ValueError, match="X"):
        gram.norms(np.ones((2, 4)))


def test_state_round_trip_continues_bit_for_bit_and_reads_gram_states():
    X = block_stream(4, 3, 60, seed=9)
    a = InPlaceGram(12, 1.0, refactor_every=25)
    for x in X[:30]:
        a.update(x)
    b = InPlaceGram.from_state_dict(a.state_dict())
    for x in X[30:]:
        a.update(x)
        b.update(x)
    for name in ("matrix", "inverse", "cholesky"):
        assert np.array_equal(getattr(a, name), getattr(b, name))
    assert a.logdet == b.logdet
    ref = Gram(12, 1.0)
    ref.update_batch(X[:5])
    c = InPlaceGram.from_state_dict(ref.state_dict())
    assert np.array_equal(c.inverse, ref.inverse) and c.n_updates == 5


@pytest.mark.parametrize("kind", [Gram, InPlaceGram], ids=lambda k: k.__name__)
def test_the_state_keeps_the_queued_terms_without_applying_them(kind):
    """state_dict is copies only; the restored Gram applies the queue as the original."""
    X = block_stream(4, 3, 70, seed=3)
    a = kind(12, 1.0, refactor_every=50)
    for x in X[:40]:  # a refactorisation at 50: none yet, 40 terms queued
        a.update(x, 1.5)
    queued = list(a._pending)
    state = a.state_dict()
    assert a._pending == queued  # taking the state applied nothing
    assert state["pending"].shape == (40, 12)
    b = kind.from_state_dict(state)
    assert np.array_equal(b.cholesky, a.cholesky)  # each applies the queue at its read
    for x in X[40:]:  # through the refactorisation
        a.update(x, 0.5)
        b.update(x, 0.5)
        for name in ("matrix", "inverse", "cholesky"):
            assert np.array_equal(getattr(a, name), getattr(b, name))
    # no queue, no key: the states of earlier versions (L always applied) round-trip
    a.cholesky  # noqa: B018 (a read applies the queue)
    assert "pending" not in a.state_dict()
    assert kind.from_state_dict(a.state_dict())._pending == []
    for bad, match in (
        (np.ones((2, 5)), r"pending must have shape \(k, 12\)"),
        (np.full((1, 12), np.nan), "pending"),
    ):
        with pytest.raises(ValueError, match=match):
            kind(12, 1.0).load_state_dict({**state, "pending": bad})


@pytest.mark.parametrize("rows", ["dense", "block"])
def test_in_place_ridge_model_matches_direct_ridge(rows):
    rng = np.random.default_rng(10)
    X = rng.normal(size=(700, 9)) if rows == "dense" else block_stream(3, 3, 700, 10)
    y = rng.normal(size=700)
    w = rng.uniform(0.5, 2.0, size=700)
    model, ref = RidgeModel(9, 1.5, in_place=True), RidgeModel(9, 1.5)
    history = History(9)
    for i in range(700):  # crosses a refactorisation (every 512 updates)
        history.append(X[i], y[i], w[i])
        model.fit(history)
        ref.fit(history)
        if i in (10, 511, 699):
            V = 1.5 * np.eye(9) + (X[: i + 1].T * w[: i + 1]) @ X[: i + 1]
            theta = np.linalg.solve(V, X[: i + 1].T @ (w[: i + 1] * y[: i + 1]))
            assert np.allclose(model.theta, theta, rtol=1e-9, atol=1e-12)
            assert np.allclose(ref.theta, theta, rtol=1e-9, atol=1e-12)
    restored = RidgeModel(9, 1.5, in_place=True)
    restored.load_state_dict(model.state_dict())
    assert np.array_equal(restored.theta, model.theta)
    legacy = RidgeModel(9, 1.5, in_place=True)  # a state saved by the snapshot Gram
    legacy.load_state_dict(ref.state_dict())
    assert np.allclose(legacy.theta, ref.theta)
