import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from banditkit.linalg import g_optimal_design, max_leverage


def reference_leverage(X: np.ndarray, pi: np.ndarray) -> float:
    """max_i x_i^T A^+ x_i with A = sum_i pi_i x_i x_i^T (pinv; pi has full support)."""
    A_pinv = np.linalg.pinv((X.T * pi) @ X)
    return float(np.max(np.einsum("id,de,ie->i", X, A_pinv, X)))


def check_design(X: np.ndarray, pi: np.ndarray, bound: float) -> None:
    assert pi.shape == (X.shape[0],)
    assert np.all(pi >= 0.0)
    assert pi.sum() == pytest.approx(1.0, abs=1e-12)
    assert reference_leverage(X, pi) <= bound * (1 + 1e-9)
    assert max_leverage(X, pi) <= bound * (1 + 1e-9)


@pytest.mark.parametrize("factor", [2.0, 1.05])
def test_random_arms(factor):
    X = np.random.default_rng(0).normal(size=(200, 10))
    pi = g_optimal_design(X, factor=factor)
    check_design(X, pi, factor * 10)
    # Kiefer-Wolfowitz: no design beats d, so the bound is tight up to factor.
    assert max_leverage(X, pi) >= 10 * (1 - 1e-9)


def test_duplicated_rows():
    rng = np.random.default_rng(1)
    X = np.repeat(rng.normal(size=(40, 10)), 5, axis=0)[rng.permutation(200)]
    pi = g_optimal_design(X)
    check_design(X, pi, 2 * 10)


def test_rank_deficient_arms_use_the_row_space():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(200, 4)) @ rng.normal(size=(4, 10))  # rank 4 in d = 10
    assert np.linalg.matrix_rank(X) == 4
    pi = g_optimal_design(X)
    check_design(X, pi, 2 * 4)
    # Leverage is invariant to invertible maps of the row space: same as in R^4.
    assert max_leverage(X, pi) == pytest.approx(reference_leverage(X, pi), rel=1e-8)


def test_unit_vectors_have_uniform_optimum():
    # For the d unit vectors, A(uniform) = I / d and every leverage is exactly d.
    pi = g_optimal_design(np.eye(5), factor=1.0001)
    assert np.allclose(pi, 0.2, rtol=0, atol=1e-15)
    assert max_leverage(np.eye(5), pi) == pytest.approx(5.0, rel=1e-12)


def test_design_moves_weight_to_the_rare_direction():
    # 99 copies of e1 and one e2: uniform gives e2 leverage 100; optimum is 1/2, 1/2.
    X = np.vstack([np.tile([1.0, 0.0], (99, 1)), [[0.0, 1.0]]])
    pi = g_optimal_design(X, factor=1.01)
    check_design(X, pi, 1.01 * 2)
    assert pi[-1] == pytest.approx(0.5, abs=0.01)


def test_rank_one_arms_put_all_weight_on_the_longest():
    X = np.array([[1.0, 2.0], [-3.0, -6.0], [0.0, 0.0], [2.0, 4.0]])
    pi = g_optimal_design(X)
    assert np.array_equal(pi, [0.0, 1.0, 0.0, 0.0])
    assert max_leverage(X, pi) == pytest.approx(1.0, rel=1e-12)


def test_zero_arms_give_uniform_design():
    pi = g_optimal_design(np.zeros((4, 3)))
    assert np.array_equal(pi, np.full(4, 0.25))
    assert max_leverage(np.zeros((4, 3)), pi) == 0.0


def test_max_leverage_is_infinite_for_a_design_missing_a_direction():
    assert max_leverage(np.eye(3), np.array([1.0, 1.0, 0.0])) == np.inf
    # A = diag(1/4, 1/4, 1/2): leverages 4, 4, 2.
    pi = np.array([0.25, 0.25, 0.5])
    assert max_leverage(np.eye(3), pi) == pytest.approx(4.0, rel=1e-14)


def test_max_iter_exhausted_warns_and_returns_a_distribution():
    X = np.vstack([np.tile([1.0, 0.0], (99, 1)), [[0.0, 1.0]]])
    with pytest.warns(RuntimeWarning, match="max_iter=0"):
        pi = g_optimal_design(X, max_iter=0)
    assert np.allclose(pi, 0.01)


@settings(max_examples=100, deadline=None)
@given(
    X=st.integers(1, 12).flatmap(
        lambda n: st.integers(1, 5).flatmap(
            lambda d: arrays(np.float64, (n, d), elements=st.integers(-3, 3))
        )
    ),
    factor=st.sampled_from([1.1, 1.5, 2.0, 4.0]),
)
def test_property_bound_holds_on_small_integer_instances(X, factor):
    pi = g_optimal_design(X, factor=factor)
    check_design(X, pi, factor * np.linalg.matrix_rank(X))


def test_bad_input_raises_with_named_problem():
    X = np.random.default_rng(3).normal(size=(6, 2))
    with pytest.raises(ValueError, match=r"factor must be a float in \(1, inf\)"):
        g_optimal_design(X, factor=1.0)
    with pytest.raises(ValueError, match="factor"):
        g_optimal_design(X, factor=0.5)
    with pytest.raises(ValueError, match="X contains NaN"):
        g_optimal_design(np.array([[1.0, np.nan]]))
    with pytest.raises(ValueError, match="X must be a 2-d array"):
        g_optimal_design(np.ones(3))
    with pytest.raises(ValueError, match="at least one row"):
        g_optimal_design(np.empty((0, 3)))
    with pytest.raises(ValueError, match="method must be one of 'frank-wolfe'"):
        g_optimal_design(X, method="fedorov")
    with pytest.raises(ValueError, match="max_iter"):
        g_optimal_design(X, max_iter=-1)
    with pytest.raises(ValueError, match="weights must be non-negative"):
        max_leverage(X, np.array([1.0, -1.0, 1.0, 1.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match=r"weights must have shape \(6,\)"):
        max_leverage(X, np.ones(5))
