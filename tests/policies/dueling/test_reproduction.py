"""The packaged configs of `banditkit reproduce dueling` resolve (no runs)."""

from __future__ import annotations

from banditkit.experiments.config.load import load_config
from banditkit.experiments.config.papers import paper_configs, paper_dir
from banditkit.experiments.config.resolve import config_datasets, resolve
from tests.datasets._data import require_reference_data, use_reference_data

FIGURES = [
    "fig2",
    "figE1",
    "figE3",
    "figE4",
    "figE5-7",
    "figE8",
    "runtime",
    "statlog",
    "tableE2",
    "tableE3",
]
NVLDB = {f"NVLDB-{e}-{r}" for e in ("UCB", "TS") for r in ("ASYM", "OSYM", "CSYM")}


def test_dueling_configs_load_and_resolve(monkeypatch):
    require_reference_data("shuttle")
    use_reference_data(monkeypatch)
    configs = paper_configs(paper_dir("dueling"))
    assert [p.stem for p in configs] == FIGURES
    for path in configs:
        resolved = resolve(path)
        cfg = resolved.config
        assert cfg.figure == path.stem and cfg.claims and cfg.quick is not None
        assert cfg.seeds == list(range(20))  # 20 seeds in every experiment of the paper
        assert all(env.family == "dueling" for env in resolved.envs)
        labels = {p.label for p in resolved.policies}
        if path.stem in ("fig2", "figE1", "figE3", "figE4", "figE5-7", "statlog"):
            assert labels >= NVLDB
    # one multi-panel figure per paper figure (Figs. 2, E.1-E.11)
    layouts = {
        spec.name: spec for path in configs for spec in (load_config(path).layout or [])
    }
    assert set(layouts) == {"fig2"} | {f"figE{i}" for i in range(1, 12)}
    assert [len(layouts[n].panels or []) for n in ("figE1", "figE9", "figE11")] == [
        6,
        2,
        4,
    ]
    for rule, fig in (("ASYM", "figE5"), ("OSYM", "figE6"), ("CSYM", "figE7")):
        for panel in layouts[fig].panels or []:
            assert panel.policies is not None
            assert all(p.endswith(rule) for p in panel.policies)
    e1 = resolve(paper_dirs("figE1"))
    cells = {(c.env.label, c.policy.label): c for c in e1.cells}
    assert cells[("covertype", "NDB-UCB")].params["gram"] == "diagonal"
    assert cells[("magic", "NDB-UCB")].params["gram"] == "full"
    e2 = resolve(paper_dirs("tableE2"))
    assert e2.config.horizon == 10_000 and e2.config.checkpoints == [2000, 6000, 10000]
    widths = {c.policy.params.get("width") for c in e2.cells}
    assert widths == {500, 1000}


def paper_dirs(figure: str):
    return paper_dir("dueling") / f"{figure}.yaml"


def test_the_uci_datasets_of_the_paper():
    needed = {
        n
        for path in paper_configs(paper_dir("dueling"))
        for n in config_datasets(load_config(path))
    }
    assert needed == {"shuttle", "magic", "covertype"}
