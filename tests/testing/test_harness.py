"""The pieces of banditkit.testing: scripted environments, cases and state comparisons."""

import itertools

import numpy as np
import pytest

import banditkit as bk
from banditkit.testing import (
    PolicyCase,
    ScriptedAssortmentEnv,
    assert_finite_state,
    assert_same_state,
    check_bad_input,
    play,
    policy_cases,
    scripted_env,
    start,
)


@pytest.mark.parametrize("family", ["contextual", "dueling", "assortment"])
def test_scripted_env_is_seeded_and_its_best_action_has_zero_regret(family):
    a, b = scripted_env(family, n_arms=5), scripted_env(family, n_arms=5)
    a.reset(3)
    b.reset(3)
    for _ in range(5):
        ctx_a, ctx_b = a.context(), b.context()
        np.testing.assert_array_equal(ctx_a.arms, ctx_b.arms)
        best = a.best_action()
        assert best == b.best_action()
        step_a, step_b = a.step(best), b.step(best)
        assert step_a.regret == 0.0 and step_a == step_b


def test_assortment_oracle_is_exact_when_enumerable():
    env = ScriptedAssortmentEnv(n_arms=5, d=2, max_size=3)
    env.reset(0)
    for _ in range(5):
        ctx = env.context()
        offers = [c for s in (1, 2, 3) for c in itertools.combinations(range(5), s)]
        revenues = [env._revenue(ctx, o) for o in offers]
        assert env.best_action() == offers[int(np.argmax(revenues))]
        env.step(env.best_action())


def test_assortment_oracle_is_optimal_beyond_enumeration():
    # 100 items, capacity 4: far too many sets to enumerate; revenue-ordered sets are
    # often suboptimal here, the exact optimiser never is.
    env = ScriptedAssortmentEnv(n_arms=100, d=2, max_size=4)
    env.reset(0)
    heuristic_worse = 0
    for _ in range(30):
        ctx = env.context()
        best = env.best_action()
        assert 1 <= len(best) <= 4
        order = np.argsort(-ctx.revenues)
        heuristic = max(
            env._revenue(ctx, tuple(sorted(order[:s].tolist()))) for s in range(1, 5)
        )
        assert env._revenue(ctx, best) >= heuristic - 1e-12
        heuristic_worse += env._revenue(ctx, best) > heuristic + 1e-12
        assert env.step(best).regret == 0.0
    assert heuristic_worse > 0


def test_binary_contextual_rewards_are_bernoulli():
    env = scripted_env("contextual", reward_kind="binary")
    env.reset(0)
    rewards = set()
    for _ in range(30):
        env.context()
        rewards.add(env.step(0).feedback)
    assert rewards == {0.0, 1.0}


def test_policy_case_defaults_and_validation():
    case = PolicyCase(bk.policies.NeuralUCB)
    assert case.params == {"width": 8, "update_every": 3, "steps": 10}
    assert str(case) == "neural-ucb" and case.family == "contextual"
    with pytest.raises(ValueError, match="policy_class must be a Policy subclass"):
        PolicyCase(object)
    with pytest.raises(ValueError, match="family must be one of"):
        policy_cases("bandit")


def test_state_comparisons_catch_differences():
    case = PolicyCase(bk.policies.LinUCB)
    a, env_a = start(case)
    b, env_b = start(case)
    play(a, env_a, 3)
    play(b, env_b, 3)
    assert_same_state(a, b)
    b.model.b[0] += 1e-12
    with pytest.raises(AssertionError, match="differs"):
        assert_same_state(a, b)


def test_finite_state_check_catches_nan():
    policy, env = start(PolicyCase(bk.policies.LinUCB))
    play(policy, env, 2)
    assert_finite_state(policy)
    policy.model.b[0] = np.nan
    with pytest.raises(AssertionError, match="NaN or inf"):
        assert_finite_state(policy)


class AcceptsAnything(bk.ContextualPolicy):
    """Breaks the contract: overrides the validation it should inherit."""

    def _check_feedback(self, feedback, action):
        return feedback

    def _act(self, ctx):
        return 0

    def _update(self, ctx, action, feedback):
        pass


def test_bad_input_contract_catches_a_policy_that_skips_validation():
    with pytest.raises(AssertionError, match="feedback=nan"):
        check_bad_input(PolicyCase(AcceptsAnything))
