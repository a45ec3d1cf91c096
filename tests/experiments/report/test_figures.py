"""Figures: PNG and SVG per environment, chosen by the declared records."""

from __future__ import annotations

import numpy as np
import pytest

from banditkit.core import ContextualEnvironment, DuelingEnvironment
from banditkit.core.records import Record, aggregate, metric_names
from banditkit.envs import LinearEnv, OBDReplayEnv
from banditkit.experiments import METRICS, Metric, register_metric, run_experiment
from banditkit.experiments.config.metrics import figures_for
from banditkit.experiments.report.drawing import slug
from tests.experiments.helpers import tiny


def test_figures_follow_the_declared_records_not_env_names():
    assert figures_for(DuelingEnvironment.declared_records()) == [
        "regret",
        "average_regret",
    ]
    assert figures_for(OBDReplayEnv.declared_records()) == ["reward", "average_reward"]
    assert figures_for(LinearEnv.declared_records()) == ["regret"]
    assert figures_for(LinearEnv.declared_records(), ["n_updates"]) == [
        "regret",
        "n_updates",
    ]

    class Custom(ContextualEnvironment):
        records = (Record("hits", plot=("hits",)),)

    assert figures_for(Custom.declared_records()) == ["regret", "hits"]


def test_metric_values_from_stored_columns():
    records = metric_names(ContextualEnvironment.declared_records())
    reward = np.array([1.0, 0.0, 1.0])
    regret = np.array([1.0, 0.0, 1.0])
    assert aggregate(records["average_regret"], "average_regret", regret).tolist() == [
        1.0,
        0.5,
        2 / 3,
    ]
    assert aggregate(records["reward"], "reward", reward).tolist() == [1.0, 1.0, 2.0]
    assert aggregate(records["average_reward"], "average_reward", reward).tolist() == [
        1.0,
        0.5,
        2 / 3,
    ]
    updates = np.array([1, 1, 2])
    assert aggregate(records["n_updates"], "n_updates", updates).tolist() == [1, 1, 2]


def test_figures_written_including_requested_and_plugged_metrics(tmp_path):
    metric = Metric(
        "test-half-regret",
        "Half regret",
        "R/2",
        lambda df: np.asarray(df["cumulative_regret"]) / 2,
    )
    register_metric(metric)
    try:
        res = run_experiment(
            tiny(metrics=["n_updates", "test-half-regret"]),
            tmp_path,
            backend="serial",
            progress="none",
        )
    finally:
        del METRICS["test-half-regret"]
    names = sorted(p.name for p in (tmp_path / "figures").iterdir())
    for env in ("linear", "logistic-h1"):
        for prefix in ("regret", "n-updates", "test-half-regret"):  # "_" -> "-"
            assert f"{prefix}-{env}.png" in names and f"{prefix}-{env}.svg" in names
    png = (tmp_path / "figures" / "regret-linear.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    svg = (tmp_path / "figures" / "regret-linear.svg").read_text()
    assert "LinUCB" in svg and "cumulative regret" in svg
    assert len(res.figures) == len(names)


def test_duplicate_metric_rejected():
    register_metric(Metric("dup", "x", "y", lambda df: df))
    try:
        with pytest.raises(ValueError, match="already registered"):
            register_metric(Metric("dup", "x", "y", lambda df: df))
    finally:
        del METRICS["dup"]


def test_slug():
    assert slug("classification-digits") == "classification-digits"
    assert slug("a/b c") == "a-b-c"
