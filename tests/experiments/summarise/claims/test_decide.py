"""Claims: each kind decided from stored results, PASS and FAIL both reported."""

from __future__ import annotations

import pytest

from banditkit.experiments import run_experiment
from banditkit.experiments.config.claims import parse_claim
from banditkit.experiments.summarise.claims.decide import evaluate_claim
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


RANKED = [
    {"env": "e", "label": lab, "final_regret_mean": reg, "ctr_mean": ctr}
    for lab, reg, ctr in [("A", 1.0, 0.005), ("B", 2.0, 0.004), ("C", 2.0, 0.001)]
] + [
    {"env": "f", "label": lab, "final_regret_mean": reg, "ctr_mean": ctr}
    for lab, reg, ctr in [("A", 3.0, 0.001), ("B", 2.0, 0.004), ("C", 1.0, 0.003)]
]


@pytest.mark.parametrize(
    ("claim", "passed"),
    [
        ({"policies": ["A"], "k": 1, "env": "e"}, True),
        ({"policies": ["A"], "k": 1}, False),  # A is last on f
        ({"policies": ["A"], "k": 2, "envs": ["e"]}, True),
        # B and C tie for second on e: both rank 2.
        ({"policies": ["B", "C"], "k": 2, "env": "e"}, True),
        ({"policies": ["A", "C"], "k": 1, "env": "e"}, False),
        ({"policies": ["A", "C"], "k": 1, "require": "any"}, True),
        ({"policies": ["B", "C"], "k": 1, "require": "any"}, False),
        # Higher CTR is better: A leads on e, B on f.
        ({"policies": ["A"], "k": 1, "metric": "ctr", "env": "e"}, True),
        ({"policies": ["C"], "k": 1, "metric": "ctr", "env": "e"}, False),
        ({"policies": ["B"], "k": 1, "metric": "ctr", "among": ["B", "C"]}, True),
    ],
)
def test_top_k(claim, passed):
    result = evaluate_claim(
        parse_claim({"id": "t", "kind": "top-k", **claim}), RANKED, {}
    )
    assert result["passed"] is passed
    assert ("PASS" if passed else "FAIL") in result["evidence"]


def _seeded(env, label, ctr):
    return {
        "env": env,
        "label": label,
        "per_seed": {"seed": [0, 1], "ctr": ctr, "final_regret": [0.0, 0.0]},
    }


EQUAL_ROWS = [
    _seeded("k50", "A", [0.002, 0.004]),
    _seeded("k100", "A", [0.002, 0.004]),
    _seeded("k50", "B", [0.002, 0.004]),
    _seeded("k100", "B", [0.004, 0.002]),  # same mean, different seeds
]


def test_equal_compares_per_seed_values():
    base = {"id": "q", "kind": "equal", "envs": ["k50", "k100"], "metric": "ctr"}
    same = evaluate_claim(parse_claim({**base, "policies": ["A"]}), EQUAL_ROWS, {})
    assert same["passed"] is True and "PASS" in same["evidence"]
    assert same["values"]["A"] == {"k50": pytest.approx(0.003), "k100": 0.003}
    swapped = evaluate_claim(
        parse_claim({**base, "policies": ["A", "B"]}), EQUAL_ROWS, {}
    )
    assert swapped["passed"] is False and "B: " in swapped["evidence"]
    loose = parse_claim({**base, "policies": ["B"], "tolerance": 0.01})
    assert evaluate_claim(loose, EQUAL_ROWS, {})["passed"] is True
    missing = parse_claim({**base, "envs": ["k50", "k200"], "policies": ["A"]})
    assert evaluate_claim(missing, EQUAL_ROWS, {})["passed"] is False


def test_new_kinds_validate_their_fields():
    with pytest.raises(ValueError, match="envs"):
        parse_claim({"id": "q", "kind": "equal", "policies": ["A"], "env": "e"})
    with pytest.raises(ValueError, match="at least 2"):
        parse_claim({"id": "q", "kind": "equal", "policies": ["A"], "envs": ["e"]})
    with pytest.raises(ValueError, match="not both"):
        parse_claim({"id": "t", "kind": "below", "policy": "A", "other": "B",
                     "env": "e", "envs": ["e"]})  # fmt: skip
    with pytest.raises(ValueError):
        parse_claim({"id": "t", "kind": "top-k", "policies": ["A"], "k": 0})


def test_reward_and_ctr_claims_on_real_runs(tmp_path):
    claims = [
        {"id": "oracle-top", "kind": "top-k", "policies": ["Oracle"], "k": 1,
         "metric": "final_reward", "env": "logistic-h1"},
        {"id": "random-top", "kind": "top-k", "policies": ["Random"], "k": 1,
         "metric": "ctr", "env": "logistic-h1"},
    ]  # fmt: skip
    res = run_experiment(
        tiny(claims=claims, horizon=200),
        tmp_path,
        backend="serial",
        progress="none",
        figures=False,
    )
    row = next(r for r in res.summary["results"] if r["label"] == "Oracle")
    assert row["per_seed"]["seed"] == [0, 1]
    assert row["ctr_mean"] == pytest.approx(row["final_reward_mean"] / 200)
    verdicts = {c["id"]: c["passed"] for c in res.summary["claims"]}
    assert verdicts == {"oracle-top": True, "random-top": False}
