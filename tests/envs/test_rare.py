"""The rare-update environments: laws, scaling, common random numbers."""

import numpy as np
import pytest
from scipy import stats

import banditkit as bk
from banditkit.envs.rare import RARE_LAWS


@pytest.mark.parametrize("law", list(RARE_LAWS))
def test_arms_and_theta_are_unit_norm_by_default(law):
    env = bk.make_env("rare-linear", n_arms=50, d=4, law=law)
    env.reset(0)
    arms = env.context().arms
    np.testing.assert_allclose(np.linalg.norm(arms, axis=1), 1.0)
    assert np.linalg.norm(env.theta) == pytest.approx(1.0)
    if law in ("uniform", "beta", "exponential"):
        assert np.all(arms >= 0.0)  # nonnegative laws stay nonnegative


def test_laws_have_their_moments_before_scaling():
    rng = np.random.default_rng(0)
    n = 200_000
    assert RARE_LAWS["uniform"](rng, n, 1, 1.5).mean() == pytest.approx(0.5, abs=0.01)
    assert RARE_LAWS["laplace"](rng, n, 1, 1.5).var() == pytest.approx(1.0, abs=0.03)
    assert RARE_LAWS["beta"](rng, n, 1, 1.5).mean() == pytest.approx(0.5, abs=0.01)
    assert RARE_LAWS["exponential"](rng, n, 1, 1.5).mean() == pytest.approx(
        1.0, abs=0.02
    )
    t = RARE_LAWS["student-t"](rng, n, 1, 1.5)
    assert np.median(np.abs(t)) == pytest.approx(stats.t(1.5).ppf(0.75), abs=0.02)


def test_normalize_options():
    env = bk.make_env(
        "rare-linear", n_arms=5, d=4, law="normal", normalize="none", S=None
    )
    env.reset(1)
    raw = env.context().arms
    assert not np.allclose(np.linalg.norm(raw, axis=1), 1.0)
    with pytest.raises(ValueError, match="normalize"):
        bk.make_env("rare-linear", normalize="l1")
    with pytest.raises(ValueError, match="law"):
        bk.make_env("rare-linear", law="cauchy")


@pytest.mark.parametrize("name", ["rare-linear", "rare-logistic"])
def test_common_random_numbers_across_actions(name):
    env = bk.make_env(name, n_arms=6, d=3)
    seen = []
    for actions in ([0] * 20, list(range(6)) * 3 + [1, 2]):
        env.reset(7)
        arms, rewards = [], []
        for a in actions:
            arms.append(env.context().arms)
            step = env.step(a)
            rewards.append(step.reward)
        seen.append((np.array(arms), np.array(rewards), actions))
    np.testing.assert_array_equal(seen[0][0], seen[1][0])  # same contexts
    # the same arm in the same round gets the same reward whatever was played before
    same = [t for t in range(20) if seen[0][2][t] == seen[1][2][t]]
    assert same
    np.testing.assert_array_equal(seen[0][1][same], seen[1][1][same])


def test_logistic_regret_is_the_pseudo_regret():
    env = bk.make_env("rare-logistic", n_arms=4, d=2)
    env.reset(0)
    ctx = env.context()
    mu = 1 / (1 + np.exp(-ctx.arms @ env.theta))
    step = env.step(0)
    assert step.regret == pytest.approx(mu.max() - mu[0])
    assert env.kappa(n=2000) >= 4.0  # 1 / mu'(z) >= 4
