"""What every figure shares: one colour per policy, a curve with its band, file names, saving.

A curve is the mean over seeds of a (n_seeds, T) matrix with a shaded band (the config's
``band``: the Student-t interval of the mean at ``ci_level``, one standard deviation or one
standard error; ``summarise.stats.curve_band``), thinned to at most :data:`MAX_POINTS` points.
Figures are drawn with matplotlib's object API on an Agg canvas (imported when a figure is
drawn), so no global backend is switched and no display is needed.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from banditkit.core.files import atomic_write_bytes
from banditkit.core.records import Record
from banditkit.experiments.config.metrics import METRICS
from banditkit.experiments.config.resolved import EnvEntry
from banditkit.experiments.config.schema import ExperimentConfig
from banditkit.experiments.store.runs import CellRuns
from banditkit.experiments.summarise.stats import curve_band

__all__ = [
    "MAX_POINTS",
    "axis_labels",
    "fit_to_seeds",
    "new_figure",
    "palette",
    "plot_band",
    "save",
    "series_of",
    "slug",
]

MAX_POINTS = 400
"""Curves are thinned to at most this many points (keeps SVG files small)."""


def slug(text: str) -> str:
    """A file-name-safe version of a label (at most 100 characters, no separator).

    Example:
        >>> slug("logistic-h1 (d=20)")
        'logistic-h1-d-20'
    """
    return re.sub(r"[^A-Za-z0-9_.]+", "-", text).strip("-")[:100] or "x"


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
    from matplotlib import colormaps  # matplotlib: imported when a figure is drawn

    out = [tuple(colormaps["tab10"](i)) for i in range(10)]
    out += [tuple(colormaps["tab20"](2 * i + 1)) for i in range(10)]
    for name in ("tab20b", "tab20c"):  # 5 hue groups of 4 shades
        out += [tuple(colormaps[name](4 * (i % 5) + i // 5)) for i in range(20)]
    return out


def new_figure(width: float, height: float, **options: Any) -> Any:
    """A matplotlib ``Figure`` of ``width`` x ``height`` inches on an Agg canvas, 120 dpi."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=120, **options)
    FigureCanvasAgg(fig)
    return fig


def plot_band(
    ax: Any,
    matrix: np.ndarray,
    *,
    colour: tuple[float, ...],
    label: str,
    level: float,
    band: str,
    lw: float,
) -> Any:
    """Draw the mean curve of a (n_seeds, T) matrix and its band on ``ax``; the line."""
    mean, lo, hi = curve_band(matrix, level, band)
    rounds = np.arange(1, mean.shape[0] + 1)
    keep = np.unique(np.linspace(0, mean.shape[0] - 1, MAX_POINTS).astype(int))
    (line,) = ax.plot(rounds[keep], mean[keep], color=colour, lw=lw, label=label)
    ax.fill_between(rounds[keep], lo[keep], hi[keep], color=colour, alpha=0.2, lw=0)
    return line


def fit_to_seeds(ax: Any, matrices: Sequence[np.ndarray]) -> None:
    """Set ``ax``'s y-range to the seeds' own values (every row of every matrix drawn).

    A band may reach past them (a t-interval of 2 or 3 seeds is wide: 12.7 standard errors
    at 2), and scaling the axis to it would squash the curves into a sliver of the panel
    (an average regret in [0, 1] drawn from -6 to 8); the band is then cut at the panel's
    edge. Nothing is changed when no values are finite.
    """
    finite = [m[np.isfinite(m)] for m in matrices if m.size]
    values = np.concatenate(finite) if finite else np.empty(0)
    if values.size == 0:
        return
    low, high = float(values.min()), float(values.max())
    pad = 0.05 * (high - low) if high > low else max(abs(high), 1.0) * 0.05
    ax.set_ylim(low - pad, high + pad)


def save(fig: Any, path_stem: Path) -> list[Path]:
    """Write a matplotlib figure to ``path_stem``.png and .svg (atomically); return them."""
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


def series_of(runs: CellRuns, metric: str) -> np.ndarray:
    """(n_seeds, T) values of a declared or registered metric for one cell."""
    if metric in runs.cell.env.metrics:
        return runs.curve(metric)
    compute: Callable[..., np.ndarray] = METRICS[metric].compute
    length = min(len(t) for t in runs.tables)
    return np.stack([np.asarray(compute(t))[:length] for t in runs.tables])


def _describe(metrics: Mapping[str, Record], metric: str) -> str:
    record = metrics[metric]
    if metric == record.name:
        how = {"sum": "cumulative", "last": "", "mean": "running mean of"}[
            record.aggregation
        ]
        return f"{how} {metric}".strip()
    return f"{record.name} per round, running mean"
