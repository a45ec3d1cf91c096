"""Figures: the metrics each environment declares to be drawn, as PNG and SVG.

Each figure shows, per policy, the mean over seeds and a shaded band (the config's ``band``:
the Student-t interval of the mean at ``ci_level``, one standard deviation or one standard
error; ``report.drawing``), one colour per policy, the same colour for a policy in every
figure of an experiment. Figures are drawn with matplotlib's object API on an Agg canvas, so
no global backend is switched and no display is needed.

Which figures: for every environment, the metrics its declared records list in ``plot``
(``core.records``: the cumulative regret for every environment but a replay, also R(t)/t for
duels, the clicks and click-through rate for a replay), then those of the config's
``metrics:`` (declared metrics, or figure metrics registered in ``config.metrics``).
Files: ``figures/<metric>-<env>.png`` and ``.svg``, with ``_`` written ``-`` (for example
``regret-linear.png``, ``average-regret-dueling.png``). The multi-panel figures of the
config's ``layout:`` (``report.layouts``) are drawn too, as ``figures/<name>.png``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from banditkit.experiments.config.metrics import figures_for
from banditkit.experiments.config.resolved import ResolvedExperiment
from banditkit.experiments.report.drawing import (
    axis_labels,
    fit_to_seeds,
    new_figure,
    palette,
    plot_band,
    save,
    series_of,
    slug,
)
from banditkit.experiments.report.layouts import config_layouts, draw_layout
from banditkit.experiments.store.runs import CellRuns
from banditkit.experiments.summarise.stats import band_label

__all__ = ["plot_experiment"]


def _draw(
    path_stem: Path,
    title: str,
    ylabel: str,
    series: Sequence[tuple[str, np.ndarray]],
    colours: dict[str, tuple[float, ...]],
    level: float,
    band: str = "t-ci",
) -> list[Path]:
    fig = new_figure(6.4, 4.4, layout="constrained")
    ax = fig.add_subplot(1, 1, 1)
    drawn = [(label, m) for label, m in series if m.size]
    for label, matrix in drawn:
        plot_band(
            ax,
            matrix,
            colour=colours[label],
            label=f"{label} (n={matrix.shape[0]})",
            level=level,
            band=band,
            lw=1.8,
        )
    fit_to_seeds(ax, [m for _, m in drawn])
    ax.set_title(title, wrap=True)
    ax.set_xlabel("round t")
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    if ax.lines:
        ax.legend(frameon=False, fontsize="small")
    fewest = min((m.shape[0] for _, m in drawn), default=0)
    # a footer in the layout (supxlabel), wrapped to the figure's width: never clipped
    fig.supxlabel(
        band_label(band, level, fewest),
        x=0.99,
        ha="right",
        fontsize="x-small",
        wrap=True,
    )
    return save(fig, path_stem)


def plot_experiment(
    resolved: ResolvedExperiment,
    cells: Sequence[CellRuns],
    figures_dir: str | Path,
    *,
    prefix: str = "",
    colours: dict[str, tuple[float, ...]] | None = None,
    layouts: bool = True,
) -> list[Path]:
    """Draw every figure of an experiment into ``figures_dir``; return the files written.

    Args:
        resolved: The experiment.
        cells: Its stored runs.
        figures_dir: Where the files go.
        prefix: Put before every per-environment file name.
        colours: Policy label -> colour (default: :func:`~banditkit.experiments.report.drawing.palette`
            of the experiment's policies); a paper passes one mapping for all its configs.
        layouts: Also draw the multi-panel figures of the config's ``layout:``
            (``report.layouts``; panels of other configs are drawn empty with a note).
    """
    figures_dir = Path(figures_dir)
    figures_dir.mkdir(parents=True, exist_ok=True)
    cfg = resolved.config
    if colours is None:
        colours = palette([p.label for p in resolved.policies])
    written: list[Path] = []
    for env in resolved.envs:
        env_cells = [c for c in cells if c.cell.env.label == env.label and c.tables]
        for metric in figures_for(env.records, cfg.metrics):
            series = [(c.cell.policy.label, series_of(c, metric)) for c in env_cells]
            title, ylabel = axis_labels(cfg, env, metric)
            written += _draw(
                figures_dir
                / f"{prefix}{slug(metric.replace('_', '-'))}-{slug(env.label)}",
                title,
                ylabel,
                series,
                colours,
                cfg.ci_level,
                cfg.band,
            )
    if layouts:
        own = (resolved, list(cells))
        for layout in config_layouts(resolved, cfg.figure_id):
            written += draw_layout(
                layout,
                lambda figure: own if figure is None else None,
                figures_dir / layout.name,
                colours=colours,
                level=cfg.ci_level,
                band=cfg.band,
            )
    return written
