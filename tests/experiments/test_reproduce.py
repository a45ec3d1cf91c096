"""reproduce: the packaged example paper, figure selection, report with claims."""

from __future__ import annotations

import json

import pytest

from banditkit.experiments.config.errors import ConfigError
from banditkit.experiments.config.load import apply_overrides, load_config
from banditkit.experiments.config.papers import list_papers, paper_configs, paper_dir
from banditkit.experiments.config.resolve import resolve
from banditkit.experiments.config.schema import QUICK_SEEDS
from banditkit.experiments.reproduce import reproduce
from tests.datasets._data import require_reference_data, use_reference_data
from tests.experiments.helpers import tiny, write_yaml


def test_packaged_example_is_valid():
    assert "example" in list_papers()
    folder = paper_dir("example")
    configs = paper_configs(folder)
    assert [p.name for p in configs] == ["regret.yaml"]
    resolved = resolve(configs[0])
    assert resolved.config.tuned and resolved.config.claims


def test_reproduce_example_quick(tmp_path):
    result = reproduce(
        "example", tmp_path, quick=True, backend="serial", progress="none"
    )
    assert result.ok
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["quick"] is True
    assert {r["figure"] for r in summary["results"]} == {"regret"}
    assert len(summary["claims"]) == 4
    report = (tmp_path / "report.md").read_text()
    assert "| claim | statement | result | evidence |" in report
    # the config's multi-panel figure is shown, the per-environment ones are linked
    assert "![regret](figures/regret.png)" in report
    assert "[regret--regret-linear](figures/regret--regret-linear.png)" in report
    assert (tmp_path / "figures" / "regret.png").is_file()
    assert (tmp_path / "figures" / "regret--regret-linear.png").is_file()
    assert (tmp_path / "regret" / "runs").is_dir()
    assert "Tuned parameters" in report and "10000..10002" in report
    with pytest.raises(
        ConfigError, match=r"no figure 'regrett'\. Did you mean 'regret'"
    ):
        reproduce("example", tmp_path, figure="regrett", progress="none")
    with pytest.raises(ConfigError, match="unknown paper 'exampel'"):
        reproduce("exampel", tmp_path, progress="none")


def test_paper_folder_with_a_false_claim(tmp_path):
    folder = tmp_path / "mypaper"
    folder.mkdir()
    claims = [
        {
            "id": "random-wins",
            "kind": "lowest-final-regret",
            "policy": "Random",
            "env": "linear",
        }
    ]
    write_yaml(folder / "fig1.yaml", tiny(claims=claims))
    write_yaml(folder / "fig2.yaml", tiny(name="second", horizon=30))
    result = reproduce(
        folder, tmp_path / "out", figure="fig1", backend="serial", progress="none"
    )
    assert not result.claims_passed
    report = (tmp_path / "out" / "report.md").read_text()
    assert "| random-wins |" in report and "**FAIL**" in report
    assert "Claims: **0 of 1 claims PASS, 1 FAIL**" in report
    # A second figure reproduced later joins the same report.
    reproduce(
        folder, tmp_path / "out", figure="fig2", backend="serial", progress="none"
    )
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert {r["figure"] for r in summary["results"]} == {"fig1", "fig2"}


LOGISTIC_FIGURES = ["fig1", "fig2", "fig3", "fig4", "fig5", "fig6", "table2"]


def test_logistic_configs_load_and_resolve(monkeypatch):
    """Every config of the "Neural Logistic Bandits" paper resolves (no runs)."""
    require_reference_data("obd")
    use_reference_data(monkeypatch)
    folder = paper_dir("logistic")
    configs = paper_configs(folder)
    assert [p.stem for p in configs] == LOGISTIC_FIGURES
    for path in configs:
        resolved = resolve(path)
        cfg = resolved.config
        assert cfg.figure == path.stem and cfg.claims and cfg.quick is not None
        assert cfg.ci_level == 0.96
        assert cfg.seeds == list(range(5 if path.stem == "table2" else 10))
        assert cfg.horizon == 2000
        paper_grid = [0.01, 0.1, 1, 10, 100]
        for label, grid in cfg.grid.items():
            if label in ("Logistic-UCB-1", "ada-OFU-ECOLog"):
                # the paper's grid, extended one step past edge optima (Figs. 1, 4)
                assert set(grid) == {"nu", "lam"}
                assert set(paper_grid) <= set(grid["nu"]) and set(paper_grid) <= set(
                    grid["lam"]
                )
            else:  # the neural methods after the width calibration (docs/logistic.md)
                assert set(grid) == {"nu", "lam"}
                assert {0.001, 0.01, 0.1} <= set(grid["nu"]) and max(grid["nu"]) <= 1
                assert {0.1, 1, 10} <= set(grid["lam"])
        labels = {p.label for p in resolved.policies}
        assert {"NCBF-UCB", "NeuralLog-UCB-2"} <= labels
        if cfg.grid:  # tuned at the evaluation horizon on 5 seeds (docs/logistic.md)
            assert (cfg.tuning.seeds, cfg.tuning.horizon) == (5, 2000)
    fig2 = {
        (c.env.label, c.policy.label): c for c in resolve(folder / "fig2.yaml").cells
    }
    assert (
        fig2[("classification-mnist", "NeuralLog-UCB-2")].params["init"] == "standard"
    )
    assert (
        fig2[("classification-shuttle", "NeuralLog-UCB-2")].params["init"] == "mirrored"
    )
    table2 = resolve(folder / "table2.yaml")
    cells = {(c.env.label, c.policy.label): c for c in table2.cells}
    assert cells[("obd-m100", "NeuralLog-UCB-2")].params["width"] == 100
    assert cells[("obd-kappa200", "NCBF-UCB")].params["kappa"] == 200
    assert cells[("obd-S1", "NCBF-UCB")].params["kappa"] == 50
    # The base row appears three times (m=20, kappa=50, S=1) and shares its runs.
    assert len({r.id for r in table2.runs()}) < len(table2.runs())


def test_every_papers_quick_run_has_seeds_for_paired_verdicts():
    """--quick runs at least QUICK_SEEDS seeds of every shipped figure (issue: 1 was usual)."""
    assert QUICK_SEEDS >= 3
    for paper in list_papers():
        for path in paper_configs(paper_dir(paper)):
            quick = apply_overrides(load_config(path), quick=True)
            assert len(quick.seed_list) >= QUICK_SEEDS, f"{paper}/{path.name}"


def test_every_shipped_claim_quotes_the_papers_sentence():
    """Each claim of a paper's config names the sentence it encodes and where it is."""
    folders = {p.parent for p in paper_dir("mnl").parent.rglob("_paper.yaml")}
    checked = 0
    for folder in sorted(folders - {paper_dir("example")}):
        for path in paper_configs(folder):
            for claim in load_config(path).claims:
                assert claim.quote and claim.where, f"{path.name}: {claim.id}"
                checked += 1
    assert checked > 150  # every family, the IMDB figure of the mnl paper included
