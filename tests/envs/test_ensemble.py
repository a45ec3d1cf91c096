"""The nonlinear fixed-arm bandits and the UCI bandits of the ensemble experiments."""

from __future__ import annotations

import os

import numpy as np
import pytest
from scipy.special import expit

from banditkit.envs import ClassificationEnv, NonlinearEnv


@pytest.mark.parametrize("function", ["linear", "logistic", "distance", "quadratic"])
def test_nonlinear_means_noise_and_fixed_arms(function):
    env = NonlinearEnv(function=function, d=5, n_arms=7, noise_std=0.5)
    env.reset(3)
    first = env.context().arms
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0)
    assert np.linalg.norm(env.theta) == pytest.approx(1.0)
    x, th, A = first, env.theta, env.A
    expected = {
        "linear": x @ th,
        "logistic": expit(x @ th),
        "distance": -np.sqrt(((x - th) ** 2).sum(1)),
        "quadratic": 0.01 * np.einsum("kd,de,ke->k", x, A @ A.T, x),
    }[function]
    np.testing.assert_allclose(env.expected_rewards(), expected, atol=1e-12)
    noise = []
    for _ in range(400):
        arms = env.context().arms
        np.testing.assert_array_equal(arms, first)  # the arm set never changes
        k = env.best_action()
        step = env.step(k)
        assert step.regret == 0.0
        noise.append(step.feedback - expected[k])
    assert np.std(noise) == pytest.approx(0.5, rel=0.15)
    env.context()
    worst = int(np.argmin(expected))
    assert env.step(worst).regret == pytest.approx(expected.max() - expected.min())


def test_nonlinear_instances_differ_by_seed_and_options_are_checked():
    a, b = NonlinearEnv(d=4, n_arms=3), NonlinearEnv(d=4, n_arms=3)
    a.reset(0)
    b.reset(1)
    assert not np.allclose(a.context().arms, b.context().arms)
    assert NonlinearEnv(function="quadratic", d=50, n_arms=500).label == (
        "nonlinear-quadratic-d50-K500"
    )
    env = NonlinearEnv(function="logistic", noise="bernoulli", d=3, n_arms=4)
    env.reset(0)
    env.context()
    assert env.step(0).feedback in (0.0, 1.0)
    with pytest.raises(ValueError, match="noise"):
        NonlinearEnv(function="linear", noise="bernoulli")
    with pytest.raises(ValueError, match="function"):
        NonlinearEnv(function="cubic")


TABLE1 = {  # [Sun2025, Table 1]: context dimension d and classes K
    "shuttle": (9, 7, {}),
    "mushroom": (22, 2, {"categorical": "ordinal"}),
    "adult": (14, 2, {"categorical": "ordinal"}),
    "covertype": (54, 7, {}),
}


@pytest.mark.skipif(not os.environ.get("BANDITKIT_DATA"), reason="needs the datasets")
@pytest.mark.parametrize("name", list(TABLE1))
def test_uci_bandits_have_the_dimensions_of_table_1(name):
    d, K, options = TABLE1[name]
    env = ClassificationEnv(dataset=name, scale="l2", **options)
    env.reset(0)
    arms = env.context().arms
    assert arms.shape == (K, d * K)
    assert np.allclose(np.linalg.norm(arms, axis=1), 1.0)
