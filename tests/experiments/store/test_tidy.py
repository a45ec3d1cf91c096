"""Results as data: ``load_runs`` and redrawing from stored runs without the datasets."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

import banditkit as bk
from banditkit.cli import app
from banditkit.datasets.storage import DatasetNotFoundError
from banditkit.experiments.config.resolve import resolve
from banditkit.experiments.store.stored import stored_experiment
from banditkit.experiments.store.tidy import ID_COLUMNS
from tests.datasets._data import require_reference_data

HORIZON = 15
SEEDS = [0, 1, 2]


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    """Two policies (one with parameters) on one synthetic environment, three seeds."""
    directory = tmp_path_factory.mktemp("tidy")
    cfg = {
        "name": "tidy",
        "horizon": HORIZON,
        "seeds": SEEDS,
        "env": {"name": "linear", "d": 3, "n_arms": 4},
        "policies": [
            {"name": "random"},
            {"name": "linucb", "label": "ucb", "nu": 0.5},
        ],
    }
    bk.run_experiment(cfg, directory, backend="serial", progress="none", figures=False)
    return directory


def test_one_row_per_run_and_round(out):
    frame = bk.load_runs(out)
    assert len(frame) == 2 * len(SEEDS) * HORIZON
    assert list(frame.columns[: len(ID_COLUMNS)]) == list(ID_COLUMNS)
    for name in ("t", "regret", "reward", "action", "propensity", "cumulative_regret"):
        assert name in frame.columns
    assert set(frame["policy"]) == {"random", "ucb"}
    assert set(frame["policy_name"]) == {"random", "linucb"}
    assert sorted(set(frame["seed"])) == SEEDS
    assert frame.groupby("run_id").size().eq(HORIZON).all()
    ucb = frame[frame["policy"] == "ucb"]
    assert (ucb["param.nu"] == 0.5).all()
    assert frame.loc[frame["policy"] == "random", "param.nu"].isna().all()
    # the stored cumulative regret is the running sum of the per-round regret
    for _, run in frame.groupby("run_id"):
        np.testing.assert_allclose(
            run["cumulative_regret"].to_numpy(), np.cumsum(run["regret"].to_numpy())
        )


def test_columns_subset_and_errors(out):
    frame = bk.load_runs(out, columns=["t", "reward"])
    assert [c for c in frame.columns if not c.startswith("param.")] == [
        *ID_COLUMNS,
        "t",
        "reward",
    ]
    with pytest.raises(ValueError, match="columns: no stored column 'rewards'"):
        bk.load_runs(out, columns=["rewards"])
    with pytest.raises(ValueError, match="summaries=True"):
        bk.load_runs(out, summaries=True, columns=["t"])


def test_summaries_match_summary_json(out):
    rows = bk.load_runs(out, summaries=True)
    assert len(rows) == 2 * len(SEEDS)
    assert (rows["rounds"] == HORIZON).all()
    summary = json.loads((out / "summary.json").read_text())
    for result in summary["results"]:
        cell = rows[rows["policy"] == result["label"]].sort_values("seed")
        for metric, stats in result["metrics"].items():
            assert stats["final"]["seeds"] == cell["seed"].tolist()
            assert cell[metric].tolist() == stats["final"]["per_seed"], metric


def test_stored_experiment_equals_resolving(out):
    stored = stored_experiment(out)
    full = resolve(out / "config.yaml", base_dir=out)
    assert [s.id for s in stored.runs()] == [s.id for s in full.runs()]
    assert [e.records for e in stored.envs] == [e.records for e in full.envs]


def test_plot_needs_no_dataset(tmp_path, monkeypatch):
    data = require_reference_data("banknote")
    monkeypatch.setenv("BANDITKIT_DATA", str(data))
    monkeypatch.setenv("BANDITKIT_OFFLINE", "1")
    out = tmp_path / "out"
    cfg = {
        "name": "nodata",
        "horizon": 10,
        "seeds": 2,
        "env": {"name": "classification", "dataset": "banknote"},
        "policies": [{"name": "random"}, {"name": "eps-greedy"}],
    }
    bk.run_experiment(cfg, out, backend="serial", progress="none", figures=False)
    assert not list((out / "figures").glob("*.png"))
    monkeypatch.setenv("BANDITKIT_DATA", str(tmp_path / "empty"))
    with pytest.raises(DatasetNotFoundError):  # the data are really gone
        resolve(out / "config.yaml", base_dir=out)
    result = CliRunner().invoke(app, ["plot", str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert (out / "figures" / "regret-classification-banknote.png").is_file()
    assert (out / "figures" / "regret-classification-banknote.svg").is_file()
    assert len(bk.load_runs(out)) == 2 * 2 * 10
    summary = json.loads((out / "summary.json").read_text())
    assert [r["n_seeds"] for r in summary["results"]] == [
        2,
        2,
    ]  # runs found, not missing


def test_older_summary_without_record_directions(out, tmp_path):
    """A summary.json without running_mean/higher_is_better still gives the same records."""
    import shutil

    copy = tmp_path / "old"
    shutil.copytree(out, copy)
    summary = json.loads((copy / "summary.json").read_text())
    for env in summary["envs"].values():
        for fields in env["records"].values():
            del fields["running_mean"], fields["higher_is_better"]
    (copy / "summary.json").write_text(json.dumps(summary))
    full = resolve(out / "config.yaml", base_dir=out)
    assert [e.records for e in stored_experiment(copy).envs] == [
        e.records for e in full.envs
    ]
