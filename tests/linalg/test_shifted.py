import numpy as np
import pytest

from banditkit.linalg import (
    IN_PLACE_FROM,
    DiagonalGram,
    EffectiveDimension,
    Gram,
    GramLike,
    InPlaceGram,
    ShiftedGram,
    make_gram,
)


def _rows(seed: int, n: int, d: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, d))


@pytest.mark.parametrize(
    "gram",
    [Gram(3, 1.0), DiagonalGram(3, 1.0), ShiftedGram("full", 3, 1.0)],
    ids=["full", "diagonal", "shifted"],
)
def test_every_gram_answers_the_one_interface(gram):
    assert isinstance(gram, GramLike)


def test_shifted_full_matches_gram_after_the_same_updates():
    Z = _rows(0, 6, 4)
    full, shifted = Gram(4, 2.0), ShiftedGram("full", 4, 2.0)
    for z, w in zip(Z, np.linspace(0.5, 2.0, 6), strict=True):
        full.update(z, w)
        shifted.update(z, w)
    X = _rows(1, 5, 4)
    np.testing.assert_allclose(shifted.norms(X), full.norms(X), rtol=1e-10)
    np.testing.assert_allclose(shifted.norms_unchecked(X), full.norms(X), rtol=1e-10)
    assert shifted.logdet == pytest.approx(full.logdet, rel=1e-10)
    b = _rows(2, 4, 2)
    np.testing.assert_allclose(shifted.solve(b), full.solve(b), rtol=1e-9)
    np.testing.assert_allclose(shifted.solve(b[:, 0]), full.solve(b[:, 0]), rtol=1e-9)
    np.testing.assert_allclose(shifted.diagonal, full.diagonal, rtol=1e-12)
    assert not shifted.is_diagonal and not full.is_diagonal


def test_set_ridge_agrees_across_the_three_grams():
    Z = _rows(3, 5, 3)
    grams = [Gram(3, 1.0), ShiftedGram("full", 3, 1.0)]
    diagonals = [DiagonalGram(3, 1.0), ShiftedGram("diagonal", 3, 1.0)]
    for z in Z:
        for g in grams + diagonals:
            g.update(z)
    for g in grams + diagonals:
        g.set_ridge(4.0)
        assert g.lam == 4.0
    X = _rows(4, 3, 3)
    np.testing.assert_allclose(grams[0].norms(X), grams[1].norms(X), rtol=1e-10)
    np.testing.assert_allclose(grams[0].logdet, grams[1].logdet, rtol=1e-10)
    np.testing.assert_allclose(diagonals[0].norms(X), diagonals[1].norms(X), rtol=1e-12)
    np.testing.assert_allclose(diagonals[0].diagonal, 4.0 + (Z * Z).sum(0), rtol=1e-12)
    expected = np.linalg.slogdet(4.0 * np.eye(3) + Z.T @ Z)[1]
    assert grams[0].logdet == pytest.approx(expected, rel=1e-10)


def test_shifted_rejects_bad_input_naming_the_argument():
    gram = ShiftedGram("diagonal", 2, 1.0)
    with pytest.raises(ValueError, match="z"):
        gram.update(np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match="weight"):
        gram.update(np.ones(2), weight=0.0)
    with pytest.raises(ValueError, match="lam"):
        gram.set_ridge(-1.0)
    with pytest.raises(ValueError, match="kind"):
        ShiftedGram("dense", 2, 1.0)
    with pytest.raises(ValueError, match="'full' Gram"):
        gram.load_state_dict(ShiftedGram("full", 2, 1.0).state_dict())


def test_shifted_state_round_trip():
    gram = ShiftedGram("full", 2, 1.5)
    gram.update(np.array([1.0, 2.0]), 0.5)
    other = ShiftedGram("full", 2, 1.0)
    other.load_state_dict(gram.state_dict())
    X = np.eye(2)
    np.testing.assert_array_equal(other.norms(X), gram.norms(X))


@pytest.mark.parametrize("encoded", [False, True])
def test_a_large_full_gram_is_updated_in_place_with_the_values_of_a_gram(encoded):
    """From d = IN_PLACE_FROM make_gram("full") is an InPlaceGram: the same V, V^-1, log det.

    Dense rows, and block-encoded ones (arm k: x in block k of K blocks, the
    classification bandits' features) on which it writes one block an update.
    """
    d, K = IN_PLACE_FROM, 8
    small = make_gram("full", d - 1, 0.5)
    assert type(small) is Gram
    fast, reference = make_gram("full", d, 0.5), Gram(d, 0.5)
    assert type(fast) is InPlaceGram
    rng = np.random.default_rng(3)
    for _ in range(24):
        x = np.zeros(d)
        if encoded:
            k = int(rng.integers(K))
            x[k * d // K : (k + 1) * d // K] = rng.standard_normal(d // K)
        else:
            x = rng.standard_normal(d)
        w = float(rng.uniform(0.2, 2.0))
        fast.update(x, w)
        reference.update(x, w)
    np.testing.assert_allclose(fast.matrix, reference.matrix, rtol=0, atol=1e-12)
    np.testing.assert_allclose(fast.inverse, reference.inverse, rtol=0, atol=1e-10)
    assert fast.logdet == pytest.approx(reference.logdet, rel=1e-12)
    X = rng.standard_normal((5, d))
    np.testing.assert_allclose(fast.norms(X), reference.norms(X), rtol=1e-9)


def test_make_gram_and_effective_dimension():
    assert isinstance(make_gram("full", 2, 1.0), Gram)
    assert isinstance(make_gram("diagonal", 2, 1.0), DiagonalGram)
    with pytest.raises(ValueError, match="gram"):
        make_gram("dense", 2, 1.0)
    z = np.array([1.0, 1.0])
    full = EffectiveDimension(2, 0.5, "full")
    full.update(z)
    # logdet(I + 0.5 z z^T) = log(1 + 0.5 ||z||^2) = log 2
    assert full.value == pytest.approx(np.log(2.0))
