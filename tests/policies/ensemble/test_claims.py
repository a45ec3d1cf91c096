"""The `within-band` claim kind and the ensemble paper's configs."""

from __future__ import annotations

import pytest

from banditkit.experiments.config.claims import parse_claim
from banditkit.experiments.config.load import load_config
from banditkit.experiments.config.papers import paper_configs, paper_dir
from banditkit.experiments.summarise.claims.decide import evaluate_claim


def _rows(mine):
    return [
        {"env": "e", "label": "ES", "final_regret_mean": mine},
        {
            "env": "e",
            "label": "UCB",
            "final_regret_mean": 10.0,
            "final_regret_std": 2.0,
        },
        {"env": "e", "label": "TS", "final_regret_mean": 9.0, "final_regret_std": 0.5},
    ]


def test_within_band_uses_the_best_baselines_band():
    claim = parse_claim(
        {"id": "c", "kind": "within-band", "policy": "ES", "among": ["UCB", "TS"]}
    )
    assert evaluate_claim(claim, _rows(9.4), {})["passed"]  # 9.4 <= 9.0 + 0.5
    result = evaluate_claim(claim, _rows(9.6), {})
    assert not result["passed"] and "best TS" in result["evidence"]
    wide = parse_claim(
        {"id": "c", "kind": "within-band", "policy": "ES", "among": ["TS"], "width": 2}
    )
    assert evaluate_claim(wide, _rows(9.9), {})["passed"]
    with pytest.raises(ValueError):
        parse_claim({"id": "c", "kind": "within-band", "policy": "ES", "among": []})


def test_every_ensemble_config_resolves():
    figures = {load_config(p).figure for p in paper_configs(paper_dir("ensemble"))}
    assert {
        "fig1-linear",
        "fig1-logistic",
        "fig1-neural",
        "fig2a",
        "fig2b",
        "fig2c",
        "fig2d",
        "fig3a",
        "fig4a",
        "fig4b",
        "fig5",
    } == figures
