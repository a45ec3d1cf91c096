"""Multi-panel paper figures: the ``layout:`` key, its checks, its files and report.md."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from banditkit.cli import app
from banditkit.experiments import run_experiment
from banditkit.experiments.config.errors import ConfigError
from banditkit.experiments.config.load import load_config
from banditkit.experiments.config.resolve import resolve
from banditkit.experiments.report.drawing import palette
from banditkit.experiments.reproduce import paper_colours, reproduce
from tests.experiments.helpers import tiny, write_yaml


def _axes(svg_path) -> list[str]:
    """Ids of the drawn axes of an SVG written by matplotlib (hidden axes are not drawn)."""
    return re.findall(r'<g id="(axes_\d+)"', svg_path.read_text())


def _titles(svg_path) -> list[str]:
    return re.findall(r"<!-- (.*?) -->", svg_path.read_text())


def _labels() -> list[str]:
    resolved = resolve(tiny())
    return [e.label for e in resolved.envs]


def test_default_layout_is_every_env_by_every_plotted_metric(tmp_path):
    linear, logistic = _labels()
    run_experiment(
        tiny(horizon=15, seeds=1, figure="tinyfig", metrics=["act_seconds"]),
        tmp_path,
        progress="none",
    )
    svg = tmp_path / "figures" / "tinyfig.svg"
    assert (tmp_path / "figures" / "tinyfig.png").is_file()
    assert len(_axes(svg)) == 4  # (regret, act_seconds) x 2 environments
    titles = _titles(svg)
    wanted = [
        f"(a) {linear}",
        f"(b) {logistic}",
        f"(c) {linear}: act seconds",
        f"(d) {logistic}: act seconds",
    ]
    assert [t for t in titles if t in wanted] == wanted  # one row per metric
    assert "cumulative act_seconds" in titles  # the y label of a declared metric
    # the per-environment figures stay
    assert (tmp_path / "figures" / f"regret-{linear}.png").is_file()


def test_stated_layout_draws_its_panels_in_order(tmp_path):
    linear, logistic = _labels()
    layout = {
        "name": "paper-fig",
        "title": "My figure",
        "ncols": 3,
        "panels": [
            {"env": logistic, "title": "(a) first"},
            {"env": linear, "metric": "update_seconds", "title": "(b) second"},
        ],
    }
    run_experiment(
        tiny(horizon=15, seeds=2, band="std", layout=[layout, {"name": "grid"}]),
        tmp_path,
        progress="none",
    )
    svg = tmp_path / "figures" / "paper-fig.svg"
    assert len(_axes(svg)) == 2  # the third cell of the row is hidden
    titles = _titles(svg)
    assert titles.index("(a) first") < titles.index("(b) second")
    assert "My figure" in titles
    assert "mean +- one standard deviation over seeds" in titles
    assert len(_axes(tmp_path / "figures" / "grid.svg")) == 2  # the default grid
    assert not (tmp_path / "figures" / "tiny.png").exists()  # layout given: no default


def test_a_panel_draws_only_its_policies(tmp_path):
    linear, _ = _labels()
    layout = {
        "name": "subset",
        "panels": [{"env": linear, "policies": ["LinUCB", "Oracle"]}],
    }
    run_experiment(tiny(horizon=10, seeds=1, layout=layout), tmp_path, progress="none")
    titles = _titles(tmp_path / "figures" / "subset.svg")
    assert "LinUCB" in titles and "Oracle" in titles
    assert "Random" not in titles


def test_empty_layout_list_draws_no_multi_panel_figure(tmp_path):
    run_experiment(tiny(horizon=10, seeds=1, layout=[]), tmp_path, progress="none")
    names = {p.stem for p in (tmp_path / "figures").glob("*.png")}
    assert names and all(n.startswith("regret-") for n in names)


def test_palette_gives_distinct_colours_up_to_sixty_labels():
    labels = [f"p{i}" for i in range(60)]
    colours = palette(labels)
    assert len(set(colours.values())) == 60
    assert palette(["a", "b"]) == {
        k: v for k, v in palette(["a", "b", "c"]).items() if k != "c"
    }


@pytest.mark.parametrize(
    ("layout", "field", "message"),
    [
        (
            {"panels": [{"env": "x", "metrc": "regret"}]},
            "layout[0].panels[0].metrc",
            "Did you mean 'metric'",
        ),
        ({"nam": "f"}, "layout[0].nam", "Did you mean 'name'"),
        ({"name": "a b"}, "layout[0].name", "expected an id"),
        ({"ncols": 0}, "layout[0].ncols", "greater than or equal to 1"),
        ({"panels": []}, "layout[0].panels", "at least 1"),
    ],
)
def test_schema_errors_name_the_field(layout, field, message):
    with pytest.raises(ConfigError, match=re.escape(f"{field}: ") + f".*{message}"):
        load_config(tiny(layout=layout), source="c.yaml")


@pytest.mark.parametrize(
    ("panels", "field", "message"),
    [
        (
            [{"env": "linearr"}],
            "layout[0].panels[0].env",
            "no environment labelled 'linearr'",
        ),
        (
            [{"metric": "regret"}],
            "layout[0].panels[0].env",
            "required when the config has several",
        ),
        (
            [{"env": "ENV", "metric": "regert"}],
            "layout[0].panels[0].metric",
            "Did you mean 'regret'",
        ),
        (
            [{"env": "ENV", "policies": ["LinUCB", "LinUCBB"]}],
            "layout[0].panels[0].policies",
            "no policy labelled 'LinUCBB'",
        ),
    ],
)
def test_panels_are_checked_against_the_environments(panels, field, message):
    linear, _ = _labels()
    panels = [{k: (linear if v == "ENV" else v) for k, v in p.items()} for p in panels]
    with pytest.raises(ConfigError, match=re.escape(field) + f": .*{message}"):
        resolve(tiny(layout={"panels": panels}))
    with pytest.raises(ConfigError, match=r"layout\[1\]\.name: 'f' names two layouts"):
        resolve(tiny(layout=[{"name": "f"}, {"name": "f"}]))


def _paper(tmp_path):
    linear, logistic = _labels()
    folder = tmp_path / "paper"
    folder.mkdir()
    small = {"horizon": 12, "seeds": 2}
    write_yaml(
        folder / "a.yaml",
        tiny(
            name="a",
            figure="a",
            envs=[{"name": "linear", "d": 3, "n_arms": 4}],
            layout={
                "name": "fig1",
                "panels": [
                    {"env": linear, "title": "(a) mine"},
                    {"figure": "b", "env": logistic, "title": "(b) from b"},
                    {"figure": "b", "env": logistic, "metric": "act_seconds"},
                ],
            },
            **small,
        ),
    )
    write_yaml(
        folder / "b.yaml",
        tiny(
            name="b",
            figure="b",
            envs=[{"name": "logistic", "h": "h1", "d": 3, "n_arms": 3}],
            policies=[
                {"name": "oracle", "label": "Oracle"},
                {"name": "linucb", "label": "LinUCB", "nu": 0.5},
            ],
            layout=[],
            **small,
        ),
    )
    return folder


def test_paper_figure_spans_configs_and_is_in_the_report(tmp_path):
    folder = _paper(tmp_path)
    out = tmp_path / "out"
    result = reproduce(folder, out, backend="serial", progress="none")
    assert result.ok
    svg = out / "figures" / "fig1.svg"
    assert (out / "figures" / "fig1.png").is_file()
    assert len(_axes(svg)) == 3
    titles = _titles(svg)
    assert "(a) mine" in titles and "(b) from b" in titles
    assert not any("not in this output" in t for t in titles)
    report = (out / "report.md").read_text()
    section_a = report.index("## a:")
    section_b = report.index("## b:")
    assert section_a < report.index("![fig1](figures/fig1.png)") < section_b
    # one colour per policy label across the paper's configs
    colours = paper_colours(folder)
    assert list(colours) == ["Random", "LinUCB", "Oracle"]
    # `banditkit plot` redraws the paper figure from the stored runs
    (out / "figures" / "fig1.png").unlink()
    cli = CliRunner().invoke(app, ["plot", str(out)], catch_exceptions=False)
    assert cli.exit_code == 0, cli.output
    assert (out / "figures" / "fig1.png").is_file()
    assert "fig1.png" in cli.output


def test_reproduce_checks_the_figures_panels_name(tmp_path):
    folder = _paper(tmp_path)
    text = (folder / "a.yaml").read_text().replace("figure: b", "figure: bb")
    (folder / "a.yaml").write_text(text)
    with pytest.raises(
        ConfigError, match=r"layout\[0\]\.panels\[1\]\.figure: no figure 'bb'"
    ):
        reproduce(folder, tmp_path / "out", progress="none")
    assert not (tmp_path / "out").exists()
    (folder / "a.yaml").write_text(text.replace("figure: bb", "figure: b"))
    text = (folder / "b.yaml").read_text().replace("layout: []", "layout: {name: fig1}")
    (folder / "b.yaml").write_text(text)
    with pytest.raises(
        ConfigError, match=r"b.yaml: layout\[0\]\.name: layout 'fig1' is also drawn by"
    ):
        reproduce(folder, tmp_path / "out", progress="none")


def test_run_of_one_config_leaves_other_configs_panels_empty(tmp_path):
    folder = _paper(tmp_path)
    run_experiment(folder / "a.yaml", tmp_path / "out", progress="none")
    svg = tmp_path / "out" / "figures" / "fig1.svg"
    assert len(_axes(svg)) == 3
    assert "b: not in this output" in svg.read_text()
