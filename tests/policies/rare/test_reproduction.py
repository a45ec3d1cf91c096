"""The configs of `banditkit reproduce rare` resolve, and a tiny figure runs with its claims."""

import json

from banditkit.experiments import run_experiment
from banditkit.experiments.config.papers import paper_configs, paper_dir
from banditkit.experiments.config.resolve import resolve
from banditkit.policies.rare import update_grid

FIGURES = [
    "fig2-logistic",
    "fig3-laws",
    "fig4-c-linear",
    "fig5-c-bgle",
    "main-normal",
    "main-uniform",
]


def test_rare_configs_resolve_with_the_paper_settings():
    folder = paper_dir("rare")
    configs = paper_configs(folder)
    assert [p.stem for p in configs] == FIGURES
    for path in configs:
        resolved = resolve(path)
        cfg = resolved.config
        assert cfg.figure == path.stem and cfg.claims and cfg.quick is not None
        assert cfg.horizon == 10_000 and cfg.band == "std"
        assert len(cfg.seeds) == (
            20 if "logistic" in path.stem or "bgle" in path.stem else 10
        )
    main = resolve(folder / "main-uniform.yaml")
    rs = [c for c in main.cells if c.policy.label == "RS-OFUL"]
    assert {c.params["C"] for c in rs} == {1.0}
    normal = resolve(folder / "main-normal.yaml")
    assert {c.params["C"] for c in normal.cells if c.policy.label == "RS-OFUL"} == {3.0}
    assert {c.env.label for c in main.cells} == {
        "K1000-d5",
        "K5000-d10",
        "K50-d20",
        "K100-d30",
    }


def test_a_tiny_logistic_figure_runs_and_decides_its_claims(tmp_path):
    result = run_experiment(
        paper_dir("rare") / "fig2-logistic.yaml",
        tmp_path / "out",
        seeds=1,
        horizon=60,
        backend="serial",
        progress="none",
        figures=False,
    )
    assert result.ok and result.n_runs == 8
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    claims = {c["id"]: c for c in summary["claims"]}
    assert (
        claims["fig2-bglincb-one-batch"]["passed"] is True
    )  # one MLE over the whole run
    updates = {r["label"]: r["n_updates_mean"] for r in summary["results"]}
    assert updates["BGLE"] == len(update_grid("bgle", 60))  # B of the bgle grid
