"""The ``mnl`` environment: utilities, choice draws, exact optimum and regret."""

import itertools

import numpy as np
import pytest

import banditkit as bk


def best_by_brute_force(u, r, capacity):
    best = 0.0
    for k in range(1, capacity + 1):
        for S in itertools.combinations(range(len(u)), k):
            v = np.exp(u[list(S)])
            best = max(best, float(v @ r[list(S)] / (1 + v.sum())))
    return best


@pytest.mark.parametrize("revenues", ["uniform", "item"])
def test_oracle_has_zero_regret_and_regret_is_the_revenue_gap(revenues):
    env = bk.make_env("mnl", d=3, n_items=8, capacity=3, revenues=revenues)
    run = bk.simulate(bk.make_policy("oracle-assortment"), env, horizon=30, seed=1)
    assert np.all(run.regret == 0.0)
    env.reset(2)
    rng = np.random.default_rng(0)
    for _ in range(20):
        ctx = env.context()
        r = np.ones(8) if ctx.revenues is None else ctx.revenues
        u = env.utility(ctx.arms)
        offer = tuple(
            sorted(rng.choice(8, size=int(rng.integers(1, 4)), replace=False))
        )
        v = np.exp(u[list(offer)])
        expected = float(v @ r[list(offer)] / (1 + v.sum()))
        step = env.step(offer)
        assert step.values["revenue"] == pytest.approx(expected, rel=1e-12)
        assert step.regret == pytest.approx(
            best_by_brute_force(u, r, 3) - expected, abs=1e-12
        )
        assert step.feedback in (*offer, -1) and step.values["chosen"] == step.feedback


def test_choices_follow_the_mnl_probabilities():
    env = bk.make_env("mnl", d=2, n_items=4, capacity=2)
    env.reset(0)
    expected = np.zeros(3)  # outside option, first item, second item
    counts = np.zeros(3)
    for _ in range(3000):
        ctx = env.context()
        v = np.exp(env.utility(ctx.arms[[0, 1]]))
        expected += np.concatenate([[1.0], v]) / (1 + v.sum())
        counts[[-1, 0, 1].index(env.step((0, 1)).feedback)] += 1
    # within 4 standard deviations of a multinomial count
    assert np.all(np.abs(counts - expected) < 4 * np.sqrt(expected))


def test_utilities_follow_their_formulas():
    env = bk.make_env("mnl", utility="realizable", d=3, width=4, n_items=5)
    env.reset(3)
    P = env.params
    assert all(np.all(np.abs(v) <= 1) for v in P.values()) and P["W"].shape == (4, 3)
    x = env.context().arms
    by_hand = [
        sum(P["a"][j] / (1 + np.exp(-(P["W"][j] @ xi + P["b"][j]))) for j in range(4))
        + P["c"][0]
        for xi in x
    ]
    np.testing.assert_allclose(env.utility(x), by_hand, rtol=1e-12)
    mis = bk.make_env("mnl", utility="misspecified", features="uniform", d=3)
    mis.reset(0)
    x = mis.context().arms
    s = x @ mis.params["w"]
    np.testing.assert_allclose(mis.utility(x), np.cos(2 * np.pi * s) - s / 2)
    assert x.shape == (100, 3) and np.abs(x).max() <= 3 and np.abs(x).max() > 2
    assert mis.label == "mnl-misspecified-uniform"
    assert mis.get_params()["utility"] == "misspecified"


def test_same_seed_same_items_for_every_policy():
    env = bk.make_env("mnl", d=2, n_items=10, capacity=2)
    a = bk.simulate(bk.make_policy("random-assortment", seed=0), env, horizon=5, seed=4)
    b = bk.simulate(bk.make_policy("ucb-mnl"), env, horizon=5, seed=4)
    env.reset(4)
    first = env.context().arms
    env.reset(4)
    np.testing.assert_array_equal(env.context().arms, first)
    assert a.regret.shape == b.regret.shape == (5,)


def test_bad_parameters_name_the_argument():
    for bad in (
        {"utility": "x"},
        {"features": "x"},
        {"n_items": 0},
        {"capacity": 0},
        {"revenues": "x"},
        {"d": 0},
    ):
        with pytest.raises(ValueError, match=next(iter(bad))):
            bk.make_env("mnl", **bad)


def test_linear_utility_with_clipped_features():
    env = bk.make_env("mnl", utility="linear", features="clipped-normal", d=4)
    env.reset(0)
    x = env.context().arms
    assert np.abs(x).max() <= 0.5 and np.abs(env.params["theta"]).max() <= 0.5
    np.testing.assert_allclose(env.utility(x), x @ env.params["theta"])
