"""Figures: the metrics each environment declares to be drawn, as PNG and SVG.

Each figure shows, per policy, the mean over seeds and a shaded band (the config's ``band``:
the Student-t interval of the mean at ``ci_level``, one standard deviation or one standard
error; see ``summaries``), one colour per policy, the same colour for a policy in every
figure of an experiment. Figures are drawn with matplotlib's object API on an Agg canvas, so
no global backend is switched and no display is needed.

Which figures: for every environment, the metrics its declared records list in ``plot``
(``core.records``: the cumulative regret for every environment but a replay, also R(t)/t for
duels, the clicks and click-through rate for a replay), then those of the config's
``metrics:`` (declared metrics, or figure metrics registered in ``experiments.metrics``).
Files: ``figures/<metric>-<env>.png`` and ``.svg``, with ``_`` written ``-`` (for example
``regret-linear.png``, ``average-regret-dueling.png``). The multi-panel figures of the
config's ``layout:`` (``experiments.layouts``) are drawn too, as ``figures/<name>.png``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from banditkit.experiments.metrics import METRICS, figures_for
from banditkit.experiments.runs import EnvEntry, ResolvedExperiment
from banditkit.experiments.store import atomic_write_bytes
from banditkit.experiments.summaries import CellRuns, band_label, curve_band

if TYPE_CHECKING:
    from banditkit.experiments.layouts import Layout
    from banditkit.experiments.schema import ExperimentConfig

__all__ = [
    "axis_labels",
    "config_layouts",
    "plot_experiment",
    "save",
    "series_of",
    "slug",
]

MAX_POINTS = 400
"""Curves are thinned to at most this many points (keeps SVG files small)."""


def slug(text: str) -> str:
    """A file-name-safe version of a label.

    Example:
        >>> slug("logistic-h1 (d=20)")
        'logistic-h1-d-20'
    """
    return re.sub(r"[^A-Za-z0-9_.]+", "-", text).strip("-") or "x"


def _colours(labels: Sequence[str]) -> dict[str, tuple[float, ...]]:
    from banditkit.experiments.layouts import palette

    return palette(labels)


def _draw(
    path_stem: Path,
    title: str,
    ylabel: str,
    series: Sequence[tuple[str, np.ndarray]],
    colours: dict[str, tuple[float, ...]],
    level: float,
    band: str = "t-ci",
) -> list[Path]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.4), dpi=120)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    for label, matrix in series:
        if matrix.size == 0:
            continue
        mean, lo, hi = curve_band(matrix, level, band)
        rounds = np.arange(1, mean.shape[0] + 1)
        keep = np.unique(np.linspace(0, mean.shape[0] - 1, MAX_POINTS).astype(int))
        n = matrix.shape[0]
        colour = colours[label]
        ax.plot(
            rounds[keep], mean[keep], color=colour, lw=1.8, label=f"{label} (n={n})"
        )
        ax.fill_between(rounds[keep], lo[keep], hi[keep], color=colour, alpha=0.2, lw=0)
    ax.set_title(title)
    ax.set_xlabel("round t")
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    if ax.lines:
        ax.legend(frameon=False, fontsize="small")
    fewest = min((m.shape[0] for _, m in series if m.size), default=0)
    fig.text(
        0.99,
        0.01,
        band_label(band, level, fewest),
        ha="right",
        fontsize="x-small",
    )
    fig.tight_layout()
    return save(fig, path_stem)


def save(fig: Any, path_stem: Path) -> list[Path]:
    """Write a matplotlib figure to ``path_stem``.png and .svg (atomically); return them."""
    import io

    written = []
    for ext in ("png", "svg"):
        buffer = io.BytesIO()
        metadata = {"Date": None} if ext == "svg" else {"Software": None}
        fig.savefig(buffer, format=ext, metadata=metadata)
        path = path_stem.with_name(f"{path_stem.name}.{ext}")
        atomic_write_bytes(path, buffer.getvalue())
        written.append(path)
    return written


def axis_labels(cfg: ExperimentConfig, env: EnvEntry, metric: str) -> tuple[str, str]:
    """(figure title, y-axis label) of ``metric`` drawn for ``env``."""
    if metric == "regret":
        return f"{cfg.title or cfg.name}: {env.label}", "cumulative regret"
    if metric in METRICS:
        return f"{METRICS[metric].title}: {env.label}", METRICS[metric].ylabel
    return f"{_describe(env.metrics, metric)}: {env.label}", metric


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
        colours: Policy label -> colour (default: :func:`~banditkit.experiments.layouts.palette`
            of the experiment's policies); a paper passes one mapping for all its configs.
        layouts: Also draw the multi-panel figures of the config's ``layout:``
            (``experiments.layouts``; panels of other configs are drawn empty with a note).
    """
    figures_dir = Path(figures_dir)
    figures_dir.mkdir(parents=True, exist_ok=True)
    cfg = resolved.config
    if colours is None:
        colours = _colours([p.label for p in resolved.policies])
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
        from banditkit.experiments.layouts import draw_layout

        own = (resolved, list(cells))
        for layout in config_layouts(resolved, cfg.figure or cfg.name):
            written += draw_layout(
                layout,
                lambda figure: own if figure is None else None,
                figures_dir / layout.name,
                colours=colours,
                level=cfg.ci_level,
                band=cfg.band,
            )
    return written


def config_layouts(resolved: ResolvedExperiment, figure_id: str) -> list[Layout]:
    """The multi-panel figures of a resolved experiment (its ``layout:``, defaults filled)."""
    from banditkit.experiments.layouts import expand_layouts

    cfg = resolved.config
    return expand_layouts(
        cfg.layout,
        resolved.envs,
        figure_id=figure_id,
        title=cfg.title or cfg.name,
        extra_metrics=cfg.metrics,
    )


def series_of(runs: CellRuns, metric: str) -> np.ndarray:
    """(n_seeds, T) values of a declared or registered metric for one cell."""
    return _series(runs, metric)


def _series(runs: CellRuns, metric: str) -> np.ndarray:
    """(n_seeds, T) values of a declared or registered metric for one cell."""
    if metric in runs.cell.env.metrics:
        return runs.curve(metric)
    compute: Callable[..., np.ndarray] = METRICS[metric].compute
    length = min(len(t) for t in runs.tables)
    return np.stack([np.asarray(compute(t))[:length] for t in runs.tables])


def _describe(metrics: dict[str, Any], metric: str) -> str:
    record = metrics[metric]
    if metric == record.name:
        how = {"sum": "cumulative", "last": "", "mean": "running mean of"}[
            record.aggregation
        ]
        return f"{how} {metric}".strip()
    return f"{record.name} per round, running mean"
