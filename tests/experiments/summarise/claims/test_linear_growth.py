"""The `linear` and `grows-less` claim kinds (decided by hand on small summaries)."""

import pytest

from banditkit.experiments.config.claims import parse_claim
from banditkit.experiments.config.errors import ConfigError
from banditkit.experiments.config.load import load_config
from banditkit.experiments.summarise.claims.decide import evaluate_claim


def test_linear_passes_on_linear_growth_and_fails_on_a_flat_curve():
    claim = parse_claim({"id": "c", "kind": "linear", "policy": "a", "fraction": 0.8})
    halves = {("e", "a"): (10.0, 19.0), ("f", "a"): (10.0, 12.0)}
    rows = [{"env": "e", "label": "a"}, {"env": "f", "label": "a"}]
    out = evaluate_claim(claim, rows, halves)
    assert not out["passed"]
    assert out["values"]["e"]["ratio"] == pytest.approx(0.9)
    assert out["values"]["f"]["ratio"] == pytest.approx(0.2)
    only_e = parse_claim({"id": "c", "kind": "linear", "policy": "a", "env": "e"})
    assert evaluate_claim(only_e, rows, halves)["passed"]
    # no first-half regret: undefined, not a pass
    assert not evaluate_claim(only_e, rows, {("e", "a"): (0.0, 0.0)})["passed"]


def test_grows_less_compares_the_change_between_two_environments():
    rows = [
        {"env": "n100", "label": "a", "final_regret_mean": 5.0},
        {"env": "n800", "label": "a", "final_regret_mean": 6.0},
        {"env": "n100", "label": "b", "final_regret_mean": 4.0},
        {"env": "n800", "label": "b", "final_regret_mean": 9.0},
    ]
    spec = {"id": "g", "kind": "grows-less", "policy": "a", "other": "b"}
    out = evaluate_claim(parse_claim({**spec, "envs": ["n100", "n800"]}), rows, {})
    assert out["passed"] and out["values"]["b"]["change"] == pytest.approx(5.0)
    # the other direction: a falls by 1, b by 5, so a does not "grow less"
    back = evaluate_claim(parse_claim({**spec, "envs": ["n800", "n100"]}), rows, {})
    assert not back["passed"]


def test_grows_less_needs_exactly_two_environments():
    config = {
        "name": "x",
        "horizon": 5,
        "seeds": 1,
        "env": {"name": "linear"},
        "policies": [
            {"name": "random", "label": "a"},
            {"name": "random", "label": "b"},
        ],
        "claims": [
            {"id": "g", "kind": "grows-less", "policy": "a", "other": "b", "env": "e"}
        ],
    }
    with pytest.raises(ConfigError, match="exactly 2"):
        load_config(config)
