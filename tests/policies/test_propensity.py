"""Every registered policy reports the probability of the action it took (docs/ope.md).

Over the registry (``policy_cases``, contract params and defaults): after each ``act`` the
propensity is finite, in (0, 1], the law's value at the action played, and the law is a
probability distribution over all the round's actions (arms, ordered pairs or offered
sets); the explore floor keeps every action at epsilon / (number of actions) or more;
estimating a propensity moves no action. For a few samplers and randomised rules the
law is checked against how often the policy actually plays each action.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from banditkit.core import Context, Policy
from banditkit.core.types import Action
from banditkit.policies.mnl.common import (
    UniformAssortmentLaw,
    offered_set,
    offered_sets,
    uniform_assortment,
)
from banditkit.testing import PolicyCase, policy_cases
from banditkit.testing.harness import start

K, D, CAPACITY, ROUNDS = 4, 3, 2, 10
CASES = policy_cases()
CONTRACT_CASES = policy_cases(defaults=False)


def round_actions(policy: Policy, ctx: Context) -> list[Action]:
    """Every action of the round: the arms, the K^2 ordered pairs, the sets of <= m items."""
    k = ctx.n_arms
    if policy.family == "contextual":
        return list(range(k))
    if policy.family == "dueling":
        return list(itertools.product(range(k), repeat=2))
    m = k if ctx.max_size is None else min(ctx.max_size, k)
    return [
        s for size in range(1, m + 1) for s in itertools.combinations(range(k), size)
    ]


def played(case: PolicyCase, rounds: int = ROUNDS, **params: object):
    """(policy, ctx, action) after each act of a short run of ``case`` (with ``params``)."""
    merged = PolicyCase(case.policy_class, {**dict(case.params or {}), **params})
    policy, env = start(merged, horizon=rounds, n_arms=K, d=D, max_size=CAPACITY)
    for _ in range(rounds):
        ctx = env.context()
        assert ctx is not None
        action = policy.act(ctx)
        yield policy, ctx, action
        policy.update(ctx, action, env.step(action).feedback)


def check_law(policy: Policy, ctx: Context, action: Action, floor: float = 0.0) -> None:
    p = policy.last_propensity
    assert p is not None and math.isfinite(p) and 0.0 < p <= 1.0, (policy.t, p)
    assert policy.propensity_of(action) == p
    actions = round_actions(policy, ctx)
    law = np.array([policy.propensity_of(a) for a in actions], dtype=float)
    assert np.all(law >= floor / len(actions) - 1e-12), law.min()
    assert law.sum() == pytest.approx(1.0, abs=1e-9)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_every_policy_reports_the_probability_of_its_action(case):
    for policy, ctx, action in played(case):
        check_law(policy, ctx, action)


@pytest.mark.parametrize("case", CONTRACT_CASES, ids=str)
def test_the_explore_floor_gives_every_action_its_share(case):
    for policy, ctx, action in played(case, explore_floor=0.25):
        check_law(policy, ctx, action, floor=0.25)


@pytest.mark.parametrize("case", CONTRACT_CASES, ids=str)
def test_estimating_propensities_moves_no_action(case):
    estimated = [a for _, _, a in played(case)]
    none = [a for _, _, a in played(case, propensity_samples=0)]
    assert estimated == none


#: Randomised rules and samplers, with what makes their law non-trivial in a short run.
BEHAVING = {
    "lints": {},
    "eps-greedy": {"epsilon": 0.5},
    "linucb": {"explore_floor": 0.3},
    "neural-ts": {},
    "glm-ts": {},
    "ndb-ts": {},
    "colstim": {"lam": 10.0},  # a small theta: the perturbation decides
    "ts-mnl": {},
    "eps-greedy-mnl": {},
}


@pytest.mark.parametrize("name", sorted(BEHAVING))
def test_the_law_is_how_often_the_policy_plays_each_action(name):
    """After 12 rounds, 400 acts in the state reached: frequencies match the law.

    ``act`` without ``update`` leaves the state as it is and draws afresh from the
    policy's stream; the law (a Monte Carlo law from 4000 draws of the round's own
    generator) is the same for every one of them, so it is read once, after them.
    """
    case = next(c for c in CONTRACT_CASES if str(c) == name)
    *_, (policy, last, _) = played(case, rounds=12, **BEHAVING[name])
    # arms close to each other: the draws decide, the law is spread over actions
    noise = np.random.default_rng(5).normal(size=last.arms.shape)
    ctx = Context(last.arms[:1] + 0.05 * noise, last.revenues, last.max_size)
    n, samples = 400, 4000
    policy.propensity_samples = 0  # the acts only: no law needed
    acts = [policy.act(ctx) for _ in range(n)]
    policy.propensity_samples = samples
    policy.act(ctx)  # the law of the state, the same for every act above
    actions = round_actions(policy, ctx)
    law = np.array([policy.propensity_of(a) for a in actions])
    counts = {a: 0 for a in actions}
    for a in acts:
        counts[a] += 1
    freq = np.array([counts[a] / n for a in actions])
    se = np.sqrt(law * (1 - law) * (1 / n + 1 / samples)) + 1 / (samples + 1)
    assert np.all(np.abs(freq - law) <= 4.5 * se + 1e-12), (freq, law)
    assert law.max() < 0.95  # a law worth checking


def test_uniform_assortment_law_is_the_sampler_frequency():
    rng = np.random.default_rng(0)
    for sampler in ("uniform", "exactly-k"):
        law = UniformAssortmentLaw(5, 3, sampler)
        sets = [s for size in (1, 2, 3) for s in itertools.combinations(range(5), size)]
        exact = np.array([law(s) for s in sets])
        assert exact.sum() == pytest.approx(1.0)
        n = 20_000
        drawn = [uniform_assortment(rng, 5, 3, sampler) for _ in range(n)]
        freq = np.array([drawn.count(s) / n for s in sets])
        assert np.all(np.abs(freq - exact) <= 4.5 * np.sqrt(exact * (1 - exact) / n))
    # the "uniform" sampler gives each of the 25 sets 1/25
    np.testing.assert_allclose(
        [UniformAssortmentLaw(5, 3)(s) for s in [(0,), (1, 2), (0, 1, 4)]], 1 / 25
    )


@pytest.mark.parametrize("revenues", [None, np.array([1.0, 2.0, 0.5, 1.5, 1.0])])
def test_offered_sets_is_offered_set_row_by_row(revenues):
    z = np.random.default_rng(1).normal(size=(50, 5))
    z[:10, 2] = z[:10, 3]  # ties: the lower index first
    ctx = Context(arms=np.eye(5), max_size=2, revenues=revenues)
    assert offered_sets(z, ctx) == [offered_set(row, ctx) for row in z]
