"""A verdict's standing: not decided under a long warm-up, indicative on too little evidence."""

from __future__ import annotations

import pytest

from banditkit.core import make_policy
from banditkit.experiments.config.claims import parse_claim
from banditkit.experiments.report.console import claims_lines
from banditkit.experiments.report.markdown import claims_table
from banditkit.experiments.summarise.claims.decide import evaluate_claim


def row(label, regrets, *, warmup=0, env="e"):
    """A result row with per-seed final regrets (seeds 0..n-1)."""
    return {
        "env": env,
        "label": label,
        "warmup": warmup,
        "n_seeds": len(regrets),
        "final_regret_mean": sum(regrets) / len(regrets),
        "per_seed": {"seed": list(range(len(regrets))), "final_regret": regrets},
    }


BELOW = parse_claim({"id": "c", "kind": "below", "policy": "A", "other": "B"})


def test_a_warm_up_of_half_the_run_leaves_the_claim_not_decided():
    rows = [row("A", [5.0, 6.0, 7.0], warmup=500), row("B", [1.0, 2.0, 3.0])]
    short = evaluate_claim(BELOW, rows, {}, horizon=80)
    assert short["passed"] is None and short["verdict"] == "not decided"
    assert "A spends 500 of 80 rounds in warm-up" in short["evidence"]
    assert "FAIL" not in short["evidence"]
    # the same numbers on a run four times the warm-up decide it (FAIL: A is above B)
    long = evaluate_claim(BELOW, rows, {}, horizon=2000)
    assert long["passed"] is False and long["verdict"] == "FAIL"
    # no horizon given: no warm-up check (summaries written before it)
    assert evaluate_claim(BELOW, rows, {})["passed"] is False


def test_a_failing_environment_fails_the_claim_whatever_another_leaves_open():
    claim = parse_claim({"id": "c", "kind": "lowest-final-regret", "policy": "A"})
    rows = [
        row("A", [1.0, 1.0, 1.0], warmup=900, env="short"),
        row("B", [2.0, 2.0, 2.0], env="short"),
        row("A", [4.0, 5.0, 6.0], env="other"),
        row("B", [1.0, 1.2, 1.1], env="other"),
    ]
    result = evaluate_claim(claim, rows, {}, horizon=1000)
    assert result["passed"] is False
    assert "short: " in result["evidence"] and "not decided" in result["evidence"]


@pytest.mark.parametrize(
    ("a", "b", "indicative"),
    [
        ([1.0, 1.1, 0.9], [3.0, 3.2, 2.9], False),  # decisive on three pairs
        ([1.0, 4.0, 0.5], [3.0, 0.8, 2.9], True),  # within noise
        ([1.0], [3.0], True),  # one pair: too few
    ],
)
def test_a_comparison_is_indicative_unless_its_paired_evidence_is_decisive(
    a, b, indicative
):
    result = evaluate_claim(BELOW, [row("A", a), row("B", b)], {}, horizon=100)
    assert result["passed"] is True and result["indicative"] is indicative


@pytest.mark.parametrize(("seeds", "indicative"), [(2, True), (5, False)])
def test_a_claim_about_one_policy_is_indicative_on_few_seeds(seeds, indicative):
    claim = parse_claim({"id": "r", "kind": "regret-below", "policy": "A", "value": 9})
    result = evaluate_claim(claim, [row("A", [1.0] * seeds)], {}, horizon=100)
    assert result["passed"] is True and result["indicative"] is indicative


def test_terminal_and_report_say_which_verdicts_are_indicative_or_open():
    rows = [row("A", [1.0, 4.0, 0.5]), row("B", [3.0, 0.8, 2.9], warmup=60)]
    claims = [
        evaluate_claim(BELOW, rows, {}, horizon=1000),
        {
            **evaluate_claim(BELOW, rows, {}, horizon=100),
            "id": "open",
            "quote": "A beats B.",
            "where": "Sec. 5",
        },
    ]
    long_text = "A below B " * 30
    claims[0]["text"] = long_text
    lines = claims_lines(claims, "report.md", width=60)
    assert lines[0].startswith("PASS (indicative) c: A below B")
    assert all(len(line) <= 60 for line in lines)
    words = " ".join(" ".join(lines).split())
    assert words.count("A below B") == 30  # wrapped, never cut
    assert "1 of 2 claims PASS, 1 not decided" in words
    assert any(line.startswith("(indicative: ") for line in lines)
    table = claims_table(claims)
    assert "**PASS** (indicative)" in table and "*not decided*" in table
    assert "Paper (Sec. 5): “A beats B.”" in table


def test_policies_declare_their_warm_up():
    assert make_policy("glm-es").warmup_rounds(80) == 80  # tau = 500, cut at T
    assert make_policy("glm-es").warmup_rounds(2000) == 500
    assert make_policy("onl-mnl", t0=100).warmup_rounds(150) == 100
    assert make_policy("lints").warmup_rounds(1000) == 0
    # anytime GLM-ES, T0 = 100, b = 2.618: a warm-up at the start of every restart;
    # 1,185 of 1,500 rounds, as measured on the runs of Fig. 3(a)
    anytime = make_policy("glm-es", anytime={"t0": 100, "base": 2.618})
    assert anytime.warmup_rounds(1500) == 1185
