"""Per-arm GLM-UCB / GLM-TS: the per-arm MLEs against the block-encoded model, the Laplace
draw, arms that come and go and batch fits with Bernoulli rewards."""

import numpy as np
import pytest

import banditkit as bk
from banditkit.core import Context
from banditkit.envs.classification import encode_arms
from banditkit.glm import glm_hessian

K, D = 4, 3


def _play(policy, rng, theta, T, *, shared=True, forced=K):
    actions = []
    for t in range(T):
        x = rng.normal(size=D)
        ctx = (
            Context.from_shared(x, n_arms=K)
            if shared
            else Context(arms=encode_arms(x, K))
        )
        a = t % K if t < forced else policy.act(ctx)
        policy.update(ctx, a, float(rng.random() < 1 / (1 + np.exp(-theta[a] @ x))))
        actions.append(a)
    return actions


def test_glm_ucb_per_arm_equals_block_encoded():
    theta = 2 * np.random.default_rng(0).normal(size=(K, D))
    per = bk.make_policy("glm-ucb", per_arm=True, nu=0.5, seed=3)
    blk = bk.make_policy("glm-ucb", nu=0.5, seed=3)
    a1 = _play(per, np.random.default_rng(1), theta, 300)
    a2 = _play(blk, np.random.default_rng(1), theta, 300, shared=False)
    assert a1 == a2 and len(set(a1[K:])) > 1
    np.testing.assert_allclose(per.theta, blk.model.theta.reshape(K, D), atol=1e-8)
    assert per.n_updates == blk.n_updates == 30


def test_glm_ts_draws_from_the_per_arm_laplace_posterior():
    theta = 2 * np.random.default_rng(0).normal(size=(K, D))
    policy = bk.make_policy("glm-ts", per_arm=True, nu=0.7, update_every=1, seed=2)
    _play(policy, np.random.default_rng(4), theta, 120)
    for a in range(K):
        X = policy.rows[policy.row_arms == a]
        H = glm_hessian(X, policy.theta[a], link="logistic", lam=1.0)
        np.testing.assert_allclose(policy.H_inv[a], np.linalg.inv(H), atol=1e-10)
    x = np.random.default_rng(5).normal(size=D)
    twin = np.random.default_rng()
    twin.bit_generator.state = policy.rng.bit_generator.state
    sd = np.sqrt([x @ policy.H_inv[a] @ x for a in range(K)])
    expected = int(np.argmax(policy.theta @ x + 0.7 * sd * twin.standard_normal(K)))
    assert policy.act(Context.from_shared(x, n_arms=K)) == expected


def _logs(n, seed):
    rng = np.random.default_rng(seed)
    return (
        rng.normal(size=(n, D)),
        rng.integers(K, size=n),
        (rng.random(size=n) < 0.4).astype(float),
    )


@pytest.mark.parametrize("name", ["glm-ucb", "glm-ts"])
def test_batch_fit_and_removed_arm(name):
    X, acts, rews = _logs(95, 0)
    online = bk.make_policy(name, per_arm=True, update_every=7)
    for t in range(95):
        online.update(Context.from_shared(X[t], n_arms=K), int(acts[t]), rews[t])
    batch = bk.make_policy(name, per_arm=True, update_every=7)
    batch.partial_fit(X[:40], acts[:40], rews[:40], n_arms=K).partial_fit(
        X[40:], acts[40:], rews[40:]
    )
    expected, got = online.state_dict(), batch.state_dict()
    assert got["n_updates"] == expected["n_updates"] == 95 // 7
    for key, value in expected["state"].items():
        np.testing.assert_array_equal(got["state"][key], value)
    # removing arm 2 leaves the policy that never had it (refits every round: no pending rows)
    full = bk.make_policy(name, per_arm=True, update_every=1).fit(
        X, acts, rews, n_arms=K
    )
    full.remove_arm(2)
    keep = acts != 2
    never = bk.make_policy(name, per_arm=True, update_every=1).fit(
        X[keep], acts[keep] - (acts[keep] > 2), rews[keep], n_arms=K - 1
    )
    for key, value in never.state_dict()["state"].items():
        np.testing.assert_array_equal(full.state_dict()["state"][key], value)
    assert full.add_arm() == K - 1 and full.theta.shape == (K, D)
    with pytest.raises(ValueError, match="feedback"):
        full.partial_fit(X[:2], acts[:2], np.array([0.0, 2.0]))
