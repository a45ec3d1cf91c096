"""Gram.update_woodbury (rank-n update of V^-1) and the direct LAPACK calls of Gram, against
direct computations (np.linalg.inv, slogdet, cholesky) and scipy's wrappers."""

import numpy as np
import pytest
import scipy.linalg as sla

from banditkit.linalg import Gram
from banditkit.linalg.gram import _cho_solve_lower, _solve_lower_transposed


@pytest.mark.parametrize("d", [1, 3, 12])
@pytest.mark.parametrize("weighted", [False, True])
def test_woodbury_blocks_equal_the_direct_inverse(d, weighted):
    rng = np.random.default_rng(d)
    gram = Gram(d, 0.7, refactor_every=10**9)  # every quantity stays incremental
    V = 0.7 * np.eye(d)
    for _ in range(200):
        n = int(rng.integers(1, 6))
        X = rng.normal(size=(n, d))
        w = rng.uniform(0.2, 3.0, n) if weighted else np.ones(n)
        gram.update_woodbury(X, w if weighted else None)
        V += (X.T * w) @ X
    assert gram.n_updates == gram.state_dict()["since_refactor"] > 200
    np.testing.assert_allclose(gram.matrix, V, rtol=1e-12)
    np.testing.assert_allclose(gram.inverse, np.linalg.inv(V), rtol=1e-8, atol=1e-12)
    assert gram.logdet == pytest.approx(np.linalg.slogdet(V)[1], rel=1e-10)
    # the queued rows reach the factor when it is read
    np.testing.assert_allclose(
        gram.cholesky, np.linalg.cholesky(V), rtol=1e-8, atol=1e-12
    )


def test_woodbury_equals_update_batch_and_refactorises_on_schedule():
    rng = np.random.default_rng(0)
    a, b = Gram(3, 1.0, refactor_every=12), Gram(3, 1.0, refactor_every=12)
    for _ in range(7):
        X = rng.normal(size=(5, 3))
        a.update_woodbury(X)
        b.update_batch(X)
    np.testing.assert_allclose(a.inverse, b.inverse, rtol=1e-12)
    assert a.n_updates == b.n_updates == 35
    # 5, 10, 15 -> refactorised (>= 12), 5, 10, 15 -> refactorised, 5
    assert a.state_dict()["since_refactor"] == 5
    a.update_woodbury(np.zeros((0, 3)))  # no rows: nothing changes
    assert a.n_updates == 35


def test_woodbury_validates_its_arguments():
    gram = Gram(3, 1.0)
    with pytest.raises(ValueError, match="X"):
        gram.update_woodbury(np.ones((2, 4)))
    with pytest.raises(ValueError, match="X"):
        gram.update_woodbury(np.array([[np.nan, 0.0, 0.0]]))
    with pytest.raises(ValueError, match="weights"):
        gram.update_woodbury(np.ones((2, 3)), np.array([1.0, 0.0]))


@pytest.mark.parametrize("d", [1, 3, 17])
def test_direct_lapack_calls_give_scipys_bits(d):
    rng = np.random.default_rng(d)
    A = rng.normal(size=(d, d))
    L = np.linalg.cholesky(A @ A.T + np.eye(d))
    for factor in (L, np.asfortranarray(L)):
        np.testing.assert_array_equal(
            _cho_solve_lower(factor, np.eye(d)),
            sla.cho_solve((factor, True), np.eye(d), check_finite=False),
        )
        for b in (rng.normal(size=d), rng.normal(size=(d, 4)), np.zeros((d, 0))):
            np.testing.assert_array_equal(
                _solve_lower_transposed(factor, b),
                sla.solve_triangular(
                    factor, b, lower=True, trans="T", check_finite=False
                ),
            )
