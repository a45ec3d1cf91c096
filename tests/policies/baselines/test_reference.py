"""Uniform play and the oracle, in every family."""

import itertools
from collections import Counter

import numpy as np
import pytest

import banditkit as bk
from banditkit.core import Context
from banditkit.testing import scripted_env

REFERENCES = {
    "contextual": ("random", "oracle"),
    "dueling": ("random-duel", "oracle-duel"),
    "assortment": ("random-assortment", "oracle-assortment"),
}


@pytest.mark.parametrize("family", list(REFERENCES))
def test_every_family_has_uniform_play_and_an_oracle(family):
    assert set(REFERENCES[family]) <= set(bk.list_policies(family))


@pytest.mark.parametrize("family", list(REFERENCES))
def test_oracle_has_zero_regret_and_uniform_play_does_not(family):
    random_name, oracle_name = REFERENCES[family]
    env = scripted_env(family, n_arms=5, d=3)
    oracle = bk.simulate(bk.make_policy(oracle_name), env, 60, seed=1)
    uniform = bk.simulate(bk.make_policy(random_name), env, 60, seed=1)
    assert oracle.cumulative_regret[-1] == 0.0
    assert uniform.cumulative_regret[-1] > 1.0


def test_oracle_refuses_an_environment_of_another_family():
    with pytest.raises(ValueError, match="env is of the dueling family"):
        bk.make_policy("oracle").attach(scripted_env("dueling"))


def test_oracle_without_environment_says_so():
    with pytest.raises(RuntimeError, match="attach"):
        bk.make_policy("oracle-assortment").act(Context(arms=np.eye(3)))


def test_random_assortment_is_uniform_over_feasible_sets():
    policy = bk.make_policy("random-assortment", seed=0)
    ctx = Context(arms=np.eye(4), max_size=2)
    feasible = [c for s in (1, 2) for c in itertools.combinations(range(4), s)]
    counts = Counter(policy.act(ctx) for _ in range(5000))
    assert set(counts) == set(feasible)
    freq = np.array([counts[c] for c in feasible]) / 5000
    np.testing.assert_allclose(freq, 1 / len(feasible), atol=0.02)
    assert policy.last_propensity == pytest.approx(1 / len(feasible))


def test_random_assortment_without_capacity_may_offer_everything():
    policy = bk.make_policy("random-assortment", seed=0)
    sizes = {len(policy.act(Context(arms=np.eye(3)))) for _ in range(200)}
    assert sizes == {1, 2, 3}
    assert policy.last_propensity == pytest.approx(1 / 7)


def test_random_duel_propensity():
    policy = bk.make_policy("random-duel", seed=0)
    i, j = policy.act(Context(arms=np.eye(5)))
    assert i != j and policy.last_propensity == pytest.approx(1 / 20)
    assert policy.act(Context(arms=np.ones((1, 5)))) == (0, 0)
    assert policy.last_propensity == 1.0
