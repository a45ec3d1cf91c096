"""Identical-work benchmark variants and the work they report (issue 16)."""

from __future__ import annotations

import importlib
import json
from dataclasses import replace

import pytest

from benchmarks._common import (
    IDENTICAL_WORK_BAR,
    LOGISTIC_TASK,
    compare_variants,
    run_policy,
    work_done,
)

REFERENCES = {
    "reference_logistic_ucb1": {"update_every": 5},
    "reference_ada_ofu_ecolog": {"update_every": 1},
    "reference_neural_ucb_shuttle": {"update_every": 1, "steps": 50, "width": 100},
    "reference_neural_ts_mushroom": {"update_every": 1, "steps": 100, "width": 100},
}


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_identical_work_differs_only_in_the_work(name: str) -> None:
    module = importlib.import_module(f"benchmarks.{name}")
    best, same = module.WORKLOAD, module.IDENTICAL_WORK
    assert same.bar == IDENTICAL_WORK_BAR
    assert (same.policy, same.env, same.env_params, same.horizon) == (
        best.policy,
        best.env,
        best.env_params,
        best.horizon,
    )
    assert same.reference == best.reference
    changed = {
        k: v for k, v in same.policy_params.items() if best.policy_params.get(k) != v
    }
    expected = {k: v for k, v in REFERENCES[name].items() if best.policy_params[k] != v}
    assert changed == expected
    assert changed  # the variant does more work than the best settings


def test_work_done_counts_refits_rows_and_steps() -> None:
    # refits after observations 5, 10, 15, 20 of T = 23: 50 rows read
    _, _, agent = run_policy(
        "logistic-ucb1", {"update_every": 5}, "logistic", LOGISTIC_TASK, 23, 0
    )
    work = work_done(agent, 23)
    assert work["refits"] == 4
    assert work["refit_rows"] == 5 + 10 + 15 + 20
    assert work["train_steps"] is None and work["rows_touched"] is None
    _, _, agent = run_policy(
        "neural-ucb",
        {"width": 4, "steps": 3, "update_every": 4},
        "logistic",
        LOGISTIC_TASK,
        9,
        0,
    )
    work = work_done(agent, 9)
    assert (work["refits"], work["refit_rows"]) == (2, 4 + 8)
    assert (work["train_steps"], work["rows_touched"]) == (6, 3 * 12)


def test_compare_variants_writes_both(tmp_path) -> None:
    module = importlib.import_module("benchmarks.reference_logistic_ucb1")
    best = replace(module.WORKLOAD, horizon=40)
    same = replace(module.IDENTICAL_WORK, horizon=40)
    result = compare_variants(best, same, quick=True, out=tmp_path)
    assert result["work"]["refits"] == 0  # refit every 50 rounds, T = 40
    assert result["identical_work"]["work"]["refits"] == 8
    stored = json.loads((tmp_path / "result.json").read_text())
    assert stored["identical_work"]["policy"]["params"]["update_every"] == 5
    assert (tmp_path / "identical_work" / "result.md").exists()
    table = (tmp_path / "result.md").read_text()
    assert "Identical work" in table and "8 refits" in table
