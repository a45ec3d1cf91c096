"""The logistic fits of banditkit.glm.mle: ``fit_glm`` reaches the optimum an independent
solver (scipy.optimize, exact Hessian) finds, and ``fit_logistic_unchecked`` (the same solve
without re-checking its input) gives ``fit_glm``'s result bit for bit and still raises on
bad data.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy import optimize
from scipy.special import expit

from banditkit.glm import fit_glm, fit_logistic_unchecked

# (weighted, centered, lam, warm start)
CASES = [
    (False, False, 2.0, False),
    (False, False, 2.0, True),
    (True, False, 0.7, False),
    (False, True, 0.7, True),
    (True, True, 1.0, True),
    (False, False, 0.0, False),  # plain MLE: the lam = 0 branch
]


def make_problem(seed, n=60, d=5, weighted=False, centered=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    theta_true = rng.normal(size=d)
    y = (rng.random(n) < expit(X @ theta_true)).astype(float)
    w = rng.uniform(0.0, 2.0, size=n) if weighted else np.ones(n)
    c = rng.normal(size=d) * 0.5 if centered else np.zeros(d)
    theta0 = theta_true + 0.1 * rng.normal(size=d)
    return X, y, w, c, theta0


def scipy_optimum(X, y, w, c, lam):
    """argmin L by scipy.optimize (trust-region Newton, then a root of the gradient)."""

    def fun(theta):
        z = X @ theta
        return w @ (np.logaddexp(0.0, z) - y * z) + 0.5 * lam * (theta - c) @ (
            theta - c
        )

    def jac(theta):
        return X.T @ (w * (expit(X @ theta) - y)) + lam * (theta - c)

    def hess(theta):
        z = X @ theta
        return (X * (w * expit(z) * expit(-z))[:, None]).T @ X + lam * np.eye(len(c))

    # Minimise with the exact Hessian, then polish: solve the optimality condition
    # grad L = 0 (L is strictly convex) from there.
    res = optimize.minimize(
        fun, np.zeros(X.shape[1]), jac=jac, hess=hess, method="trust-exact"
    )
    res = optimize.root(jac, res.x, jac=hess, method="hybr", tol=1e-15)
    assert np.linalg.norm(jac(res.x)) < 1e-10
    return res.x


@pytest.mark.parametrize(("weighted", "centered", "lam", "warm"), CASES)
def test_logistic_path_reaches_scipy_optimum(weighted, centered, lam, warm):
    X, y, w, c, theta0 = make_problem(3, weighted=weighted, centered=centered)
    fit = fit_glm(X, y, lam=lam, weights=w, center=c, theta0=theta0 if warm else None)
    assert fit.converged
    assert_allclose(fit.theta, scipy_optimum(X, y, w, c, lam), rtol=0, atol=1e-8)


@pytest.mark.parametrize("weighted", [False, True])
def test_unchecked_fit_equals_fit_glm(weighted):
    X, y, w, _, theta0 = make_problem(7, weighted=weighted)
    fit = fit_logistic_unchecked(X, y, w, lam=2.0, theta0=theta0)
    ref = fit_glm(X, y, lam=2.0, weights=w, theta0=theta0)
    assert np.array_equal(fit.theta, ref.theta)
    assert (fit.n_iter, fit.converged, fit.objective) == (
        ref.n_iter,
        ref.converged,
        ref.objective,
    )
    assert fit.converged


# NumPy may warn on the NaN before the fallback to fit_glm raises.
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("bad", ["X", "y", "weights"])
def test_unchecked_fit_raises_on_non_finite_data(bad):
    X, y, w, _, theta0 = make_problem(8)
    arrays = {"X": X.copy(), "y": y.copy(), "weights": w.copy()}
    arrays[bad].flat[3] = np.nan
    with pytest.raises(ValueError, match=f"{bad} contains NaN"):
        fit_logistic_unchecked(
            arrays["X"], arrays["y"], arrays["weights"], lam=1.0, theta0=theta0
        )


def block_encoded(seed, n=80, block=4, k=5, gap=True):
    """Rows x in block a of k blocks (the classification bandits' arms); with ``gap``
    a last column that no row reaches."""
    rng = np.random.default_rng(seed)
    d = block * k + (1 if gap else 0)
    X = np.zeros((n, d))
    arms = rng.integers(k, size=n)
    for i, a in enumerate(arms):
        X[i, a * block : (a + 1) * block] = rng.normal(size=block)
    theta_true = rng.normal(size=d)
    y = (rng.random(n) < expit(X @ theta_true)).astype(float)
    return X, y, rng.uniform(0.2, 2.0, size=n), 0.1 * rng.normal(size=d)


@pytest.mark.parametrize("gap", [False, True])
def test_newton_block_by_block_reaches_the_full_newton_optimum(gap):
    """Block-encoded rows: a Hessian of five blocks factored one by one, the same fit."""
    from banditkit.linalg.spans import column_blocks

    X, y, w, theta0 = block_encoded(11, gap=gap)
    blocks = column_blocks(X)
    assert blocks is not None and len(blocks[0]) == 5
    fit = fit_logistic_unchecked(X, y, w, lam=1.5, theta0=theta0, blocks=blocks)
    ref = fit_logistic_unchecked(X, y, w, lam=1.5, theta0=theta0)
    assert fit.converged and ref.converged
    assert_allclose(fit.theta, ref.theta, rtol=0, atol=1e-10)
    assert_allclose(
        fit.theta, scipy_optimum(X, y, w, np.zeros(X.shape[1]), 1.5), rtol=0, atol=1e-8
    )
    if gap:  # the column no row reaches: theta stays at its ridge optimum, 0
        assert fit.theta[-1] == 0.0


def test_newton_block_by_block_with_lam_zero_names_a_column_no_row_reaches():
    X, y, w, theta0 = block_encoded(12, gap=True)
    from banditkit.linalg.spans import column_blocks

    with pytest.raises(ValueError, match="singular at lam=0"):
        fit_logistic_unchecked(X, y, w, lam=0.0, theta0=theta0, blocks=column_blocks(X))
