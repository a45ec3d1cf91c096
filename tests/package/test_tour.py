"""The tour of `make demo`: one algorithm of each paper family against its baselines."""

from __future__ import annotations

from pathlib import Path

import yaml
from typer.testing import CliRunner

from banditkit.cli import app
from banditkit.experiments.config.papers import paper_configs
from banditkit.experiments.config.resolve import resolve

TOUR = Path(__file__).resolve().parents[2] / "src" / "banditkit" / "examples" / "tour"
#: Each paper family's algorithm in the tour.
ALGORITHMS = {
    "logistic": "neurallog-ucb2",
    "ensemble": "glm-es",
    "dueling": "nvldb-ucb",
    "mnl": "onl-mnl",
    "rare": "blce",
}
FAMILIES = tuple(ALGORITHMS)


def test_one_paper_algorithm_per_family_against_baselines():
    configs = {p.stem: resolve(p) for p in paper_configs(TOUR)}
    assert sorted(configs) == sorted(FAMILIES)
    for family, experiment in configs.items():
        names = [p.name for p in experiment.policies]
        assert names[0] == ALGORITHMS[family]  # the paper's algorithm, then baselines
        assert len(names) >= 3 and names[-1].startswith("random")
        # embedded or synthetic data: no dataset to fetch
        assert all("dataset" not in e.params for e in experiment.envs)


def test_the_tour_figure_has_one_panel_per_family():
    (layout,) = yaml.safe_load((TOUR / "logistic.yaml").read_text())["layout"]
    assert layout["name"] == "tour"
    figures = [p.get("figure", "logistic") for p in layout["panels"]]
    assert figures == list(FAMILIES)


def test_the_tour_runs_and_draws_its_figure(tmp_path):
    out = tmp_path / "tour"
    result = CliRunner().invoke(
        app,
        ["reproduce", str(TOUR), "--out", str(out), "--seeds", "1", "--horizon", "20",
         "--backend", "serial", "--progress", "none"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert (out / "figures" / "tour.png").stat().st_size > 10_000
    assert "tour.png" in (out / "report.md").read_text()
