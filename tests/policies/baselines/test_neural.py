"""Correctness tests of the neural policies (issue 5 quality bars, specs/logistic.md)."""

import math

import numpy as np
import pytest
import torch

import banditkit as bk
from banditkit.core import Context
from banditkit.glm import LogisticLink
from banditkit.linalg import EffectiveDimension
from banditkit.nn import flat_params, forward_and_grads, set_flat_params
from tests.policies.helpers import contexts, mean_final_regret, play

#: float64: the hand formulas below are checked to 1e-12 (the default dtype is float32).
SMALL = {"width": 8, "update_every": 10, "steps": 10, "dtype": "float64"}
UCB_NAMES = ["neural-ucb", "neurallog-ucb1", "neurallog-ucb2", "ncbf-ucb"]
TS_NAMES = ["neural-ts", "neurallog-ts1", "neurallog-ts2"]


def _ctxs(n=40, k=4, d=6, seed=0):
    return contexts(n, k, d, seed)


@pytest.mark.parametrize("name", ["neurallog-ucb2", "neurallog-ts2"])
def test_kappa_does_not_change_ucb2_and_ts2_selections(name):
    ctxs = _ctxs(150)
    runs = [
        play(bk.make_policy(name, seed=3, kappa=k, **SMALL), ctxs) for k in (10, 50)
    ]
    assert runs[0] == runs[1]
    assert len(set(runs[0])) > 1


@pytest.mark.parametrize("name", ["neurallog-ucb1", "neurallog-ts1", "ncbf-ucb"])
def test_kappa_changes_the_width_of_ucb1_ts1_and_ncbf(name):
    ctxs = _ctxs(25)
    widths = []
    for kappa in (10.0, 50.0):
        policy = bk.make_policy(name, seed=1, kappa=kappa, **SMALL)
        play(policy, ctxs[:-1])
        widths.append(policy.scores(ctxs[-1])[1])
    assert not np.allclose(widths[0], widths[1])


@pytest.mark.parametrize("name", UCB_NAMES + TS_NAMES)
def test_width_is_proportional_to_nu(name):
    ctxs = _ctxs(25)
    out = {}
    for nu in (0.5, 1.5):
        policy = bk.make_policy(name, seed=1, nu=nu, **SMALL)
        for t, ctx in enumerate(ctxs[:-1]):  # the same scripted history for both
            policy.update(ctx, t % 4, float(t % 3 == 0))
        out[nu] = policy.scores(ctxs[-1])
    np.testing.assert_allclose(out[0.5][0], out[1.5][0], rtol=0, atol=0)
    np.testing.assert_allclose(out[1.5][1], 3.0 * out[0.5][1], rtol=1e-12)
    assert np.all(out[0.5][1] > 0)


def test_diagonal_logdet_equals_exact_for_axis_aligned_features():
    rng = np.random.default_rng(0)
    diag, full = EffectiveDimension(5, 0.25), EffectiveDimension(5, 0.25, "full")
    for _ in range(12):
        z = np.zeros(5)
        z[rng.integers(5)] = rng.normal() * 3
        diag.update(z)
        full.update(z)
    assert diag.value == pytest.approx(full.value, rel=1e-12)
    sumsq = np.diag(full.gram.matrix) - 1.0  # I + 0.25 sum z z^T, diagonal here
    assert diag.value == pytest.approx(float(np.sum(np.log1p(sumsq))), rel=1e-12)


#: The widths before [logistic-fidelity]: diagonal d_eff, raw NTK gradients, table B.
V0 = {"effdim_kind": "diagonal", "scale_features": False, "bonus": "table"}


def test_ucb2_score_matches_the_hand_formula():
    policy = bk.make_policy(
        "neurallog-ucb2", nu=0.7, lam=0.5, S=2.0, seed=0, **SMALL, **V0
    )
    ctxs = _ctxs(31)
    play(policy, ctxs[:-1])
    ctx = ctxs[-1]
    mean, width = policy.scores(ctx)
    f, G = forward_and_grads(policy.model.mlp, torch.from_numpy(ctx.arms.copy()))
    G = G.numpy()
    c_s = 1 + math.sqrt(2) * 2.0 + 2 * 4.0
    d_eff = policy.effdim.value
    radius = c_s * (math.sqrt(d_eff) + math.sqrt(2 / 0.5)) + 1
    expected = 0.7 * radius * np.sqrt((G * G) @ (1 / policy.design.diagonal))
    np.testing.assert_allclose(mean, f.numpy())
    np.testing.assert_allclose(width, expected, rtol=1e-12)


def test_calibrated_ucb2_score_matches_the_hand_formula():
    """z = g / sqrt(m), exact d_eff = logdet(I + R sum z z^T), B = S^2 (sqrt(d) + lam^-1/2)."""
    policy = bk.make_policy("neurallog-ucb2", nu=0.7, lam=0.5, S=2.0, seed=0, **SMALL)
    ctxs = _ctxs(31)
    played = []
    for ctx in ctxs[:-1]:
        a = policy.act(ctx)
        _, G = forward_and_grads(policy.model.mlp, torch.from_numpy(ctx.arms.copy()))
        played.append(G[a].numpy() / math.sqrt(8))
        policy.update(ctx, a, float(a == 0))
    Z = np.array(played)
    d_eff = float(np.linalg.slogdet(np.eye(len(Z)) + 0.25 * Z @ Z.T)[1])
    assert policy.effdim.value == pytest.approx(d_eff, rel=1e-10)
    p = Z.shape[1]
    assert d_eff == pytest.approx(
        float(np.linalg.slogdet(np.eye(p) + 0.25 * Z.T @ Z)[1]), rel=1e-10
    )
    ctx = ctxs[-1]
    mean, width = policy.scores(ctx)
    f, G = forward_and_grads(policy.model.mlp, torch.from_numpy(ctx.arms.copy()))
    Zc = G.numpy() / math.sqrt(8)
    radius = 4.0 * (math.sqrt(d_eff) + 1 / math.sqrt(0.5))
    expected = 0.7 * radius * np.sqrt((Zc * Zc) @ (1 / policy.design.diagonal))
    np.testing.assert_allclose(mean, f.numpy())
    np.testing.assert_allclose(width, expected, rtol=1e-10)


def test_ucb1_score_is_on_the_probability_scale_with_kappa_ridge():
    policy = bk.make_policy("neurallog-ucb1", nu=1.0, lam=2.0, kappa=10.0, **SMALL)
    ctx = _ctxs(1)[0]
    mean, width = policy.scores(ctx)
    # theta_0 gives f = 0 (mirrored init), A = kappa lam I, d_eff = 0.
    np.testing.assert_allclose(mean, 0.5)
    _, G = forward_and_grads(policy.model.mlp, torch.from_numpy(ctx.arms.copy()))
    radius = 0.25 * math.sqrt(10.0) * (1 / math.sqrt(2.0))  # R sqrt(kappa) S^2 lam^-1/2
    norms = np.linalg.norm(G.numpy(), axis=1) / math.sqrt(8) / math.sqrt(20.0)
    np.testing.assert_allclose(width, radius * norms, rtol=1e-12)


def test_legacy_ucb1_score_with_table_constants():
    policy = bk.make_policy(
        "neurallog-ucb1", nu=1.0, lam=2.0, kappa=10.0, **SMALL, **V0
    )
    ctx = _ctxs(1)[0]
    _, width = policy.scores(ctx)
    _, G = forward_and_grads(policy.model.mlp, torch.from_numpy(ctx.arms.copy()))
    c_s = 1 + math.sqrt(2) + 2
    radius = 0.25 * math.sqrt(10.0) * (c_s * math.sqrt(2 / 2.0) + 1)
    expected = radius * np.linalg.norm(G.numpy(), axis=1) / math.sqrt(20.0)
    np.testing.assert_allclose(width, expected, rtol=1e-12)


def test_ucb2_weights_are_frozen_once_computed():
    policy = bk.make_policy("neurallog-ucb2", seed=0, **SMALL)
    ctxs = _ctxs(21)
    play(policy, ctxs[:20])  # the last round refits, so theta_20 weighted round 20
    before = policy.design.diagonal.copy()
    mlp = policy.model.mlp
    set_flat_params(mlp, flat_params(mlp) * 1.5)  # a different theta
    np.testing.assert_array_equal(policy.design.diagonal, before)
    # The next term (no refit in round 21) uses the gradient and weight at the new theta.
    ctx = ctxs[20]
    a = policy.act(ctx)
    f, G = forward_and_grads(mlp, torch.from_numpy(ctx.arms.copy()))
    policy.update(ctx, a, 1.0)
    w = float(LogisticLink().deriv(f[a].numpy()))
    np.testing.assert_allclose(  # z = g / sqrt(m), m = 8
        policy.design.diagonal - before,
        w * G[a].numpy() ** 2 / 8,
        rtol=1e-10,
        atol=1e-15,
    )


def test_ucb1_design_is_unweighted():
    policy = bk.make_policy("neurallog-ucb1", lam=1.0, kappa=10.0, seed=0, **SMALL)
    ctx = _ctxs(1)[0]
    a = policy.act(ctx)
    _, G = forward_and_grads(policy.model.mlp, torch.from_numpy(ctx.arms.copy()))
    policy.update(ctx, a, 0.0)
    np.testing.assert_allclose(policy.design.diagonal, 10.0 + G[a].numpy() ** 2 / 8)


def test_full_gram_option_runs_and_matches_diagonal_on_the_first_round():
    ctx = _ctxs(1)[0]
    diag = bk.make_policy("neurallog-ucb2", gram="diagonal", **SMALL)
    full = bk.make_policy("neurallog-ucb2", gram="full", **SMALL)
    # Before any data A = lam I in both.
    np.testing.assert_allclose(diag.scores(ctx)[1], full.scores(ctx)[1])
    play(full, _ctxs(15))
    assert full.design.matrix.shape == (full.model.n_params,) * 2


def test_neural_ucb_width_uses_gradients_over_sqrt_width():
    policy = bk.make_policy("neural-ucb", nu=1.0, lam=1.0, width=8, dtype="float64")
    ctx = _ctxs(1)[0]
    _, width = policy.scores(ctx)
    _, G = forward_and_grads(policy.model.mlp, torch.from_numpy(ctx.arms.copy()))
    np.testing.assert_allclose(
        width, np.linalg.norm(G.numpy(), axis=1) / math.sqrt(8), rtol=1e-12
    )


@pytest.mark.parametrize("name", ["neurallog-ucb2", "neurallog-ucb1"])
def test_beats_uniform_on_logistic_h1(name):
    env = bk.make_env("logistic", h="h1", d=6, n_arms=5)
    params = {"nu": 0.1, "width": 8, "update_every": 10, "steps": 20, "lr": 0.05}
    regret = mean_final_regret(name, env, 300, **params)
    uniform = mean_final_regret("random", env, 300)
    assert regret < 0.8 * uniform, (regret, uniform)


@pytest.mark.parametrize(
    ("name", "bad"),
    [
        ("neurallog-ucb2", {"width": 7}),
        ("neurallog-ucb1", {"kappa": 0.5}),
        ("ncbf-ucb", {"gram": "dense"}),
        ("ncbf-ucb", {"mode": "theory"}),
        ("neural-ucb", {"loss_reduction": "avg"}),
        ("neurallog-ts2", {"S": 0.0}),
    ],
)
def test_invalid_hyperparameters_raise(name, bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        bk.make_policy(name, **bad)


def test_a_diverging_refit_is_retried_at_a_smaller_lr_which_is_kept_and_saved():
    """lr=1e6 overflows at once: the refit is retried at lr / 10 until it settles."""
    params = {"lr": 1e6, "steps": 20, "update_every": 1, "backtrack": 0, "width": 8}
    policy = bk.make_policy("neural-ucb", seed=0, **params)
    arms = np.random.default_rng(0).normal(size=(3, 4))
    ctx = Context(arms=arms)
    for _ in range(5):
        policy.update(ctx, policy.act(ctx), 1.0)
    lr = policy.model.trainer.lr
    assert 0.0 < lr <= 1e6 / 10 and np.isfinite(policy.model.predict(arms)).all()
    state = policy.state_dict()
    assert float(state["state"]["model"]["lr"]) == lr
    twin = bk.make_policy("neural-ucb", seed=0, **params)
    twin.load_state_dict(state)
    assert twin.model.trainer.lr == lr
    for _ in range(3):
        action = policy.act(ctx)
        assert twin.act(ctx) == action
        policy.update(ctx, action, 0.5)
        twin.update(ctx, action, 0.5)
    np.testing.assert_array_equal(policy.model.predict(arms), twin.model.predict(arms))


def test_a_fit_that_diverges_at_every_lr_raises_and_keeps_the_parameters(monkeypatch):
    from banditkit.policies.parts.history import History
    from banditkit.policies.parts.models import NeuralModel

    policy = bk.make_policy("neural-ucb", width=8, steps=5, update_every=1, seed=0)
    ctx = Context(arms=np.eye(3))
    policy.update(ctx, policy.act(ctx), 1.0)
    model = policy.model
    before, trainer = model.state_dict()["theta"], model.trainer

    def explode(self, history):
        nn_params = self.mlp.parameters()
        for p in nn_params:
            p.data.fill_(float("nan"))
        return [1.0, float("nan")]

    monkeypatch.setattr(NeuralModel, "_fit_once", explode)
    history = History(3)
    history.append(np.ones(3), 1.0)
    with pytest.raises(FloatingPointError, match=r"training diverged.*rescale"):
        model.fit(history)
    np.testing.assert_array_equal(model.state_dict()["theta"], before)
    assert model.trainer is trainer


def test_nan_scores_are_reported():
    from banditkit.policies.parts.selection import argmax_random_tie

    with pytest.raises(ValueError, match="NaN"):
        argmax_random_tie(np.array([0.1, np.nan, 0.3]), np.random.default_rng(0))
