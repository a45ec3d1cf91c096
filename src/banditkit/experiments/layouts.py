"""Multi-panel figures laid out like a paper's: the ``layout:`` key of a config.

A config may state the paper figures it makes, each a grid of panels::

    layout:
      - name: fig1                    # file name: figures/fig1.png (and .svg)
        title: Cumulative regret      # figure title (default: the config's title)
        ncols: 3                      # panels per row (default: up to 4)
        panels:
          - {env: linear, title: "(a) linear"}                 # metric defaults to regret
          - {env: logistic, metric: act_seconds, title: "(b) selection time"}
          - {figure: fig1-neural, env: quadratic, title: "(c) quadratic"}
          - {env: linear, policies: [UCB, TS], title: "(d) UCB against TS"}

A panel names an environment label of the config (``env`` may be left out when the config has
one environment), the metric drawn (``regret``, a metric the environment declares, or a
registered figure metric such as ``act_seconds``; default ``regret``), an optional title
(default ``(a) <env>``, with the metric's name when it is not the regret) and, optionally, the
figure id of another config of the same paper (``figure:``) whose stored runs it draws: this is
how one paper figure spans several configs. ``policies:`` (policy labels) restricts a panel to
those curves (default: every policy of the config), so one config can feed several paper
figures that each show a subset of its algorithms. A layout with no ``panels`` draws every
environment x every plotted metric of the config (one row per metric). Without a ``layout:``
key, a config gets that default layout, named after its figure id; ``layout: []`` draws none.

Figures have one legend for all panels, and a policy keeps its colour in every panel and
every figure of a paper (:func:`palette`). Bands follow the config's ``band:``. ``banditkit
reproduce`` draws them into ``DIR/figures/<name>.png`` (and ``.svg``) and report.md shows each
under its config's section; ``banditkit run`` draws them into ``OUT/figures/`` (panels of other
configs stay empty there, with a note); ``banditkit plot`` redraws them from stored results.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from banditkit.experiments.runs import EnvEntry, ResolvedExperiment
    from banditkit.experiments.summaries import CellRuns

__all__ = [
    "Layout",
    "LayoutSpec",
    "Panel",
    "PanelSpec",
    "draw_layout",
    "expand_layouts",
    "palette",
]

MAX_DEFAULT_COLUMNS = 4
"""A default layout puts at most this many panels in a row."""


class PanelSpec(BaseModel):
    """One panel of a :class:`LayoutSpec`: an environment, a metric, a title."""

    model_config = ConfigDict(extra="forbid")

    env: str | None = Field(
        default=None,
        min_length=1,
        description="Environment label (may be left out when the config has one).",
    )
    metric: str = Field(default="regret", min_length=1, description="Metric drawn.")
    title: str | None = Field(default=None, description="Panel title.")
    figure: str | None = Field(
        default=None,
        min_length=1,
        description="Figure id of another config of the same paper to draw from.",
    )
    policies: list[str] | None = Field(
        default=None,
        min_length=1,
        description="Policy labels drawn in the panel (default: every policy).",
    )


class LayoutSpec(BaseModel):
    """A multi-panel figure: file name, title, panels, columns."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(
        default=None,
        min_length=1,
        pattern=r"^[A-Za-z0-9_.-]+$",
        description="File name (letters, digits, '_', '.', '-'); default: the figure id.",
    )
    title: str | None = Field(default=None, description="Figure title.")
    panels: list[PanelSpec] | None = Field(
        default=None,
        min_length=1,
        description="The panels, row by row (default: every env x plotted metric).",
    )
    ncols: int | None = Field(
        default=None, ge=1, strict=True, description="Panels per row."
    )


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
    from banditkit.experiments.metrics import METRICS

    return METRICS[metric].title if metric in METRICS else metric.replace("_", " ")


def _panel_title(index: int, env: str, metric: str) -> str:
    letters = string.ascii_lowercase
    tag = letters[index] if index < len(letters) else str(index + 1)
    what = env if metric == "regret" else f"{env}: {_metric_name(metric)}"
    return f"({tag}) {what}"


def plotted_metrics(env: EnvEntry, extra: Sequence[str]) -> list[str]:
    """The metrics drawn for one environment: its plotted records, then ``extra``."""
    from banditkit.experiments.metrics import figures_for

    return figures_for(env.records, extra)


def expand_layouts(
    layouts: Sequence[LayoutSpec] | None,
    envs: Sequence[EnvEntry],
    *,
    figure_id: str,
    title: str,
    extra_metrics: Sequence[str] = (),
) -> list[Layout]:
    """The layouts of a config with their defaults filled in (unchecked; see :func:`check`).

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
                    m for e in envs for m in plotted_metrics(e, extra_metrics)
                )
            )
            pairs = [
                (e.label, m)
                for m in metrics
                for e in envs
                if m in plotted_metrics(e, extra_metrics)
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


def check(
    layouts: Sequence[LayoutSpec] | None,
    envs: Sequence[EnvEntry],
    extra_metrics: Sequence[str],
    policy_labels: Sequence[str] | None = None,
) -> tuple[str, str] | None:
    """The first problem of the config's own panels as (field, message), or None.

    Panels drawing from another config (``figure:``) are checked where the paper is known
    (``banditkit reproduce``); a panel's ``policies`` are checked against
    ``policy_labels`` when given.
    """
    from banditkit.core.validation import suggest
    from banditkit.experiments.metrics import METRICS

    labels = [e.label for e in envs]
    names: set[str] = set()
    for i, spec in enumerate(layouts or []):
        if spec.name is not None:
            if spec.name in names:
                return f"layout[{i}].name", f"{spec.name!r} names two layouts"
            names.add(spec.name)
        for j, panel in enumerate(spec.panels or []):
            if panel.figure is not None:
                continue
            where = f"layout[{i}].panels[{j}]"
            if panel.env is None:
                if len(envs) != 1:
                    return (
                        f"{where}.env",
                        f"required when the config has several environments "
                        f"({', '.join(labels)})",
                    )
                env = envs[0]
            elif panel.env not in labels:
                return (
                    f"{where}.env",
                    f"no environment labelled {panel.env!r}.{suggest(panel.env, labels)} "
                    f"Environment labels: {', '.join(labels)}.",
                )
            else:
                env = envs[labels.index(panel.env)]
            known = list(
                dict.fromkeys(
                    [*plotted_metrics(env, extra_metrics), *env.metrics, *METRICS]
                )
            )
            if panel.metric not in known:
                return (
                    f"{where}.metric",
                    f"unknown metric {panel.metric!r} for {env.label!r}."
                    f"{suggest(panel.metric, known)} Known: {', '.join(known)}.",
                )
            for label in panel.policies or []:
                if policy_labels is not None and label not in policy_labels:
                    return (
                        f"{where}.policies",
                        f"no policy labelled {label!r}.{suggest(label, policy_labels)} "
                        f"Policy labels: {', '.join(policy_labels)}.",
                    )
    return None


def palette(labels: Sequence[str]) -> dict[str, tuple[float, ...]]:
    """One colour per distinct label, in order of first appearance.

    The first 10 are tab10; then the light halves of tab20's pairs, then tab20b and tab20c
    taken one hue group at a time (so neighbours in the order differ in hue): 60 colours,
    cycled beyond.

    Example:
        >>> colours = palette(["a", "b", "a"])
        >>> len(colours), colours["a"] != colours["b"]
        (2, True)
    """
    unique = list(dict.fromkeys(labels))
    colours = _colour_list()
    return {label: colours[i % len(colours)] for i, label in enumerate(unique)}


def _colour_list() -> list[tuple[float, ...]]:
    from matplotlib import colormaps

    out = [tuple(colormaps["tab10"](i)) for i in range(10)]
    out += [tuple(colormaps["tab20"](2 * i + 1)) for i in range(10)]
    for name in ("tab20b", "tab20c"):  # 5 hue groups of 4 shades
        out += [tuple(colormaps[name](4 * (i % 5) + i // 5)) for i in range(20)]
    return out


Source = Callable[[str | None], "tuple[ResolvedExperiment, list[CellRuns]] | None"]
"""Figure id (None: the layout's own config) -> its resolved experiment and runs, or None."""


def _empty(ax: Any, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", fontsize="small", wrap=True)
    ax.set_xticks([])
    ax.set_yticks([])


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
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from banditkit.experiments.plots import MAX_POINTS, axis_labels, save, series_of
    from banditkit.experiments.summaries import band_label, curve_band

    colours = dict(colours)
    width, height = 3.6 * layout.ncols, 2.9 * layout.nrows + 0.9
    fig = Figure(figsize=(width, height), dpi=120, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(layout.nrows, layout.ncols, squeeze=False)
    handles: dict[str, Any] = {}
    fewest: int | None = None
    for index, ax in enumerate(axes.flat):
        if index >= len(layout.panels):
            ax.set_visible(False)
            continue
        panel = layout.panels[index]
        ax.set_title(panel.title, fontsize="medium")
        found = source(panel.figure)
        if found is None:
            _empty(ax, f"{panel.figure}: not in this output")
            continue
        resolved, cells = found
        labels = [e.label for e in resolved.envs]
        env_label = panel.env or (labels[0] if len(labels) == 1 else "")
        if env_label not in labels:
            _empty(
                ax, f"no environment {env_label!r} in {panel.figure or 'this config'}"
            )
            continue
        env = resolved.envs[labels.index(env_label)]
        env_cells = [
            c
            for c in cells
            if c.cell.env.label == env_label
            and c.tables
            and (panel.policies is None or c.cell.policy.label in panel.policies)
        ]
        try:
            series = [
                (c.cell.policy.label, series_of(c, panel.metric)) for c in env_cells
            ]
        except KeyError:
            _empty(ax, f"{panel.metric!r} not recorded for {env_label!r}")
            continue
        for label, matrix in series:
            if matrix.size == 0:
                continue
            if label not in colours:
                colours.update(
                    {k: v for k, v in palette([*colours, label]).items() if k == label}
                )
            mean, lo, hi = curve_band(matrix, level, band)
            rounds = np.arange(1, mean.shape[0] + 1)
            keep = np.unique(np.linspace(0, mean.shape[0] - 1, MAX_POINTS).astype(int))
            (line,) = ax.plot(
                rounds[keep], mean[keep], color=colours[label], lw=1.5, label=label
            )
            ax.fill_between(
                rounds[keep], lo[keep], hi[keep], color=colours[label], alpha=0.2, lw=0
            )
            handles.setdefault(label, line)
            n = matrix.shape[0]
            fewest = n if fewest is None else min(fewest, n)
        what, ylabel = axis_labels(resolved.config, env, panel.metric)
        if ylabel == panel.metric:  # a declared metric: its description reads better
            ylabel = what.rsplit(":", 1)[0]
        ax.set_ylabel(ylabel, fontsize="small")
        ax.tick_params(labelsize="small")
        ax.grid(True, alpha=0.3)
        if index // layout.ncols == layout.nrows - 1 or index + layout.ncols >= len(
            layout.panels
        ):
            ax.set_xlabel("round t", fontsize="small")
    fig.suptitle(layout.title)
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
            title=band_label(band, level, fewest or 0),
            title_fontsize="x-small",
        )
    return save(fig, path_stem)
