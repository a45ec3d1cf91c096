import numpy as np
import pytest

from banditkit.linalg import cholesky_rank1_update, weighted_norms
from banditkit.linalg.rank1 import COLUMN_SWEEP_MIN_D, closed_form, column_sweep


def random_factor(d: int, seed: int, cond_scale: float = 1.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(d, d))
    return np.linalg.cholesky(A @ A.T + cond_scale * np.eye(d))


@pytest.mark.parametrize("d", [1, 2, 7, 50, COLUMN_SWEEP_MIN_D + 10])
def test_rank1_update_matches_refactorisation(d):
    L = random_factor(d, seed=d)
    x = np.random.default_rng(100 + d).normal(size=d)
    expected = np.linalg.cholesky(L @ L.T + np.outer(x, x))
    got = cholesky_rank1_update(L, x)
    assert np.allclose(np.triu(got, 1), 0.0)
    rel = np.linalg.norm(got - expected) / np.linalg.norm(expected)
    assert rel < 1e-12


@pytest.mark.parametrize("d", [3, 40])
def test_both_kernels_agree_on_ill_conditioned_factor(d):
    # cond(L L^T) ~ 1e10: lam = 1e-8 plus rank-3 structure.
    rng = np.random.default_rng(7)
    B = rng.normal(size=(d, 3))
    V = 1e-8 * np.eye(d) + B @ B.T
    L = np.linalg.cholesky(V)
    x = B @ rng.normal(size=3) + 1e-4 * rng.normal(size=d)
    p = np.linalg.solve(L, x)
    target = V + np.outer(x, x)
    for got in (closed_form(L, p), column_sweep(L, x)):
        resid = np.linalg.norm(got @ got.T - target) / np.linalg.norm(target)
        assert resid < 1e-14
        assert np.all(np.diag(got) > 0.0)


def test_rank1_update_leaves_inputs_untouched_and_ignores_upper_triangle():
    L = random_factor(5, seed=1)
    x = np.arange(5.0)
    L_garbage = L + np.triu(np.full((5, 5), 9.0), 1)
    L_before, x_before = L_garbage.copy(), x.copy()
    got = cholesky_rank1_update(L_garbage, x)
    assert np.array_equal(L_garbage, L_before)
    assert np.array_equal(x, x_before)
    assert np.allclose(got, cholesky_rank1_update(L, x), rtol=0, atol=1e-14)


def test_rank1_update_hand_checked():
    # [[2, 0], [0, 1]] + [1, 1][1, 1]^T = [[3, 1], [1, 2]] = L L^T with
    # L = [[sqrt 3, 0], [1 / sqrt 3, sqrt(2 - 1/3)]].
    got = cholesky_rank1_update(np.diag([np.sqrt(2.0), 1.0]), np.array([1.0, 1.0]))
    expected = np.array([[np.sqrt(3), 0.0], [1 / np.sqrt(3), np.sqrt(5 / 3)]])
    assert np.allclose(got, expected, rtol=0, atol=1e-15)


def test_rank1_update_rejects_bad_input():
    with pytest.raises(ValueError, match="positive diagonal"):
        cholesky_rank1_update(np.diag([1.0, 0.0]), np.ones(2))
    with pytest.raises(ValueError, match="square"):
        cholesky_rank1_update(np.ones((2, 3)), np.ones(2))
    with pytest.raises(ValueError, match=r"x must have shape \(2,\)"):
        cholesky_rank1_update(np.eye(2), np.ones(3))
    with pytest.raises(ValueError, match="x contains NaN"):
        cholesky_rank1_update(np.eye(2), np.array([1.0, np.nan]))


def test_weighted_norms_matches_loop():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(17, 6))
    A = rng.normal(size=(6, 6))
    A_inv = np.linalg.inv(A @ A.T + np.eye(6))
    expected = [np.sqrt(x @ A_inv @ x) for x in X]
    assert np.allclose(weighted_norms(X, A_inv), expected, rtol=1e-13, atol=0)


def test_weighted_norms_clips_round_off_to_zero():
    # A tiny negative quadratic form (round-off on a PSD matrix) gives 0, not NaN.
    A_inv = np.diag([1.0, -1e-18])
    got = weighted_norms(np.array([[0.0, 1.0], [3.0, 0.0]]), A_inv)
    assert got.tolist() == [0.0, 3.0]


def test_weighted_norms_rejects_bad_shapes():
    with pytest.raises(ValueError, match=r"X must have shape \(K, 3\)"):
        weighted_norms(np.ones((2, 4)), np.eye(3))
    with pytest.raises(ValueError, match="A_inv must be square"):
        weighted_norms(np.ones((2, 3)), np.ones((3, 2)))
    with pytest.raises(ValueError, match="X must be a 2-d array"):
        weighted_norms(np.ones(3), np.eye(3))


def test_column_blocks_group_rows_by_overlapping_spans():
    from banditkit.linalg.spans import column_blocks

    X = np.zeros((5, 9))
    X[0, 0:2] = 1.0  # block [0, 3): rows 0 and 3 overlap
    X[3, 1:3] = 2.0
    X[1, 5:7] = 3.0  # block [5, 7)
    X[2, 8] = 4.0  # block [8, 9); row 4 is zero, columns 3, 4 and 7 unused
    starts, ends, rows = column_blocks(X)
    assert (starts, ends) == ((0, 5, 8), (3, 7, 9))
    assert [r.tolist() for r in rows] == [[0, 3], [1], [2]]
    # every row's non-zeros lie in its block: X^T X is block-diagonal there
    H = X.T @ X
    for s, e, r in zip(starts, ends, rows, strict=True):
        assert not X[r][:, :s].any() and not X[r][:, e:].any()
        assert not H[s:e, :s].any() and not H[s:e, e:].any()
    assert column_blocks(np.ones((3, 4))) is None  # dense rows
    assert column_blocks(np.eye(4)[:, ::-1][:1]) is None  # one block
    wide = np.zeros((2, 10))
    wide[0, 0:6] = 1.0  # a span over half the columns
    wide[1, 8] = 1.0
    assert column_blocks(wide) is None
