"""The prior perturbation option of Lin-ES / GLM-ES against direct computations."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from banditkit.core import Context
from banditkit.policies.ensemble import (
    GLMES,
    GLMEnsemble,
    LinES,
    PerturbedHistory,
    RidgeEnsemble,
)


def _history(rng, d=3, n=30, M=4, arms=None):
    arms = rng.standard_normal((5, d)) / np.sqrt(d) if arms is None else arms
    h = PerturbedHistory(d, M)
    for _ in range(n):
        k = int(rng.integers(arms.shape[0]))
        h.append(arms[k], float(rng.normal(0.3, 0.5)), rng.normal(0, 0.3, M))
    return h


def play_in_lock_step(first, second, ctx, *, rounds, reward):
    """Both policies choose the same arm every round and end with the same members."""
    for _ in range(rounds):
        a, b = first.act(ctx), second.act(ctx)
        assert a == b
        first.update(ctx, a, reward)
        second.update(ctx, b, reward)
    np.testing.assert_array_equal(first.model.theta, second.model.theta)


def test_ridge_prior_members_equal_direct_solves():
    rng = np.random.default_rng(0)
    h = _history(rng)
    prior = rng.standard_normal((3, 4))
    model = RidgeEnsemble(3, 2.0, 4, prior=prior)
    model.fit(h)
    V = 2.0 * np.eye(3) + h.X.T @ h.X
    for j in range(4):
        own = np.linalg.solve(V, 2.0 * prior[:, j] + h.X.T @ (h.y + h.Z[:, j]))
        np.testing.assert_allclose(model.theta[:, j], own, rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="prior"):
        RidgeEnsemble(3, 2.0, 4, prior=np.zeros((4, 3)))


def test_glm_prior_members_minimise_the_anchored_loss():
    rng = np.random.default_rng(1)
    h = _history(rng, M=2)
    prior = rng.standard_normal((3, 2))
    lam = 1.5
    model = GLMEnsemble(3, lam, 2, solver="newton", prior=prior)
    model.fit(h)

    def b(z):  # the logistic log-partition, log(1 + e^z)
        return np.logaddexp(0.0, z)

    for j in range(2):
        target = h.y + h.Z[:, j]

        def loss(th, j=j, target=target):
            z = h.X @ th
            return 0.5 * lam * np.sum((th - prior[:, j]) ** 2) + np.sum(
                b(z) - target * z
            )

        ref = minimize(loss, np.zeros(3), method="BFGS", options={"gtol": 1e-10}).x
        np.testing.assert_allclose(model.theta[:, j], ref, atol=1e-5)
    # the state carries theta_0
    copy = GLMEnsemble(3, lam, 2, solver="newton", prior=np.zeros((3, 2)))
    copy.load_state_dict(model.state_dict())
    np.testing.assert_array_equal(copy.prior, prior)


def test_lin_es_prior_spreads_members_in_unexplored_directions():
    # Only e_1 is ever pulled: without a prior perturbation every member agrees exactly on
    # e_2 and e_3 (they never look better than the data say); with it, their spread there is
    # sigma_R / sqrt(lam), the Lin-TS posterior scale.
    arms = np.eye(3)
    ctx = Context(arms=arms[:1])
    spreads = {}
    for prior in (False, True):
        policy = LinES(m=4000, sigma_r=0.2, lam=4.0, prior_perturbation=prior, seed=0)
        for _ in range(5):
            policy.update(ctx, policy.act(ctx), 1.0)
        spreads[prior] = policy.model.theta[1:].std(axis=1)
    np.testing.assert_array_equal(spreads[False], 0.0)
    np.testing.assert_allclose(spreads[True], 0.2 / 2.0, rtol=0.05)


def test_glm_es_prior_option_state_round_trip_and_validation():
    arms = np.random.default_rng(2).standard_normal((4, 3)) / 2
    ctx = Context(arms=arms)
    policy = GLMES(m=3, warmup=4, steps=5, prior_perturbation=True, seed=1)
    for _ in range(8):
        policy.update(ctx, policy.act(ctx), 0.5)
    clone = GLMES(m=3, warmup=4, steps=5, prior_perturbation=True, seed=1)
    clone.load_state_dict(policy.state_dict())
    np.testing.assert_array_equal(clone.model.prior, policy.model.prior)
    play_in_lock_step(policy, clone, ctx, rounds=3, reward=0.2)
    with pytest.raises(ValueError, match="prior_perturbation"):
        LinES(prior_perturbation=1)


def test_lin_es_presets_name_sigma_r_and_the_prior_and_keep_the_papers_params():
    before = {  # what LinES() reported before presets existed (its runs keep their ids)
        "prior_perturbation": False,
        "m": 25,
        "lam": 1.0,
        "sigma_r": 0.1,
        "warmup": 0,
        "warmup_strategy": "round-robin",
        "anytime": None,
        "perturb_warmup": True,
        "update_every": 1,
        "seed": 0,
    }
    assert LinES().get_params() == before == LinES(preset="paper").get_params()
    robust = LinES(preset="robust", seed=3)
    assert (robust.sigma_r, robust.prior_perturbation) == (0.5, True)
    assert LinES(**robust.get_params()).get_params() == robust.get_params()
    # given values override the preset
    mixed = LinES(preset="robust", sigma_r=0.2, prior_perturbation=False)
    assert (mixed.sigma_r, mixed.prior_perturbation) == (0.2, False)
    # "robust" is sigma_r = 0.5 with the prior perturbation, draw for draw
    arms = np.random.default_rng(4).standard_normal((6, 3)) / 2
    ctx = Context(arms=arms)
    explicit = LinES(sigma_r=0.5, prior_perturbation=True, seed=3)
    play_in_lock_step(robust, explicit, ctx, rounds=10, reward=0.3)
    with pytest.raises(ValueError, match="preset"):
        LinES(preset="fast")


def test_grouped_neural_ucb_training_equals_training_on_every_row():
    # The additive ``grouped`` option of NeuralUCB / NeuralTS (fixed-arm speed-up): the
    # same GD iterates as the per-row trainer on a history with repeated rows.
    from banditkit.policies import NeuralTS, NeuralUCB

    rng = np.random.default_rng(3)
    arms = rng.standard_normal((4, 3)) / np.sqrt(3)
    for cls, reduction in ((NeuralUCB, "mean_scaled"), (NeuralTS, "sum")):
        kw = {"width": 4, "depth": 3, "steps": 10, "loss_reduction": reduction}
        plain, grouped = cls(seed=5, **kw), cls(seed=5, grouped=True, **kw)
        for _ in range(12):
            ctx = Context(arms=arms)
            k = plain.act(ctx)
            r = float(rng.normal(arms[k].sum(), 0.3))
            plain.update(ctx, k, r)
            grouped.update(ctx, k, r)
            np.testing.assert_allclose(
                grouped.model.predict(arms), plain.model.predict(arms), atol=1e-10
            )
    with pytest.raises(ValueError, match="grouped"):
        NeuralUCB(grouped=1)
