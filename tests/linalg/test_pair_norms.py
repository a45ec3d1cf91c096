"""Pairwise norms ||z_i - z_j||_{A^-1} of every Gram type against the block of differences."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from banditkit.linalg import DiagonalGram, Gram, GramLike, ShiftedGram


def _updated(gram: GramLike, rng: np.random.Generator, n: int = 12) -> GramLike:
    """``gram`` after n weighted rank-1 updates of random vectors."""
    for _ in range(n):
        gram.update(rng.standard_normal(gram.d), float(rng.uniform(0.2, 3.0)))
    return gram


def _shifted(kind: str) -> Callable[[int, np.random.Generator], GramLike]:
    def build(d: int, rng: np.random.Generator) -> GramLike:
        gram = _updated(ShiftedGram(kind, d, ridge=0.7), rng)
        gram.set_ridge(0.3)  # the ridge replaced after the updates
        return gram

    return build


BUILDERS: dict[str, Callable[[int, np.random.Generator], GramLike]] = {
    "gram": lambda d, rng: _updated(Gram(d, 0.5, refactor_every=5), rng),
    "diagonal": lambda d, rng: _updated(DiagonalGram(d, 0.5), rng),
    "shifted-full": _shifted("full"),
    "shifted-diagonal": _shifted("diagonal"),
}


def _brute(gram: GramLike, Z: np.ndarray) -> np.ndarray:
    """The (K*K, d) block of differences through ``norms``, reshaped to (K, K)."""
    K = Z.shape[0]
    diffs = (Z[:, None, :] - Z[None, :, :]).reshape(K * K, -1)
    return gram.norms(diffs).reshape(K, K)


@pytest.mark.parametrize("name", sorted(BUILDERS))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pair_norms_match_block_of_differences(name: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    gram = BUILDERS[name](6, rng)
    Z = rng.standard_normal((9, 6))
    got = gram.pair_norms(Z)
    assert got.shape == (9, 9)
    np.testing.assert_allclose(got, _brute(gram, Z), rtol=1e-10, atol=0.0)
    np.testing.assert_array_equal(got, got.T)
    np.testing.assert_array_equal(np.diag(got), 0.0)
    np.testing.assert_array_equal(gram.pair_norms_unchecked(Z), got)


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_equal_rows_are_exactly_zero_apart(name: str) -> None:
    rng = np.random.default_rng(3)
    gram = BUILDERS[name](40, rng)
    # Large, nearly equal rows: q_i + q_j - 2 G_ij cancels almost entirely.
    base = 1e3 * rng.standard_normal(40)
    Z = np.stack([base, base + 1e-9, base, rng.standard_normal(40), base])
    got = gram.pair_norms(Z)
    assert np.all(got >= 0.0)
    for i, j in [(0, 2), (0, 4), (2, 4)]:
        assert got[i, j] == 0.0 and got[j, i] == 0.0
    assert got[0, 3] > 0.0
    np.testing.assert_allclose(got[0, 3], _brute(gram, Z)[0, 3], rtol=1e-10)


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_single_row_and_empty(name: str) -> None:
    gram = BUILDERS[name](4, np.random.default_rng(4))
    np.testing.assert_array_equal(gram.pair_norms(np.ones((1, 4))), np.zeros((1, 1)))
    assert gram.pair_norms(np.zeros((0, 4))).shape == (0, 0)


@pytest.mark.parametrize("name", sorted(BUILDERS))
@pytest.mark.parametrize(
    "Z", [np.ones((3, 5)), np.ones(4), np.ones((2, 2, 4)), np.array([[np.nan] * 4])]
)
def test_pair_norms_validates_Z(name: str, Z: np.ndarray) -> None:
    gram = BUILDERS[name](4, np.random.default_rng(5))
    with pytest.raises(ValueError, match="Z"):
        gram.pair_norms(Z)


def test_diagonal_gram_equals_full_gram_along_the_axes() -> None:
    full, diag = Gram(3, 1.0), DiagonalGram(3, 1.0)
    for x in np.eye(3) * np.array([[2.0], [0.5], [3.0]]):
        full.update(x)
        diag.update(x)
    Z = np.random.default_rng(6).standard_normal((5, 3))
    np.testing.assert_allclose(diag.pair_norms(Z), full.pair_norms(Z), rtol=1e-12)


def test_all_grams_answer_the_protocol() -> None:
    for build in BUILDERS.values():
        assert isinstance(build(2, np.random.default_rng(7)), GramLike)


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_repeated_rows_in_any_order_match_block_of_differences(name: str) -> None:
    rng = np.random.default_rng(8)
    gram = BUILDERS[name](5, rng)
    distinct = rng.standard_normal((4, 5))
    Z = distinct[[2, 0, 2, 3, 1, 0, 3]]
    got = gram.pair_norms(Z)
    np.testing.assert_allclose(got, _brute(gram, Z), rtol=1e-10, atol=0.0)
    np.testing.assert_array_equal(got, got.T)
    assert got[0, 2] == 0.0 and got[1, 5] == 0.0 and got[3, 6] == 0.0
