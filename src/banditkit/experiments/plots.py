"""Figures: cumulative regret per environment, plus the family metrics, as PNG and SVG.

Each figure shows, per policy, the mean over seeds and a shaded band (the Student-t interval
of the mean at the config's ``ci_level``; see ``summaries``), one colour per policy, the same
colour for a policy in every figure of an experiment. Figures are drawn with matplotlib's
object API on an Agg canvas, so no global backend is switched and no display is needed.

Files: ``figures/regret-<env>.png`` and ``.svg`` (not for replay environments, which have no
regret), and ``figures/<metric>-<env>.png`` / ``.svg``
for every metric of ``experiments.metrics`` that applies to the environment.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from banditkit.core import ENVIRONMENTS
from banditkit.experiments.metrics import metrics_for
from banditkit.experiments.resolve import ResolvedExperiment
from banditkit.experiments.store import atomic_write_bytes
from banditkit.experiments.summaries import CellRuns, curve_band

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
) -> list[Path]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.4), dpi=120)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    for label, matrix in series:
        if matrix.size == 0:
            continue
        mean, lo, hi = curve_band(matrix, level)
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
    fig.text(
        0.99,
        0.01,
        f"mean and {level:.0%} t-interval over seeds",
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
    level = resolved.config.ci_level
    colours = _colours([p.label for p in resolved.policies])
    written: list[Path] = []
    for env in resolved.envs:
        env_cells = [c for c in cells if c.cell.env.label == env.label]
        # Replay environments have no counterfactuals, hence no regret to draw.
        if getattr(ENVIRONMENTS.get(env.name), "has_regret", True):
            regret = [
                (c.cell.policy.label, c.column("cumulative_regret")) for c in env_cells
            ]
            name = f"{prefix}regret-{slug(env.label)}"
            title = f"{resolved.config.title or resolved.config.name}: {env.label}"
            written += _draw(
                figures_dir / name, title, "cumulative regret", regret, colours, level
            )
        for metric in metrics_for(env.name, env.family, resolved.config.metrics):
            compute: Callable[..., np.ndarray] = metric.compute
            series = []
            for c in env_cells:
                if not c.tables:
                    continue
                length = min(len(t) for t in c.tables)
                values = np.stack([np.asarray(compute(t))[:length] for t in c.tables])
                series.append((c.cell.policy.label, values))
            written += _draw(
                figures_dir / f"{prefix}{metric.name}-{slug(env.label)}",
                f"{metric.title}: {env.label}",
                metric.ylabel,
                series,
                colours,
                level,
            )
    return written
