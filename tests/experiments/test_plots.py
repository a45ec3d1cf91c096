"""Figures: PNG and SVG per environment, family metrics through the registry."""

from __future__ import annotations

import numpy as np
import pytest

from banditkit.experiments import METRICS, Metric, register_metric, run_experiment
from banditkit.experiments.metrics import metrics_for
from banditkit.experiments.plots import slug
from tests.experiments.helpers import tiny


def test_family_metrics_are_keyed_by_family_and_env_kind():
    assert [m.name for m in metrics_for("dueling", "dueling")] == ["average-regret"]
    assert [m.name for m in metrics_for("rare-linear", "contextual")] == ["n-updates"]
    assert [m.name for m in metrics_for("obd-replay", "contextual")] == [
        "cumulative-reward",
        "ctr",
    ]
    assert metrics_for("linear", "contextual") == []


def test_metric_values_from_stored_columns():
    import pandas as pd

    df = pd.DataFrame(
        {
            "t": [1, 2, 4],
            "reward": [1.0, 0.0, 1.0],
            "cumulative_regret": [1.0, 1.0, 2.0],
            "n_updates": [1, 1, 2],
        }
    )
    assert METRICS["average-regret"].compute(df).tolist() == [1.0, 0.5, 0.5]
    assert METRICS["ctr"].compute(df).tolist() == [1.0, 0.5, 0.5]
    assert METRICS["cumulative-reward"].compute(df).tolist() == [1.0, 1.0, 2.0]
    assert METRICS["n-updates"].compute(df).tolist() == [1.0, 1.0, 2.0]


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
            tiny(metrics=["n-updates", "test-half-regret"]),
            tmp_path,
            backend="serial",
            progress="none",
        )
    finally:
        del METRICS["test-half-regret"]
    names = sorted(p.name for p in (tmp_path / "figures").iterdir())
    for env in ("linear", "logistic-h1"):
        for prefix in ("regret", "n-updates", "test-half-regret"):
            assert f"{prefix}-{env}.png" in names and f"{prefix}-{env}.svg" in names
    png = (tmp_path / "figures" / "regret-linear.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    svg = (tmp_path / "figures" / "regret-linear.svg").read_text()
    assert "LinUCB" in svg and "cumulative regret" in svg
    assert len(res.figures) == len(names)


def test_duplicate_metric_rejected():
    with pytest.raises(ValueError, match="already registered"):
        register_metric(Metric("ctr", "x", "y", lambda df: df))


def test_slug():
    assert slug("classification-digits") == "classification-digits"
    assert slug("a/b c") == "a-b-c"
