"""Tests of banditkit.glm.links: derivatives, closed forms, extreme arguments."""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy import stats
from scipy.special import erfcx

from banditkit.glm import (
    LINKS,
    IdentityLink,
    Link,
    LogisticLink,
    ProbitLink,
    get_link,
)

Z = np.linspace(-8.0, 8.0, 41)
TARGETS = {"identity": (0.0, 0.3, 1.0, -2.5), "logistic": (0.0, 0.3, 1.0, 1.7)}
TARGETS["probit"] = (0.0, 0.3, 1.0)
H = 1e-5


def central(f, z):
    return (f(z + H) - f(z - H)) / (2 * H)


@pytest.mark.parametrize("name", sorted(LINKS))
def test_mean_derivatives_match_finite_differences(name):
    link = LINKS[name]
    assert_allclose(link.deriv(Z), central(link.mean, Z), rtol=1e-7, atol=1e-10)
    assert_allclose(link.deriv2(Z), central(link.deriv, Z), rtol=1e-6, atol=1e-10)


@pytest.mark.parametrize("name", sorted(LINKS))
def test_nll_derivatives_match_finite_differences(name):
    link = LINKS[name]
    for y in TARGETS[name]:
        grad_fd = central(lambda z, y=y: link.nll(z, y), Z)
        hess_fd = central(lambda z, y=y: link.nll_grad(z, y), Z)
        assert_allclose(link.nll_grad(Z, y), grad_fd, rtol=1e-7, atol=1e-8)
        assert_allclose(link.nll_hess(Z, y), hess_fd, rtol=1e-6, atol=1e-8)


def test_identity_closed_form():
    link = IdentityLink()
    y = np.array([1.0, -2.0, 0.5])
    z = np.array([3.0, -2.0, 0.0])
    assert_allclose(link.mean(z), z)
    assert_allclose(link.nll(z, y), [2.0, 0.0, 0.125])
    assert_allclose(link.nll_grad(z, y), [2.0, 0.0, -0.5])
    assert_allclose(link.nll_hess(z, y), [1.0, 1.0, 1.0])
    assert_allclose(link.deriv(z), 1.0)
    assert_allclose(link.deriv2(z), 0.0)


def test_logistic_closed_form():
    link = LogisticLink()
    mu = 1.0 / (1.0 + np.exp(-Z))
    assert_allclose(link.mean(Z), mu, rtol=1e-14)
    assert_allclose(link.deriv(Z), mu * (1 - mu), rtol=1e-10)
    assert_allclose(link.deriv2(Z), mu * (1 - mu) * (1 - 2 * mu), rtol=1e-8, atol=1e-15)
    for y in (0.0, 0.3, 1.0):
        assert_allclose(link.nll(Z, y), np.log1p(np.exp(Z)) - y * Z, rtol=1e-12)
        assert_allclose(link.nll_grad(Z, y), mu - y, atol=1e-15)
        assert_allclose(link.nll_hess(Z, y), mu * (1 - mu), rtol=1e-10)
    assert link.mean(np.array(0.0)) == 0.5
    assert link.deriv(np.array(0.0)) == 0.25


def test_probit_closed_form():
    link = ProbitLink()
    cdf, pdf, sf = stats.norm.cdf(Z), stats.norm.pdf(Z), stats.norm.sf(Z)
    assert_allclose(link.mean(Z), cdf, rtol=1e-13)
    assert_allclose(link.deriv(Z), pdf, rtol=1e-13)
    assert_allclose(link.deriv2(Z), -Z * pdf, rtol=1e-13)
    for y in (0.0, 0.3, 1.0):
        nll = -(y * stats.norm.logcdf(Z) + (1 - y) * stats.norm.logsf(Z))
        grad = -y * pdf / cdf + (1 - y) * pdf / sf
        # d/dz of the expression above, written via phi' = -z phi.
        hess = y * (Z * pdf / cdf + (pdf / cdf) ** 2) + (1 - y) * (
            -Z * pdf / sf + (pdf / sf) ** 2
        )
        assert_allclose(link.nll(Z, y), nll, rtol=1e-12)
        assert_allclose(link.nll_grad(Z, y), grad, rtol=1e-10)
        assert_allclose(link.nll_hess(Z, y), hess, rtol=1e-8)


def test_probit_curvature_accurate_in_far_tail():
    # Reference: r(-x) = sqrt(2 / pi) / erfcx(x / sqrt(2)), accurate to ~1e-13 here;
    # hess(z, 1) = r(z) * (z + r(z)).
    z = -np.linspace(2.0, 40.0, 77)
    x = -z
    r = np.sqrt(2.0 / np.pi) / erfcx(x / np.sqrt(2.0))
    link = ProbitLink()
    assert_allclose(link.nll_grad(z, 1.0), -r, rtol=1e-12)
    assert_allclose(link.nll_hess(z, 1.0), r * (z + r), rtol=1e-9)
    # Continuity across the switch of formulas at z = -5.
    edge = np.array([-5.0 - 1e-12, -5.0, -5.0 + 1e-12])
    assert np.ptp(link.nll_hess(edge, 1.0)) < 1e-12
    # Asymptotics: nll'' = 1 - 1/z^2 + O(z^-4) and nll' = z + 1/z - 2/z^3 + O(z^-5).
    big = np.array([-500.0, -1e3, -1e5])
    assert_allclose(link.nll_hess(big, 1.0), 1 - 1 / big**2, rtol=1e-10)
    assert_allclose(link.nll_grad(big, 1.0), big + 1 / big - 2 / big**3, rtol=1e-13)
    assert_allclose(link.nll_hess(-big, 0.0), 1 - 1 / big**2, rtol=1e-10)


@pytest.mark.parametrize("name", sorted(LINKS))
def test_extreme_arguments_are_finite_and_warning_free(name):
    link = LINKS[name]
    z = np.array([-1e3, -500.0, -40.0, 0.0, 40.0, 500.0, 1e3])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(over="raise", invalid="raise", divide="raise"):
            outs = [link.mean(z), link.deriv(z), link.deriv2(z)]
            for y in TARGETS[name][:3]:
                outs += [link.nll(z, y), link.nll_grad(z, y), link.nll_hess(z, y)]
    for out in outs:
        assert out.shape == z.shape
        assert np.all(np.isfinite(out))
    for y in TARGETS[name][:3]:
        assert np.all(link.nll_hess(z, y) >= 0.0)


def test_extreme_values_are_right():
    logistic, probit = LogisticLink(), ProbitLink()
    z = np.array([-500.0, 500.0])
    assert_allclose(logistic.nll(z, np.array([1.0, 0.0])), [500.0, 500.0])
    assert_allclose(logistic.nll_grad(z, np.array([1.0, 0.0])), [-1.0, 1.0])
    assert_allclose(logistic.mean(z), [0.0, 1.0], atol=1e-200)
    # log Phi(-x) = -x^2/2 - log x - log sqrt(2 pi) - 1/x^2 + O(x^-4).
    x = 500.0
    expected = x**2 / 2 + np.log(x) + 0.5 * np.log(2 * np.pi) + 1 / x**2
    assert_allclose(probit.nll(np.array([-x, x]), np.array([1.0, 0.0])), expected)
    assert_allclose(probit.mean(z), [0.0, 1.0], atol=1e-200)


@pytest.mark.parametrize("name", ["logistic", "probit"])
def test_nll_convex_for_targets_in_unit_interval(name):
    link = LINKS[name]
    z = np.linspace(-60.0, 60.0, 601)
    for y in np.linspace(0.0, 1.0, 11):
        assert np.all(link.nll_hess(z, y) >= 0.0)


@pytest.mark.parametrize("name", sorted(LINKS))
def test_broadcasting(name):
    link = LINKS[name]
    z = np.linspace(-1.0, 1.0, 3)[:, None]
    y = np.array([0.0, 0.5, 1.0, 0.25])
    for method in (link.nll, link.nll_grad, link.nll_hess):
        assert method(z, y).shape == (3, 4)
    assert link.mean(0.5).shape == ()


def test_registry_and_get_link():
    assert set(LINKS) == {"identity", "logistic", "probit"}
    for name, link in LINKS.items():
        assert isinstance(link, Link)
        assert link.name == name
        assert get_link(name) is link
    custom = LogisticLink()
    assert get_link(custom) is custom


def test_unknown_link_suggests_close_name():
    with pytest.raises(
        ValueError, match=r"link must be one of .*'logistc'.*'logistic'"
    ):
        get_link("logistc")
    with pytest.raises(ValueError, match="identity"):
        get_link("tanh")
    with pytest.raises(TypeError, match="link must be a str or a Link"):
        get_link(3)  # type: ignore[arg-type]
