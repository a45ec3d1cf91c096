"""Seed batching through the scored round (parts.stacked, core.members, core.simulate).

A stack of S members plays the round of ``ScoredPolicy`` with parts that carry a member
axis; each is checked against what it stacks: the rule against each member's own rule and
stream, and a stacked run of S seeds against S separate ``simulate`` runs.
"""

from __future__ import annotations

import numpy as np
import pytest

from banditkit.core import make_policy
from banditkit.core.members import stack
from banditkit.linalg import Gram
from banditkit.policies.parts.models import RidgeModel
from banditkit.policies.parts.schedules import Periodic
from banditkit.policies.parts.scored import ScoredParts, stack_parts
from banditkit.policies.parts.scorer import Scorer
from banditkit.policies.parts.selection import Optimistic, RadiusRange, Sampled
from banditkit.policies.parts.stacked import StackedRule, Streams
from tests.policies.helpers import assert_stack_equals_separate

ENV = {"h": "h1", "d": 6, "n_arms": 4, "pool": 40}
SMALL = {"width": 8, "update_every": 15, "steps": 10, "lr": 0.1}


@pytest.mark.parametrize(
    ("name", "extra"),
    [
        ("neurallog-ucb2", {}),
        ("neurallog-ucb1", {"dtype": "float32"}),
        ("neurallog-ts2", {}),
        ("ncbf-ucb", {"effdim_kind": "diagonal"}),
        ("neurallog-ts1", {"keep_log_factors": True}),
    ],
)
def test_stacked_run_equals_separate_runs(name: str, extra: dict) -> None:
    assert_stack_equals_separate(
        name, {**SMALL, **extra}, "logistic", ENV, [0, 3, 7], 90
    )


@pytest.mark.parametrize(
    ("name", "env", "env_params", "extra"),
    [
        ("neural-ucb", "nonlinear", {"function": "quadratic", "d": 6, "n_arms": 5}, {}),
        ("neural-ts", "nonlinear", {"function": "distance", "d": 6, "n_arms": 5}, {}),
        ("neural-ts", "classification", {"dataset": "digits"}, {"lr": 0.5}),
        ("neural-ucb", "classification", {"dataset": "digits"}, {"nu": 1.0}),
    ],
)
def test_neural_ucb_and_ts_stacks_equal_separate_runs(
    name: str, env: str, env_params: dict, extra: dict
) -> None:
    """NeuralUCB / NeuralTS in float64: every action and regret of 4 seeds x 50 rounds.

    On digits (block-encoded rows: each member trains by its own block loop) lr 0.5
    makes some members' refits climb, so they are backtracked at their own lr / 10.
    """
    params = {"width": 8, "update_every": 4, "steps": 10, **extra}
    members = assert_stack_equals_separate(
        name, params, env, env_params, [0, 2, 5, 9], 50
    )
    if extra.get("lr") == 0.5:  # the backtracking was exercised, member by member
        lrs = members.model.lrs  # type: ignore[attr-defined]
        assert lrs.min() < 0.5


def test_kernel_effective_dimension_uses_the_members_trackers() -> None:
    assert_stack_equals_separate(
        "neurallog-ucb2",
        {**SMALL, "effdim_kind": "kernel"},
        "logistic",
        ENV,
        [1, 2],
        40,
    )


@pytest.mark.parametrize("rule", [Optimistic(), Sampled()])
def test_stacked_rule_is_each_members_rule_on_its_own_stream(rule) -> None:
    rng = np.random.default_rng(0)
    mean, norms = rng.standard_normal((3, 5)), rng.random((3, 5))
    radii = [RadiusRange.known(0.5, r) for r in (0.0, 1.0, 3.0)]
    streams = Streams(np.random.default_rng(s) for s in (4, 5, 6))
    twins = [np.random.default_rng(s) for s in (4, 5, 6)]
    got = StackedRule(rule).select_bracketed(mean, norms, radii, streams)
    expected = [
        rule.select_bracketed(mean[s], norms[s], radii[s], twins[s]) for s in range(3)
    ]
    assert got.tolist() == expected
    assert [s.random() for s in streams] == [t.random() for t in twins]


def test_stack_parts_refuses_what_it_cannot_stack() -> None:
    def parts() -> ScoredParts:
        model = RidgeModel(2, 1.0)
        return ScoredParts(None, Scorer(model, Gram(2, 1.0)), Optimistic(), Periodic())

    with pytest.raises(ValueError, match="cannot be stacked"):
        stack_parts([parts(), parts()], capacity=10)


def test_stack_is_offered_for_the_supported_configurations_only() -> None:
    def members(name: str, **params: object) -> list:
        return [make_policy(name, **params, seed=s) for s in (0, 1)]

    assert stack(members("linucb")) is None  # no stacked play
    assert stack(members("neural-ucb", width=4)) is not None
    assert stack(members("neural-ts", width=4, gram="full")) is None
    assert stack(members("neural-ts", width=4, depth=3)) is None
    assert stack(members("neural-ucb", width=4, grouped=True)) is None
    assert stack(members("neurallog-ucb2", mode="theory", width=4)) is None
    assert stack(members("neurallog-ucb2", gram="full", width=4)) is None
    assert stack(members("neurallog-ucb2", lambda_schedule="adaptive", width=4)) is None
    assert stack(members("neurallog-ucb2", width=4)[:1]) is None
    assert stack(members("neurallog-ucb2", width=4)) is not None
    with pytest.raises(ValueError, match="same hyper-parameters"):
        stack(
            [
                make_policy("neurallog-ucb2", width=4, seed=0),
                make_policy("neurallog-ucb2", width=6, seed=1),
            ]
        )
