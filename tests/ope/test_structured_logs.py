"""IPS and SNIPS on logs of duels (ordered pairs) and assortments (offered sets), docs/ope.md.

Oracle checks, as tests/ope/test_policy_logs.py does for arms: a dueling policy (CoLSTIM) and
an MNL policy (TS-MNL) log 2000 rounds with an explore floor of 0.3; their propensities are
Monte Carlo estimates (128 draws) of the sampler's law of the pair or set as a whole, mixed
with the floor's uniform play. IPS on the log recovers the policy's own on-policy value
(separate runs on the same instance, other seeds), and the exact values of the uniform policy and of the best
action, computed from the environments' utilities at the logged rounds.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import banditkit as bk
from banditkit import ope
from banditkit.core.seeding import make_rng
from banditkit.datasets.logs import padded_actions

T, FLOOR = 2000, 0.3
K_DUEL, N_ITEMS, CAPACITY = 4, 6, 2
DUELER = {"name": "colstim", "explore_floor": FLOOR}
CHOOSER = {"name": "ts-mnl", "explore_floor": FLOOR}


def _logged_instance(env: bk.Environment) -> bk.Environment:
    """``env`` whose hidden parameters are always those of the log's seed (1).

    The on-policy runs that give a policy's value use other seeds for the contexts, the
    noise and the policy, on the instance the log was collected on: a value is a property
    of one instance, and instances differ much more than runs on one instance.
    """
    draw = env._reset

    def _reset() -> None:
        env.instance_rng = make_rng(1, "instance")
        draw()

    env._reset = _reset  # type: ignore[method-assign]
    return env


def dueling_env() -> bk.Environment:
    return _logged_instance(bk.make_env("dueling", d=3, n_arms=K_DUEL))


def mnl_env() -> bk.Environment:
    return _logged_instance(
        bk.make_env("mnl", utility="linear", d=3, n_items=N_ITEMS, capacity=CAPACITY)
    )


def _play(policy_spec, env, exact):
    """A logged run: rewards, actions, propensities, feedback, and ``exact(env)`` per round."""
    env.reset(1)
    policy = bk.make_policy(**policy_spec, seed=1)
    policy.begin(T)
    rows: dict[str, list] = {"r": [], "a": [], "p": [], "fb": [], "exact": []}
    for _ in range(T):
        ctx = env.context()
        action = policy.act(ctx)
        rows["exact"].append(exact(env))
        step = env.step(action)
        policy.update(ctx, action, step.feedback)
        rows["r"].append(step.reward)
        rows["a"].append(action)
        rows["p"].append(policy.last_propensity)
        rows["fb"].append(step.feedback)
    return rows


def _duel_values(env) -> tuple[float, float]:
    """(uniform pair: the mean utility; best pair (k*, k*): the largest), this round."""
    u = env.utilities()
    return float(u.mean()), float(u.max())


SETS = [
    s for m in range(1, CAPACITY + 1) for s in itertools.combinations(range(N_ITEMS), m)
]


def _set_values(env) -> tuple[float, float]:
    """(uniform set: the mean expected revenue over the sets; the best set's), this round."""
    revenues = [env.expected_revenue(s) for s in SETS]
    return float(np.mean(revenues)), float(env.expected_revenue(env.best_action()))


@pytest.fixture(scope="module")
def duels():
    rows = _play(DUELER, dueling_env(), _duel_values)
    log = ope.BanditLog(
        rewards=np.asarray(rows["r"]),
        actions=np.asarray(rows["a"]),
        propensities=np.asarray(rows["p"]),
        n_actions=K_DUEL,
        kind="pair",
        feedback=np.asarray(rows["fb"]),
    )
    return log, np.asarray(rows["exact"])


@pytest.fixture(scope="module")
def offers():
    rows = _play(CHOOSER, mnl_env(), _set_values)
    log = ope.BanditLog(
        rewards=np.asarray(rows["r"]),
        actions=padded_actions(rows["a"]),
        propensities=np.asarray(rows["p"]),
        n_actions=N_ITEMS,
        kind="set",
        capacity=CAPACITY,
        feedback=np.asarray(rows["fb"]),
    )
    return log, np.asarray(rows["exact"])


def on_policy_value(spec, make_env, seeds=range(10, 14)) -> float:
    """The mean reward of on-policy runs (other seeds; no propensity estimates needed)."""
    rewards = [
        bk.simulate(
            bk.make_policy(**spec, seed=s, propensity_samples=0), make_env(), T, s
        ).reward
        for s in seeds
    ]
    return float(np.mean(rewards))


@pytest.mark.parametrize(
    ("which", "spec", "make_env"),
    [("duels", DUELER, dueling_env), ("offers", CHOOSER, mnl_env)],
)
def test_ips_recovers_the_logging_policy_own_value(request, which, spec, make_env):
    log, _ = request.getfixturevalue(which)
    n_choices = log.n_choices
    assert np.all(log.propensities >= FLOOR / n_choices - 1e-12)
    # the target is the logger's own law at the logged action: every weight is 1
    estimate = ope.ips(
        rewards=log.rewards,
        propensities=log.propensities,
        target_propensities=log.propensities,
    )
    assert estimate.value == pytest.approx(log.rewards.mean(), rel=1e-12)
    value = on_policy_value(spec, make_env)
    assert estimate.contains(value), (estimate, value)


@pytest.mark.parametrize("which", ["duels", "offers"])
def test_ips_and_snips_recover_the_exact_values_of_uniform_and_best(request, which):
    log, exact = request.getfixturevalue(which)
    uniform, best = exact.mean(axis=0)
    estimates = ope.evaluate(log, log.uniform_target(), methods=("ips", "snips"))
    for estimate in estimates.values():
        assert estimate.contains(uniform), (estimate, uniform)
    # the best action of each round (known here from the environment) as the target
    best_actions = _best_actions(which)
    hits = np.array([log.action(i) == b for i, b in enumerate(best_actions)], float)
    common = {"rewards": log.rewards, "propensities": log.propensities}
    for estimator in (ope.ips, ope.snips):
        estimate = estimator(**common, target_propensities=hits)
        assert estimate.contains(best), (estimate, best)
    # the re-weighting matters: the logged mean misses the best action's value
    assert not ope.on_policy(rewards=log.rewards).contains(best)


def _best_actions(which: str) -> list:
    """The environment's best pair or set at each logged round (same seed, same contexts)."""
    env = dueling_env() if which == "duels" else mnl_env()
    env.reset(1)
    out = []
    for _ in range(T):
        env.context()
        best = env.best_action()
        out.append(best)
        env.step(best)
    return out
