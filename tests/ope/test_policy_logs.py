"""IPS on the log of a banditkit policy recovers policies' values (docs/ope.md).

The log: LinTS with an explore floor of 0.3 on a linear environment, 2000 rounds; its
propensities are Monte Carlo estimates (128 draws) of its sampler's law, mixed with the
floor's uniform play. Each value IPS estimates from it is compared with the mean reward
of separate on-policy runs (other seeds) of the policy evaluated: LinTS itself, the
uniform-random policy and the oracle.
"""

from __future__ import annotations

import numpy as np
import pytest

import banditkit as bk
from banditkit import ope

T, K, D, FLOOR = 2000, 5, 5, 0.3
LOGGER = {"name": "lints", "explore_floor": FLOOR}


def environment() -> bk.Environment:
    return bk.make_env("linear", d=D, n_arms=K)


@pytest.fixture(scope="module")
def log():
    """The logged run: rewards, actions, propensities; per round the logger's law and the best arm."""
    env = environment()
    env.reset(1)
    policy = bk.make_policy(**LOGGER, seed=1)
    policy.begin(T)
    policy.attach(env)
    rows: dict[str, list] = {"r": [], "a": [], "p": [], "law": [], "best": []}
    for _ in range(T):
        ctx = env.context()
        action = policy.act(ctx)
        rows["best"].append(env.best_action())
        rows["law"].append([policy.propensity_of(k) for k in range(K)])
        step = env.step(action)
        policy.update(ctx, action, step.feedback)
        rows["r"].append(step.reward)
        rows["a"].append(action)
        rows["p"].append(policy.last_propensity)
    return {key: np.asarray(value) for key, value in rows.items()}


def on_policy_value(name: str, seeds: range, horizon: int = T, **params) -> float:
    """The mean reward of on-policy runs of ``name`` with the given seeds (not the log's)."""
    rewards = [
        bk.simulate(
            bk.make_policy(name, seed=s, **params), environment(), horizon, s
        ).reward
        for s in seeds
    ]
    return float(np.mean(rewards))


def ips(log, target, propensities=None):
    p = log["p"] if propensities is None else propensities
    return ope.ips(rewards=log["r"], actions=log["a"], propensities=p, target=target)


def test_the_log_has_the_floor(log):
    assert np.all((log["p"] >= FLOOR / K) & (log["p"] <= 1.0))
    np.testing.assert_allclose(log["law"].sum(axis=1), 1.0)


def test_ips_recovers_the_logging_policy_own_value(log):
    # the target is the logger's own law at each round: every weight is 1
    estimate = ips(log, log["law"])
    assert estimate.value == pytest.approx(log["r"].mean(), rel=1e-12)
    # propensity_samples changes no action, so the runs' values need no estimate
    value = on_policy_value(
        "lints", range(10, 14), explore_floor=FLOOR, propensity_samples=0
    )
    assert estimate.contains(value), (estimate, value)


@pytest.mark.parametrize("target", ["random", "oracle"])
def test_ips_recovers_other_policies_values_from_the_logged_propensities(log, target):
    probabilities = (
        np.full((T, K), 1.0 / K) if target == "random" else np.eye(K)[log["best"]]
    )
    value = on_policy_value(target, range(10, 12), horizon=10_000)
    estimate = ips(log, probabilities)
    assert estimate.contains(value), (estimate, value)
    if target == "oracle":
        # the re-weighting matters: the logged mean, or IPS with uniform logging
        # propensities in place of the policy's, misses the oracle's value
        assert not ope.on_policy(rewards=log["r"]).contains(value)
        assert not ips(log, probabilities, np.full(T, 1.0 / K)).contains(value)
