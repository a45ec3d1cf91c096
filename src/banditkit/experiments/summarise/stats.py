"""Statistics over seeds: Student-t intervals of the mean, curve bands, per-metric stats.

Values over seeds give a mean, a standard deviation (n - 1 in the denominator) and a
Student-t confidence interval for the mean,

    mean +- t_{(1 + level) / 2, n - 1} * std / sqrt(n),

at the config's ``ci_level``; with a single seed the interval is the point itself. The shaded
bands of the figures use the same interval at every round, or one standard deviation or
standard error (the config's ``band``): :func:`curve_band`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "BANDS",
    "FEW_SEEDS",
    "band_label",
    "curve_band",
    "metric_stats",
    "t_interval",
]

BANDS = ("t-ci", "std", "se")
"""Kinds of figure band: t-interval of the mean, one standard deviation, one standard error."""

FEW_SEEDS = 5
"""An interval from fewer seeds than this is labelled as such in figures and reports."""


def t_interval(
    values: Sequence[float] | np.ndarray, level: float
) -> tuple[float, float]:
    """Student-t confidence interval of the mean of ``values`` at ``level``.

    Example:
        >>> lo, hi = t_interval([1.0, 2.0, 3.0], 0.95)
        >>> round(lo, 3), round(hi, 3)
        (-0.484, 4.484)
        >>> t_interval([2.0], 0.95)
        (2.0, 2.0)
    """
    arr = np.asarray(values, dtype=np.float64)
    if arr.size == 0:
        return (float("nan"), float("nan"))
    mean = float(arr.mean())
    if arr.size == 1:
        return (mean, mean)
    from scipy import stats

    half = float(
        stats.t.ppf((1 + level) / 2, arr.size - 1) * arr.std(ddof=1) / np.sqrt(arr.size)
    )
    return (mean - half, mean + half)


def curve_band(
    matrix: np.ndarray, level: float, kind: str = "t-ci"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-round mean and band bounds of a (n_seeds, T) matrix.

    Args:
        matrix: One row per seed.
        level: Confidence level of a ``t-ci`` band.
        kind: ``t-ci`` (Student-t interval of the mean), ``std`` (mean +- one standard
            deviation over seeds) or ``se`` (mean +- one standard error).

    Raises:
        ValueError: For an unknown ``kind``.
    """
    if kind not in BANDS:
        raise ValueError(f"kind must be one of {BANDS}; got {kind!r}.")
    mean = matrix.mean(axis=0)
    n = matrix.shape[0]
    if n < 2:
        return mean, mean.copy(), mean.copy()
    half = matrix.std(axis=0, ddof=1)
    if kind != "std":
        half = half / np.sqrt(n)
    if kind == "t-ci":
        from scipy import stats

        half = stats.t.ppf((1 + level) / 2, n - 1) * half
    return mean, mean - half, mean + half


def band_label(kind: str, level: float, n_seeds: int) -> str:
    """How a band is described in a figure, flagging intervals from few seeds.

    Example:
        >>> band_label("t-ci", 0.95, 3)
        'mean and 95% t-interval over seeds (fewer than 5 seeds: a rough interval)'
        >>> band_label("std", 0.95, 10)
        'mean +- one standard deviation over seeds'
    """
    text = {
        "t-ci": f"mean and {level:.0%} t-interval over seeds",
        "std": "mean +- one standard deviation over seeds",
        "se": "mean +- one standard error over seeds",
    }[kind]
    if kind != "std" and n_seeds < FEW_SEEDS:
        text += f" (fewer than {FEW_SEEDS} seeds: a rough interval)"
    return text


def metric_stats(
    values: Sequence[float], seeds: Sequence[int], level: float
) -> dict[str, Any]:
    """Mean, std, t-interval and per-seed values of one metric at one round.

    Example:
        >>> metric_stats([1.0, 3.0], [0, 1], 0.95)["std"]
        1.4142135623730951
    """
    arr = np.asarray(values, dtype=np.float64)
    n = arr.size
    nan = float("nan")
    return {
        "n": n,
        "mean": float(arr.mean()) if n else nan,
        "std": float(arr.std(ddof=1)) if n > 1 else (0.0 if n else nan),
        "ci": list(t_interval(arr, level)),
        "seeds": [int(s) for s in seeds],
        "per_seed": arr.tolist(),
    }
