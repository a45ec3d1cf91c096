"""The contract suite of ``banditkit.testing`` over every registered policy, per family.

The cases come from the registry (``policy_cases``) with each class's ``contract_params``
and, when they differ, with its defaults (every contract but those of
``SKIPPED_WITH_DEFAULTS``): a new policy is covered without editing this file. What is not a contract (hyper-parameter
checks of particular policies, beating uniform play) stays below.
"""

import numpy as np
import pytest

import banditkit as bk
from banditkit.core import FAMILIES, POLICIES
from banditkit.testing import (
    CONTRACTS,
    SKIPPED_WITH_DEFAULTS,
    PolicyContract,
    check_policy,
    policy_cases,
)

CASES = [case for family in FAMILIES for case in policy_cases(family)]
RUNS = [
    pytest.param(case, contract, id=f"{case.family}/{case}-{contract}")
    for case in CASES
    for contract in CONTRACTS
    if not (case.defaults and contract in SKIPPED_WITH_DEFAULTS)
]


def test_every_registered_policy_is_a_case_with_its_defaults_too():
    assert {str(c) for c in CASES if not c.defaults} == set(bk.list_policies())
    assert {str(c) for c in CASES if c.defaults} == {
        f"{name}[defaults]"
        for name in bk.list_policies()
        if POLICIES.get(name).contract_params
    }
    assert all(c.family in FAMILIES for c in CASES)


@pytest.mark.parametrize(("case", "contract"), RUNS)
def test_contract(case, contract):
    CONTRACTS[contract](case)


# --- a user's policy through both public entry points ---------------------------------


class GreedyFirstFeature(bk.ContextualPolicy):
    """Plays the arm with the largest first feature; a user's policy, not registered."""

    def _act(self, ctx):
        return int(np.argmax(ctx.arms[:, 0]))

    def _update(self, ctx, action, feedback):
        pass


class TestUserPolicy(PolicyContract):
    policy_class = GreedyFirstFeature


def test_check_policy_accepts_a_user_class():
    check_policy(GreedyFirstFeature)


class ForgetsItsState(bk.ContextualPolicy):
    """Breaks the contract: it counts its updates but does not save the count."""

    def __init__(self, *, seed=0):
        super().__init__(seed=seed)
        self.count = 0

    def _act(self, ctx):
        return int(self.count > 1) % ctx.n_arms

    def _update(self, ctx, action, feedback):
        self.count += 1


def test_check_policy_names_the_broken_contract():
    with pytest.raises(AssertionError, match="contract 'save_restore' failed"):
        check_policy(ForgetsItsState, skip={"fuzz"})


def test_check_policy_rejects_unknown_contract_names():
    with pytest.raises(ValueError, match="unknown contracts"):
        check_policy("random", skip={"fuzzz"})


# --- not contracts: hyper-parameters and learning --------------------------------------


@pytest.mark.parametrize(
    ("name", "bad"),
    [
        ("linucb", {"nu": -1.0}),
        ("linucb", {"lam": -0.1}),
        ("lints", {"lam": 0.0}),
        ("eps-greedy", {"epsilon": 1.5}),
        ("glm-ucb", {"link": "logit"}),
        ("glm-ts", {"update_every": 0}),
        ("random", {"seed": -2}),
    ],
)
def test_invalid_hyperparameters_raise(name, bad):
    key = next(iter(bad))
    with pytest.raises(ValueError, match=key):
        bk.make_policy(name, **bad)


#: Settings that learn within 400 rounds (the defaults explore for longer).
TUNED = {
    "eps-greedy": {"epsilon": 0.1},
    "linucb": {"nu": 0.5},
    "lints": {"nu": 0.2},
    "glm-ucb": {"nu": 0.5},
    "glm-ts": {"nu": 0.2},
    "neural-ucb": {"nu": 0.1, "width": 8, "update_every": 5, "steps": 10},
    "neural-ts": {"nu": 0.01, "width": 8, "update_every": 5, "steps": 10},
    "neurallog-ucb1": {
        "nu": 0.1,
        "width": 8,
        "update_every": 5,
        "steps": 10,
        "lr": 0.1,
    },
    "neurallog-ucb2": {
        "nu": 0.1,
        "width": 8,
        "update_every": 5,
        "steps": 10,
        "lr": 0.1,
    },
    "neurallog-ts1": {
        "nu": 0.01,
        "width": 8,
        "update_every": 5,
        "steps": 10,
        "lr": 0.1,
    },
    "neurallog-ts2": {
        "nu": 0.02,
        "width": 8,
        "update_every": 5,
        "steps": 10,
        "lr": 0.1,
    },
    "ncbf-ucb": {"nu": 0.1, "width": 8, "update_every": 5, "steps": 10, "lr": 0.1},
    "logistic-ucb1": {"nu": 0.1, "update_every": 5},
    "ada-ofu-ecolog": {"nu": 0.1, "update_every": 5},
    # rare-update family: theory constants explore too long for T = 400 (docs/rare.md)
    "blce": {"c": 0.1},
    "blce-g": {"c": 0.1},
    "bgle": {"c": 0.1},
    "batchlinucb-dg": {"nu": 0.1},
    "batch-learning": {"nu": 0.1},
    "softbatch": {"explore": 0.0},
    "b-glincb": {"warmup": 30, "nu": 0.05},
    "sklearn": {
        "explorer": "eps-greedy",
        "n_bootstrap": 1,
        "epsilon": 0.02,
        "estimator_params": {"fit_intercept": False},
    },
}
# Non-contextual references (uses_features = False) cannot beat uniform play on fresh arms.
LEARNERS = [
    c
    for c in policy_cases("contextual", defaults=False)
    if str(c) not in ("random", "oracle")
    and getattr(c.policy_class, "uses_features", True)
]


@pytest.mark.parametrize("case", LEARNERS, ids=str)
def test_beats_uniform_play_on_an_easy_environment(case):
    params = {**case.params, **TUNED.get(str(case), {})}
    env = bk.make_env("logistic", h="linear", d=5, n_arms=5)
    regret = np.mean(
        [
            bk.simulate(
                case.policy_class(seed=s, **params), env, 400, s
            ).cumulative_regret[-1]
            for s in range(2)
        ]
    )
    uniform = np.mean(
        [
            bk.simulate(
                bk.make_policy("random", seed=s), env, 400, s
            ).cumulative_regret[-1]
            for s in range(2)
        ]
    )
    assert regret < 0.6 * uniform, (regret, uniform)
