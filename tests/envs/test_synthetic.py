import numpy as np
import pytest
from scipy.special import expit

import banditkit as bk
from banditkit.envs.latent import make_latent
from banditkit.envs.laws import sample_contexts


@pytest.mark.parametrize(
    "law", ["uniform", "normal", "unit-sphere", "unit-ball", "symmetrized"]
)
def test_laws_shapes_and_support(law):
    x = sample_contexts(np.random.default_rng(0), law, 500, 6)
    assert x.shape == (500, 6)
    if law == "uniform":
        assert x.min() >= -1 and x.max() <= 1
    if law in ("unit-sphere", "symmetrized"):
        np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0)
    if law == "unit-ball":
        assert np.linalg.norm(x, axis=1).max() <= 1.0
    if law == "symmetrized":
        np.testing.assert_array_equal(x[:, :3], x[:, 3:])


def test_unit_ball_is_uniform_in_the_ball():
    # Uniform in the d-ball: P(||x|| <= r) = r^d, so ||x||^d ~ Unif(0, 1), and the
    # direction is uniform on the sphere (mean zero, covariance I / d).
    d, n = 5, 40_000
    x = sample_contexts(np.random.default_rng(1), "unit-ball", n, d)
    r = np.linalg.norm(x, axis=1)
    u = np.sort(r**d)
    assert np.abs(u - np.arange(1, n + 1) / n).max() < 0.01  # Kolmogorov distance
    direction = x / r[:, None]
    np.testing.assert_allclose(direction.mean(axis=0), 0.0, atol=0.02)
    np.testing.assert_allclose(direction.T @ direction / n, np.eye(d) / d, atol=0.01)


def test_unit_ball_radius_follows_the_direction_draw():
    # Same stream: directions first (as for "unit-sphere"), then one radius per row.
    d = 4
    x = sample_contexts(np.random.default_rng(2), "unit-ball", 3, d)
    rng = np.random.default_rng(2)
    z = rng.standard_normal((3, d))
    radius = rng.random(3) ** (1.0 / d)
    expected = z / np.linalg.norm(z, axis=1, keepdims=True) * radius[:, None]
    np.testing.assert_allclose(x, expected, rtol=1e-15)


def test_fixed_theta_for_the_linear_latent():
    d = 20
    c = 4.0 / np.sqrt(d)
    env = bk.make_env("logistic", h="linear", d=d, n_arms=5, law="unit-ball", theta=c)
    assert env.get_params()["theta"] == pytest.approx(c)
    for seed in (0, 1):
        env.reset(seed)
        ctx = env.context()
        np.testing.assert_allclose(
            env.expected_rewards(), expit(ctx.arms @ np.full(d, c)), rtol=1e-14
        )
    # A fixed theta leaves the rest of the instance stream (here: the pool) unchanged.
    free = bk.make_env("logistic", h="h1", d=3, n_arms=2, pool=4)
    fixed = bk.make_env("logistic", h="h1", d=3, n_arms=2, pool=4, theta=[1, 2, 3])
    free.reset(7), fixed.reset(7)
    np.testing.assert_array_equal(free.context().arms, fixed.context().arms)
    np.testing.assert_allclose(
        fixed.expected_rewards(),
        expit(0.2 * (fixed.current.arms @ np.array([1.0, 2.0, 3.0])) ** 4),
    )


def test_fixed_theta_in_make_latent():
    f = make_latent("h2", 3, np.random.default_rng(0), theta=[0.5, 0.0, -1.0])
    x = np.array([[1.0, 2.0, 3.0]])
    np.testing.assert_allclose(f(x), 20 * np.cos([0.5 - 3.0]))
    with pytest.raises(ValueError, match="d=3 entries; got 2"):
        make_latent("h1", 3, np.random.default_rng(0), theta=[1.0, 2.0])


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"h": "h3", "theta": 1.0}, ValueError, "can only be fixed"),
        ({"h": "h5", "theta": 1.0}, ValueError, "can only be fixed"),
        ({"h": lambda x: x[:, 0], "theta": 1.0}, ValueError, "can only be fixed"),
        ({"h": "linear", "theta": float("nan")}, ValueError, "theta must be a float"),
        ({"h": "linear", "theta": [1.0, np.inf]}, ValueError, "theta contains inf"),
        ({"h": "linear", "theta": "1"}, TypeError, "theta must be a float"),
        ({"h": "linear", "theta": [1.0, 2.0, 3.0]}, ValueError, "d=2 entries"),
        ({"h": "linear", "theta": [[1.0, 2.0]]}, ValueError, "1-d array"),
    ],
)
def test_bad_theta(kwargs, error, match):
    with pytest.raises(error, match=match):
        bk.make_env("logistic", d=2, n_arms=2, **kwargs)


def test_symmetrized_needs_even_d():
    with pytest.raises(ValueError, match="even d"):
        sample_contexts(np.random.default_rng(0), "symmetrized", 2, 5)


def test_latent_functions_match_formulas():
    d = 4
    # make_latent draws theta, then Theta, from the instance stream.
    rng = np.random.default_rng(3)
    theta = rng.uniform(-1, 1, size=d)
    theta_mat = rng.uniform(-1, 1, size=(d, d))
    x = np.random.default_rng(9).uniform(-1, 1, size=(5, d))
    expected = {
        "h1": 0.2 * (x @ theta) ** 4,
        "h2": 20 * np.cos(x @ theta),
        "h3": 5 * np.array([xi @ theta_mat @ xi for xi in x]),
        "h4": 10 * (x @ theta) ** 2,
        "h5": np.array([xi @ theta_mat.T @ theta_mat @ xi for xi in x]),
        "h6": np.cos(3 * (x @ theta)),
        "linear": x @ theta,
    }
    for name, value in expected.items():
        f = make_latent(name, d, np.random.default_rng(3))
        np.testing.assert_allclose(f(x), value, rtol=1e-12, err_msg=name)


def test_user_callable_latent_and_its_errors():
    env = bk.make_env("logistic", h=lambda x: x.sum(axis=1), d=3, n_arms=4)
    env.reset(0)
    ctx = env.context()
    np.testing.assert_allclose(env.expected_rewards(), expit(ctx.arms.sum(axis=1)))
    bad = bk.make_env("logistic", h=lambda x: x, d=3, n_arms=4)
    with pytest.raises(ValueError, match=r"shape \(K,\)"):
        bad.reset(0)
        bad.context()


def test_regret_is_gap_of_expected_rewards():
    env = bk.make_env("logistic", h="h2", d=5, n_arms=6)
    env.reset(4)
    env.context()
    mu = env.expected_rewards()
    step = env.step(2)
    assert step.regret == pytest.approx(mu.max() - mu[2])
    assert step.reward in (0.0, 1.0) and step.feedback == step.reward


def test_bernoulli_rewards_have_the_right_mean():
    """Arm with mean mu played 4000 times: sd of the average <= 0.008; tolerance 0.035."""
    env = bk.make_env("logistic", h="h6", d=3, n_arms=2, pool=2)
    env.reset(0)
    rewards, means = [], []
    for _ in range(4000):
        env.context()
        means.append(env.expected_rewards()[0])
        rewards.append(env.step(0).reward)
    assert abs(np.mean(rewards) - np.mean(means)) < 0.035


def test_pool_limits_distinct_vectors_and_permutation_uses_each_once():
    env = bk.make_env("logistic", h="h1", d=4, n_arms=5, pool=10)
    env.reset(0)
    seen = np.concatenate([env.context().arms for _ in range(50)])
    assert len(np.unique(seen, axis=0)) == 10
    env = bk.make_env("logistic", d=4, n_arms=5, pool=100, pool_sampling="permutation")
    env.reset(0)
    rows = np.concatenate([env.context().arms for _ in range(20)])
    assert len(np.unique(rows, axis=0)) == 100
    with pytest.raises(ValueError, match="pool"):
        bk.make_env("logistic", n_arms=5, pool=3)


def test_instance_redrawn_per_seed_but_fixed_within():
    env = bk.make_env("linear", d=3)
    env.reset(0)
    t0 = env.theta.copy()
    env.reset(0)
    np.testing.assert_array_equal(t0, env.theta)
    env.reset(1)
    assert not np.array_equal(t0, env.theta)
    assert np.linalg.norm(t0) == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"d": 0}, "d must be"),
        ({"n_arms": 0}, "n_arms"),
        ({"law": "gaussian"}, "law"),
        ({"h": "h7"}, "Did you mean"),
    ],
)
def test_bad_env_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        bk.make_env("logistic", **kwargs)
