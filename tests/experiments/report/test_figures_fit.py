"""Every family's figures fit: no text past the figure's edge, y-ranges on the seeds' values.

The figures are drawn by ``run_experiment`` on the Agg canvas and caught at ``save``; after a
draw, the tight box of every visible axes (title, labels, tick labels) and the extent of
every figure-level text (suptitle, footer) and legend must lie inside the figure. Titles are
long on purpose (a paper config's title with its environment label) and one layout has a
single panel, the narrowest figure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from banditkit.experiments import run_experiment
from banditkit.experiments.report import drawing, figures, layouts

LONG = "Cumulative regret, Gaussian contexts, d in {3, 5, 10}, K in {10, 15} (Fig. 6)"

FAMILIES: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]] = {
    "contextual": (
        {"name": "linear", "label": "linear-gaussian-misspecified-d10-K10", "d": 3},
        [{"name": "linucb"}, {"name": "random"}],
    ),
    "dueling": (
        {"name": "dueling", "utility": "cos", "d": 3, "n_arms": 4},
        [{"name": "colstim"}, {"name": "random-duel"}],
    ),
    "assortment": (
        {"name": "mnl", "d": 3, "n_items": 10, "capacity": 3},
        [{"name": "ucb-mnl"}, {"name": "random-assortment"}],
    ),
}


def outside(fig: Any) -> list[str]:
    """The parts of a drawn figure that reach past its edge (1 pixel of slack)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    edge = fig.bbox
    boxes = [
        (f"axes {ax.get_title()!r}", ax.get_tightbbox(renderer))
        for ax in fig.axes
        if ax.get_visible()
    ]
    texts = [*fig.texts, fig._suptitle, fig._supxlabel]
    boxes += [
        (repr(t.get_text()), t.get_window_extent(renderer))
        for t in texts
        if t is not None and t.get_visible() and t.get_text()
    ]
    boxes += [("legend", legend.get_window_extent(renderer)) for legend in fig.legends]
    return [
        name
        for name, box in boxes
        if box.x0 < -1 or box.y0 < -1 or box.x1 > edge.x1 + 1 or box.y1 > edge.y1 + 1
    ]


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """(file stem, matplotlib figure) of every figure saved while the test runs."""
    caught: list[tuple[str, Any]] = []
    real = drawing.save

    def catch(fig: Any, stem: Path) -> list[Path]:
        caught.append((stem.name, fig))
        return real(fig, stem)

    monkeypatch.setattr(figures, "save", catch)
    monkeypatch.setattr(layouts, "save", catch)
    return caught


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_each_familys_figures_fit_inside(family, tmp_path, drawn):
    env, policies = FAMILIES[family]
    config = {
        "name": family,
        "title": LONG,
        "horizon": 30,
        "seeds": 2,  # a t-interval of 2 seeds is 12.7 standard errors wide
        "envs": [env],
        "policies": policies,
        "layout": [
            {"name": "grid"},  # every plotted metric, one panel each
            {"name": "single", "title": LONG, "panels": [{"title": f"(a) {LONG}"}]},
        ],
    }
    run_experiment(config, tmp_path / "out", progress="none")
    names = [name for name, _ in drawn]
    assert "single" in names and "grid" in names and len(names) >= 3
    for name, fig in drawn:
        assert outside(fig) == [], name
    # y-ranges follow the seeds' values, not the band (the dueling average regret is in
    # [0, 1]; a 2-seed t-band reached -6 to 8)
    for name, fig in drawn:
        for ax in fig.axes:
            lines = [np.asarray(line.get_ydata(), dtype=float) for line in ax.lines]
            if not lines:
                continue
            low, high = ax.get_ylim()
            spread = max(np.ptp(np.concatenate(lines)), 1e-9)
            assert low >= min(v.min() for v in lines) - 2 * spread, name
            assert high <= max(v.max() for v in lines) + 2 * spread, name
    if family == "dueling":
        (average,) = [f for n, f in drawn if n.startswith("average-regret")]
        low, high = average.axes[0].get_ylim()
        assert low >= -0.1 and high <= 1.1  # values in [0, 1]


def test_the_fit_check_sees_a_clipped_title():
    fig = drawing.new_figure(2.0, 2.0)
    ax = fig.add_subplot(1, 1, 1)
    ax.set_title(LONG)  # no wrap: wider than 2 inches
    fig.text(0.99, 0.01, LONG, ha="right")
    assert len(outside(fig)) == 2
