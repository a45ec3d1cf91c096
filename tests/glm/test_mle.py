"""Tests of banditkit.glm.mle against scipy.optimize on the same objective.

The reference objective below is written independently of banditkit.glm.links
(scipy.stats for the probit, np.logaddexp for the logistic).
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy import optimize, stats
from scipy.special import expit

from banditkit.glm import GLMFit, Link, fit_glm, fit_glm_constrained, glm_hessian

LINK_NAMES = ["identity", "logistic", "probit"]


def reference_objective(theta, X, y, link, lam, w, c):
    """Return L(theta) and its gradient, written without banditkit."""
    z = X @ theta
    if link == "identity":
        nll, dnll = 0.5 * (z - y) ** 2, z - y
    elif link == "logistic":
        nll, dnll = np.logaddexp(0.0, z) - y * z, expit(z) - y
    else:
        nll = -(y * stats.norm.logcdf(z) + (1 - y) * stats.norm.logsf(z))
        logpdf = stats.norm.logpdf(z)
        ratio_pos = np.exp(logpdf - stats.norm.logcdf(z))  # pdf / cdf
        ratio_neg = np.exp(logpdf - stats.norm.logsf(z))  # pdf / sf
        dnll = -y * ratio_pos + (1 - y) * ratio_neg
    f = w @ nll + 0.5 * lam * (theta - c) @ (theta - c)
    g = X.T @ (w * dnll) + lam * (theta - c)
    return f, g


def make_problem(link, seed, n=80, d=4, weighted=False, centered=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    theta_true = rng.normal(size=d) * 1.5
    z = X @ theta_true
    if link == "identity":
        y = z + 0.3 * rng.normal(size=n)
    elif link == "logistic":
        y = (rng.random(n) < expit(z)).astype(float)
    else:
        y = (rng.random(n) < stats.norm.cdf(z)).astype(float)
    w = rng.uniform(0.0, 2.0, size=n) if weighted else np.ones(n)
    c = rng.normal(size=d) * 0.5 if centered else np.zeros(d)
    return X, y, w, c


def scipy_fit(X, y, link, lam, w, c):
    res = optimize.minimize(
        reference_objective,
        x0=np.zeros(X.shape[1]),
        args=(X, y, link, lam, w, c),
        jac=True,
        method="L-BFGS-B",
        options={"gtol": 1e-13, "ftol": 1e-16, "maxiter": 10_000, "maxcor": 30},
    )
    return res.x


CASES = [
    (link, seed, weighted, centered)
    for link in LINK_NAMES
    for seed, (weighted, centered) in enumerate(
        [(False, False), (True, False), (False, True), (True, True)]
    )
]


@pytest.mark.parametrize(("link", "seed", "weighted", "centered"), CASES)
def test_fit_glm_matches_scipy(link, seed, weighted, centered):
    X, y, w, c = make_problem(link, seed, weighted=weighted, centered=centered)
    lam = 0.7
    fit = fit_glm(
        X,
        y,
        link=link,
        lam=lam,
        weights=w if weighted else None,
        center=c if centered else None,
    )
    assert isinstance(fit, GLMFit)
    assert fit.converged
    assert fit.theta.shape == (X.shape[1],)
    f, g = reference_objective(fit.theta, X, y, link, lam, w, c)
    assert np.linalg.norm(g) < 1e-9
    assert fit.objective == pytest.approx(f, rel=1e-12)
    theta_ref = scipy_fit(X, y, link, lam, w, c)
    assert_allclose(fit.theta, theta_ref, atol=1e-6)
    assert f <= reference_objective(theta_ref, X, y, link, lam, w, c)[0] + 1e-12
    # Warm start from the solution.
    again = fit_glm(X, y, link=link, lam=lam, weights=w, center=c, theta0=fit.theta)
    assert again.converged
    assert again.n_iter <= 2
    assert_allclose(again.theta, fit.theta, atol=1e-12)


@pytest.mark.parametrize("link", ["logistic", "probit"])
def test_fit_glm_unregularised_well_posed(link):
    # n >> d with overlapping classes: the plain MLE exists and is unique.
    X, y, w, c = make_problem(link, seed=11, n=300, d=3)
    fit = fit_glm(X, y, link=link, lam=0.0)
    assert fit.converged
    _, g = reference_objective(fit.theta, X, y, link, 0.0, w, c)
    assert np.linalg.norm(g) < 1e-9
    assert_allclose(fit.theta, scipy_fit(X, y, link, 0.0, w, c), atol=1e-6)


def test_identity_is_weighted_ridge_in_one_step():
    """theta = (X^T W X + lam I)^-1 (X^T W y + lam c): Newton is exact on a quadratic."""
    X, y, w, c = make_problem("identity", seed=3, weighted=True, centered=True)
    lam = 2.0
    fit = fit_glm(X, y, link="identity", lam=lam, weights=w, center=c)
    A = X.T @ (w[:, None] * X) + lam * np.eye(X.shape[1])
    assert_allclose(fit.theta, np.linalg.solve(A, X.T @ (w * y) + lam * c), rtol=1e-12)
    assert fit.n_iter == 1


def test_hand_checkable_logistic():
    """One feature x = 1, y = (1, 0, 1), lam = 1: sigmoid(t) * 3 - 2 + t = 0 at the optimum."""
    fit = fit_glm(np.ones((3, 1)), np.array([1.0, 0.0, 1.0]), lam=1.0)
    t = fit.theta[0]
    assert 3 * expit(t) - 2 + t == pytest.approx(0.0, abs=1e-12)
    assert 0.0 < t < np.log(2.0)  # the unregularised MLE is logit(2/3) = log 2


def test_integer_weights_equal_repeated_rows():
    X, y, _, _ = make_problem("logistic", seed=5, n=30)
    counts = np.random.default_rng(0).integers(0, 4, size=30)
    weighted = fit_glm(X, y, weights=counts.astype(float), lam=0.5)
    repeated = fit_glm(np.repeat(X, counts, axis=0), np.repeat(y, counts), lam=0.5)
    assert_allclose(weighted.theta, repeated.theta, atol=1e-10)


def test_empty_data_returns_center():
    c = np.array([0.5, -1.0, 2.0])
    fit = fit_glm(np.zeros((0, 3)), np.zeros(0), center=c, theta0=np.ones(3))
    assert_allclose(fit.theta, c)
    assert fit.converged and fit.n_iter == 0 and fit.objective == 0.0
    assert_allclose(fit_glm(np.zeros((0, 2)), []).theta, np.zeros(2))
    con = fit_glm_constrained(np.zeros((0, 3)), np.zeros(0), radius=1.0, center=c)
    assert_allclose(con.theta, c)


def test_max_iter_reached_is_reported():
    X, y, _, _ = make_problem("logistic", seed=2)
    fit = fit_glm(X, y, lam=1e-3, max_iter=1)
    assert not fit.converged
    assert fit.n_iter == 1
    full = fit_glm(X, y, lam=1e-3)
    assert full.converged and full.n_iter > 1


def test_separable_logistic_tiny_lam_stays_finite():
    X = np.array([[1.0, 0.2], [2.0, -0.1], [-1.0, 0.3], [-1.5, -0.2]])
    y = np.array([1.0, 1.0, 0.0, 0.0])
    fit = fit_glm(X, y, lam=1e-6)
    assert fit.converged
    assert np.all(np.isfinite(fit.theta))
    _, g = reference_objective(fit.theta, X, y, "logistic", 1e-6, np.ones(4), 0.0)
    assert np.linalg.norm(g) < 1e-9


class PoissonLink(Link):
    """A user-defined canonical link: mu = exp(z), nll = exp(z) - y z."""

    name = "poisson"

    def mean(self, z):
        return np.exp(z)

    def deriv(self, z):
        return np.exp(z)

    def deriv2(self, z):
        return np.exp(z)

    def nll(self, z, y):
        return np.exp(z) - y * z

    def nll_grad(self, z, y):
        return np.exp(z) - y

    def nll_hess(self, z, y):
        return np.exp(z) + 0.0 * y


def test_custom_link_instance_is_accepted():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(50, 3)) * 0.5
    y = rng.poisson(np.exp(X @ np.array([0.5, -0.3, 0.2]))).astype(float)
    fit = fit_glm(X, y, link=PoissonLink(), lam=0.1)
    assert fit.converged
    g = X.T @ (np.exp(X @ fit.theta) - y) + 0.1 * fit.theta
    assert np.linalg.norm(g) < 1e-9
    H = glm_hessian(X, fit.theta, link=PoissonLink(), lam=0.1)
    assert_allclose(H, X.T @ (np.exp(X @ fit.theta)[:, None] * X) + 0.1 * np.eye(3))


def test_unregularised_singular_raises():
    X = np.array([[1.0, 2.0, 0.0], [0.5, 1.0, 0.0]])  # rank 1 < d = 3
    with pytest.raises(ValueError, match="singular"):
        fit_glm(X, np.array([1.0, 0.0]), link="identity", lam=0.0)


# ----------------------------------------------------------------- glm_hessian


@pytest.mark.parametrize("link", LINK_NAMES)
def test_glm_hessian_matches_definitions(link):
    X, y, w, c = make_problem(link, seed=7, n=25, d=3, weighted=True)
    theta = np.array([0.3, -0.8, 1.1])
    lam = 0.4
    z = X @ theta
    slope = {
        "identity": np.ones_like(z),
        "logistic": expit(z) * (1 - expit(z)),
        "probit": stats.norm.pdf(z),
    }[link]
    expected = sum(w[i] * slope[i] * np.outer(X[i], X[i]) for i in range(len(z)))
    expected = expected + lam * np.eye(3)
    H = glm_hessian(X, theta, link=link, lam=lam, weights=w)
    assert_allclose(H, expected, rtol=1e-12)
    # With targets: the Hessian of the objective, by differences of its gradient.
    H_obs = glm_hessian(X, theta, link=link, lam=lam, weights=w, y=y)
    step = 1e-6
    fd = np.column_stack(
        [
            (
                reference_objective(theta + step * e, X, y, link, lam, w, c)[1]
                - reference_objective(theta - step * e, X, y, link, lam, w, c)[1]
            )
            / (2 * step)
            for e in np.eye(3)
        ]
    )
    assert_allclose(H_obs, fd, rtol=1e-6, atol=1e-7)
    assert_allclose(H_obs, H_obs.T)
    if link != "probit":
        assert_allclose(H_obs, H, rtol=1e-12)


def test_glm_hessian_empty_is_ridge():
    assert_allclose(glm_hessian(np.zeros((0, 2)), np.ones(2), lam=3.0), 3 * np.eye(2))


# ---------------------------------------------------------- fit_glm_constrained


def scipy_constrained(X, y, link, lam, w, c, radius):
    res = optimize.minimize(
        reference_objective,
        x0=c.copy(),
        args=(X, y, link, lam, w, c),
        jac=True,
        method="SLSQP",
        constraints=[
            {
                "type": "ineq",
                "fun": lambda t: radius**2 - (t - c) @ (t - c),
                "jac": lambda t: -2.0 * (t - c),
            }
        ],
        options={"ftol": 1e-12, "maxiter": 1000},
    )
    assert res.success, res.message
    return res.x


CONSTRAINED_CASES = [
    (link, seed, lam, weighted, centered)
    for link in LINK_NAMES
    for seed, (lam, weighted, centered) in enumerate(
        [(0.0, False, False), (0.5, True, False), (0.0, True, True)], start=20
    )
]


@pytest.mark.parametrize(
    ("link", "seed", "lam", "weighted", "centered"), CONSTRAINED_CASES
)
def test_constrained_binding_matches_scipy_and_kkt(link, seed, lam, weighted, centered):
    X, y, w, c = make_problem(
        link, seed, n=60, d=3, weighted=weighted, centered=centered
    )
    free = fit_glm(X, y, link=link, lam=lam, weights=w, center=c)
    radius = 0.5 * np.linalg.norm(free.theta - c)
    fit = fit_glm_constrained(
        X, y, radius=radius, link=link, lam=lam, weights=w, center=c
    )
    assert fit.converged
    norm = np.linalg.norm(fit.theta - c)
    assert norm <= radius + 1e-9
    assert norm == pytest.approx(radius, rel=1e-9)  # the constraint binds
    # KKT: grad L = -m (theta - c) with m >= 0.
    f, g = reference_objective(fit.theta, X, y, link, lam, w, c)
    m = -g @ (fit.theta - c) / radius**2
    assert m > 0
    assert np.linalg.norm(g + m * (fit.theta - c)) < 1e-7 * max(1.0, np.linalg.norm(g))
    assert fit.objective == pytest.approx(f, rel=1e-12)
    theta_ref = scipy_constrained(X, y, link, lam, w, c, radius)
    assert_allclose(fit.theta, theta_ref, atol=1e-6)
    assert f <= reference_objective(theta_ref, X, y, link, lam, w, c)[0] + 1e-9


@pytest.mark.parametrize("link", LINK_NAMES)
def test_constrained_returns_interior_optimum(link):
    X, y, w, c = make_problem(link, seed=31, weighted=True, centered=True)
    free = fit_glm(X, y, link=link, lam=0.3, weights=w, center=c)
    radius = 2.0 * np.linalg.norm(free.theta - c)
    fit = fit_glm_constrained(
        X, y, radius=radius, link=link, lam=0.3, weights=w, center=c
    )
    assert fit.converged
    assert_allclose(fit.theta, free.theta, atol=1e-12)


def test_constrained_feasible_on_many_problems():
    for seed in range(12):
        link = LINK_NAMES[seed % 3]
        X, y, _, _ = make_problem(link, seed=100 + seed, n=20, d=5)
        radius = float(np.random.default_rng(seed).uniform(0.05, 2.0))
        fit = fit_glm_constrained(X, y, radius=radius, link=link)
        assert np.linalg.norm(fit.theta) <= radius + 1e-9


def test_constrained_separable_logistic_without_ridge():
    """Separable data, lam = 0: the MLE does not exist, the ball makes it well posed."""
    X = np.array(
        [[1.0, 0.5], [0.8, -0.4], [0.3, 1.0], [-1.0, 0.2], [-0.6, -0.9], [-0.2, -1.0]]
    )
    y = np.array([1.0, 1.0, 1.0, 0.0, 0.0, 0.0])
    w, c = np.ones(6), np.zeros(2)
    fit = fit_glm_constrained(X, y, radius=3.0, lam=0.0)
    assert fit.converged
    assert np.linalg.norm(fit.theta) == pytest.approx(3.0, rel=1e-9)
    theta_ref = scipy_constrained(X, y, "logistic", 0.0, w, c, 3.0)
    assert_allclose(fit.theta, theta_ref, atol=1e-6)
    # An infeasible warm start leads to the same solution.
    warm = fit_glm_constrained(X, y, radius=3.0, lam=0.0, theta0=[10.0, -10.0])
    assert_allclose(warm.theta, fit.theta, atol=1e-9)


def test_constrained_center_is_optimal():
    # Balanced targets at z = 0: grad L(0) = 0, so the centre is returned at once.
    X = np.array([[1.0, 2.0], [1.0, 2.0]])
    fit = fit_glm_constrained(X, [1.0, 0.0], radius=0.1, lam=0.0)
    assert fit.converged and fit.n_iter == 0
    assert_allclose(fit.theta, [0.0, 0.0])


def test_constrained_non_unique_mle_meeting_the_ball():
    # Identity link, one sample, d = 2: minimisers are the line theta_0 = 0.5.
    fit = fit_glm_constrained(
        np.array([[1.0, 0.0]]), [0.5], radius=1.0, link="identity"
    )
    assert np.linalg.norm(fit.theta) <= 1.0 + 1e-9
    assert fit.objective == pytest.approx(0.0, abs=1e-12)
    # Same, but the line misses the ball: the solution is its nearest point.
    fit = fit_glm_constrained(
        np.array([[1.0, 0.0]]), [2.0], radius=1.0, link="identity"
    )
    assert fit.converged
    assert_allclose(fit.theta, [1.0, 0.0], atol=1e-9)


# ------------------------------------------------------------------ bad input

X_OK = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
Y_OK = np.array([1.0, 0.0, 1.0])
BAD_INPUTS = [
    ({"X": [[1.0, np.nan], [0.0, 1.0], [1.0, 1.0]]}, "X contains NaN"),
    ({"y": [1.0, np.nan, 0.0]}, "y contains NaN"),
    ({"X": [1.0, 2.0, 3.0]}, "X must be a 2-d array"),
    ({"y": [1.0, 0.0]}, r"y must have shape \(n,\) = \(3,\)"),
    ({"weights": [1.0, 1.0]}, r"weights must have shape \(n,\) = \(3,\)"),
    ({"weights": [1.0, -0.5, 1.0]}, "weights must be >= 0"),
    ({"weights": [1.0, np.inf, 1.0]}, "weights contains inf"),
    ({"lam": -1.0}, r"lam must be a float in \[0, inf\); got -1.0"),
    ({"lam": np.nan}, "lam must be a float"),
    ({"theta0": [0.0, 0.0, 0.0]}, r"theta0 must have shape \(d,\) = \(2,\)"),
    ({"center": [0.0]}, r"center must have shape \(d,\) = \(2,\)"),
    ({"link": "logistc"}, "Did you mean 'logistic'"),
    (
        {"link": "probit", "y": [1.0, 2.0, 0.0]},
        r"y must lie in \[0, 1\] for the probit",
    ),
    ({"max_iter": 0}, "max_iter must be an int"),
    ({"tol": -1e-3}, "tol must be a float"),
]


@pytest.mark.parametrize(("override", "message"), BAD_INPUTS)
@pytest.mark.parametrize("solver", ["fit_glm", "fit_glm_constrained"])
def test_bad_input_raises(solver, override, message):
    kwargs = {"X": X_OK, "y": Y_OK, **override}
    X, y = kwargs.pop("X"), kwargs.pop("y")
    with pytest.raises(ValueError, match=message):
        if solver == "fit_glm":
            fit_glm(X, y, **kwargs)
        else:
            fit_glm_constrained(X, y, radius=1.0, **kwargs)


@pytest.mark.parametrize("radius", [0.0, -1.0, np.nan, np.inf])
def test_bad_radius_raises(radius):
    with pytest.raises(ValueError, match=r"radius must be a float in \(0, inf\)"):
        fit_glm_constrained(X_OK, Y_OK, radius=radius)


def test_glm_hessian_bad_input_raises():
    with pytest.raises(ValueError, match=r"theta must have shape \(d,\) = \(2,\)"):
        glm_hessian(X_OK, np.zeros(3))
    with pytest.raises(ValueError, match="lam must be a float"):
        glm_hessian(X_OK, np.zeros(2), lam=-0.1)
    with pytest.raises(ValueError, match="weights must be >= 0"):
        glm_hessian(X_OK, np.zeros(2), weights=[1.0, -1.0, 1.0])
    with pytest.raises(ValueError, match="Did you mean 'probit'"):
        glm_hessian(X_OK, np.zeros(2), link="probt")
