"""Paired evidence of the claims comparing policies: numbers, qualifier, verdicts unchanged."""

from __future__ import annotations

import copy
import math
import re

import numpy as np
import pytest
from scipy import stats

from banditkit.experiments import run_experiment
from banditkit.experiments.config.claims import parse_claim
from banditkit.experiments.report.markdown import claims_table
from banditkit.experiments.summarise.claims.decide import evaluate_claim
from banditkit.experiments.summarise.claims.evidence import (
    paired_difference,
    paired_overview,
)
from tests.experiments.helpers import tiny

SEEDS = [0, 1, 2, 3, 4]
# Final regret per seed: A is lowest on average but close to B; C is far behind.
REGRET = {
    "A": [10.0, 12.0, 9.0, 14.0, 11.0],
    "B": [11.0, 12.5, 10.0, 13.0, 12.5],
    "C": [20.0, 25.0, 22.0, 30.0, 26.0],
}
# CTR per seed (higher is better): B leads A by a steady margin; C is last.
CTR = {
    "A": [0.010, 0.012, 0.011, 0.009, 0.013],
    "B": [0.012, 0.014, 0.013, 0.011, 0.015],
    "C": [0.004, 0.009, 0.002, 0.010, 0.001],
}


def _row(env, label, regret, ctr, seeds=SEEDS):
    return {
        "env": env,
        "label": label,
        "final_regret_mean": float(np.mean(regret)),
        "ctr_mean": float(np.mean(ctr)),
        "per_seed": {"seed": list(seeds), "final_regret": regret, "ctr": ctr},
    }


def _rows(env="e"):
    return [_row(env, lab, REGRET[lab], CTR[lab]) for lab in REGRET]


def _direct(a, b, level, factor=1.0):
    """Mean difference and half-width of the t-interval, computed directly."""
    d = np.asarray(a) - factor * np.asarray(b)
    half = stats.t.ppf((1 + level) / 2, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size)
    return d.mean(), half


def _decide(claim, rows, level=0.95):
    return evaluate_claim(parse_claim({"id": "c", **claim}), rows, {}, level=level)


def _check(entry, a, b, level, factor=1.0):
    mean, half = _direct(a, b, level, factor)
    assert entry["n"] == len(a)
    assert entry["mean"] == pytest.approx(mean, rel=1e-12)
    assert entry["ci"] == pytest.approx([mean - half, mean + half], rel=1e-12)
    assert entry["level"] == level


def test_top_k_pairs_with_the_kth_best_other_policy():
    # A ranks 1st: the boundary is B (the best other, k = 1). Within noise.
    result = _decide({"kind": "top-k", "policies": ["A"], "k": 1}, _rows(), 0.9)
    (entry,) = result["paired"]
    assert result["passed"] and (entry["policy"], entry["other"]) == ("A", "B")
    _check(entry, REGRET["A"], REGRET["B"], 0.9)
    assert entry["verdict_side"] == "negative"
    assert entry["qualifier"] == "within noise"  # the interval straddles 0
    assert "paired A - B -0.6 ± " in result["evidence"]
    assert "(90% CI, 5 seeds, within noise)]" in result["evidence"]
    # k = 2: A passes and the boundary is C, the 2nd best other: decisive.
    two = _decide({"kind": "top-k", "policies": ["A"], "k": 2}, _rows())
    (entry,) = two["paired"]
    assert entry["other"] == "C" and entry["qualifier"] == "decisive"
    _check(entry, REGRET["A"], REGRET["C"], 0.95)
    # C fails top-2: the last of the two that beat it is B (its 2nd best other).
    fail = _decide({"kind": "top-k", "policies": ["C"], "k": 2}, _rows())
    (entry,) = fail["paired"]
    assert not fail["passed"] and entry["other"] == "B"
    assert entry["verdict_side"] == "positive" and entry["qualifier"] == "decisive"
    _check(entry, REGRET["C"], REGRET["B"], 0.95)


def test_higher_is_better_flips_the_side():
    # By CTR, B is best: a top-1 claim for A fails against B, decisively (B - A is 0.002
    # on every seed), and one for B passes against A.
    fail = _decide(
        {"kind": "top-k", "policies": ["A"], "k": 1, "metric": "ctr"}, _rows()
    )
    (entry,) = fail["paired"]
    assert not fail["passed"] and entry["other"] == "B"
    assert entry["mean"] == pytest.approx(-0.002)
    assert entry["verdict_side"] == "negative" and entry["qualifier"] == "decisive"
    _check(entry, CTR["A"], CTR["B"], 0.95)
    win = _decide(
        {"kind": "top-k", "policies": ["B"], "k": 1, "metric": "ctr"}, _rows()
    )
    (entry,) = win["paired"]
    assert win["passed"] and entry["verdict_side"] == "positive"
    assert entry["qualifier"] == "decisive"


def test_lowest_final_regret_and_below():
    lowest = _decide({"kind": "lowest-final-regret", "policy": "A"}, _rows())
    (entry,) = lowest["paired"]
    assert lowest["passed"] and entry["other"] == "B"
    _check(entry, REGRET["A"], REGRET["B"], 0.95)
    lost = _decide({"kind": "lowest-final-regret", "policy": "C"}, _rows())
    (entry,) = lost["paired"]
    assert not lost["passed"] and entry["other"] == "A"
    assert entry["verdict_side"] == "positive" and entry["qualifier"] == "decisive"
    # below with a factor: d = A - 0.5 C; 0.5 * C is about 12.3 > A's 11.2: passes.
    below = _decide(
        {"kind": "below", "policy": "A", "other": "C", "factor": 0.5}, _rows()
    )
    (entry,) = below["paired"]
    assert below["passed"] and entry["factor"] == 0.5
    _check(entry, REGRET["A"], REGRET["C"], 0.95, factor=0.5)
    assert entry["qualifier"] == "within noise"
    assert "paired A - 0.5 x C" in below["evidence"]


def test_declared_metric_at_a_checkpoint():
    def row(label, values):
        stats_ = {"seeds": SEEDS, "per_seed": values, "mean": float(np.mean(values))}
        return {
            "env": "e",
            "label": label,
            "metrics": {"regret": {"final": {}, "checkpoints": {"10": stats_}}},
        }

    rows = [row("A", REGRET["A"]), row("C", REGRET["C"])]
    result = _decide(
        {"kind": "below", "policy": "A", "other": "C", "metric": "regret", "at": 10},
        rows,
    )
    (entry,) = result["paired"]
    assert entry["metric"] == "regret at t=10" and entry["qualifier"] == "decisive"
    _check(entry, REGRET["A"], REGRET["C"], 0.95)
    # the final round has no per-seed values here: nothing to pair
    final = _decide(
        {"kind": "below", "policy": "A", "other": "C", "metric": "regret"}, rows
    )
    assert final["paired"][0]["n"] == 0
    assert final["paired"][0]["qualifier"] == "too few pairs"


def test_grows_less_pairs_the_changes():
    rows = _rows("small") + [
        _row("big", lab, [v * (1.5 if lab == "C" else 1.1) for v in REGRET[lab]],
             CTR[lab])
        for lab in REGRET
    ]  # fmt: skip
    result = _decide(
        {"kind": "grows-less", "policy": "A", "other": "C", "envs": ["small", "big"]},
        rows,
    )
    (entry,) = result["paired"]
    change_a = 0.1 * np.asarray(REGRET["A"])
    change_c = 0.5 * np.asarray(REGRET["C"])
    assert result["passed"] and entry["env"] == "small -> big"
    _check(entry, change_a, change_c, 0.95)
    assert entry["qualifier"] == "decisive"
    assert "[paired change of A - change of C" in result["evidence"]


def test_only_seeds_present_for_both_are_paired():
    rows = _rows()
    rows[1] = _row("e", "B", REGRET["B"][:3], CTR["B"][:3], seeds=[2, 0, 1])
    entry = _decide({"kind": "below", "policy": "A", "other": "B"}, rows)["paired"][0]
    a = [REGRET["A"][s] for s in (0, 1, 2)]
    b = [REGRET["B"][i] for i in (1, 2, 0)]  # B's values listed for seeds 2, 0, 1
    assert entry["seeds"] == [0, 1, 2]
    _check(entry, a, b, 0.95)
    rows[1] = _row("e", "B", [11.0], [0.01], seeds=[3])
    one = _decide({"kind": "below", "policy": "A", "other": "B"}, rows)
    entry = one["paired"][0]
    assert entry["n"] == 1 and entry["ci"] is None
    assert entry["mean"] == pytest.approx(REGRET["A"][3] - 11.0)
    assert entry["qualifier"] == "too few pairs"
    assert "(1 seed: too few pairs)" in one["evidence"]
    assert paired_difference({0: 1.0, 1: math.nan}, {0: 2.0, 1: 3.0}, 0.9)["n"] == 1


def _means_part(result):
    """The evidence without its paired parts."""
    return re.sub(r" \[paired[^\]]*\]", "", result["evidence"])


CLAIMS = [
    {"kind": "lowest-final-regret", "policy": "A"},
    {"kind": "lowest-final-regret", "policy": "B", "among": ["B", "C"]},
    {"kind": "below", "policy": "B", "other": "A"},
    {"kind": "below", "policy": "A", "other": "C", "factor": 0.4},
    {"kind": "below", "policy": "A", "other": "B", "metric": "ctr"},
    {"kind": "seconds-ratio", "policy": "A", "other": "B", "below": 1.5},
    {"kind": "regret-below", "policy": "A", "value": 11.0},
    {"kind": "value-below", "policy": "A", "metric": "ctr", "value": 0.1},
    {"kind": "sublinear", "policy": "A"},
    {"kind": "linear", "policy": "A"},
    {"kind": "grows-less", "policy": "A", "other": "C", "envs": ["e", "f"]},
    {"kind": "top-k", "policies": ["A", "C"], "k": 2},
    {"kind": "top-k", "policies": ["A", "C"], "k": 1, "require": "any"},
    {"kind": "top-k", "policies": ["C"], "k": 1, "metric": "ctr"},
    {"kind": "equal", "policies": ["A"], "envs": ["e", "f"]},
    {"kind": "within-band", "policy": "B", "among": ["A"]},
]


@pytest.mark.parametrize("claim", CLAIMS, ids=lambda c: c["kind"])
def test_verdicts_do_not_depend_on_the_per_seed_values(claim):
    # A seed missing from B and per-seed values that contradict the means change the
    # paired part only: the verdict, the values and the evidence before the paired part
    # are those decided on the means.
    rows = _rows("e") + _rows("f")
    for row in rows:
        row.update(seconds_mean=1.0, final_regret_std=1.0)
    halves = {(r["env"], r["label"]): (10.0, 15.0) for r in rows}
    stripped = copy.deepcopy(rows)
    for row in stripped:
        row["per_seed"] = {"seed": [], "final_regret": [], "ctr": []}
    scrambled = copy.deepcopy(rows)
    for row in scrambled:
        if (row["env"], row["label"]) == ("e", "A"):
            row["per_seed"]["final_regret"] = row["per_seed"]["final_regret"][::-1]
        row["per_seed"]["seed"] = row["per_seed"]["seed"][
            : 3 if row["label"] == "B" else 5
        ]
    parsed = parse_claim({"id": "c", **claim})
    base = evaluate_claim(parsed, rows, halves)
    # `equal` is decided on the per-seed values themselves (and compares no policies)
    for other in () if claim["kind"] == "equal" else (stripped, scrambled):
        again = evaluate_claim(parsed, other, halves)
        assert again["passed"] is base["passed"]
        assert again["values"] == base["values"]
        assert _means_part(again) == _means_part(base)
        assert again["paired"] != base["paired"] or not base["paired"]
    compares = claim["kind"] in {"lowest-final-regret", "below", "grows-less", "top-k"}
    assert bool(base["paired"]) is compares


def test_overview_and_report_column():
    entries = [
        {"env": "h1", "policy": "A", "qualifier": "within noise"},
        {"env": "h2", "policy": "A", "qualifier": "decisive"},
        {"env": "h2", "policy": "B", "qualifier": "decisive"},
    ]
    assert paired_overview(entries) == "decisive: h2 (A), h2 (B); within noise: h1 (A)"
    assert paired_overview(entries[1:2] * 2) == "all decisive"
    claim = {
        "id": "c",
        "text": "t",
        "passed": False,
        "evidence": "x",
        "paired": entries,
    }
    lines = claims_table([claim, {**claim, "paired": []}]).splitlines()
    assert lines[0].endswith("| evidence | paired |")
    assert lines[2].endswith("| decisive: h2 (A), h2 (B); within noise: h1 (A) |")
    assert lines[3].endswith("| x | - |")


def test_summary_claims_carry_paired_fields(tmp_path):
    claims = [
        {"id": "oracle-best", "kind": "top-k", "policies": ["Oracle"], "k": 1,
         "env": "linear"},
        {"id": "random-sublinear", "kind": "sublinear", "policy": "Random"},
    ]  # fmt: skip
    res = run_experiment(
        tiny(claims=claims, seeds=3, ci_level=0.8),
        tmp_path,
        backend="serial",
        progress="none",
        figures=False,
    )
    top, sub = res.summary["claims"]
    (entry,) = top["paired"]
    rows = {r["label"]: r for r in res.summary["results"] if r["env"] == "linear"}
    other = entry["other"]
    _check(
        entry,
        rows["Oracle"]["per_seed"]["final_regret"],
        rows[other]["per_seed"]["final_regret"],
        0.8,
    )
    assert (
        top["passed"] and entry["qualifier"] == "decisive"
    )  # the oracle's regret is 0
    assert "(80% CI, 3 seeds, decisive)]" in top["evidence"]
    assert sub["paired"] == []


def test_legacy_n_updates_pairs_the_declared_per_seed_values():
    def row(label, values):
        final = {"seeds": SEEDS, "per_seed": values, "mean": float(np.mean(values))}
        return {
            "env": "e",
            "label": label,
            "n_updates_mean": float(np.mean(values)),
            "per_seed": {"seed": SEEDS, "final_regret": values},
            "metrics": {"n_updates": {"final": final, "checkpoints": {}}},
        }

    rows = [row("A", [8.0, 8.0, 9.0, 8.0, 8.0]), row("B", REGRET["C"])]
    result = _decide(
        {"kind": "below", "policy": "A", "other": "B", "metric": "n_updates"}, rows
    )
    (entry,) = result["paired"]
    assert result["passed"] and entry["qualifier"] == "decisive"
    _check(entry, [8.0, 8.0, 9.0, 8.0, 8.0], REGRET["C"], 0.95)
    seconds = _decide(
        {"kind": "below", "policy": "A", "other": "B", "metric": "seconds"},
        [{**r, "seconds_mean": 1.0} for r in rows],
    )
    assert seconds["paired"][0]["n"] == 0  # no per-seed timings in a summary row
