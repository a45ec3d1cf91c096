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
``regret-linear.png``, ``average-regret-dueling.png``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from banditkit.experiments.metrics import METRICS, figures_for
from banditkit.experiments.runs import ResolvedExperiment
from banditkit.experiments.store import atomic_write_bytes
from banditkit.experiments.summaries import CellRuns, band_label, curve_band

__all__ = ["plot_experiment", "slug"]

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
    from matplotlib import colormaps

    cmap = colormaps["tab10" if len(labels) <= 10 else "tab20"]
    return {label: tuple(cmap(i % cmap.N)) for i, label in enumerate(labels)}


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
    written = []
    for ext in ("png", "svg"):
        import io

        buffer = io.BytesIO()
        metadata = {"Date": None} if ext == "svg" else {"Software": None}
        fig.savefig(buffer, format=ext, metadata=metadata)
        path = path_stem.with_suffix(f".{ext}")
        atomic_write_bytes(path, buffer.getvalue())
        written.append(path)
    return written


def plot_experiment(
    resolved: ResolvedExperiment,
    cells: Sequence[CellRuns],
    figures_dir: str | Path,
    *,
    prefix: str = "",
) -> list[Path]:
    """Draw every figure of an experiment into ``figures_dir``; return the files written."""
    figures_dir = Path(figures_dir)
    figures_dir.mkdir(parents=True, exist_ok=True)
    cfg = resolved.config
    colours = _colours([p.label for p in resolved.policies])
    written: list[Path] = []
    for env in resolved.envs:
        env_cells = [c for c in cells if c.cell.env.label == env.label and c.tables]
        for metric in figures_for(env.records, cfg.metrics):
            series = [(c.cell.policy.label, _series(c, metric)) for c in env_cells]
            if metric == "regret":
                title, ylabel = (
                    f"{cfg.title or cfg.name}: {env.label}",
                    "cumulative regret",
                )
            elif metric in METRICS:
                title = f"{METRICS[metric].title}: {env.label}"
                ylabel = METRICS[metric].ylabel
            else:
                title, ylabel = f"{_describe(env.metrics, metric)}: {env.label}", metric
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
    return written


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
