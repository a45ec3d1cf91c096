"""The MNL policies against independent computations: autograd gradients, scipy MLEs,
direct Gram inverses and brute force over all assortments."""

import itertools
import math

import numpy as np
import pytest
import torch
from scipy.optimize import minimize

import banditkit as bk
from banditkit.core import Context
from banditkit.policies.mnl.common import default_kappa, uniform_assortment


def brute_force(z, revenues, capacity):
    """argmax_{1 <= |S| <= K} sum_S r_i e^z_i / (1 + sum_S e^z_j) over every subset."""
    best, best_value = None, -1.0
    for k in range(1, capacity + 1):
        for S in itertools.combinations(range(len(z)), k):
            v = np.exp(z[list(S)])
            value = float(v @ revenues[list(S)] / (1 + v.sum()))
            if value > best_value + 1e-12:
                best, best_value = S, value
    return best, best_value


def revenue(z, revenues, S):
    v = np.exp(z[list(S)])
    return float(v @ revenues[list(S)] / (1 + v.sum()))


def autograd_f_and_grad(model, w, X):
    """f_w(x) and grad_w f_w(x) for each row, one autograd call per item."""
    from banditkit.nn import set_flat_params

    set_flat_params(model, torch.as_tensor(w))
    fs, gs = [], []
    for x in X:
        model.zero_grad()
        out = model(torch.tensor(x[None, :]))[0]
        out.backward()
        fs.append(float(out.detach()))
        gs.append(
            torch.cat([p.grad.reshape(-1) for p in model.parameters()]).numpy().copy()
        )
    return np.array(fs), np.array(gs)


def play(policy, env, rounds, record=None):
    policy.begin(rounds + 1)
    env.reset(0)
    for _ in range(rounds):
        ctx = env.context()
        action = policy.act(ctx)
        step = env.step(action)
        if record is not None:
            record(policy, ctx, action, step.feedback)
        policy.update(ctx, action, step.feedback)
    return env.context()


def test_utility_net_gradients_equal_autograd():
    policy = bk.make_policy(
        "onl-mnl", width=4, t0=2, pilot_steps=3, seed=1, dtype="float64"
    )
    policy.begin(10)
    X = np.random.default_rng(0).normal(size=(6, 3))
    policy.act(Context(arms=X, max_size=2))
    f, G = policy.net.evaluate(X)
    f_ref, G_ref = autograd_f_and_grad(policy.net.model, policy.net.w, X)
    np.testing.assert_allclose(f, f_ref, atol=1e-12)
    np.testing.assert_allclose(G, G_ref, atol=1e-12)
    assert G.shape == (6, 3 * 4 + 2 * 4 + 1)  # d_w = d m + 2 m + 1


def test_onl_mnl_phase2_estimate_gram_and_selection_are_exact():
    env = bk.make_env("mnl", d=2, n_items=7, capacity=3, width=3, revenues="item")
    policy = bk.make_policy(
        "onl-mnl",
        dtype="float64",  # checked against float64 references
        width=2,
        t0=10,
        pilot_steps=50,
        pilot_lr=0.05,
        lam_scale=0.05,
        beta_scale=0.5,
        ch=1.0,
        seed=0,
    )
    log = []  # (w_s, offered features, slot) of the Phase-II rounds

    def record(policy, ctx, action, chosen):
        if policy.t >= policy.t0:
            slot = -1 if chosen < 0 else action.index(chosen)
            log.append((policy.net.w, ctx.arms[list(action)], slot))

    ctx = play(policy, env, 30, record)
    assert policy.phase == 2 and len(log) == 20
    model, lam, w0, w_hat = policy.net.model, policy.lam, policy.w0, policy.net.w
    assert lam == pytest.approx(0.05 * policy.d_w * math.sqrt(31))
    # Eq. (2) from scratch: linearised at each round's own w_s (autograd gradients)
    lin = []
    for w_s, X, slot in log:
        f, G = autograd_f_and_grad(model, w_s, X)
        lin.append((f, G, w_s, slot))

    def loss(w):
        total = 0.5 * lam * float((w - w0) @ (w - w0))
        for f, G, w_s, slot in lin:
            u = np.concatenate([[0.0], f + G @ (w - w_s)])
            total -= u[slot + 1] - np.log(np.exp(u).sum())
        return total

    ref = minimize(loss, w0, method="BFGS", options={"gtol": 1e-9})
    np.testing.assert_allclose(w_hat, ref.x, atol=1e-5)
    V = lam * np.eye(policy.d_w) + sum(G.T @ G for _, G, _, _ in lin)
    np.testing.assert_allclose(policy.gram.matrix, V, rtol=1e-10, atol=1e-8)
    # the selection: brute force over every assortment under the optimistic utilities
    f, G = autograd_f_and_grad(model, w_hat, ctx.arms)
    beta = policy.beta(policy.t + 1)
    assert beta == pytest.approx(0.5 * policy.d_w * 31 / 31)
    norms = np.sqrt(np.einsum("ip,pq,iq->i", G, np.linalg.inv(V), G))
    z = f + math.sqrt(beta) * norms + beta * 1.0 / lam
    policy.net.set_w(w_hat)  # autograd_f_and_grad moved the network
    offer = policy.act(ctx)
    _best, value = brute_force(z, ctx.revenues, 3)
    assert revenue(z, ctx.revenues, offer) == pytest.approx(value, rel=1e-10)


def test_onl_mnl_phase1_is_random_and_the_pilot_fits_the_mnl_likelihood():
    env = bk.make_env("mnl", d=2, n_items=6, capacity=2)
    policy = bk.make_policy(
        "onl-mnl", width=2, t0=8, pilot_steps=200, pilot_lr=0.05, seed=3
    )
    w_init = None

    def record(policy, ctx, action, chosen):
        nonlocal w_init
        if policy.t == 0:
            w_init = policy.net.w

    play(policy, env, 8, record)
    assert policy.phase == 2 and policy.n_updates == 1
    # the pilot decreased the NLL of the Phase-I data (outside option included)
    X, mask, choice = policy.pilot.padded()

    def nll(w):
        from banditkit.nn import set_flat_params

        set_flat_params(policy.net.model, torch.as_tensor(w))
        total = 0.0
        for s in range(X.shape[0]):
            k = int(mask[s].sum())
            u = np.concatenate([[0.0], policy.net.predict(X[s, :k])])
            total -= u[choice[s] + 1] - np.log(np.exp(u).sum())
        return total / X.shape[0]

    w0 = policy.w0.copy()
    assert nll(w0) < nll(w_init)
    assert nll(w0) == pytest.approx(policy.pilot_nll, abs=0.05)


def test_ucb_mnl_mle_and_selection_are_exact():
    env = bk.make_env("mnl", d=3, n_items=7, capacity=3, revenues="item")
    policy = bk.make_policy("ucb-mnl", schedule="per-round", alpha_scale=0.01)
    ctx = play(policy, env, 25)
    X, _, mask, choice = policy.sets.sets

    def loss(theta):
        total = 0.5 * float(theta @ theta)
        for s in range(X.shape[0]):
            u = np.concatenate([[0.0], X[s, : int(mask[s].sum())] @ theta])
            total -= u[choice[s] + 1] - np.log(np.exp(u).sum())
        return total

    ref = minimize(loss, np.zeros(3), method="BFGS", options={"gtol": 1e-10})
    np.testing.assert_allclose(policy.theta, ref.x, atol=1e-6)
    V = np.eye(3) + X[mask].T @ X[mask]
    alpha = (
        0.01
        / (2 * default_kappa(3))
        * math.sqrt(6 * math.log1p(26 / 3) + 2 * math.log(26))
    )
    assert policy.alpha(26, 3) == pytest.approx(alpha)
    z = ctx.arms @ policy.theta + alpha * np.sqrt(
        np.einsum("ip,pq,iq->i", ctx.arms, np.linalg.inv(V), ctx.arms)
    )
    _, value = brute_force(z, ctx.revenues, 3)
    assert revenue(z, ctx.revenues, policy.act(ctx)) == pytest.approx(value, rel=1e-10)


def test_ts_mnl_without_noise_is_greedy_on_the_mle():
    env = bk.make_env("mnl", d=3, n_items=9, capacity=3)
    ts = bk.make_policy("ts-mnl", alpha_scale=0.0, samples=3, seed=1)
    ucb = bk.make_policy("ucb-mnl", alpha_scale=0.0)
    ctx = play(ts, env, 15)
    play(ucb, env, 15)
    np.testing.assert_allclose(ts.theta, ucb.theta, atol=1e-12)
    assert ts.act(ctx) == tuple(sorted(np.argsort(-(ctx.arms @ ts.theta))[:3].tolist()))


def test_ofu_mnl_plus_step_matches_the_closed_form():
    policy = bk.make_policy("ofu-mnl-plus")
    X = np.array([[0.5, -0.2], [0.1, 0.3], [-0.4, 0.2]])
    ctx = Context(arms=X, max_size=2)
    policy.begin(5)
    offer = policy.act(ctx)
    assert offer == (0, 2)  # theta = 0: the widths under H = lam I rank by ||x||
    policy.update(ctx, offer, 2)
    eta = 2 + math.log(3) / 2
    lam = 84 * math.sqrt(2) * eta * 2
    Xs = X[[0, 2]]
    p = np.full(2, 1 / 3)
    grad = Xs.T @ (p - np.array([0.0, 1.0]))
    hess = (Xs * p[:, None]).T @ Xs - np.outer(Xs.T @ p, Xs.T @ p)
    theta = -np.linalg.solve(lam * np.eye(2) / (2 * eta) + hess / 2, grad)
    np.testing.assert_allclose(policy.theta, theta, rtol=1e-12)
    e = np.exp(Xs @ theta)
    p1 = e / (1 + e.sum())
    H1 = (Xs * p1[:, None]).T @ Xs - np.outer(Xs.T @ p1, Xs.T @ p1)
    np.testing.assert_allclose(policy.H, H1, rtol=1e-12)


def test_eps_greedy_mnl_refits_at_epoch_ends_on_the_epoch_only():
    env = bk.make_env("mnl", d=2, n_items=6, capacity=2)
    policy = bk.make_policy("eps-greedy-mnl", width=2, steps=3, seed=0)
    counts = []
    play(policy, env, 16, lambda p, *_: counts.append((p.t, p.n_updates, p.epoch.n)))
    # before rounds 1..16: refits after t = 1, 3, 7, 15; the epoch buffer restarts
    assert [c[1] for c in counts] == [0, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3, 4]
    assert policy.epoch.n == 1
    assert policy.epsilon(1) == 0.1 and policy.epsilon(2000) == 0.001


def test_uniform_assortment_sizes_follow_the_binomial_counts():
    rng = np.random.default_rng(0)
    sizes = np.array([len(uniform_assortment(rng, 5, 3)) for _ in range(6000)])
    counts = np.array([math.comb(5, k) for k in (1, 2, 3)])
    freq = np.bincount(sizes, minlength=4)[1:] / sizes.size
    np.testing.assert_allclose(freq, counts / counts.sum(), atol=0.02)
    assert {len(uniform_assortment(rng, 5, 3, "exactly-k")) for _ in range(20)} == {3}


@pytest.mark.parametrize(
    "name", ["onl-mnl", "ucb-mnl", "ts-mnl", "ofu-mnl-plus", "eps-greedy-mnl"]
)
def test_bad_input_names_the_argument(name):
    policy = bk.make_policy(
        name, **({"t0": 0, "pilot_steps": 2} if name == "onl-mnl" else {})
    )
    policy.begin(5)
    X = np.eye(4)[:, :3]
    ctx = Context(arms=X, max_size=2)
    with pytest.raises(ValueError, match="feedback"):
        policy.update(ctx, (0, 1), 2)  # item 2 was not offered
    with pytest.raises(ValueError, match="assortment"):
        policy.update(ctx, (0, 1, 2), -1)  # over capacity
    with pytest.raises(ValueError, match="at least one item"):
        policy.update(ctx, (), -1)
    with pytest.raises(ValueError, match="revenues"):
        policy.act(Context(arms=X, revenues=[1.0, -0.5, 1.0, 1.0], max_size=2))
    with pytest.raises(ValueError, match="revenues"):
        Context(arms=X, revenues=[1.0, np.nan, 1.0, 1.0], max_size=2)
    assert policy.t == 0


def test_onl_mnl_needs_the_horizon_and_validates_its_parameters():
    with pytest.raises(ValueError, match="horizon"):
        bk.make_policy("onl-mnl").act(Context(arms=np.eye(3), max_size=2))
    for bad in (
        {"lam_scale": 0.0},
        {"t0": -1},
        {"beta_schedule": "x"},
        {"phase1": "x"},
    ):
        with pytest.raises(ValueError, match=next(iter(bad))):
            bk.make_policy("onl-mnl", **bad)


@pytest.mark.parametrize("name", ["ucb-mnl", "ts-mnl"])
def test_the_warmup_offers_random_k_sets_first(name):
    """warmup=T0: T0 uniformly random K-item sets (the papers' initialisation), then the
    policy's own rule; warmup=0 (default) changes nothing."""
    env = bk.make_env("mnl", d=3, n_items=12, capacity=4)
    env.reset(0)
    warm = bk.make_policy(name, warmup=6, seed=3)
    cold = bk.make_policy(name, seed=3)
    offered = []
    for _ in range(6):
        ctx = env.context()
        action = warm.act(ctx)
        assert len(action) == 4 and action == tuple(sorted(set(action)))
        offered.append(action)
        step = env.step(action)
        warm.update(ctx, action, step.feedback)
        cold.update(ctx, action, step.feedback)
    assert len(set(offered)) > 1  # random, not the deterministic first-round choice
    np.testing.assert_array_equal(warm.theta, cold.theta)  # same data, same estimate
    if (
        name == "ucb-mnl"
    ):  # deterministic after the warm-up: the same rule as without it
        ctx = env.context()
        assert warm.act(ctx) == cold.act(ctx)
    with pytest.raises(ValueError, match="warmup"):
        bk.make_policy(name, warmup=-1)


def test_assortment_actions_are_still_validated_and_normalised():
    """AssortmentPolicy's fast accept only takes normalised sets; the rest is checked."""
    policy = bk.make_policy("ucb-mnl")
    ctx = Context(arms=np.eye(5), max_size=3)
    assert policy._check_action((0, 2, 4), ctx) == (0, 2, 4)
    assert policy._check_action([4, np.int64(0)], ctx) == (0, 4)
    assert policy._check_action((3, 1), ctx) == (1, 3)
    for bad in [(), (1, 1), (0, 1, 2, 3), (0, 5), (-1, 2), (True, 2), (0.0, 1)]:
        with pytest.raises(ValueError, match="action"):
            policy._check_action(bad, ctx)


@pytest.mark.parametrize("name", ["ucb-mnl", "ts-mnl"])
def test_warmup_enters_params_only_when_set(name):
    """warmup=0 (the default) keeps the run ids of runs stored before the option existed."""
    assert "warmup" not in bk.make_policy(name).get_params()
    params = bk.make_policy(name, warmup=5).get_params()
    assert params["warmup"] == 5
    assert bk.make_policy(name, **params).warmup == 5
