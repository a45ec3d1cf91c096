"""Ensemble-sampling policies: stored perturbations, warm-up, anytime phases, l(T0, b)."""

from __future__ import annotations

import numpy as np
import pytest

from banditkit.core import Context
from banditkit.policies.ensemble import (
    GLMES,
    GOLDEN_BASE,
    LinES,
    NeuralES,
    NeuralPHE,
    doubling_factor,
    phase_ends,
    phase_lengths,
    phase_parameters,
    round_design,
)
from banditkit.policies.parts.warmup import design_plan


def _play(policy, arms, rounds, rng, after=None):
    for _ in range(rounds):
        ctx = Context(arms=arms)
        k = policy.act(ctx)
        policy.update(ctx, k, float(arms[k].sum() + rng.normal(0, 0.5)))
        if after is not None:
            after(policy)


def test_perturbations_are_stored_and_never_redrawn():
    rng = np.random.default_rng(0)
    arms = rng.standard_normal((5, 3))
    policy = LinES(m=4, sigma_r=0.5, seed=1)
    snapshots = []
    _play(policy, arms, 30, rng, after=lambda p: snapshots.append(p.history.Z.copy()))
    final = policy.history.Z
    assert final.shape == (30, 4) and np.std(final) > 0.2
    for t, snap in enumerate(snapshots, start=1):
        np.testing.assert_array_equal(final[:t], snap)
    # Each member's right-hand side is built from its own stored column.
    np.testing.assert_allclose(
        policy.model.B, policy.history.X.T @ (policy.history.y[:, None] + final)
    )


def test_member_choice_is_uniform():
    policy = LinES(m=5, seed=0)
    arms = np.eye(5)
    ctx = Context(arms=arms)
    policy.act(ctx)
    policy.model.B = np.eye(5)  # member j prefers arm j
    policy.model._theta = None
    counts = np.bincount([policy.act(ctx) for _ in range(5000)], minlength=5)
    chi2 = float(((counts - 1000) ** 2 / 1000).sum())
    assert chi2 < 20.5  # 99.96 % quantile of chi-square with 4 degrees of freedom


def test_round_design_rules():
    zeta = np.array([0.4, 0.3, 0.3, 0.0, 0.0])
    for rounding in ("paper", "pukelsheim"):
        N = round_design(50, zeta, d=2, rounding=rounding)
        assert N.sum() == 50 and N.min() >= 0 and N[3] == N[4] == 0
        assert np.all(np.abs(N - 50 * zeta) <= 3)
    forced = round_design(50, zeta, d=2, enforce_min_pulls=True)
    assert forced.min() >= np.ceil((2 * 3 / 2 + 1) / 0.5 / 5)
    assert round_design(0, zeta, d=2).sum() == 0
    with pytest.raises(ValueError, match="zeta"):
        round_design(5, np.zeros(3), d=2)


def test_glm_es_warmup_follows_the_design_plan():
    rng = np.random.default_rng(2)
    arms = rng.standard_normal((12, 3))
    arms /= np.linalg.norm(arms, axis=1, keepdims=True)
    policy = GLMES(m=3, warmup=40, steps=5, seed=4)
    played = []
    for _ in range(40):
        ctx = Context(arms=arms)
        k = policy.act(ctx)
        played.append(k)
        policy.update(ctx, k, 0.5)
        assert (policy.model.theta == 0).all() == (len(played) < 40)
    plan = design_plan(arms, 40, np.random.default_rng(0))
    np.testing.assert_array_equal(
        np.bincount(played, minlength=12), np.bincount(plan, minlength=12)
    )
    assert policy.n_updates == 1


def test_doubling_schedule_and_phase_parameters_follow_the_formulas():
    assert phase_ends(100, GOLDEN_BASE, 10_000) == [100, 261, 685, 1794, 4697, 12299]
    assert phase_lengths(100, GOLDEN_BASE, 10_000) == [100, 161, 424, 1109, 2903, 7602]
    assert phase_lengths(300, GOLDEN_BASE, 10_000) == [300, 485, 1271, 3327, 8710]
    ms = [phase_parameters(t)[0] for t in phase_lengths(300, GOLDEN_BASE, 10_000)]
    assert ms == [12, 13, 15, 17, 19]
    sigmas = [
        round(phase_parameters(t)[1], 3) for t in (100, 161, 424, 1109, 2903, 7602)
    ]
    assert sigmas == [0.092, 0.102, 0.121, 0.140, 0.159, 0.179]


def test_anytime_policy_restarts_at_phase_ends():
    rng = np.random.default_rng(3)
    arms = rng.standard_normal((4, 3))
    policy = LinES(anytime={"t0": 10, "base": 2.0}, seed=0)  # T_i = 10, 20, 40
    seen = []
    _play(
        policy,
        arms,
        45,
        rng,
        after=lambda p: seen.append((p.phase, p.members, p.history.n)),
    )
    assert seen[8] == (0, phase_parameters(10)[0], 9)
    assert seen[9] == (1, phase_parameters(10)[0], 0)  # full restart after round 10
    assert seen[19] == (2, phase_parameters(20)[0], 0)  # tau_2 = 20
    assert seen[39] == (3, phase_parameters(40)[0], 0)  # tau_3 = 40
    assert policy.sigma == pytest.approx(0.02 * np.log(40))
    with pytest.raises(ValueError, match="anytime"):
        LinES(anytime={"base": 2.0})
    with pytest.raises(ValueError, match=r"anytime\.base"):
        LinES(anytime={"t0": 10, "base": 1.0})


def test_anytime_warmup_is_cut_to_the_phase():
    rng = np.random.default_rng(4)
    policy = NeuralES(
        width=4, steps=1, warmup=8, anytime={"t0": 5, "base": 2.0}, seed=0
    )
    _play(policy, rng.standard_normal((3, 2)), 7, rng)
    assert policy.phase == 1 and policy.warm_len == 5  # min(8, tau_1 = 5)


# l(T0, b) of [Sun2025, Sec. 6], the paper's gamma = 1/2, delta = 3/2, to three decimals.
L_TABLE = {
    10: [4.526, 3.628, 3.438, 3.428, 3.514, 3.807],
    50: [3.924, 3.440, 3.344, 3.357, 3.471, 3.783],
    100: [3.883, 3.425, 3.336, 3.351, 3.467, 3.781],
    300: [3.861, 3.417, 3.332, 3.347, 3.465, 3.779],
    1000: [3.855, 3.415, 3.331, 3.346, 3.464, 3.779],
}


def test_doubling_factor_reproduces_the_table():
    for t0, row in L_TABLE.items():
        values = [
            round(doubling_factor(t0, b), 3)
            for b in (1.5, 2.0, GOLDEN_BASE, 3.0, 4.0, 6.0)
        ]
        assert values == row
    with pytest.raises(ValueError, match="t0"):
        doubling_factor(1, 1.5)


def test_neural_phe_redraws_every_round_and_stores_nothing():
    rng = np.random.default_rng(5)
    policy = NeuralPHE(width=4, steps=2, warmup=2, seed=0)
    _play(policy, rng.standard_normal((3, 2)), 6, rng)
    assert policy.history.Z.shape == (6, 0) and policy.n_updates == 5


def test_glm_baselines_accept_real_rewards_when_asked():
    from banditkit.policies import GLMTS, GLMUCB

    ctx = Context(arms=np.eye(3))
    with pytest.raises(ValueError, match="feedback"):
        GLMUCB().update(ctx, 0, -0.3)
    for cls in (GLMUCB, GLMTS):
        policy = cls(rewards="real", update_every=1)
        policy.update(ctx, 0, -0.3)
        policy.update(ctx, 1, 1.4)
        assert policy.model.theta[1] > 0 > policy.model.theta[0]
    with pytest.raises(ValueError, match="rewards"):
        GLMUCB(rewards="binary")


def test_theory_parameters_match_the_stated_magnitudes():
    from banditkit.policies.ensemble import theory_params

    glm = theory_params("glm", d=20, n_arms=50, horizon=10_000, delta=0.05)
    assert glm["p"] == pytest.approx(0.1587, abs=1e-4)
    assert 1.47e5 <= glm["m"] <= 1.48e5 and glm["lam"] == 20.0  # about 317.8 x 463.5
    neural = theory_params("neural", d=20, n_arms=50, horizon=10_000, delta=0.05)
    assert 8 / neural["p"] ** 2 == pytest.approx(2971, rel=1e-3)
    assert neural["m"] > 1e6
