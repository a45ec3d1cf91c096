"""The `reproduce mnl` configs resolve, and an MNL experiment runs end to end with claims."""

import json

from banditkit.experiments.config.papers import list_papers, paper_configs, paper_dir
from banditkit.experiments.config.resolve import resolve
from banditkit.experiments.reproduce import reproduce
from tests.experiments.helpers import write_yaml


def test_every_mnl_config_resolves():
    assert "mnl" in list_papers()
    folder = paper_dir("mnl")
    configs = paper_configs(folder)
    assert [p.stem for p in configs] == ["fig2", "fig3", "fig4", "fig6", "fig7"]
    for path in [*configs, *paper_configs(folder / "imdb")]:
        exp = resolve(path)
        assert exp.config.claims and exp.config.quick is not None
        labels = {p.label for p in exp.config.policies}
        assert "ONL-MNL" in labels
    fig2 = {(c.env.label, c.policy.label): c.params for c in resolve(configs[0]).cells}
    mis = fig2[("mnl-misspecified-gaussian", "ONL-MNL")]
    assert (mis["width"], mis["t0"], mis["lam_scale"], mis["beta_scale"]) == (
        15,
        100,
        2e-05,
        1e-04,
    )
    assert fig2[("mnl-misspecified-gaussian", "eps-greedy-MNL")]["width"] == 15
    real = fig2[("mnl-realizable-gaussian", "ONL-MNL")]
    assert (real["lam_scale"], real["beta_scale"]) == (0.002, 1e-04)  # tuned-fig2.yaml


def test_an_mnl_experiment_runs_with_claims(tmp_path):
    folder = tmp_path / "paper"
    folder.mkdir()
    cfg = {
        "name": "tiny-mnl",
        "horizon": 40,
        "seeds": 1,
        "envs": [
            {"name": "mnl", "d": 2, "n_items": 8, "capacity": 2, "revenues": "item"}
        ],
        "policies": [
            {
                "name": "onl-mnl",
                "label": "ONL-MNL",
                "width": 2,
                "t0": 10,
                "pilot_steps": 20,
            },
            {"name": "ucb-mnl", "label": "UCB-MNL"},
            {"name": "oracle-assortment", "label": "Oracle"},
        ],
        "claims": [
            {"id": "oracle-best", "kind": "lowest-final-regret", "policy": "Oracle"}
        ],
    }
    write_yaml(folder / "fig.yaml", cfg)
    result = reproduce(folder, tmp_path / "out", backend="serial", progress="none")
    assert result.ok and result.claims_passed
    summary = json.loads((tmp_path / "out" / "fig" / "summary.json").read_text())
    rows = {r["label"]: r for r in summary["results"]}
    assert rows["Oracle"]["final_regret_mean"] == 0.0
    assert rows["ONL-MNL"]["final_regret_mean"] > 0.0
    assert "revenue" in summary["envs"]["mnl-realizable-gaussian"]["records"]
