"""BLCE-G, BLCE, BGLE and the baselines against independent computations."""

import math

import numpy as np
import pytest
from scipy.optimize import minimize

import banditkit as bk
from banditkit.core import Context
from banditkit.linalg import g_optimal_design
from banditkit.policies.rare import (
    BGLE,
    BLCE,
    BLCEG,
    RSOFUL,
    BGLinCB,
    bglincb_warmup,
    update_grid,
)
from banditkit.policies.rare.base import blce_widths, cascade


def _arms(rng, K, d):
    X = rng.standard_normal((K, d))
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def _drive(policy, T, K, d, theta, seed=0, noise=1.0, rewards=None):
    """Play T rounds; return the contexts, actions and the estimates seen before each act."""
    rng = np.random.default_rng(seed)
    policy.begin(T)
    ctxs, actions, seen = [], [], []
    for t in range(T):
        ctx = Context(arms=_arms(rng, K, d))
        a = policy.act(ctx)
        seen.append(len(getattr(policy, "thetas", [])))
        x = ctx.arms[a]
        r = (
            float(x @ theta + noise * rng.standard_normal())
            if rewards is None
            else rewards[t]
        )
        policy.update(ctx, a, r)
        ctxs.append(ctx)
        actions.append(a)
    return ctxs, actions, seen


def test_widths_match_the_derived_values():
    # (K, d) = (1000, 5), T = 10^4, B = 8: beta_1 / beta_2 for BLCE-G (lam = ln dT) and BLCE
    T = 10_000
    g = blce_widths(5, 8, T, math.log(5 * T))
    assert round(g(1000), 2) == 10.68 and round(g(10**100), 2) == 17.81
    b = blce_widths(5, 8, T, 1.0)
    assert round(b(1000), 2) == 8.39 and round(b(10**100), 2) == 13.24
    b30 = blce_widths(30, 8, T, 1.0)
    assert round(b30(10**100), 2) == 18.69  # beta_2 at d = 30 (log space, no overflow)


def test_interval_estimate_is_the_direct_ridge_and_nothing_changes_inside():
    d, K, T = 3, 6, 120
    theta = np.array([0.6, -0.8, 0.0])
    policy = BLCE()
    ctxs, actions, _ = _drive(policy, T, K, d, theta, noise=0.5)
    grid = policy.update_times
    assert policy.n_updates == len(grid) == len(policy.thetas)
    # recompute every interval's ridge from the played arms and the same rewards
    rng = np.random.default_rng(0)
    rewards = []
    for t in range(T):
        _arms(rng, K, d)
        rewards.append(
            float(ctxs[t].arms[actions[t]] @ theta + 0.5 * rng.standard_normal())
        )
    start = 0
    for ell, end in enumerate(grid):
        X = np.array([ctxs[t].arms[actions[t]] for t in range(start, end)])
        r = np.array(rewards[start:end])
        V = np.eye(d) + X.T @ X
        np.testing.assert_allclose(
            policy.thetas[ell], np.linalg.inv(V) @ X.T @ r, atol=1e-10
        )
        np.testing.assert_allclose(policy.inverses[ell], np.linalg.inv(V), atol=1e-10)
        start = end


def test_rewards_inside_an_interval_are_not_read_before_its_end():
    d, K, T = 3, 8, 200
    policy = BLCE()
    policy.begin(T)
    rng = np.random.default_rng(4)
    ctxs = [Context(arms=_arms(rng, K, d)) for _ in range(T)]
    grid = BLCE()
    grid.begin(T)
    grid.act(ctxs[0])
    ends = grid.update_times
    # two runs share everything up to T_2 and differ in the rewards of interval 3
    base = rng.standard_normal(T)
    other = base.copy()
    other[ends[1] : ends[2]] += 5.0
    runs = []
    for rewards in (base, other):
        p = BLCE()
        p.begin(T)
        acts = []
        for t in range(T):
            a = p.act(ctxs[t])
            acts.append(a)
            p.update(ctxs[t], a, float(rewards[t]))
        runs.append(acts)
    assert runs[0][: ends[2]] == runs[1][: ends[2]]  # identical until interval 3 ends
    assert runs[0][ends[2] :] != runs[1][ends[2] :]


def test_within_interval_gram_is_the_direct_inverse():
    d, K = 4, 10
    policy = BLCEG()
    rng = np.random.default_rng(1)
    policy.begin(500)
    pulled, skipped = [], 0
    for t in range(200):
        ctx = Context(arms=_arms(rng, K, d))
        a = policy.act(ctx)
        policy.update(ctx, a, 0.0)
        # the pulls from the last exploration round of an interval on are not read
        # before the interval ends, and skipped
        if policy._gram_read(t + 1):
            pulled.append(ctx.arms[a])
        else:
            skipped += 1
        if t + 1 in policy.update_times:
            pulled = []
    assert skipped > 0 and len(pulled) > 0
    X = np.array(pulled)
    direct = np.linalg.inv(policy.lam_value * np.eye(d) + X.T @ X)
    np.testing.assert_allclose(policy.H.inverse, direct, atol=1e-10)


def test_elimination_never_removes_the_best_arm_on_noiseless_instances():
    rng = np.random.default_rng(2)
    for d, K in ((3, 50), (5, 200)):
        theta = rng.standard_normal(d)
        theta /= np.linalg.norm(theta)
        policy = BLCE()
        _drive(policy, 2000, K, d, theta, seed=d, noise=0.0)
        beta = blce_widths(d, policy.n_intervals, 2000, 1.0)
        for _ in range(300):
            arms = _arms(rng, K, d)
            alive = cascade(arms, policy.thetas, policy.inverses, beta)
            assert int(np.argmax(arms @ theta)) in alive
        # with the true parameter and a tight V, only near-optimal arms survive
        tight = [np.eye(d) * 1e-8] * 3
        arms = _arms(rng, K, d)
        alive = cascade(arms, [theta] * 3, tight, beta)
        assert int(np.argmax(arms @ theta)) in alive and alive.size < K


@pytest.mark.parametrize("shape", [(1, 4), (3, 5), (40, 5), (200, 3)])
def test_near_g_design_reaches_twice_the_rank(shape):
    rng = np.random.default_rng(3)
    n, d = shape
    X = rng.standard_normal((n, d))
    if n > 3:
        X[:, -1] = X[:, 0]  # rank-deficient
    pi = g_optimal_design(X, factor=2.0)
    rank = np.linalg.matrix_rank(X)
    A = (X.T * pi) @ X
    leverage = np.einsum("ij,jk,ik->i", X, np.linalg.pinv(A), X)
    assert leverage.max() <= 2 * rank + 1e-8


def test_blce_g_plays_the_design_then_uncertainty_then_greedy():
    policy = BLCEG()
    rng = np.random.default_rng(5)
    policy.begin(10_000)
    phases = []
    for _ in range(400):
        ctx = Context(arms=_arms(rng, 20, 3))
        a = policy.act(ctx)
        phases.append(policy.last_phase)
        policy.update(ctx, a, 0.0)
    assert phases[:14] == ["design"] * 14 and phases[14:28] == ["uncertainty"] * 14
    # interval 2 (rounds 29..298): 67 design, 67 uncertainty, then greedy
    assert phases[28:95] == ["design"] * 67 and phases[95:162] == ["uncertainty"] * 67
    assert set(phases[162:298]) == {"greedy"}


def test_bgle_constants_and_constrained_mle_match_scipy():
    p = BGLE()
    p.begin(10_000)
    p.act(Context(arms=np.eye(2)))
    assert round(p.beta, 1) == 167.4 and round(p.lam_value, 1) == 11.2
    rng = np.random.default_rng(6)
    X = _arms(rng, 40, 2)
    y = (rng.random(40) < 1 / (1 + np.exp(-X @ np.array([3.0, 0.0])))).astype(float)
    for x, r in zip(X, y, strict=True):
        p.buffer.append(x, r)
    theta = p._mle()

    def loss(th):
        z = X @ th
        return float(np.sum(np.logaddexp(0.0, z) - y * z))

    ref = minimize(
        loss,
        np.zeros(2),
        method="SLSQP",
        constraints=[{"type": "ineq", "fun": lambda th: 1.0 - th @ th}],
        options={"ftol": 1e-12, "maxiter": 500},
    ).x
    np.testing.assert_allclose(theta, ref, atol=1e-5)
    assert np.linalg.norm(theta) <= 1.0 + 1e-9


def test_bgle_weights_and_updates_on_a_logistic_run():
    env = bk.make_env("rare-logistic", n_arms=10, d=2)
    run = bk.simulate(BGLE(), env, 300, seed=0)
    assert run.n_updates[-1] == len(update_grid("bgle", 300))
    assert np.all(np.isfinite(run.cumulative_regret))


def test_rs_oful_switches_on_the_determinant_test():
    d, K, T = 3, 10, 300
    theta = np.array([0.0, 1.0, 0.0])
    policy = RSOFUL(C=1.0)
    ctxs, actions, _ = _drive(policy, T, K, d, theta, noise=0.1)
    # brute force: det(V_t) > 2 det(V_tau), V recomputed from scratch
    X = np.array([c.arms[a] for c, a in zip(ctxs, actions, strict=True)])
    switches, last = 0, d * math.log(1.0)
    for t in range(1, T + 1):
        logdet = np.linalg.slogdet(np.eye(d) + X[:t].T @ X[:t])[1]
        if logdet > last + math.log(2.0):
            switches, last = switches + 1, logdet
    assert policy.n_updates == switches
    assert 5 <= switches <= d * math.log(1 + T / d) / math.log(2) + 1


def test_b_glincb_stays_in_warm_up_at_the_paper_scale():
    assert bglincb_warmup(10_000, 2, kappa=1.0) == pytest.approx(2.6e5, rel=0.05)
    assert bglincb_warmup(10_000, 3, kappa=1.0) == pytest.approx(5.9e5, rel=0.05)
    p = BGLinCB()
    p.begin(10_000)
    p.act(Context(arms=np.eye(2)))
    assert p.update_times == (10_000,)
    q = BGLinCB(warmup=20)
    q.begin(200)
    q.act(Context(arms=np.eye(2)))
    assert q.update_times[0] == 20 and q.update_times[-1] == 200


@pytest.mark.parametrize("cls", [BLCE, BLCEG, BGLE])
def test_no_estimate_changes_inside_an_interval(cls):
    policy = cls()
    rng = np.random.default_rng(8)
    T = 150
    policy.begin(T)
    snapshots = []
    for _ in range(T):
        ctx = Context(arms=_arms(rng, 6, 3))
        a = policy.act(ctx)
        policy.update(ctx, a, float(rng.random() < 0.5))
        snapshots.append([th.copy() for th in policy.thetas])
    changes = [
        t + 1
        for t in range(1, T)
        if len(snapshots[t]) != len(snapshots[t - 1])
        or any(
            not np.array_equal(a, b)
            for a, b in zip(snapshots[t], snapshots[t - 1], strict=False)
        )
    ]
    assert changes == list(policy.update_times)  # only at the grid's end points
    assert policy.n_updates == len(policy.update_times)


def test_past_the_horizon_the_policy_is_greedy_and_frozen():
    policy = BLCE()
    theta = np.array([1.0, 0.0, 0.0])
    _drive(policy, 40, 5, 3, theta, noise=0.1)
    frozen = [th.copy() for th in policy.thetas]
    rng = np.random.default_rng(9)
    for _ in range(5):
        ctx = Context(arms=_arms(rng, 5, 3))
        a = policy.act(ctx)
        assert a == int(np.argmax(ctx.arms @ frozen[-1]))
        policy.update(ctx, a, 1.0)
    assert policy.n_updates == len(policy.update_times)
    assert all(np.array_equal(a, b) for a, b in zip(policy.thetas, frozen, strict=True))
