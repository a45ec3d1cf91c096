import numpy as np
import pytest

import banditkit as bk
from banditkit.glm import fit_glm


def test_glm_ucb_refits_on_schedule_and_matches_batch_mle():
    env = bk.make_env("logistic", h="linear", d=4, n_arms=4)
    policy = bk.make_policy("glm-ucb", nu=0.3, lam=1.0, update_every=5, seed=0)
    run = bk.simulate(policy, env, 52, seed=1)
    assert run.n_updates[-1] == 10 and run.n_updates[4] == 1 and run.n_updates[3] == 0
    hist = policy.history
    direct = fit_glm(hist.X[:50], hist.y[:50], link="logistic", lam=1.0).theta
    np.testing.assert_allclose(policy.model.theta, direct, atol=1e-7)


def test_glm_ts_laplace_covariance():
    """Empirical covariance of the posterior draws equals nu^2 H^-1 (2e4 draws, 5 % tol)."""
    policy = bk.make_policy("glm-ts", nu=0.7, seed=0)
    bk.simulate(policy, bk.make_env("logistic", h="linear", d=3, n_arms=3), 60, seed=2)
    from banditkit.glm import glm_hessian

    m = policy.model
    h = glm_hessian(policy.history.X, m.theta, link="logistic", lam=1.0)
    rng = np.random.default_rng(0)
    draws = np.stack([m.sample_theta(rng, 0.7, policy.history) for _ in range(20000)])
    np.testing.assert_allclose(
        draws.mean(0), m.theta, atol=0.05 * np.sqrt(np.diag(h) ** -1).max()
    )
    cov = np.cov(draws.T)
    target = 0.49 * np.linalg.inv(h)
    assert np.abs(cov - target).max() < 0.05 * np.abs(target).max()


@pytest.mark.parametrize("name", ["glm-ucb", "glm-ts"])
def test_glm_default_refits_every_10_rounds(name):
    """The default cadence refits after every 10th observation (update_every=1 opts out)."""
    env = bk.make_env("logistic", h="h1", d=4, n_arms=3)
    policy = bk.make_policy(name, seed=0)
    bk.simulate(policy, env, 55, seed=0)
    assert policy.update_every == 10
    assert policy.n_updates == 5
    every_round = bk.make_policy(name, update_every=1, seed=0)
    bk.simulate(every_round, env, 55, seed=0)
    assert every_round.n_updates == 55
