"""Anytime ensemble sampling by the doubling trick [Sun2025, Sec. 6, App. E, Sec. 7.2].

A fixed-horizon algorithm is fully restarted on the geometric grid

    T_i = floor(T0 * b^i),  i = 0, 1, 2, ...

phase 0 covering rounds 1..T0 and phase i >= 1 rounds T_{i-1}+1..T_i, of planned length
tau_0 = T0, tau_i = T_i - T_{i-1}. Each phase gets the horizon-dependent parameters of its
planned length [Sun2025, Sec. 7.2]:

    m_i = ceil(m_scale * ln tau_i),   sigma_R,i = sigma_scale * ln tau_i

with m_scale = 2 and sigma_scale = 0.02 (natural log and ceil are our reading: they give
m = 10 and sigma_R = 0.092 at tau = 100, the fixed-horizon values).

If the base algorithm has regret c T^gamma (log T)^delta, the doubling-trick version has
at most l(gamma, delta, T0, b) times that [Sun2025, Thm 6.1; Lemma E.1 after
Besson & Kaufmann 2018]:

    l = ( log(T0 (b - 1) + 1) / log(T0 (b - 1)) )^delta * b^gamma (b - 1)^gamma / (b^gamma - 1)

(gamma = 1/2, delta = 3/2 for ensemble sampling; minimised near b = (3 + sqrt 5) / 2).

References:
    In the package's docstring (``banditkit.policies.ensemble``): [Sun2025].
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Any

from banditkit.core.validation import check_int, check_scalar

__all__ = [
    "GOLDEN_BASE",
    "check_anytime",
    "doubling_factor",
    "phase_ends",
    "phase_lengths",
    "phase_parameters",
]

#: b = (3 + sqrt 5) / 2 ~= 2.618, the base of the paper's doubling-trick runs.
GOLDEN_BASE = (3.0 + math.sqrt(5.0)) / 2.0
_ANYTIME_KEYS = {"t0", "base", "m_scale", "sigma_scale"}
_DEFAULTS = {"base": GOLDEN_BASE, "m_scale": 2.0, "sigma_scale": 0.02}


def check_anytime(anytime: Any) -> dict[str, float] | None:
    """Validate an ``anytime`` option: None, or {t0, base, m_scale, sigma_scale}.

    ``t0`` (int >= 2) is required; ``base`` (> 1) defaults to (3 + sqrt 5) / 2,
    ``m_scale`` to 2 and ``sigma_scale`` to 0.02.

    Example:
        >>> check_anytime({"t0": 100})["base"] == GOLDEN_BASE
        True
    """
    if anytime is None:
        return None
    if not isinstance(anytime, Mapping):
        raise ValueError(
            f"anytime must be a mapping {{t0, base}} or None; got {anytime!r}."
        )
    unknown = set(anytime) - _ANYTIME_KEYS
    if unknown or "t0" not in anytime:
        raise ValueError(
            f"anytime must have t0 and optionally base, m_scale, sigma_scale; got "
            f"{sorted(anytime)}."
        )
    out: dict[str, float] = {**_DEFAULTS, **dict(anytime)}
    out["t0"] = check_int("anytime.t0", out["t0"], low=2)
    out["base"] = check_scalar("anytime.base", out["base"], low=1.0, low_open=True)
    out["m_scale"] = check_scalar(
        "anytime.m_scale", out["m_scale"], low=0.0, low_open=True
    )
    out["sigma_scale"] = check_scalar(
        "anytime.sigma_scale", out["sigma_scale"], low=0.0
    )
    return out


def phase_ends(t0: int, base: float, horizon: int) -> list[int]:
    """T_i = floor(t0 * base^i) for i = 0, 1, ... up to the first T_i >= horizon.

    Example:
        >>> phase_ends(100, GOLDEN_BASE, 10_000)
        [100, 261, 685, 1794, 4697, 12299]
    """
    t0 = check_int("t0", t0, low=1)
    base = check_scalar("base", base, low=1.0, low_open=True)
    horizon = check_int("horizon", horizon, low=1)
    ends = [t0]
    i = 1
    while ends[-1] < horizon:
        nxt = math.floor(t0 * base**i)
        i += 1
        if nxt > ends[-1]:  # a base close to 1 can repeat a value; skip it
            ends.append(nxt)
    return ends


def phase_lengths(t0: int, base: float, horizon: int) -> list[int]:
    """The planned phase lengths tau_0 = T0, tau_i = T_i - T_{i-1}.

    Example:
        >>> phase_lengths(300, GOLDEN_BASE, 10_000)
        [300, 485, 1271, 3327, 8710]
    """
    ends = phase_ends(t0, base, horizon)
    return [ends[0]] + [b - a for a, b in itertools.pairwise(ends)]


def phase_end(t0: int, base: float, index: int) -> int:
    """T_index = floor(t0 * base^index), computed in floating point then floored."""
    if index == 0:
        return int(t0)
    ends = [int(t0)]
    i = 1
    while len(ends) <= index:
        nxt = math.floor(t0 * base**i)
        i += 1
        if nxt > ends[-1]:
            ends.append(nxt)
    return ends[index]


def phase_parameters(
    tau: int, *, m_scale: float = 2.0, sigma_scale: float = 0.02
) -> tuple[int, float]:
    """(m_i, sigma_R,i) = (ceil(m_scale ln tau), sigma_scale ln tau) for a phase of length tau.

    m_i is at least 1.

    Example:
        >>> [phase_parameters(t)[0] for t in (100, 161, 424, 1109, 2903, 7602)]
        [10, 11, 13, 15, 16, 18]
    """
    tau = check_int("tau", tau, low=1)
    log_tau = math.log(tau)
    return max(1, math.ceil(m_scale * log_tau - 1e-12)), sigma_scale * log_tau


def doubling_factor(
    t0: float, base: float, *, gamma: float = 0.5, delta: float = 1.5
) -> float:
    """l(gamma, delta, T0, b) of [Sun2025, Thm 6.1] (module docstring).

    Example:
        >>> round(doubling_factor(100, GOLDEN_BASE), 3)
        3.336
    """
    t0 = check_scalar("t0", t0, low=0.0, low_open=True)
    base = check_scalar("base", base, low=1.0, low_open=True)
    x = t0 * (base - 1.0)
    if x <= 1.0:
        raise ValueError(f"t0 * (base - 1) must exceed 1; got {x:g}.")
    log_ratio = (math.log(x + 1.0) / math.log(x)) ** delta
    return log_ratio * base**gamma * (base - 1.0) ** gamma / (base**gamma - 1.0)
