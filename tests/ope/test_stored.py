"""Off-policy logs from banditkit's own stored runs (``ope.log_from_runs``)."""

from __future__ import annotations

import numpy as np
import pytest

import banditkit as bk
from banditkit import ope

HORIZON = 40
K = 5


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    directory = tmp_path_factory.mktemp("stored-ope")
    cfg = {
        "name": "ope",
        "horizon": HORIZON,
        "seeds": 3,
        "env": {"name": "logistic", "h": "h1", "d": 4, "n_arms": K},
        "policies": [
            {"name": "random"},
            {"name": "eps-greedy", "epsilon": 0.3},
            {"name": "linucb"},
            {"name": "lints", "propensity_samples": 0},
        ],
    }
    bk.run_experiment(cfg, directory, backend="serial", progress="none", figures=False)
    return directory


def test_uniform_target_on_random_runs_is_their_mean_reward(out):
    log = ope.log_from_runs(out, policy="random")
    assert log.n == 3 * HORIZON and log.n_actions == K
    assert log.features is None
    np.testing.assert_array_equal(log.propensities, np.full(log.n, 1.0 / K))
    rewards = bk.load_runs(out, columns=["reward"])
    stored = rewards.loc[rewards["policy"] == "random", "reward"].to_numpy()
    estimates = ope.evaluate(log, log.uniform_target(), methods=("ips", "snips"))
    # target = logging policy: every weight is 1, IPS is the stored mean reward exactly
    assert estimates["ips"].value == stored.mean()
    assert estimates["snips"].value == pytest.approx(stored.mean(), rel=1e-12)


def test_seeds_select_runs(out):
    log = ope.log_from_runs(out, policy="random", seeds=[1])
    assert log.n == HORIZON and log.meta["seeds"] == [1]
    with pytest.raises(ValueError, match=r"seeds: .*\[7\]"):
        ope.log_from_runs(out, policy="random", seeds=[7])


def test_eps_greedy_runs_are_a_log(out):
    log = ope.log_from_runs(out, policy="eps-greedy")
    greedy = 0.3 / K + 0.7
    # every propensity is epsilon/K (explored off the greedy arm) or more (a greedy arm)
    assert np.all(log.propensities >= 0.3 / K - 1e-15)
    assert np.all(log.propensities <= greedy + 1e-15)
    assert np.any(np.isclose(log.propensities, greedy))
    value = ope.evaluate(log, log.uniform_target(), methods=("ips",))["ips"].value
    assert np.isfinite(value)


def test_policy_without_propensities_is_named(out):
    # a sampler estimates its propensities; with propensity_samples = 0 it records NaN
    with pytest.raises(
        ValueError, match=r"policy 'lints' \(lints\) records no propensities"
    ):
        ope.log_from_runs(out, policy="lints")


def test_linucb_runs_are_a_log(out):
    log = ope.log_from_runs(out, policy="linucb")
    # an arg-max rule: 1 over the number of tied best arms
    assert set(np.unique(1.0 / log.propensities)) <= set(range(1, K + 1))


def test_a_policy_must_be_chosen(out):
    with pytest.raises(ValueError, match="policy: the directory holds runs of several"):
        ope.log_from_runs(out)
    with pytest.raises(ValueError, match="policy: no stored runs of 'thompson'"):
        ope.log_from_runs(out, policy="thompson")
