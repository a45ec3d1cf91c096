"""Theory mode and the spec options of the NeuralLog policies (issue 5, policies.theory)."""

import itertools
import math

import numpy as np
import pytest
import torch

import banditkit as bk
from banditkit.nn import MLP, flat_params, set_flat_params, train
from banditkit.policies.logistic import theory
from tests.policies.helpers import contexts, mean_final_regret, play

DELTA = 4 / math.e**2  # log(4 / delta) = 2
TINY = {"width": 2, "steps": 5, "lr": 1e-3}


def _ctxs(n=40, k=3, d=2, seed=0):
    return contexts(n, k, d, seed)


def test_constants_equal_hand_computed_values():
    """delta = 4/e^2 (l_0 = l_1 = 2), L = 2, C1 = S = 1, D_1 = 1.

    lam_0 = 8 sqrt(2) sqrt(2) 2 = 32;  lam_1 = 64 * 1 * 2 + 16 * 2 * 4 / 32 = 132;
    lam at t = 0, D = 0: max(16 * 2 * 4 / 32, 32) = 32 (clamped);
    iota_1 = 16 sqrt(2) + 8 sqrt(2/32) 2 = 16 sqrt(2) + 4;  iota_0 (D = 0) = 4;
    c_S = 1 + sqrt(2) + 2;  nu_1 = 2 c_S iota_1 + 1 with C = 2;
    l_2 = 2 + log 4.
    """
    kw = {"delta": DELTA, "C1": 1.0, "depth": 2}
    lam_0 = theory.lam0(S=1.0, **kw)
    assert lam_0 == pytest.approx(32.0, rel=1e-12)
    assert theory.lam_t(1.0, 1, S=1.0, lam_0=lam_0, **kw) == pytest.approx(132.0)
    assert theory.lam_t(0.0, 0, S=1.0, lam_0=lam_0, **kw) == pytest.approx(32.0)
    iota = theory.iota_t(1.0, 1, lam_0=lam_0, **kw)
    assert iota == pytest.approx(16 * math.sqrt(2) + 4, rel=1e-12)
    assert theory.iota_t(0.0, 0, lam_0=lam_0, **kw) == pytest.approx(4.0)
    nu = theory.nu_t(iota, C=2.0, depth=2, S=1.0)
    assert nu == pytest.approx(2 * (3 + math.sqrt(2)) * (16 * math.sqrt(2) + 4) + 1)
    assert theory.log_factor(2, DELTA) == pytest.approx(2 + math.log(4))
    # S = 2 halves lam_0: lam_1 = (64/4) * 1 * 2 + 16 * 2 * 4 / (4 * 16) = 32 + 2
    lam_0 = theory.lam0(S=2.0, **kw)
    assert lam_0 == pytest.approx(16.0)
    assert theory.lam_t(1.0, 1, S=2.0, lam_0=lam_0, **kw) == pytest.approx(34.0)


def _grads_at(mlp_template, theta0, X):
    """g(x; theta_0) by plain autograd on a copy of the network (independent path)."""
    net = MLP(mlp_template.d, width=mlp_template.width, depth=mlp_template.depth)
    set_flat_params(net, theta0)
    rows = []
    for x in X:
        net.zero_grad()
        out = net(torch.tensor(x[None, :], dtype=torch.float64))[0]
        out.backward()
        rows.append(torch.cat([p.grad.reshape(-1) for p in net.parameters()]).numpy())
    return np.array(rows)


def _lam_by_hand(phis, lam0, ell, S, C1, L):
    G = sum(np.outer(p, p) for p in phis)
    D = np.linalg.slogdet(G / (4 * lam0) + np.eye(len(phis[0])))[1]
    lam = max(64 / S**2 * D * ell + 16 * C1**2 * L * ell**2 / (S**2 * lam0), lam0)
    return G, D, lam


@pytest.mark.parametrize("name", ["neurallog-ucb1", "neurallog-ucb2"])
@pytest.mark.parametrize("rounds", [1, 2, 3])
def test_internal_values_match_an_independent_numpy_computation(name, rounds):
    kappa, C, C1, S, m, L, delta = 5.0, 0.5, 1.3, 1.5, 2, 2, 0.1
    policy = bk.make_policy(
        name, mode="theory", kappa=kappa, C=C, C1=C1, S=S, delta=delta, seed=0, **TINY
    )
    ctxs = _ctxs(rounds + 1)
    rewards = np.random.default_rng(0).random(rounds) < 0.5
    actions = []
    for ctx, r in zip(ctxs[:-1], rewards, strict=True):
        a = policy.act(ctx)
        actions.append(a)
        policy.update(ctx, a, float(r))
    theta0 = policy.model.mlp.theta0.clone()
    X_played = np.array([c.arms[a] for c, a in zip(ctxs, actions, strict=False)])
    phis = list(_grads_at(policy.model.mlp, theta0, X_played) / math.sqrt(m))
    lam0 = 8 * math.sqrt(2) * C1 * math.sqrt(L) * math.log(4 / delta) / S
    ell = math.log(4 * rounds**2 / delta)
    G, D, lam = _lam_by_hand(phis, lam0, ell, S, C1, L)
    iota = 16 * math.sqrt(D * ell) + 8 * C1 * math.sqrt(L / lam0) * ell
    nu = C * (1 + math.sqrt(L) * S + L * S**2) * iota + 1
    got = policy.theory_constants()
    assert got["lam0"] == pytest.approx(lam0, rel=1e-12)
    assert got["D"] == pytest.approx(D, rel=1e-9, abs=1e-12)
    assert got["lam_t"] == pytest.approx(lam, rel=1e-9)
    assert got["iota_t"] == pytest.approx(iota, rel=1e-9)
    assert got["nu_t"] == pytest.approx(nu, rel=1e-9)
    X = ctxs[-1].arms
    Phi = _grads_at(policy.model.mlp, theta0, X) / math.sqrt(m)
    if name == "neurallog-ucb1":  # V = G + kappa lam_t I, radius R sqrt(kappa) nu
        A = G + kappa * lam * np.eye(len(G))
        radius = 0.25 * math.sqrt(kappa) * nu
    else:  # W = sum mu'(f(x_i; theta_i)) phi phi^T + lam_t I; TrainNN replayed here
        W = np.zeros_like(G)
        for i in range(1, rounds + 1):
            _, _, lam_i = _lam_by_hand(
                phis[:i], lam0, math.log(4 * i**2 / delta), S, C1, L
            )
            net = MLP(2, width=m, depth=L)
            set_flat_params(net, theta0)
            net.theta0.copy_(theta0)
            lr = 1e-3
            train(
                net,
                X_played[:i],
                rewards[:i].astype(float),
                lam=m * lam_i,
                center="init",
                lr=lr,
                steps=5,
                reduction="sum",
            )
            with torch.no_grad():
                f_i = float(net(torch.tensor(X_played[i - 1 : i]))[0])
            w_i = math.exp(-f_i) / (1 + math.exp(-f_i)) ** 2
            W += w_i * np.outer(phis[i - 1], phis[i - 1])
        A = W + lam * np.eye(len(G))
        radius = nu
    expected = radius * np.sqrt(np.einsum("kp,pk->k", Phi, np.linalg.solve(A, Phi.T)))
    mean, width = policy.scores(ctxs[-1])
    np.testing.assert_allclose(width, expected, rtol=1e-8)
    if name == "neurallog-ucb2":  # Eq. (5): g(x; theta_0)^T (theta_t - theta_0)
        shift = (flat_params(policy.model.mlp) - theta0).numpy()
        np.testing.assert_allclose(mean, (Phi * math.sqrt(m)) @ shift, atol=1e-12)
    else:  # mu(f(x; theta_t))
        with torch.no_grad():
            f = policy.model.mlp(torch.tensor(X)).numpy()
        np.testing.assert_allclose(mean, 1 / (1 + np.exp(-f)), rtol=1e-12)


@pytest.mark.parametrize("name", ["neurallog-ucb1", "neurallog-ts2"])
def test_theory_features_are_theta0_gradients_over_sqrt_m_and_stay_fixed(name):
    policy = bk.make_policy(name, mode="theory", seed=2, width=4, steps=20, lr=1e-2)
    ctxs = _ctxs(12, d=3)
    play(policy, ctxs[:-1])
    theta0 = policy.model.mlp.theta0.clone()
    assert not torch.equal(flat_params(policy.model.mlp), theta0)  # it trained
    X = ctxs[-1].arms
    feats = policy.model.evaluate(X)[1]
    np.testing.assert_allclose(
        feats, _grads_at(policy.model.mlp, theta0, X), rtol=1e-12
    )
    assert policy.scorer.feature_scale == pytest.approx(1 / 2.0)  # 1 / sqrt(m), m = 4
    policy.model.fit(policy.history)  # more training leaves the features alone
    np.testing.assert_array_equal(policy.model.evaluate(X)[1], feats)


def test_lam_t_is_non_decreasing_and_at_least_lam0():
    policy = bk.make_policy("neurallog-ucb2", mode="theory", C1=0.05, seed=0, **TINY)
    lams = [policy.theory_constants()["lam_t"]]
    for ctx in _ctxs(30):
        play(policy, [ctx])
        lams.append(policy.theory_constants()["lam_t"])
    lam0 = policy.theory_constants()["lam0"]
    assert lams[0] == lam0
    assert all(b >= a for a, b in itertools.pairwise(lams))
    assert min(lams) >= lam0 and lams[-1] > lam0


def test_theory_mode_beats_uniform_on_an_easy_instance():
    env = bk.make_env("logistic", h="h1", d=4, n_arms=4)
    # nu scales the literal theory radius (about 10^2 here) down to a useful size.
    params = {"mode": "theory", "nu": 0.001, "width": 4, "steps": 20}
    regret = mean_final_regret("neurallog-ucb1", env, 200, **params)
    uniform = mean_final_regret("random", env, 200)
    assert regret < 0.85 * uniform, (regret, uniform)  # observed 7.4 vs 9.7


@pytest.mark.parametrize("mode", ["practical", "theory"])
@pytest.mark.parametrize("name", ["neurallog-ucb2", "neurallog-ts2"])
def test_kappa_invariance_of_ucb2_and_ts2_in_both_modes(name, mode):
    ctxs = _ctxs(40, d=3)
    kw = {"width": 4, "steps": 5, "update_every": 5, "mode": mode}
    runs = [play(bk.make_policy(name, seed=3, kappa=k, **kw), ctxs) for k in (10, 80)]
    assert runs[0] == runs[1]


SMALL = {"width": 4, "steps": 5, "update_every": 5}


@pytest.mark.parametrize(
    ("name", "option"),
    [
        ("neurallog-ucb1", {"reg_center": "init"}),
        ("neurallog-ucb2", {"mean_scale": "probability"}),
        ("neurallog-ucb1", {"mean_scale": "latent"}),
        ("ncbf-ucb", {"mean_scale": "probability"}),
        ("neurallog-ucb1", {"keep_log_factors": True}),
        ("ncbf-ucb", {"keep_log_factors": True}),
        ("neurallog-ts2", {"lambda_schedule": "adaptive"}),
        ("ncbf-ucb", {"lambda_schedule": "adaptive"}),
        ("neurallog-ucb2", {"mode": "theory"}),
        ("neurallog-ucb1", {"mode": "theory", "C": 3.0}),
        ("neurallog-ucb2", {"mode": "theory", "C1": 2.0}),
        ("neurallog-ucb1", {"keep_log_factors": True, "delta": 0.5}),
    ],
)
def test_each_option_changes_the_scores(name, option):
    ctxs = _ctxs(16, d=3)
    out = []
    for extra in ({}, option):
        base = {"mode": "theory"} if "C" in option or "C1" in option else {}
        if "delta" in option:
            base = {"keep_log_factors": True}
        policy = bk.make_policy(name, seed=1, **SMALL, **{**base, **extra})
        for t, ctx in enumerate(ctxs[:-1]):
            policy.update(ctx, t % 3, float(t % 2 == 0))
        out.append(np.concatenate(policy.scores(ctxs[-1])))
    assert not np.allclose(out[0], out[1])


def test_defaults_resolve_per_mode_and_round_trip():
    practical = bk.make_policy("neurallog-ucb2")
    params = practical.get_params()
    assert (params["gram"], params["update_every"], params["lr"]) == (
        "diagonal",
        50,
        0.01,
    )
    assert (params["reg_center"], params["lambda_schedule"]) == ("zero", "fixed")
    assert params["loss_reduction"] == "mean_scaled" and params["mean_scale"] is None
    th = bk.make_policy("neurallog-ucb2", mode="theory").get_params()
    assert (th["gram"], th["update_every"], th["lr"]) == ("full", 1, None)
    assert (th["reg_center"], th["lambda_schedule"], th["loss_reduction"]) == (
        "init",
        "adaptive",
        "sum",
    )
    assert bk.make_policy("neurallog-ucb2", **th).get_params() == th


def test_theory_state_dict_round_trips():
    ctxs = _ctxs(8, d=3)
    policy = bk.make_policy("neurallog-ucb2", mode="theory", seed=0, **TINY)
    play(policy, ctxs[:-1])
    clone = bk.make_policy("neurallog-ucb2", mode="theory", seed=0, **TINY)
    clone.load_state_dict(policy.state_dict())
    np.testing.assert_array_equal(
        np.concatenate(clone.scores(ctxs[-1])), np.concatenate(policy.scores(ctxs[-1]))
    )
    assert clone.theory_constants() == policy.theory_constants()


@pytest.mark.parametrize(
    ("name", "bad", "match"),
    [
        ("ncbf-ucb", {"mode": "theory"}, "mode"),
        ("neurallog-ucb1", {"mode": "theory", "reg_center": "zero"}, "reg_center"),
        ("neurallog-ucb1", {"mode": "theory", "lambda_schedule": "fixed"}, "lambda"),
        ("neurallog-ucb2", {"mode": "theory", "keep_log_factors": True}, "keep_log"),
        ("neurallog-ts1", {"mean_scale": "probability"}, "mean_scale"),
        ("neurallog-ucb1", {"mean_scale": "logit"}, "mean_scale"),
        ("neurallog-ucb1", {"reg_center": "origin"}, "reg_center"),
        ("neurallog-ucb2", {"lambda_schedule": "growing"}, "lambda_schedule"),
        ("neurallog-ucb2", {"delta": 1.0}, "delta"),
        ("neurallog-ucb2", {"delta": 0.0}, "delta"),
        ("neurallog-ucb1", {"C1": 0.0}, "C1"),
        ("neurallog-ucb1", {"C": -1.0}, "C"),
        ("neurallog-ts2", {"mode": "exact"}, "mode"),
        ("neurallog-ucb2", {"lr": 0.0}, "lr"),
        ("neural-ucb", {"width": 3}, "width"),
    ],
)
def test_invalid_options_raise(name, bad, match):
    with pytest.raises(ValueError, match=match):
        bk.make_policy(name, **bad)


def test_keep_log_factors_must_be_a_bool():
    with pytest.raises(TypeError, match="keep_log_factors"):
        bk.make_policy("neurallog-ucb1", keep_log_factors="yes")
