"""The declared records downstream: store columns, summary metrics at checkpoints, bands,
claims on any declared metric at any checkpoint, and the report's metric tables."""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow.parquet as pq
import pytest

from banditkit.core import DuelingEnvironment, Record
from banditkit.experiments import run_experiment
from banditkit.experiments.config.claims import parse_claim
from banditkit.experiments.config.errors import ConfigError
from banditkit.experiments.report.markdown import FigureSection, render_report
from banditkit.experiments.store.store import RunStore
from banditkit.experiments.store.tables import COLUMNS, table_columns
from banditkit.experiments.summarise.claims.decide import evaluate_claim
from banditkit.experiments.summarise.stats import band_label, curve_band, metric_stats
from tests.experiments.helpers import tiny

DUEL = DuelingEnvironment.declared_records()


def _duel_columns(n: int = 3) -> dict[str, object]:
    columns: dict[str, object] = {name: np.arange(n) for name in table_columns(DUEL)}
    columns["action"] = [(0, 1)] * n
    return columns


def test_store_writes_declared_columns_with_their_types(tmp_path):
    store = RunStore(tmp_path)
    store.prepare()
    store.write_run("abc", _duel_columns(), {"id": "abc"}, DUEL)
    table = pq.read_table(store.table_path("abc"))
    assert table.column_names == list(table_columns(DUEL))
    assert table.column("action").to_pylist() == [[0, 1]] * 3
    assert str(table.schema.field("weak_regret").type) == "double"


@pytest.mark.parametrize("change", ["extra", "missing"])
def test_store_rejects_undeclared_or_missing_columns(tmp_path, change):
    store = RunStore(tmp_path)
    store.prepare()
    columns = _duel_columns()
    if change == "extra":
        columns["surprise"] = np.zeros(3)
    else:
        del columns["strong_regret"]
    with pytest.raises(ValueError, match="declared records") as info:
        store.write_run("abc", columns, {"id": "abc"}, DUEL)
    assert ("surprise" if change == "extra" else "strong_regret") in str(info.value)
    assert not store.is_finished("abc")


def test_contextual_tables_store_action_and_propensity(tmp_path):
    res = run_experiment(
        tiny(checkpoints=[10, 30, 1000]),
        tmp_path,
        backend="serial",
        progress="none",
        figures=False,
    )
    assert res.ok
    for path in (tmp_path / "runs").glob("*.parquet"):
        table = pq.read_table(path)
        assert table.column_names == list(COLUMNS)
        actions = np.asarray(table.column("action"))
        assert actions.dtype == np.int64 and actions.min() >= 0
    summary = res.summary
    assert summary["checkpoints"] == [10, 30]  # 1000 is past the horizon of 40
    rows = {(r["env"], r["label"]): r for r in summary["results"]}
    random = rows[("linear", "Random")]
    # every policy reports its propensity: uniform play 1/K, the others in (0, 1]
    propensities = [
        np.asarray(pq.read_table(p).column("propensity"))
        for p in (tmp_path / "runs").glob("*.parquet")
    ]
    assert any(np.allclose(p, 1 / 4) for p in propensities)
    assert all(np.all((p > 0) & (p <= 1)) for p in propensities)
    regret = random["metrics"]["regret"]
    assert regret["final"]["mean"] == pytest.approx(random["final_regret_mean"])
    at30 = regret["checkpoints"]["30"]
    assert at30["n"] == 2 and at30["seeds"] == [0, 1]
    assert at30["mean"] < regret["final"]["mean"]
    avg = random["metrics"]["average_regret"]["checkpoints"]["10"]["per_seed"]
    assert avg == pytest.approx(
        [v / 10 for v in regret["checkpoints"]["10"]["per_seed"]]
    )
    assert random["metrics"]["n_updates"]["final"]["mean"] == random["n_updates_mean"]
    assert summary["envs"]["linear"]["records"]["regret"]["plot"] == ["regret"]
    json.dumps(summary)  # plain data


def test_metric_stats_and_bands():
    stats = metric_stats([1.0, 2.0, 3.0], [0, 1, 2], 0.95)
    assert stats["mean"] == 2.0 and stats["std"] == 1.0 and stats["n"] == 3
    assert stats["ci"][0] < 2.0 < stats["ci"][1]
    assert math.isnan(metric_stats([], [], 0.95)["mean"])
    matrix = np.array([[0.0, 2.0], [2.0, 6.0]])
    _, lo, hi = curve_band(matrix, 0.95, "std")
    assert (hi - lo).tolist() == pytest.approx([2 * np.sqrt(2), 2 * np.sqrt(8)])
    _, lo_se, hi_se = curve_band(matrix, 0.95, "se")
    assert (hi_se - lo_se).tolist() == pytest.approx([2.0, 4.0])
    _, lo_t, _ = curve_band(matrix, 0.95, "t-ci")
    assert lo_t[0] < lo_se[0]
    with pytest.raises(ValueError, match="kind"):
        curve_band(matrix, 0.95, "iqr")
    assert "fewer than 5 seeds" in band_label("t-ci", 0.9, 4)
    assert "fewer" not in band_label("t-ci", 0.9, 5)


def _row(label: str, weak: float, weak_at: float, reward: float) -> dict[str, object]:
    def stats(v: float) -> dict[str, object]:
        return {"n": 2, "mean": v, "std": 0.0, "seeds": [0, 1], "per_seed": [v, v]}

    return {
        "env": "e",
        "label": label,
        "final_regret_mean": weak,
        "metrics": {
            "average_weak_regret": {
                "higher_is_better": False,
                "final": stats(weak),
                "checkpoints": {"100": stats(weak_at)},
            },
            "average_reward": {
                "higher_is_better": True,
                "final": stats(reward),
                "checkpoints": {"100": stats(reward)},
            },
        },
    }


ROWS = [_row("A", 0.1, 0.5, 0.9), _row("B", 0.2, 0.3, 0.5)]


@pytest.mark.parametrize(
    ("claim", "passed"),
    [
        ({"kind": "below", "other": "B", "metric": "average_weak_regret"}, True),
        (
            {"kind": "below", "other": "B", "metric": "average_weak_regret", "at": 100},
            False,
        ),
        ({"kind": "value-below", "metric": "average_weak_regret", "value": 0.2}, True),
        (
            {
                "kind": "value-below",
                "metric": "average_weak_regret",
                "at": 100,
                "value": 0.2,
            },
            False,
        ),
        ({"kind": "below", "other": "B", "metric": "average_reward"}, False),
    ],
)
def test_claims_on_declared_metrics_at_checkpoints(claim, passed):
    result = evaluate_claim(parse_claim({"id": "c", "policy": "A", **claim}), ROWS, {})
    assert result["passed"] is passed


def test_top_k_reads_the_declared_direction():
    higher = {"id": "t", "kind": "top-k", "policies": ["A"], "k": 1}
    assert evaluate_claim(
        parse_claim({**higher, "metric": "average_reward"}), ROWS, {}
    )["passed"]
    lower_at = {**higher, "metric": "average_weak_regret", "at": 100}
    assert not evaluate_claim(parse_claim(lower_at), ROWS, {})["passed"]
    # the legacy name at a checkpoint reads the declared metric it stands for
    ctr = {**higher, "metric": "ctr", "at": 100}
    assert evaluate_claim(parse_claim(ctr), ROWS, {})["passed"]


def test_resolve_rejects_undeclared_metrics_and_timeless_legacy_at():
    from banditkit.experiments.config.resolve import resolve

    weak = {"id": "w", "kind": "below", "policy": "Random", "other": "LinUCB"}
    with pytest.raises(ConfigError, match="declares no metric 'weak_regret'"):
        resolve(tiny(claims=[{**weak, "metric": "weak_regret"}]))
    with pytest.raises(ConfigError, match="no value per round"):
        resolve(
            tiny(checkpoints=[10], claims=[{**weak, "metric": "seconds", "at": 10}])
        )
    with pytest.raises(ConfigError, match="checkpoints"):
        resolve(tiny(checkpoints=[0]))


def test_report_has_metric_and_checkpoint_tables(tmp_path):
    cfg = tiny(checkpoints=[20], metrics=["average_regret"])
    res = run_experiment(cfg, tmp_path, backend="serial", progress="none")
    summary = dict(res.summary)
    # a toy declaration that plots its running mean, as a duel's regret does
    summary["envs"]["linear"]["records"]["regret"]["plot"] = [
        "regret",
        "average_regret",
    ]
    section = FigureSection(
        "fig", {"name": "tiny", "horizon": 40}, summary, res.figures
    )
    text = render_report("T", [section], tmp_path, command="x", quick=True, versions={})
    assert "### Final average_regret" in text
    assert "### average_regret at checkpoints" in text and "| t = 20 |" in text
    assert "fewer than 5 seeds" in text
    assert "average-regret-linear.png" in text  # the requested figure


def test_a_record_plotted_by_a_subclass_gets_its_figure():
    class Plotted(DuelingEnvironment):
        records = (
            Record("weak_regret", running_mean=True, plot=("average_weak_regret",)),
        )

    from banditkit.experiments.config.metrics import figures_for

    assert figures_for(Plotted.declared_records()) == [
        "regret",
        "average_regret",
        "average_weak_regret",
    ]
