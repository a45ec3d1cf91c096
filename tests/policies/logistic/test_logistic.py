"""Correctness tests of Logistic-UCB-1 and ada-OFU-ECOLog (specs/logistic.md Sec. 3)."""

import math

import numpy as np
import pytest

import banditkit as bk
from banditkit.glm import LogisticLink, fit_glm
from tests.policies.helpers import contexts, mean_final_regret, play

LINK = LogisticLink()


def _ctxs(n=60, k=5, d=4, seed=0):
    return contexts(n, k, d, seed)


def test_ada_ofu_ecolog_selections_do_not_depend_on_kappa():
    ctxs = _ctxs(120)
    runs = [
        play(bk.make_policy("ada-ofu-ecolog", kappa=k, update_every=10), ctxs)
        for k in (10.0, 50.0)
    ]
    assert runs[0] == runs[1]
    assert len(set(runs[0])) > 1


def test_logistic_ucb1_score_matches_the_hand_formula():
    nu, lam, kappa, S = 0.3, 0.5, 10.0, 1.0
    policy = bk.make_policy(
        "logistic-ucb1", nu=nu, lam=lam, kappa=kappa, S=S, update_every=10
    )
    ctxs = _ctxs(31)
    rng = np.random.default_rng(1)
    X, y = [], []
    for t, ctx in enumerate(ctxs[:-1]):
        a, r = t % 5, float(rng.random() < 0.5)
        policy.update(ctx, a, r)
        X.append(ctx.arms[a])
        y.append(r)
    X, y = np.array(X), np.array(y)
    theta = fit_glm(X, y, lam=2 * lam).theta  # refitted after round 30
    V = kappa * lam * np.eye(4) + X.T @ X
    d_eff = np.linalg.slogdet(np.eye(4) + 0.25 * X.T @ X)[1]
    radius = (
        0.25
        * math.sqrt(4 + 8 * S)
        * math.sqrt(kappa)
        * (math.sqrt(lam) * (S + 0.5) + 2 * d_eff / math.sqrt(lam))
    )
    x = ctxs[-1].arms
    mean, width = policy.scores(ctxs[-1])
    np.testing.assert_allclose(mean, LINK.mean(x @ theta), rtol=1e-8)
    norms = np.sqrt(np.einsum("kd,de,ke->k", x, np.linalg.inv(V), x))
    np.testing.assert_allclose(width, nu * radius * norms, rtol=1e-8)


def test_ada_ofu_ecolog_design_is_weighted_by_the_estimate_after_each_round():
    lam, S = 1.0, 1.0
    policy = bk.make_policy("ada-ofu-ecolog", nu=1.0, lam=lam, S=S, update_every=5)
    ctxs = _ctxs(12)
    X, y, W = [], [], lam * np.eye(4)
    theta = np.zeros(4)
    for t, ctx in enumerate(ctxs[:-1]):
        a, r = (2 * t) % 5, float(t % 2)
        policy.update(ctx, a, r)
        X.append(ctx.arms[a])
        y.append(r)
        if (t + 1) % 5 == 0:
            theta = fit_glm(np.array(X), np.array(y), lam=2 * lam).theta
        w = float(LINK.deriv(ctx.arms[a] @ theta))
        W += w * np.outer(ctx.arms[a], ctx.arms[a])
    np.testing.assert_allclose(policy.design.matrix, W, rtol=1e-10)
    Xa = np.array(X)
    d_eff = np.linalg.slogdet(np.eye(4) + 0.25 * Xa.T @ Xa)[1]
    x = ctxs[-1].arms
    mean, width = policy.scores(ctxs[-1])
    np.testing.assert_allclose(mean, x @ theta, rtol=1e-8)
    radius = math.sqrt(lam) * S + (1 + S) * math.sqrt(d_eff)
    norms = np.sqrt(np.einsum("kd,de,ke->k", x, np.linalg.inv(W), x))
    np.testing.assert_allclose(width, radius * norms, rtol=1e-8)


@pytest.mark.parametrize("name", ["logistic-ucb1", "ada-ofu-ecolog"])
def test_width_is_proportional_to_nu(name):
    ctxs = _ctxs(30)
    out = {}
    for nu in (0.5, 2.0):
        policy = bk.make_policy(name, nu=nu, update_every=7)
        for t, ctx in enumerate(ctxs[:-1]):
            policy.update(ctx, t % 5, float(t % 3 == 0))
        out[nu] = policy.scores(ctxs[-1])
    np.testing.assert_array_equal(out[0.5][0], out[2.0][0])
    np.testing.assert_allclose(out[2.0][1], 4.0 * out[0.5][1], rtol=1e-12)


@pytest.mark.parametrize("name", ["logistic-ucb1", "ada-ofu-ecolog"])
def test_diagonal_gram_option(name):
    policy = bk.make_policy(name, gram="diagonal", update_every=5)
    play(policy, _ctxs(20))
    assert policy.design.diagonal.shape == (4,)


@pytest.mark.parametrize("name", ["logistic-ucb1", "ada-ofu-ecolog"])
def test_beats_uniform_on_a_logistic_bandit(name):
    env = bk.make_env("logistic", h="linear", d=5, n_arms=5)
    params = {"nu": 0.05, "update_every": 10}
    regret = mean_final_regret(name, env, 400, **params)
    uniform = mean_final_regret("random", env, 400)
    assert regret < 0.6 * uniform, (regret, uniform)
