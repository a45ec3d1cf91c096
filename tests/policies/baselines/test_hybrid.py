"""Hybrid LinUCB [Li2010, Alg. 2] against the ridge regression it is: one joint ridge fit on the
design [z, e_a (x) x] (beta and every theta_a), solved directly."""

import numpy as np
import pytest

import banditkit as bk
from banditkit.core import Context

K, k, d = 4, 2, 3


def _rounds(n, seed, shared=False):
    rng = np.random.default_rng(seed)
    rows = rng.normal(size=(n, K, k + d))
    if shared:
        rows[:] = rows[:, :1]
    return rows, rng.integers(K, size=n), rng.normal(size=n)


def _feed(policy, rows, acts, rews):
    for t in range(rows.shape[0]):
        policy.update(Context(arms=rows[t]), int(acts[t]), float(rews[t]))
    return policy


def _joint(row, arm, n_arms):
    """phi = [z, e_arm (x) x] of the joint ridge design."""
    phi = np.zeros(k + n_arms * d)
    phi[:k] = row[:k]
    phi[k + arm * d : k + (arm + 1) * d] = row[k:]
    return phi


def _direct(rows, acts, rews, lam, n_arms=K):
    """M = lam I + sum phi phi^T and w = M^-1 sum r phi, by a dense solve."""
    p = k + n_arms * d
    M, v = lam * np.eye(p), np.zeros(p)
    for t in range(rows.shape[0]):
        phi = _joint(rows[t, acts[t]], int(acts[t]), n_arms)
        M += np.outer(phi, phi)
        v += rews[t] * phi
    return M, np.linalg.solve(M, v)


@pytest.mark.parametrize("lam", [1.0, 0.3])
def test_estimate_and_widths_equal_the_joint_ridge_regression(lam):
    rows, acts, rews = _rounds(70, 0)
    policy = _feed(
        bk.make_policy("linucb-hybrid", n_shared=k, lam=lam), rows, acts, rews
    )
    M, w = _direct(rows, acts, rews, lam)
    np.testing.assert_allclose(policy.beta, w[:k], atol=1e-10)
    np.testing.assert_allclose(policy.theta, w[k:].reshape(K, d), atol=1e-10)
    probe = np.random.default_rng(1).normal(size=(K, k + d))
    mean, width2 = policy._means_widths2(probe, False)
    Phi = np.stack([_joint(probe[a], a, K) for a in range(K)])
    np.testing.assert_allclose(mean, Phi @ w, atol=1e-10)
    np.testing.assert_allclose(
        width2, np.einsum("ki,kj,ij->k", Phi, Phi, np.linalg.inv(M)), atol=1e-10
    )
    # the four terms of [Li2010, Alg. 2, line 12], written out per arm
    A0_inv = np.linalg.inv(policy.A0)
    for a in range(K):
        z, x = probe[a, :k], probe[a, k:]
        Ai, B = policy.A_inv[a], policy.B[a]
        s = (
            z @ A0_inv @ z
            - 2 * z @ A0_inv @ B.T @ Ai @ x
            + x @ Ai @ x
            + x @ Ai @ B @ A0_inv @ B.T @ Ai @ x
        )
        np.testing.assert_allclose(width2[a], s, rtol=1e-9)


def test_action_is_the_largest_upper_confidence_bound():
    rows, acts, rews = _rounds(40, 2)
    policy = _feed(
        bk.make_policy("linucb-hybrid", n_shared=k, nu=0.7), rows, acts, rews
    )
    M, w = _direct(rows, acts, rews, 1.0)
    probe = np.random.default_rng(3).normal(size=(K, k + d))
    Phi = np.stack([_joint(probe[a], a, K) for a in range(K)])
    ucb = Phi @ w + 0.7 * np.sqrt(np.einsum("ki,ij,kj->k", Phi, np.linalg.inv(M), Phi))
    assert policy.act(Context(arms=probe)) == int(np.argmax(ucb))


def test_no_shared_features_is_disjoint_linucb():
    rows, acts, rews = _rounds(60, 4)
    hybrid = _feed(
        bk.make_policy("linucb-hybrid", n_shared=0), rows[..., k:], acts, rews
    )
    disjoint = _feed(bk.make_policy("linucb", per_arm=True), rows[..., k:], acts, rews)
    probe = np.random.default_rng(5).normal(size=(K, d))
    for got, want in zip(
        hybrid._means_widths2(probe, False),
        disjoint._means_widths2(probe, False),
        strict=True,
    ):
        np.testing.assert_allclose(got, want, atol=1e-12)


def test_removed_arm_is_marginalised_out():
    """beta keeps what it learned from the removed arm's rounds; the other arms' scores are
    exactly those before the removal, i.e. those of the joint ridge fit in which the arm
    is still modelled."""
    rows, acts, rews = _rounds(80, 6)
    policy = _feed(bk.make_policy("linucb-hybrid", n_shared=k), rows, acts, rews)
    probe = np.random.default_rng(7).normal(size=(K, k + d))
    before = policy._means_widths2(probe, False)
    A0 = policy.A0.copy()
    policy.remove_arm(1)
    keep = [0, 2, 3]
    after = policy._means_widths2(probe[keep], False)
    for b, a in zip(before, after, strict=True):
        np.testing.assert_array_equal(a, b[keep])
    np.testing.assert_array_equal(policy.A0, A0)
    assert policy.n_arms == K - 1
    assert policy.act(Context(arms=probe[keep])) in range(K - 1)


def test_added_arm_is_scored_through_beta_at_once():
    rows, acts, rews = _rounds(80, 8)
    policy = _feed(
        bk.make_policy("linucb-hybrid", n_shared=k, lam=0.5), rows, acts, rews
    )
    kept = policy.A_inv.copy()
    assert policy.add_arm() == K
    np.testing.assert_array_equal(policy.A_inv[:K], kept)
    M, w = _direct(rows, acts, rews, 0.5, n_arms=K + 1)  # arm K modelled, never played
    probe = np.random.default_rng(9).normal(size=(K + 1, k + d))
    mean, width2 = policy._means_widths2(probe, False)
    Phi = np.stack([_joint(probe[a], a, K + 1) for a in range(K + 1)])
    np.testing.assert_allclose(mean, Phi @ w, atol=1e-10)
    np.testing.assert_allclose(
        width2, np.einsum("ki,ij,kj->k", Phi, np.linalg.inv(M), Phi), atol=1e-10
    )
    assert mean[K] != 0.0  # the new arm's mean is z^T beta


@pytest.mark.parametrize("shared", [False, True])
def test_partial_fit_equals_updates_one_at_a_time(shared):
    rows, acts, rews = _rounds(30, 10, shared=shared)
    online = _feed(
        bk.make_policy("linucb-hybrid", n_shared=k, seed=1), rows, acts, rews
    )
    batch = rows[:, 0] if shared else rows
    half = bk.make_policy("linucb-hybrid", n_shared=k, seed=1)
    half.partial_fit(batch[:12], acts[:12], rews[:12], n_arms=K)
    half.partial_fit(batch[12:], acts[12:], rews[12:])
    refit = bk.make_policy("linucb-hybrid", n_shared=k, seed=1).fit(
        batch[:5], acts[:5], rews[:5], n_arms=K
    )
    refit.fit(batch, acts, rews, n_arms=K)
    want = online.state_dict()
    for policy in (half, refit):
        got = policy.state_dict()
        assert got["t"] == want["t"] == 30
        for key, value in want["state"].items():
            np.testing.assert_array_equal(got["state"][key], value)


def test_saved_and_restored_acts_the_same(tmp_path):
    rows, acts, rews = _rounds(30, 11)
    policy = _feed(
        bk.make_policy("linucb-hybrid", n_shared=k, seed=4), rows, acts, rews
    )
    policy.add_arm()
    bk.save_policy(policy, tmp_path / "hybrid.bk")
    restored = bk.load_policy(tmp_path / "hybrid.bk")
    probe = np.random.default_rng(12).normal(size=(30, K + 1, k + d))
    for arms in probe:
        ctx = Context(arms=arms)
        assert restored.act(ctx) == policy.act(ctx)


def test_hyper_parameters_are_validated():
    with pytest.raises(ValueError, match="n_shared"):
        bk.make_policy("linucb-hybrid", n_shared=-1)
    with pytest.raises(ValueError, match="nu"):
        bk.make_policy("linucb-hybrid", n_shared=1, nu=-1.0)
    policy = bk.make_policy("linucb-hybrid", n_shared=5)
    with pytest.raises(ValueError, match="n_shared"):
        policy.act(Context(arms=np.ones((3, 4))))


def test_learns_a_hybrid_problem():
    """Rewards z_a^T beta + x^T theta_a: the policy's regret is below a third of uniform
    play's."""
    rng = np.random.default_rng(13)
    beta, theta = rng.normal(size=k), rng.normal(size=(K, d))
    policy = bk.make_policy("linucb-hybrid", n_shared=k, nu=0.5, seed=0)
    regret = uniform = 0.0
    for _ in range(400):
        x = rng.normal(size=d)
        Z = rng.normal(size=(K, k))
        means = Z @ beta + theta @ x
        arms = np.hstack([Z, np.tile(x, (K, 1))])
        ctx = Context(arms=arms)
        a = policy.act(ctx)
        policy.update(ctx, a, float(means[a] + 0.1 * rng.normal()))
        regret += means.max() - means[a]
        uniform += means.max() - means.mean()
    assert regret < uniform / 3
