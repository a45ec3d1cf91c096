"""Multi-panel figures laid out like a paper's: a config's ``layout:``, defaults filled, drawn.

:func:`expand_layouts` turns the config's ``layout:`` (``config.layout``) into :class:`Layout`
objects with every default filled in (the default grid: every environment x every plotted
metric, one row per metric; panel titles ``(a) <env>``); :func:`draw_layout` draws one. A
panel may draw another config's runs (``figure:``): the caller passes a :data:`Source` that
finds them, and a panel whose runs are missing is drawn empty with a note. Figures have one
legend for all panels, and a policy keeps its colour in every panel and every figure of a
paper (``drawing.palette``). ``banditkit reproduce`` draws them into
``DIR/figures/<name>.png`` (and ``.svg``), ``banditkit run`` into ``OUT/figures/`` (panels of
other configs empty, with a note), ``banditkit plot`` redraws them from stored results.
"""

from __future__ import annotations

import string
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from banditkit.experiments.config.layout import LayoutSpec
from banditkit.experiments.config.metrics import METRICS, figures_for
from banditkit.experiments.config.resolved import EnvEntry, ResolvedExperiment
from banditkit.experiments.report.drawing import (
    axis_labels,
    fit_to_seeds,
    new_figure,
    palette,
    plot_band,
    save,
    series_of,
)
from banditkit.experiments.store.runs import CellRuns
from banditkit.experiments.summarise.stats import band_label

__all__ = [
    "Layout",
    "Panel",
    "Source",
    "config_layouts",
    "draw_layout",
    "expand_layouts",
]

LEGEND_TITLE_CHAR_PT = 4.0
"""A generous width of one x-small character in points (for breaking the legend title)."""

MAX_DEFAULT_COLUMNS = 4
"""A default layout puts at most this many panels in a row."""


@dataclass(frozen=True)
class Panel:
    """A resolved panel: where its runs are (``figure`` None: this config), what it draws."""

    figure: str | None
    env: str
    metric: str
    title: str
    policies: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Layout:
    """A resolved multi-panel figure."""

    name: str
    title: str
    panels: tuple[Panel, ...]
    ncols: int

    @property
    def nrows(self) -> int:
        """Rows of the grid."""
        return -(-len(self.panels) // self.ncols)


def _metric_name(metric: str) -> str:
    return METRICS[metric].title if metric in METRICS else metric.replace("_", " ")


def _panel_title(index: int, env: str, metric: str) -> str:
    letters = string.ascii_lowercase
    tag = letters[index] if index < len(letters) else str(index + 1)
    what = env if metric == "regret" else f"{env}: {_metric_name(metric)}"
    return f"({tag}) {what}"


def expand_layouts(
    layouts: Sequence[LayoutSpec] | None,
    envs: Sequence[EnvEntry],
    *,
    figure_id: str,
    title: str,
    extra_metrics: Sequence[str] = (),
) -> list[Layout]:
    """The layouts of a config with their defaults filled in (checked by ``config.checks``).

    Args:
        layouts: The config's ``layout:`` (None: one default layout).
        envs: The config's resolved environments.
        figure_id: The config's figure id (the default layout name).
        title: The default figure title.
        extra_metrics: The config's ``metrics:``.
    """
    specs = [LayoutSpec()] if layouts is None else list(layouts)
    out = []
    for spec in specs:
        if spec.panels is None:
            metrics = list(
                dict.fromkeys(
                    m for e in envs for m in figures_for(e.records, extra_metrics)
                )
            )
            pairs = [
                (e.label, m)
                for m in metrics
                for e in envs
                if m in figures_for(e.records, extra_metrics)
            ]
            panels = [
                Panel(None, env, m, _panel_title(i, env, m))
                for i, (env, m) in enumerate(pairs)
            ]
            ncols = spec.ncols or max(1, min(len(envs), MAX_DEFAULT_COLUMNS))
        else:
            panels = []
            for i, p in enumerate(spec.panels):
                env = p.env
                if env is None:
                    # one environment: the config's own, or resolved when drawn
                    env = envs[0].label if p.figure is None and len(envs) == 1 else ""
                panels.append(
                    Panel(
                        p.figure if p.figure != figure_id else None,
                        env,
                        p.metric,
                        p.title
                        if p.title is not None
                        else _panel_title(i, env or str(p.figure), p.metric),
                        None if p.policies is None else tuple(p.policies),
                    )
                )
            ncols = spec.ncols or max(1, min(len(panels), MAX_DEFAULT_COLUMNS))
        out.append(
            Layout(spec.name or figure_id, spec.title or title, tuple(panels), ncols)
        )
    return out


def config_layouts(resolved: ResolvedExperiment, figure_id: str) -> list[Layout]:
    """The multi-panel figures of a resolved experiment (its ``layout:``, defaults filled)."""
    cfg = resolved.config
    return expand_layouts(
        cfg.layout,
        resolved.envs,
        figure_id=figure_id,
        title=cfg.title or cfg.name,
        extra_metrics=cfg.metrics,
    )


Source = Callable[[str | None], "tuple[ResolvedExperiment, list[CellRuns]] | None"]
"""Figure id (None: the layout's own config) -> its resolved experiment and runs, or None."""


def draw_layout(
    layout: Layout,
    source: Source,
    path_stem: Path,
    *,
    colours: dict[str, tuple[float, ...]],
    level: float,
    band: str,
) -> list[Path]:
    """Draw ``layout`` into ``path_stem``.png and .svg; return the files written.

    A panel whose runs are missing (another config not run, an unknown environment label)
    is drawn empty with a note saying why.
    """
    colours = dict(colours)
    # one column is drawn as wide as two: the legend and its band note need the room
    width, height = 3.6 * max(layout.ncols, 2), 2.9 * layout.nrows + 0.9
    fig = new_figure(width, height, layout="constrained")
    axes = fig.subplots(layout.nrows, layout.ncols, squeeze=False)
    handles: dict[str, Any] = {}
    seeds: list[int] = []
    for index, ax in enumerate(axes.flat):
        if index >= len(layout.panels):
            ax.set_visible(False)
            continue
        panel = layout.panels[index]
        ax.set_title(panel.title, fontsize="medium", wrap=True)
        for label, line, n in _draw_panel(ax, panel, source, colours, level, band):
            handles.setdefault(label, line)
            seeds.append(n)
        if index // layout.ncols == layout.nrows - 1 or index + layout.ncols >= len(
            layout.panels
        ):
            ax.set_xlabel("round t", fontsize="small")
    fig.suptitle(layout.title, wrap=True)
    if handles:
        order = [label for label in colours if label in handles]
        rows = -(-len(order) // max(2 * layout.ncols, 4))
        fig.legend(
            [handles[label] for label in order],
            order,
            loc="outside lower center",
            ncols=-(-len(order) // rows),
            frameon=False,
            fontsize="small",
            # a legend title cannot wrap itself (matplotlib): break it to the width
            title=textwrap.fill(
                band_label(band, level, min(seeds, default=0)),
                int(width * 72 / LEGEND_TITLE_CHAR_PT),
            ),
            title_fontsize="x-small",
        )
    return save(fig, path_stem)


def _draw_panel(
    ax: Any,
    panel: Panel,
    source: Source,
    colours: dict[str, tuple[float, ...]],
    level: float,
    band: str,
) -> list[tuple[str, Any, int]]:
    """Draw one panel (or its note); (policy label, line, seeds) of each curve drawn.

    A label not in ``colours`` gets the next colour of the palette, added to ``colours``.
    """
    found = source(panel.figure)
    if found is None:
        _empty(ax, f"{panel.figure}: not in this output")
        return []
    resolved, cells = found
    labels = [e.label for e in resolved.envs]
    env_label = panel.env or (labels[0] if len(labels) == 1 else "")
    if env_label not in labels:
        _empty(ax, f"no environment {env_label!r} in {panel.figure or 'this config'}")
        return []
    env = resolved.envs[labels.index(env_label)]
    env_cells = [
        c
        for c in cells
        if c.cell.env.label == env_label
        and c.tables
        and (panel.policies is None or c.cell.policy.label in panel.policies)
    ]
    try:
        series = [(c.cell.policy.label, series_of(c, panel.metric)) for c in env_cells]
    except KeyError:
        _empty(ax, f"{panel.metric!r} not recorded for {env_label!r}")
        return []
    drawn = []
    fit_to_seeds(ax, [m for _, m in series])
    for label, matrix in series:
        if matrix.size == 0:
            continue
        if label not in colours:
            colours.update(
                {k: v for k, v in palette([*colours, label]).items() if k == label}
            )
        line = plot_band(
            ax,
            matrix,
            colour=colours[label],
            label=label,
            level=level,
            band=band,
            lw=1.5,
        )
        drawn.append((label, line, matrix.shape[0]))
    what, ylabel = axis_labels(resolved.config, env, panel.metric)
    if ylabel == panel.metric:  # a declared metric: its description reads better
        ylabel = what.rsplit(":", 1)[0]
    ax.set_ylabel(ylabel, fontsize="small")
    ax.tick_params(labelsize="small")
    ax.grid(True, alpha=0.3)
    return drawn


def _empty(ax: Any, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", fontsize="small", wrap=True)
    ax.set_xticks([])
    ax.set_yticks([])
