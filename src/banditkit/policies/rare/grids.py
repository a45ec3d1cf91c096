"""Static update grids of the rare-update algorithms [Yu2026, Alg. 1-3].

An update grid is the list of interval end points 0 < T_1 < ... < T_B = T: the estimate is
recomputed from the rewards of interval (T_{l-1}, T_l] at t = T_l, nowhere else. With
L = log2(log2(T)) (base-2 logs; T >= 3 so that L > 0):

    blce-g   T_1 = ceil(sqrt(T) / L) + 1,   T_l = min(T_{l-1} + ceil(T^(1 - 2^-l) / L) + 2, T)
    blce     T_1 = ceil(sqrt(T) / L),       T_l = min(T_{l-1} + ceil(T^(1 - 2^-l) / L) + 1, T)
    bgle     T_l = l * ceil(T^(1/3) / L) for l <= 3,
             T_l = min(T_{l-1} + ceil(T^(1 - 1/(3 * 2^(l-4))) / L), T) for l >= 4
    doubling T_l = min(ceil(T^(1 - 2^-l)), T) for l < M, T_M = T, M = ceil(log2 log2 T) + 1
             (the O(log log T) grid of the strictly batched baselines [Ruan2021; Hanna2023;
             Zhang2025]; our reading, the paper does not print theirs)

B, the number of intervals, is fixed by T before the run; it enters the confidence widths
of BLCE-G and BLCE. For T = 10,000 the grids are (B = 8, 8, 10)::

    blce-g  28, 298, 1148, 2657, 4669, 6992, 9488, 10000
    blce    27, 296, 1145, 2653, 4664, 6986, 9481, 10000
    bgle    6, 12, 18, 143, 721, 1965, 3791, 6003, 8438, 10000

References:
    In the package's docstring (``banditkit.policies.rare``): [Yu2026], the batched baselines.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Iterable, Sequence
from typing import Any

from banditkit.core.validation import check_choice, check_int

__all__ = [
    "GRIDS",
    "check_grid",
    "interval_of",
    "loglog",
    "phase_scale",
    "update_grid",
]

GRIDS = ("blce-g", "blce", "bgle", "doubling")
"""Names of the grids :func:`update_grid` computes."""

# Safety net: a grid is O(log log T) long; no valid T gets near this.
_MAX_INTERVALS = 10_000


def loglog(horizon: int) -> float:
    """L = log2(log2(T)), the scale of every interval length [Yu2026, Alg. 1-3].

    Raises:
        ValueError: If T < 3 (then L <= 0 and the grid formulas are undefined).

    Example:
        >>> round(loglog(10_000), 5)
        3.73202
    """
    horizon = check_int("horizon", horizon, low=3)
    return math.log2(math.log2(horizon))


def _scale(horizon: int) -> float:
    """L for T >= 3; 1 for T = 1, 2, where the formulas are undefined (one interval)."""
    return loglog(horizon) if horizon >= 3 else 1.0


def _ceil(value: float) -> int:
    return math.ceil(value)


def update_grid(name: str, horizon: int) -> tuple[int, ...]:
    """The interval end points T_1 < ... < T_B = T of the named grid, computed up front.

    Args:
        name: One of :data:`GRIDS` ("blce-g", "blce", "bgle", "doubling").
        horizon: T >= 1; for T = 1, 2 (where log2 log2 T <= 0) the grid is (T,), one
            interval.

    Returns:
        The end points as a tuple of B ints, the last one T.

    Raises:
        ValueError: On an unknown name or T < 1.

    Example:
        >>> update_grid("blce", 10_000)
        (27, 296, 1145, 2653, 4664, 6986, 9481, 10000)
        >>> len(update_grid("bgle", 10_000))
        10
    """
    check_choice("name", name, GRIDS)
    T = check_int("horizon", horizon, low=1)
    if T < 3:
        return (T,)
    L = loglog(T)
    ends: list[int] = []
    if name == "doubling":
        batches = _ceil(math.log2(math.log2(T))) + 1
        for k in range(1, batches):
            end = min(_ceil(T ** (1.0 - 2.0**-k)), T)
            if not ends or end > ends[-1]:
                ends.append(end)
            if end == T:
                break
        if ends[-1] != T:
            ends.append(T)
        return tuple(ends)
    for ell in itertools.count(1):
        if name == "bgle":
            if ell <= 3:
                end = ell * _ceil(T ** (1.0 / 3.0) / L)
            else:
                end = ends[-1] + _ceil(T ** (1.0 - 1.0 / (3.0 * 2.0 ** (ell - 4))) / L)
        else:
            offset = 2 if name == "blce-g" else 1
            if ell == 1:
                end = _ceil(math.sqrt(T) / L) + (1 if name == "blce-g" else 0)
            else:
                end = ends[-1] + _ceil(T ** (1.0 - 2.0**-ell) / L) + offset
        end = min(end, T)
        if ends and end <= ends[-1]:  # tiny T: an interval of length 0 is skipped
            continue
        ends.append(end)
        if end == T or ell > _MAX_INTERVALS:
            break
    return tuple(ends)


def phase_scale(name: str, horizon: int, ell: int) -> float:
    """N_l, the untruncated length scale that the phases of interval l are fractions of.

    blce-g / blce: sqrt(T) / L for l = 1 and T^(1 - 2^-l) / L for l >= 2; bgle:
    T^(1 - 2^min(4 - l, 1) / 3) / L (T^(1/3) / L for l <= 3, T^(2/3) / L for l = 4, ...)
    [Yu2026, Alg. 1 l.5/15/17, Alg. 2 l.12, Alg. 3 l.14]. The last interval is truncated
    at T but its phases keep the untruncated lengths (as the algorithms are written).

    Example:
        >>> import math
        >>> math.ceil(0.5 * phase_scale("blce", 10_000, 2))
        134
    """
    check_choice("name", name, GRIDS)
    ell = check_int("ell", ell, low=1)
    T = check_int("horizon", horizon, low=1)
    L = _scale(T)
    if name == "bgle":
        return float(T ** (1.0 - 2.0 ** min(4 - ell, 1) / 3.0) / L)
    if ell == 1:
        return math.sqrt(T) / L
    return float(T ** (1.0 - 2.0**-ell) / L)


def check_grid(grid: Any, horizon: int | None = None) -> tuple[int, ...]:
    """Validate a user-supplied grid: strictly increasing ints >= 1 (and <= T when given).

    A grid whose last point is below the horizon is completed with T (every run ends with
    an update, as in the paper's grids).

    Args:
        grid: A sequence of ints.
        horizon: T, or None to check the grid alone.

    Raises:
        ValueError: Naming ``grid``, on an empty, non-integer, non-increasing grid or a
            point past the horizon.

    Example:
        >>> check_grid([10, 50], horizon=100)
        (10, 50, 100)
    """
    if isinstance(grid, str | bytes) or not isinstance(grid, Sequence | Iterable):
        raise ValueError(f"grid must be a list of rounds; got {grid!r}.")
    points = list(grid)
    if not points:
        raise ValueError("grid must hold at least one round; got [].")
    ends = [check_int("grid", p, low=1) for p in points]
    if any(b <= a for a, b in itertools.pairwise(ends)):
        raise ValueError(f"grid must be strictly increasing; got {ends}.")
    if horizon is not None:
        if ends[-1] > horizon:
            raise ValueError(
                f"grid must end at or before the horizon T={horizon}; got {ends}."
            )
        if ends[-1] < horizon:
            ends.append(horizon)
    return tuple(ends)


def interval_of(grid: Sequence[int], t: int) -> int:
    """The 1-based interval l of round t (T_{l-1} < t <= T_l); B + 1 past the grid.

    Example:
        >>> [interval_of((2, 5), t) for t in range(1, 7)]
        [1, 1, 2, 2, 2, 3]
    """
    return bisect.bisect_left(grid, t) + 1
