"""The synthetic dueling environment [Oh2025, App. E.1.1]."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit, ndtr

import banditkit as bk
from banditkit.envs.dueling import DuelingEnv


@pytest.mark.parametrize("utility", ["cos", "square", "quadratic", "quadratic-vector"])
def test_utilities_by_hand(utility):
    env = DuelingEnv(utility=utility, d=4, n_arms=6)
    env.reset(3)
    ctx = env.context()
    X, theta = ctx.arms, env.theta
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0)  # Listing 1
    expected = {
        "cos": lambda: np.cos(3 * X @ theta),
        "square": lambda: 10 * (X @ theta) ** 2,
        "quadratic": lambda: np.array([x @ theta.T @ theta @ x for x in X]),
        "quadratic-vector": lambda: np.array(
            [x @ np.outer(theta, theta) @ x for x in X]
        ),
    }[utility]()
    np.testing.assert_allclose(env.utilities(), expected, rtol=1e-12)
    assert theta.shape == ((4, 4) if utility == "quadratic" else (4,))
    assert np.all(np.abs(theta) <= 1.0)


def test_regrets_and_preferences():
    env = DuelingEnv(utility="square", d=5, n_arms=5)
    env.reset(0)
    env.context()
    u = env.utilities()
    i, j = int(np.argmin(u)), int(np.argmax(u))
    assert env.preference_probability(i, j) == pytest.approx(expit(u[i] - u[j]))
    step = env.step((i, j))
    assert step.regret == pytest.approx((2 * u.max() - u[i] - u[j]) / 2)
    assert step.values["weak_regret"] == 0.0
    assert step.values["strong_regret"] == pytest.approx(u.max() - u.min())
    env.context()
    thurstone = DuelingEnv(utility="square", link="thurstone")
    thurstone.reset(0)
    thurstone.context()
    v = thurstone.utilities()
    assert thurstone.preference_probability(0, 1) == pytest.approx(ndtr(v[0] - v[1]))


def test_oracle_pair_has_zero_average_regret():
    env = DuelingEnv(utility="cos", d=5, n_arms=5)
    run = bk.simulate(bk.make_policy("oracle-duel"), env, horizon=50, seed=1)
    assert np.all(run.regret == 0.0)
    assert np.all(run.column("weak_regret") == 0.0)


def test_common_random_numbers_across_policies():
    env = DuelingEnv(utility="square", d=3, n_arms=4)
    contexts = []
    for _ in range(2):
        env.reset(7)
        contexts.append(np.stack([env.context().arms for _ in range(5)]))
    np.testing.assert_array_equal(contexts[0], contexts[1])


def test_bad_arguments():
    with pytest.raises(ValueError, match="n_arms"):
        DuelingEnv(n_arms=1)
    with pytest.raises(ValueError, match="utility"):
        DuelingEnv(utility="cube")
    with pytest.raises(ValueError, match="link"):
        DuelingEnv(link="cauchy")
    env = DuelingEnv(n_arms=3)
    env.reset(0)
    env.context()
    with pytest.raises(ValueError, match="action"):
        env.step((0, 3))


def test_registered_with_its_label():
    env = bk.make_env("dueling", utility="quadratic", d=20, n_arms=5)
    assert env.family == "dueling" and env.label == "dueling-quadratic-d20-K5"


def test_classification_ties_coin_or_index():
    from banditkit.envs.dueling_classification import DuelingClassificationEnv

    for ties in ("coin", "index"):
        env = DuelingClassificationEnv(
            dataset="digits", pool=20, preference="deterministic", ties=ties
        )
        env.reset(0)
        env.context()
        y = env.best_action()[0]
        wrong = sorted(k for k in range(env.n_arms) if k != y)[:2]
        lo, hi = wrong
        assert env.preference_probability(y, lo) == 1.0
        assert env.preference_probability(lo, y) == 0.0
        assert env.preference_probability(lo, lo) == 0.5
        tie = (1.0, 0.0) if ties == "index" else (0.5, 0.5)
        assert (
            env.preference_probability(hi, lo),
            env.preference_probability(lo, hi),
        ) == tie
    with pytest.raises(ValueError, match="ties"):
        DuelingClassificationEnv(dataset="digits", pool=20, ties="random")
