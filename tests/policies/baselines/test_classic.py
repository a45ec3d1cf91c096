"""Classic non-contextual policies: UCB1, KL-UCB and Bernoulli Thompson sampling."""

import math

import numpy as np
import pytest
from scipy.optimize import brentq

import banditkit as bk
from banditkit.core import Context, ContextualEnvironment, Step
from banditkit.policies.baselines.classic import (
    KLUCB,
    UCB1,
    BernoulliTS,
    bernoulli_kl,
    kl_ucb_index,
)
from banditkit.testing import check_policy

ARMS = Context(arms=np.eye(3))


def _feed(policy, history):
    for action, reward in history:
        policy.act(ARMS)
        policy.update(ARMS, action, reward)
    return policy


HISTORY = [
    (0, 1.0),
    (1, 0.0),
    (2, 0.5),
    (0, 0.0),
]  # t = 4, n = [2, 1, 1], means [.5, 0, .5]


def test_ucb1_index_by_hand():
    policy = _feed(UCB1(), HISTORY)
    bonus = math.sqrt(2 * math.log(4))
    expected = [0.5 + bonus / math.sqrt(2), 0.0 + bonus, 0.5 + bonus]
    np.testing.assert_allclose(policy.index(), expected)
    assert policy.act(ARMS) == 2
    assert policy.last_propensity == 1.0


def test_index_policies_play_every_arm_once_first():
    for cls in (UCB1, KLUCB):
        policy = cls(seed=3)
        context = Context(arms=np.eye(5))
        first = []
        for _ in range(5):
            action = policy.act(context)
            assert policy.last_propensity == pytest.approx(1 / (5 - len(first)))
            first.append(action)
            policy.update(context, action, 0.0)
        assert sorted(first) == list(range(5))


def test_ties_are_broken_by_the_policys_generator():
    firsts = {
        cls(seed=s).act(Context(arms=np.eye(6)))
        for cls in (UCB1, KLUCB)
        for s in range(20)
    }
    assert len(firsts) > 3


def test_kl_ucb_index_matches_brentq():
    rng = np.random.default_rng(0)
    means = np.concatenate([rng.random(20), [0.0, 1.0]])
    bounds = np.concatenate([rng.uniform(0.01, 2.0, 20), [0.3, 0.3]])
    index = kl_ucb_index(means, bounds)
    for m, b, u in zip(means, bounds, index, strict=True):
        if m == 1.0:
            assert u == 1.0
            continue
        root = brentq(
            lambda q, m=m, b=b: bernoulli_kl(m, q) - b, m, 1 - 1e-15, xtol=1e-14
        )
        assert u == pytest.approx(root, abs=1e-9)
        assert bernoulli_kl(m, u) <= b + 1e-12


def test_kl_ucb_policy_index_by_hand():
    policy = _feed(KLUCB(), HISTORY)  # next round t = 5, budget ln 5
    n = np.array([2.0, 1.0, 1.0])
    np.testing.assert_allclose(
        policy.index(), kl_ucb_index(np.array([0.5, 0.0, 0.5]), math.log(5) / n)
    )
    with_c = _feed(KLUCB(c=3.0), HISTORY).index()
    budget = math.log(5) + 3.0 * math.log(math.log(5))
    np.testing.assert_allclose(
        with_c, kl_ucb_index(np.array([0.5, 0.0, 0.5]), budget / n)
    )
    assert np.all(with_c > policy.index())
    with pytest.raises(ValueError, match="c must be"):
        KLUCB(c=-1.0)


def test_bernoulli_ts_posterior_and_the_bernoulli_trick():
    policy = _feed(BernoulliTS(seed=0), [(0, 1.0), (0, 1.0), (1, 0.0)])
    alpha, beta = policy.posterior()
    np.testing.assert_array_equal(alpha, [3.0, 1.0, 1.0])
    np.testing.assert_array_equal(beta, [1.0, 2.0, 1.0])
    # the propensity: a Monte Carlo estimate of P(arm wins the posterior draw)
    n = 4000
    policy = _feed(
        BernoulliTS(seed=0, propensity_samples=n), [(0, 1.0), (0, 1.0), (1, 0.0)]
    )
    arm = policy.act(ARMS)
    draws = np.random.default_rng(7).beta(alpha, beta, size=(200_000, 3))
    exact = np.mean(draws.argmax(axis=1) == arm)
    se = math.sqrt(exact * (1 - exact) / n)
    assert abs(policy.last_propensity - exact) < 4 * se + 1 / (n + 1)
    # A reward of 0.3 becomes a Bernoulli(0.3) success: about 30 % of many such updates.
    many = BernoulliTS(seed=1)
    for _ in range(2000):
        many.act(ARMS)
        many.update(ARMS, 2, 0.3)
    alpha, beta = many.posterior()
    assert alpha[2] + beta[2] == 2002 and set(np.unique(many.sums)) <= set(range(2001))
    assert abs((alpha[2] - 1) / 2000 - 0.3) < 0.04


def test_a_context_with_another_number_of_arms_is_refused_without_changing_state():
    for cls in (UCB1, KLUCB, BernoulliTS):
        policy = _feed(cls(), HISTORY[:2])
        before = policy.state_dict()
        with pytest.raises(ValueError, match=r"ctx has 4 arms .* K=3"):
            policy.act(Context(arms=np.ones((4, 3))))
        with pytest.raises(ValueError, match="ctx"):
            policy.update(Context(arms=np.ones((2, 3))), 0, 1.0)
        assert policy.t == 2
        np.testing.assert_array_equal(
            policy.state_dict()["state"]["counts"], before["state"]["counts"]
        )


def test_rewards_outside_the_unit_interval_are_refused_by_the_bernoulli_policies():
    for cls in (KLUCB, BernoulliTS):
        with pytest.raises(ValueError, match="feedback"):
            _feed(cls(), [(0, 1.5)])
    assert _feed(UCB1(), [(0, 1.5)]).sums[0] == 1.5


@pytest.mark.parametrize("name", ["ucb1", "kl-ucb", "bernoulli-ts"])
def test_contract_suite(name):
    check_policy(name)


class BernoulliArms(ContextualEnvironment):
    """K fixed arms with Bernoulli rewards of fixed means; the features never change."""

    def __init__(self, *, means=(0.1, 0.2, 0.3, 0.4, 0.7)):
        super().__init__()
        self.means = tuple(means)

    def _reset(self):
        self._mu = np.array(self.means)

    def _next_context(self):
        return Context(arms=np.eye(len(self.means)))

    def best_action(self):
        return int(np.argmax(self._mu))

    def _step(self, ctx, action):
        reward = float(self.noise_rng.random() < self._mu[action])
        return Step(
            feedback=reward,
            reward=reward,
            regret=float(self._mu.max() - self._mu[action]),
        )


@pytest.mark.parametrize("name", ["ucb1", "kl-ucb", "bernoulli-ts"])
def test_regret_beats_uniform_play_on_a_bernoulli_problem(name):
    env = BernoulliArms()

    def regret(policy_name):
        return np.mean(
            [
                bk.simulate(
                    bk.make_policy(policy_name, seed=s), env, 1500, s
                ).cumulative_regret[-1]
                for s in range(3)
            ]
        )

    uniform = regret("random")
    assert uniform == pytest.approx(1500 * (0.7 - 0.34), rel=0.1)
    assert regret(name) < 0.35 * uniform
