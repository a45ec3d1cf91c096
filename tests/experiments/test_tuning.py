"""Tuning: grid on disjoint tuning seeds, tuned.yaml that configs use."""

from __future__ import annotations

import json

import pytest
import yaml

from banditkit.experiments import run_experiment
from banditkit.experiments.schema import ConfigError
from banditkit.experiments.tuning import tune
from tests.experiments.helpers import tiny, write_yaml

GRID_CONFIG = tiny(
    envs=[{"name": "linear", "d": 3, "n_arms": 4}],
    policies=[
        {"name": "random", "label": "Random"},
        {"name": "eps-greedy", "label": "eps", "epsilon": 0.5},
    ],
    grid={"eps": {"epsilon": [1.0, 0.0]}},
    seeds=3,
    tuning={"seeds": 2},
)


def test_tune_picks_the_best_grid_point_on_tuning_seeds(tmp_path):
    config = write_yaml(tmp_path / "exp.yaml", GRID_CONFIG)
    result = tune(config, tmp_path / "tune", backend="serial", progress="none")
    assert result.ok
    # epsilon = 1 is uniform play; epsilon = 0 is greedy ridge, far better on a linear bandit.
    assert result.tuned == {"linear": {"eps": {"epsilon": 0.0}}}
    doc = yaml.safe_load(result.tuned_path.read_text())
    assert doc["tuned"] == result.tuned
    assert doc["source"]["tuning_seeds"] == [10000, 10001]
    summary = json.loads((tmp_path / "tune" / "summary.json").read_text())
    assert summary["seeds"] == [10000, 10001]
    assert {r["label"] for r in summary["results"]} == {
        "eps[epsilon=1.0]",
        "eps[epsilon=0.0]",
    }

    # A config that uses the file runs with the tuned value on its evaluation seeds.
    used = write_yaml(
        tmp_path / "use.yaml", {**GRID_CONFIG, "tuned": "tune/tuned.yaml"}
    )
    res = run_experiment(
        used, tmp_path / "eval", backend="serial", progress="none", figures=False
    )
    row = next(r for r in res.summary["results"] if r["label"] == "eps")
    assert row["params"]["epsilon"] == 0.0 and res.summary["seeds"] == [0, 1, 2]
    stored = yaml.safe_load((tmp_path / "eval" / "config.yaml").read_text())
    assert stored["tuned"] == {"linear": {"eps": {"epsilon": 0.0}}}
    assert stored["tuned_source"][0]["tuning_seeds"] == [10000, 10001]


def test_tuning_seeds_must_be_disjoint(tmp_path):
    with pytest.raises(ConfigError, match="reach the tuning seeds"):
        tune({**GRID_CONFIG, "seeds": [0, 10000]}, tmp_path, progress="none")


def test_tune_needs_a_grid(tmp_path):
    with pytest.raises(ConfigError, match="nothing to tune"):
        tune(tiny(), tmp_path, progress="none")


def test_tuning_horizon_is_recorded(tmp_path):
    config = write_yaml(
        tmp_path / "exp.yaml",
        {**GRID_CONFIG, "horizon": 40, "tuning": {"seeds": 1, "horizon": 15}},
    )
    result = tune(config, tmp_path / "tune", backend="serial", progress="none")
    doc = yaml.safe_load(result.tuned_path.read_text())
    assert doc["source"]["horizon"] == 15
    summary = json.loads((tmp_path / "tune" / "summary.json").read_text())
    assert summary["horizon"] == 15
    # --horizon wins over tuning.horizon.
    again = tune(config, tmp_path / "t2", backend="serial", progress="none", horizon=9)
    assert yaml.safe_load(again.tuned_path.read_text())["source"]["horizon"] == 9
    with pytest.raises(ConfigError, match="horizon"):
        tune({**GRID_CONFIG, "tuning": {"horizon": 0}}, tmp_path, progress="none")


def test_grid_candidates_get_their_policys_env_overrides(tmp_path):
    config = {
        **GRID_CONFIG,
        "horizon": 15,
        "envs": [
            {"name": "linear", "label": "a", "d": 3, "n_arms": 4},
            {"name": "linear", "label": "b", "d": 3, "n_arms": 4},
        ],
        "env_overrides": {"b": {"eps": {"lam": 4.0}}},
        "tuning": {"seeds": 1},
    }
    tune(config, tmp_path / "tune", backend="serial", progress="none")
    summary = json.loads((tmp_path / "tune" / "summary.json").read_text())
    lam = {(r["env"], r["label"]): r["params"]["lam"] for r in summary["results"]}
    assert lam == {
        ("a", "eps[epsilon=1.0]"): 1.0,
        ("a", "eps[epsilon=0.0]"): 1.0,
        ("b", "eps[epsilon=1.0]"): 4.0,
        ("b", "eps[epsilon=0.0]"): 4.0,
    }
    # An override of a parameter the grid varies would make the candidates equal.
    clash = {**config, "env_overrides": {"b": {"eps": {"epsilon": 0.5}}}}
    with pytest.raises(ConfigError, match=r"env_overrides\.b\.eps: sets epsilon"):
        tune(clash, tmp_path / "clash", progress="none")
