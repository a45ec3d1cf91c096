"""The pluggable preference link: glm links read on duels, the pair loss, the policies."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.stats import norm

import banditkit as bk
from banditkit.glm import LogisticLink, ProbitLink, get_duel_link
from banditkit.glm.duel_links import LINKS, DuelLink
from banditkit.nn import BradleyTerry, Pairs, PairwiseGLM
from banditkit.nn.fit import objective_and_grads
from banditkit.policies.dueling import NDBUCB, NVLDBUCB, VACDB, CoLSTIM
from banditkit.policies.parts.models import observations_of

SMALL = {"width": 6, "steps": 3}


def _pairs(seed: int = 0, n: int = 7, N: int = 5) -> tuple[torch.Tensor, Pairs]:
    rng = np.random.default_rng(seed)
    f = torch.tensor(rng.normal(scale=2.0, size=(2, N)))  # two members
    pairs = Pairs(
        np.eye(N),
        first=rng.integers(0, N, size=n),
        second=rng.integers(0, N, size=n),
        y=rng.integers(0, 2, size=n).astype(float),
        weights=rng.uniform(0.5, 3.0, size=n),
    )
    return f, pairs


def test_duel_links_are_the_glm_links():
    z = np.linspace(-4.0, 4.0, 9)
    assert isinstance(LINKS["btl"].glm, LogisticLink)
    assert LINKS["thurstone"].glm is get_duel_link("probit").glm
    np.testing.assert_allclose(LINKS["thurstone"].g(z), norm.cdf(z), rtol=1e-12)
    np.testing.assert_allclose(LINKS["thurstone"].slope(z), norm.pdf(z), rtol=1e-12)
    p = norm.cdf(z)
    np.testing.assert_allclose(LINKS["probit"].variance(z), p * (1 - p), rtol=1e-12)
    # BTL: the variance is the slope; Thurstone: it is not
    np.testing.assert_allclose(LINKS["btl"].variance(z), LINKS["btl"].slope(z))
    assert not np.allclose(LINKS["probit"].variance(z), LINKS["probit"].slope(z))
    custom = ProbitLink()
    assert get_duel_link(custom).glm is custom


def test_bad_links_are_refused():
    with pytest.raises(ValueError, match="link"):
        get_duel_link("cauchy")
    with pytest.raises(ValueError, match="no preference link"):
        DuelLink(bk.glm.IdentityLink())  # mean outside [0, 1]
    with pytest.raises(ValueError, match="link"):
        NVLDBUCB(link="identity", **SMALL)
    with pytest.raises(ValueError, match="link"):
        CoLSTIM(link=3)


def test_probit_pair_loss_against_scipy_and_finite_differences():
    f, pairs = _pairs()
    values, df = PairwiseGLM("probit").value_and_dloss_df(f, pairs)
    t = (f[:, pairs.first] - f[:, pairs.second]).numpy()
    y, w = pairs.y.numpy(), pairs.weights.numpy()
    by_scipy = -w * (y * norm.logcdf(t) + (1 - y) * norm.logcdf(-t))
    np.testing.assert_allclose(values.numpy(), by_scipy, rtol=1e-12)

    def total(f_np: np.ndarray) -> np.ndarray:
        v, _ = PairwiseGLM("probit").value_and_dloss_df(torch.tensor(f_np), pairs)
        return v.sum(-1).numpy()

    h = 1e-6
    fd = np.zeros_like(f.numpy())
    for j in range(f.shape[1]):
        e = np.zeros_like(fd)
        e[:, j] = h
        fd[:, j] = (total(f.numpy() + e) - total(f.numpy() - e)) / (2 * h)
    np.testing.assert_allclose(df.numpy(), fd, rtol=1e-6, atol=1e-8)


def test_logistic_pair_loss_is_bradley_terry():
    f, pairs = _pairs(1)
    v1, d1 = PairwiseGLM("logistic").value_and_dloss_df(f, pairs)
    v2, d2 = BradleyTerry().value_and_dloss_df(f, pairs)
    np.testing.assert_allclose(v1.numpy(), v2.numpy(), rtol=1e-12)
    np.testing.assert_allclose(d1.numpy(), d2.numpy(), rtol=1e-12, atol=1e-15)


def test_thurstone_policy_uses_the_link_in_loss_and_weights():
    env = bk.make_env("dueling", utility="square", d=3, n_arms=4, link="thurstone")
    policy = NVLDBUCB(
        seed=1,
        eps=0.2,
        link="thurstone",
        dtype="float64",
        distinct_duels=False,
        **SMALL,
    )
    result = bk.simulate(policy, env, horizon=15, seed=0)
    assert np.all(np.isfinite(result.regret))
    h, model = policy.history, policy.model
    assert isinstance(model.link, ProbitLink)
    df = model.predict(h.X1) - model.predict(h.X2)
    # Eq. 5 with g = Phi: zeta = max(sqrt(Phi (1 - Phi)), eps), at the current network
    zeta = np.maximum(np.sqrt(norm.cdf(df) * norm.sf(df)), 0.2)
    np.testing.assert_allclose(h.w, 1.0 / zeta**2, rtol=1e-10)
    # Eq. 4 with g = Phi, by scipy, plus (lam / 2) ||params - params_0||^2
    o = h.outcome
    nll = -(o * norm.logcdf(df) + (1 - o) * norm.logcdf(-df))
    pen = sum(
        float(((model.params[k] - model.params0[k]) ** 2).sum()) for k in model.params
    )
    value, grads = objective_and_grads(
        model.net,
        model.params,
        observations_of(h),
        PairwiseGLM("probit"),
        model.penalties(),
    )
    assert float(value[0]) == pytest.approx(
        float(np.sum(h.w * nll) + 0.5 * policy.lam * pen), rel=1e-10
    )
    # the gradient the trainer uses is autograd's on the same objective
    params = {k: v.clone().requires_grad_(True) for k, v in model.params.items()}
    X1 = torch.tensor(h.X1)
    X2 = torch.tensor(h.X2)
    t = model.net.forward(params, X1)[0] - model.net.forward(params, X2)[0]
    ot = torch.tensor(o)
    J = -(
        torch.tensor(h.w)
        * (ot * torch.special.log_ndtr(t) + (1 - ot) * torch.special.log_ndtr(-t))
    ).sum() + 0.5 * policy.lam * sum(
        ((params[k] - model.params0[k]) ** 2).sum() for k in params
    )
    J.backward()
    for k in params:
        np.testing.assert_allclose(
            grads[k].numpy(), params[k].grad.numpy(), rtol=1e-8, atol=1e-10
        )


def test_logistic_and_btl_names_give_the_same_run():
    env = bk.make_env("dueling", utility="cos", d=3, n_arms=4)
    a = bk.simulate(NVLDBUCB(seed=3, link="btl", **SMALL), env, horizon=8, seed=0)
    b = bk.simulate(NVLDBUCB(seed=3, link="logistic", **SMALL), env, horizon=8, seed=0)
    np.testing.assert_array_equal(a.regret, b.regret)


@pytest.mark.parametrize(
    ("cls", "params"),
    [(NDBUCB, {"width": 4, "steps": 2}), (CoLSTIM, {}), (VACDB, {"alpha": 0.25})],
)
def test_baselines_take_the_link(cls, params):
    env = bk.make_env("dueling", utility="square", d=3, n_arms=4, link="probit")
    policy = cls(seed=0, link="probit", **params)
    result = bk.simulate(policy, env, horizon=10, seed=0)
    assert np.all(np.isfinite(result.regret))
    model = policy.model if hasattr(policy, "model") else policy.models[0]
    link = getattr(model, "pair_link", None) or model.link
    assert isinstance(link, ProbitLink)


def test_the_link_of_the_linear_mle_matters_on_thurstone_duels():
    # the baselines' MLE (GLMModel on a PairHistory) with the probit link is consistent
    # on Thurstone duels of a linear utility; the logistic link overestimates the scale
    # (about 1.6-1.7 x, the usual logit / probit ratio)
    from banditkit.policies.parts.history import PairHistory
    from banditkit.policies.parts.models import GLMModel

    rng = np.random.default_rng(0)
    theta = np.array([1.0, -0.6, 0.3])
    history = PairHistory(3)
    for _ in range(3000):
        x1, x2 = rng.normal(size=(2, 3))
        o = float(rng.random() < norm.cdf((x1 - x2) @ theta))
        history.append(x1, x2, o)
    fits = {}
    for name in ("thurstone", "btl"):
        model = GLMModel(3, lam=1e-3, link=get_duel_link(name).glm)
        model.fit(history)
        fits[name] = model.theta
    assert np.linalg.norm(fits["thurstone"] - theta) < 0.1 * np.linalg.norm(theta)
    ratio = np.linalg.norm(fits["btl"]) / np.linalg.norm(fits["thurstone"])
    assert 1.45 < ratio < 1.9
