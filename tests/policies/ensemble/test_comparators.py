"""The GLM comparators (EVILL, warm-up of GLM-UCB / GLM-TSL) and Neural-ES's independent
initialisations, against independent computations."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.optimize import minimize

from banditkit import nn
from banditkit.core import Context
from banditkit.glm import fit_glm, glm_hessian
from banditkit.policies import GLMTS, GLMUCB
from banditkit.policies.ensemble import (
    EVILL,
    GLMES,
    NeuralEnsemble,
    NeuralES,
    PerturbedHistory,
    evill_perturbation,
    fit_linearly_perturbed,
)
from banditkit.testing import PolicyCase
from banditkit.testing.contracts import check_reproducible, check_save_restore


def _rows(rng, d=3, K=5, n=40):
    arms = rng.standard_normal((K, d)) / np.sqrt(d)
    h = PerturbedHistory(d, 0)
    for _ in range(n):
        k = int(rng.integers(K))
        h.append(arms[k], float(rng.normal(0.5, 0.5)))
    return arms, h


def test_evill_perturbation_has_covariance_nu2_hessian():
    rng = np.random.default_rng(0)
    _, h = _rows(rng)
    X, c, _ = h.grouped_rewards()
    theta_hat = np.array([0.5, -1.0, 0.3])
    draws = np.array(
        [
            evill_perturbation(
                X, c, theta_hat, lam=2.0, nu=0.5, link="logistic", rng=rng
            )
            for _ in range(40_000)
        ]
    )
    # H from the raw (ungrouped) rows: lam I + sum_s mu'(x_s^T theta) x_s x_s^T
    H = glm_hessian(h.X, theta_hat, link="logistic", lam=2.0)
    np.testing.assert_allclose(draws.mean(axis=0), 0.0, atol=0.03)
    np.testing.assert_allclose(np.cov(draws.T), 0.25 * H, rtol=0.05, atol=0.02)


def test_linearly_perturbed_fit_minimises_the_perturbed_loss():
    rng = np.random.default_rng(1)
    _, h = _rows(rng)
    X, c, S = h.grouped_rewards()
    W = np.array([0.7, -0.4, 1.1])
    lam = 1.5
    theta = fit_linearly_perturbed(
        X, c, S, np.zeros((3, 1)), W[:, None], lam=lam, link="logistic", solver="newton"
    )

    def loss(th):  # on every raw row, as [Janz2024] writes it
        z = h.X @ th
        return 0.5 * lam * th @ th + np.sum(np.logaddexp(0.0, z) - h.y * z) - W @ th

    direct = minimize(loss, np.zeros(3), method="BFGS", options={"gtol": 1e-10}).x
    np.testing.assert_allclose(theta[:, 0], direct, atol=1e-6)
    # identity link: theta_til = theta_hat + H^-1 W in closed form (Thompson sampling)
    lin = fit_linearly_perturbed(
        X, c, S, np.zeros((3, 1)), W[:, None], lam=lam, link="identity", solver="newton"
    )
    V = lam * np.eye(3) + h.X.T @ h.X
    ridge = np.linalg.solve(V, h.X.T @ h.y)
    np.testing.assert_allclose(lin[:, 0], ridge + np.linalg.solve(V, W), atol=1e-9)


def test_evill_policy_fits_the_mle_then_its_perturbation():
    rng = np.random.default_rng(2)
    arms = rng.standard_normal((8, 3))
    arms /= np.linalg.norm(arms, axis=1, keepdims=True)
    greedy, perturbed = (
        EVILL(nu=0.0, warmup=10, seed=1),
        EVILL(nu=1.0, warmup=10, seed=1),
    )
    for t in range(30):
        ctx = Context(arms=arms)
        for policy in (greedy, perturbed):
            k = policy.act(ctx)
            policy.update(ctx, k, float(rng.normal(0.5, 0.5)))
        if t < 9:  # nothing is fitted during the warm-up
            assert greedy.n_updates == 0 and (greedy.model.theta == 0).all()
    for policy in (greedy, perturbed):
        mle = fit_glm(policy.history.X, policy.history.y, link="logistic", lam=1.0)
        np.testing.assert_allclose(
            policy.perturbations.theta_hat[:, 0], mle.theta, atol=1e-6
        )
        assert policy.n_updates == 21
    np.testing.assert_allclose(
        greedy.model.theta, greedy.perturbations.theta_hat, atol=1e-9
    )
    assert (
        np.abs(perturbed.model.theta - perturbed.perturbations.theta_hat).max() > 1e-3
    )
    with pytest.raises(ValueError, match="nu"):
        EVILL(nu=-1.0)


@pytest.mark.parametrize("cls", [GLMUCB, GLMTS])
def test_glm_baselines_play_the_glm_es_warmup_then_fit(cls):
    rng = np.random.default_rng(3)
    arms = rng.standard_normal((12, 3))
    arms /= np.linalg.norm(arms, axis=1, keepdims=True)
    base = cls(nu=0.1, update_every=1, warmup=30, seed=4)
    es = GLMES(m=2, warmup=30, steps=2, seed=4)
    for t in range(35):
        ctx = Context(arms=arms)
        k = base.act(ctx)
        if t < 30:  # the same G-optimal plan in the same order as GLM-ES
            assert k == es.act(ctx)
            es.update(ctx, k, 0.5)
        base.update(ctx, k, float(rng.uniform()))
        assert base.n_updates == max(0, t - 28)
    mle = fit_glm(base.history.X, base.history.y, link="logistic", lam=1.0)
    np.testing.assert_allclose(base.model.theta, mle.theta, atol=1e-6)
    for bad in ({"warmup": -1}, {"warmup_strategy": "greedy"}):
        with pytest.raises(ValueError, match="warmup"):
            cls(**bad)


@pytest.mark.parametrize("cls", [GLMUCB, GLMTS])
def test_glm_warmup_state_round_trips(cls):
    # saved in the middle of the warm-up (round 7 of 10), restored and continued
    case = PolicyCase(cls, {"warmup": 10, "update_every": 1})
    check_save_restore(case)
    check_reproducible(case)


def test_neural_members_with_independent_inits_equal_their_own_fits():
    rng = np.random.default_rng(5)
    d, M = 4, 3
    h = PerturbedHistory(d, M)
    arms = rng.standard_normal((6, d))
    for _ in range(30):
        h.append(arms[int(rng.integers(6))], float(rng.normal()), rng.normal(0, 0.3, M))
    model = NeuralEnsemble(
        d,
        M,
        width=6,
        depth=3,
        lam=1.0,
        steps=15,
        lr=0.002,  # a stable step: a diverging fit would be retried (parts.models.rescue)
        reduction="mean",
        generator=torch.Generator().manual_seed(0),
        independent_init=True,
    )
    theta0 = {k: v.clone() for k, v in model.params0.items()}
    assert all(v.shape[0] == M for v in theta0.values())
    assert not torch.equal(theta0["layers.0.weight"][0], theta0["layers.0.weight"][1])
    np.testing.assert_allclose(model.predict(arms), 0.0, atol=1e-12)  # mirrored, each
    model.fit(h)
    X = torch.tensor(h.X)
    for j in range(M):
        own0 = {k: v[j : j + 1].clone() for k, v in theta0.items()}
        own = nn.fit(
            model.net,
            own0,
            nn.Rows(X, torch.tensor(h.y + h.Z[:, j])),
            nn.MSE(),
            penalties=[nn.L2Penalty(6.0, own0)],
            lr=0.002,
            steps=15,
            reduction="mean",
        ).params
        for name, value in own.items():
            torch.testing.assert_close(
                model.params[name][j], value[0], atol=1e-10, rtol=0
            )


def test_neural_es_independent_init_option_round_trips():
    params = {"m": 3, "width": 4, "steps": 3, "warmup": 3, "independent_init": True}
    check_save_restore(PolicyCase(NeuralES, params))
    with pytest.raises(ValueError, match="independent_init"):
        NeuralES(independent_init=1)


@pytest.mark.parametrize("grouped", [False, True])
def test_neural_ucb_backprop_training_equals_autograd(grouped):
    # grad_method="backprop" (the reproduction's speed setting): the same GD iterates
    # as torch.func's gradient, on every row and on the grouped rows, depth 3.
    from banditkit.policies import NeuralTS, NeuralUCB

    rng = np.random.default_rng(6)
    arms = rng.standard_normal((4, 3)) / np.sqrt(3)
    for cls in (NeuralUCB, NeuralTS):
        kw = {
            "width": 4,
            "depth": 3,
            "steps": 10,
            "grouped": grouped,
            "update_every": 1,
        }
        auto, back = cls(seed=5, **kw), cls(seed=5, grad_method="backprop", **kw)
        for _ in range(12):
            ctx = Context(arms=arms)
            k = auto.act(ctx)
            r = float(rng.normal(arms[k].sum(), 0.3))
            auto.update(ctx, k, r)
            back.update(ctx, k, r)
            np.testing.assert_allclose(
                back.model.predict(arms), auto.model.predict(arms), atol=1e-10
            )
        assert np.abs(back.model.predict(arms)).max() > 1e-3  # it did train
    with pytest.raises(ValueError, match="grad_method"):
        NeuralUCB(grad_method="adjoint")
