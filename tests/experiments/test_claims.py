"""Claims: each kind decided from stored results, PASS and FAIL both reported."""

from __future__ import annotations

import pytest

from banditkit.experiments import run_experiment
from banditkit.experiments.claims import evaluate_claim, parse_claim
from tests.experiments.helpers import tiny

ROWS = [
    {
        "env": "e",
        "label": "A",
        "final_regret_mean": 1.0,
        "seconds_mean": 2.0,
        "n_updates_mean": 10.0,
    },
    {
        "env": "e",
        "label": "B",
        "final_regret_mean": 3.0,
        "seconds_mean": 1.0,
        "n_updates_mean": 100.0,
    },
]


@pytest.mark.parametrize(
    ("claim", "passed"),
    [
        ({"kind": "lowest-final-regret", "policy": "A"}, True),
        ({"kind": "lowest-final-regret", "policy": "B"}, False),
        ({"kind": "below", "policy": "A", "other": "B"}, True),
        ({"kind": "below", "policy": "A", "other": "B", "factor": 0.3}, False),
        ({"kind": "below", "policy": "A", "other": "B", "metric": "n_updates"}, True),
        ({"kind": "below", "policy": "A", "other": "B", "metric": "seconds"}, False),
        ({"kind": "seconds-ratio", "policy": "A", "other": "B", "below": 2.5}, True),
        ({"kind": "seconds-ratio", "policy": "A", "other": "B", "below": 1.5}, False),
        ({"kind": "regret-below", "policy": "B", "value": 3.5}, True),
        ({"kind": "regret-below", "policy": "B", "value": 3.0}, False),
    ],
)
def test_each_kind(claim, passed):
    result = evaluate_claim(parse_claim({"id": "c", **claim}), ROWS, {})
    assert result["passed"] is passed
    assert ("PASS" if passed else "FAIL") in result["evidence"]


def test_sublinear_uses_halves():
    claim = parse_claim({"id": "s", "kind": "sublinear", "policy": "A"})
    assert evaluate_claim(claim, ROWS, {("e", "A"): (10.0, 14.0)})["passed"] is True
    failed = evaluate_claim(claim, ROWS, {("e", "A"): (10.0, 20.0)})
    assert failed["passed"] is False and "ratio 1" in failed["evidence"]


def test_missing_results_fail():
    claim = parse_claim({"id": "m", "kind": "below", "policy": "A", "other": "Z"})
    assert evaluate_claim(claim, ROWS, {})["passed"] is False


def test_false_claim_reported_fail_in_summary(tmp_path):
    claims = [
        {"id": "oracle-best", "kind": "lowest-final-regret", "policy": "Oracle"},
        {
            "id": "random-best",
            "kind": "lowest-final-regret",
            "policy": "Random",
            "text": "uniform play is best (deliberately false)",
        },
        {
            "id": "random-sublinear",
            "kind": "sublinear",
            "policy": "Random",
            "env": "linear",
        },
    ]
    res = run_experiment(
        tiny(claims=claims), tmp_path, backend="serial", progress="none", figures=False
    )
    verdicts = {c["id"]: c for c in res.summary["claims"]}
    assert verdicts["oracle-best"]["passed"] is True
    assert verdicts["random-best"]["passed"] is False
    assert (
        verdicts["random-best"]["text"] == "uniform play is best (deliberately false)"
    )
    assert "FAIL" in verdicts["random-best"]["evidence"]
    assert verdicts["random-sublinear"]["passed"] is False
    values = verdicts["random-best"]["values"]["linear"]
    assert values["Random"] > values["Oracle"] == 0.0
