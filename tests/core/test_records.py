"""Declared records: validation, metrics, aggregation, gathering along the class hierarchy."""

from __future__ import annotations

import numpy as np
import pytest

from banditkit.core import (
    LOOP_RECORDS,
    AssortmentEnvironment,
    ContextualEnvironment,
    DuelingEnvironment,
    Record,
)
from banditkit.core.records import aggregate, merge_records, metric_names
from banditkit.envs import DuelingClassificationEnv, LinearEnv, OBDReplayEnv


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"name": "Bad Name"}, "snake_case"),
        ({"name": "x", "dtype": "float32"}, "dtype"),
        ({"name": "x", "aggregation": "max"}, "aggregation"),
        ({"name": "x", "aggregation": "last", "running_mean": True}, "running_mean"),
        ({"name": "x", "dtype": "list<int64>"}, "list column"),
        ({"name": "x", "plot": ("average_x",)}, "plot names"),
    ],
)
def test_malformed_records_are_rejected(kwargs, words):
    with pytest.raises(ValueError, match=words):
        Record(**kwargs)


def test_metrics_of_a_record():
    assert Record("regret", running_mean=True).metrics == ("regret", "average_regret")
    assert Record("n", dtype="int64", aggregation="last").metrics == ("n",)
    assert Record("action", dtype="list<int64>", aggregation="none").metrics == ()


def test_aggregations():
    x = np.array([2.0, 0.0, 1.0])
    assert aggregate(Record("s"), "s", x).tolist() == [2.0, 2.0, 3.0]
    assert aggregate(Record("c", aggregation="last"), "c", x).tolist() == [
        2.0,
        0.0,
        1.0,
    ]
    assert aggregate(Record("m", aggregation="mean"), "m", x).tolist() == [
        2.0,
        1.0,
        1.0,
    ]
    avg = aggregate(Record("s", running_mean=True), "average_s", x)
    assert avg.tolist() == [2.0, 1.0, 1.0]
    with pytest.raises(ValueError, match="metric"):
        aggregate(Record("s"), "average_s", x)


def test_later_declaration_replaces_in_place():
    merged = merge_records([(Record("a"), Record("b")), (Record("a", plot=("a",)),)])
    assert [r.name for r in merged] == ["a", "b"] and merged[0].plot == ("a",)


def test_family_bases_and_concrete_envs_declare_their_records():
    names = [r.name for r in LOOP_RECORDS]
    assert [r.name for r in LinearEnv.declared_records()] == [*names, "action"]
    assert LinearEnv.step_values() == ()
    duel = {r.name: r for r in DuelingClassificationEnv.declared_records()}
    assert duel["action"].dtype == "list<int64>"
    assert duel["regret"].plot == ("regret", "average_regret")
    # won, the duel's outcome, is filled by DuelingEnvironment.step itself
    assert DuelingClassificationEnv.step_values() == (
        "weak_regret",
        "strong_regret",
        "won",
    )
    assert DuelingEnvironment.step_values() == DuelingClassificationEnv.step_values()
    assert AssortmentEnvironment.step_values() == ("revenue", "chosen")
    assert ContextualEnvironment.family == "contextual"
    replay = {r.name: r for r in OBDReplayEnv.declared_records()}
    assert replay["regret"].plot == () and "average_reward" in replay["reward"].plot
    # the replay's re-declaration keeps the column order of the loop records
    assert [r.name for r in OBDReplayEnv.declared_records()][:2] == ["regret", "reward"]


def test_metric_names_map_to_their_record():
    metrics = metric_names(DuelingEnvironment.declared_records())
    assert metrics["average_weak_regret"].name == "weak_regret"
    assert "action" not in metrics and "propensity" not in metrics
