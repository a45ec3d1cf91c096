"""Theory constants of NeuralLog-UCB-1/2 [Bae2025, Sec. 4-5, Eqs. (1)-(4)], written once.

Pure functions of the round t, the log-determinant D_t and the hyper-parameters:

    log_factor   l_t      = log(4 t^2 / delta)                        (l_0 := log(4 / delta))
    lam0         lam_0    = 8 sqrt(2) C1 sqrt(L) log(4 / delta) / S   [Bae2025, Sec. 4]
    lam_t        lam_t    = (64 / S^2) D_t l_t + 16 C1^2 L l_t^2 / (S^2 lam_0),
                            clamped at >= lam_0                        [Bae2025, Eq. (3)]
    iota_t       iota_t   = 16 sqrt(D_t l_t) + 8 C1 sqrt(L / lam_0) l_t [Bae2025, Eq. (2)]
    c_s          c_S      = 1 + sqrt(L) S + L S^2
    nu_t         nu_t     = C c_S iota_t + 1        C = C6: nu^(1), Eq. (1); C = C7: nu^(2), Eq. (4)

with D_t = logdet(G_t / (4 lam_0) + I), G_t = sum_{i<=t} phi(x_i) phi(x_i)^T and
phi(x) = g(x; theta_0) / sqrt(m) ([Bae2025, Sec. 4]).

Symbols: delta = δ, C1 = C_1, C = C_6 or C_7, depth = L, S = S, lam0 = λ_0, iota = ι.

Notes:
    Assumption: l_0 = log(4 / delta) and D_0 = 0 before any data (max(t, 1) inside the
    log; docs/logistic.md, section "Theory mode").
    Assumption: lam_t is clamped at >= lam_0: the paper claims lam_0 <= min_t lam_t, but
    the second term of lam_1 is only lam_0 / 8 (docs/logistic.md, section "Theory mode").
    Reconstruction: Eq. (4) prints a garbled nu^(2); we read it as C7 c_S iota_t + 1
    (docs/logistic.md, section "Theory mode").

References:
    [Bae2025] S. Bae, D. Lee. Neural logistic bandits. arXiv:2505.02069.
"""

from __future__ import annotations

import math

__all__ = ["c_s", "iota_t", "lam0", "lam_t", "log_factor", "nu_t", "practical_nu"]


def log_factor(t: int, delta: float) -> float:
    """l_t = log(4 t^2 / delta), with t = 0 read as t = 1 (so l_0 = log(4 / delta)).

    Example:
        >>> round(log_factor(0, 0.05), 6) == round(math.log(80.0), 6)
        True
    """
    t = max(int(t), 1)
    return math.log(4.0 * t * t / delta)


def lam0(*, delta: float, C1: float, depth: int, S: float) -> float:
    """lam_0 = 8 sqrt(2) C1 sqrt(L) log(4 / delta) / S [Bae2025, Sec. 4].

    Example:
        >>> round(lam0(delta=4 / math.e, C1=1.0, depth=2, S=1.0), 6)  # 8 sqrt(2) sqrt(2)
        16.0
    """
    return 8.0 * math.sqrt(2.0) * C1 * math.sqrt(depth) * math.log(4.0 / delta) / S


def lam_t(
    D: float, t: int, *, delta: float, C1: float, depth: int, S: float, lam_0: float
) -> float:
    """lam_t of [Bae2025, Eq. (3)], clamped at >= lam_0.

        lam_t = (64 / S^2) D_t l_t + 16 C1^2 L l_t^2 / (S^2 lam_0)

    Args:
        D: D_t = logdet(G_t / (4 lam_0) + I), >= 0.
        t: Round (number of observations), >= 0.
        delta: Confidence level in (0, 1).
        C1: Absolute constant C1 > 0.
        depth: Network depth L.
        S: Norm bound S > 0.
        lam_0: The floor lam_0 (``lam0`` in theory mode).
    """
    ell = log_factor(t, delta)
    value = (64.0 / S**2) * D * ell + 16.0 * C1**2 * depth * ell**2 / (S**2 * lam_0)
    return max(value, lam_0)


def iota_t(
    D: float, t: int, *, delta: float, C1: float, depth: int, lam_0: float
) -> float:
    """iota_t = 16 sqrt(D_t l_t) + 8 C1 sqrt(L / lam_0) l_t [Bae2025, Eq. (2)]."""
    ell = log_factor(t, delta)
    return 16.0 * math.sqrt(D * ell) + 8.0 * C1 * math.sqrt(depth / lam_0) * ell


def c_s(depth: int, S: float) -> float:
    """c_S = 1 + sqrt(L) S + L S^2, the factor of iota_t in Eqs. (1) and (4).

    Example:
        >>> c_s(4, 1.0)
        7.0
    """
    return 1.0 + math.sqrt(depth) * S + depth * S**2


def nu_t(iota: float, *, C: float, depth: int, S: float) -> float:
    """nu_t = C c_S iota_t + 1: nu^(1) of Eq. (1) with C = C6, nu^(2) of Eq. (4) with C = C7."""
    return C * c_s(depth, S) * iota + 1.0


def practical_nu(
    d_eff: float,
    *,
    lam: float,
    depth: int,
    S: float,
    bonus: str,
    ell: float = 1.0,
) -> float:
    """The practical-mode nu_t of NeuralLog-UCB-1/2 (docs/logistic.md, "Reconstructed bonuses").

    ``bonus="orders"``: S^2 (sqrt(ell) sqrt(d_eff) + ell / sqrt(lam)), the orders of
    nu_t in S, lam and d_eff with the absolute constants dropped; ``"table"``:
    c_S (sqrt(ell) sqrt(d_eff) + ell sqrt(L / lam)) + 1. ``ell`` is the log factor l_t
    (1 when the policy drops the log factors).

    Example:
        >>> practical_nu(4.0, lam=1.0, depth=2, S=1.0, bonus="orders")
        3.0
    """
    if bonus == "orders":
        return S**2 * (math.sqrt(ell) * math.sqrt(d_eff) + ell / math.sqrt(lam))
    return (
        c_s(depth, S)
        * (math.sqrt(ell) * math.sqrt(d_eff) + ell * math.sqrt(depth / lam))
        + 1
    )
