"""The array operations the elimination cascade is built from [Yu2026].

:class:`~banditkit.policies.rare.elimination.EliminationLevels` computes the cascade of
[Yu2026, Alg. 1 l.13-14, Alg. 2 l.10-11] in few NumPy calls per round; this module holds
its building blocks, each exact or bit for bit what it replaces:

- ``quad_norms``: x^T A x of every row, through one BLAS product;
- ``Plan`` / ``build_plan``: the rows stacked for one split of the levels into certified
  and exact ones (theta_k of every level, v_k of the certified ones, the rows of V_k^-1
  of the exact ones), whose one product with X^T serves the whole round;
- ``row_tops`` / ``first_arg``: per-row maxima and the first arms reaching them;
- ``least_kept``: the comparison <theta_k, x^(k) - x> <= 2 eps_k of every arm, written
  fl(best - s) <= w, as one array comparison s >= c with the same result for every s.

References:
    [Yu2026] S. Yu, M. Oh. Practical and optimal algorithm for linear contextual bandits
        with rare parameter updates. arXiv:2606.00984.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

__all__ = [
    "Plan",
    "build_plan",
    "first_arg",
    "least_kept",
    "quad_norms",
    "row_tops",
]


def least_kept(best: float, w: float) -> float | None:
    """The least float c with fl(best - c) <= w, or None when not found in a few steps.

    fl(best - s) is non-increasing in s (rounding is monotone), so for every float s,
    fl(best - s) <= w exactly when s >= c: the comparison of the algorithm, bit for bit,
    in one array operation instead of two. c is usually within an ulp of best - w; when
    it is not (|best - w| far below w, where an ulp of c moves best - c by much less
    than an ulp of w), or best or w is not finite, None: compare as written.

    Example:
        >>> c = least_kept(1.0, 0.3)
        >>> 1.0 - c <= 0.3 and not 1.0 - math.nextafter(c, -math.inf) <= 0.3
        True
    """
    if not (math.isfinite(best) and math.isfinite(w)):
        return None
    c = best - w
    for _ in range(4):
        if best - c <= w:
            break
        c = math.nextafter(c, math.inf)
    else:
        return None
    for _ in range(4):
        lower = math.nextafter(c, -math.inf)
        if not best - lower <= w:
            return c
        c = lower
    return None


def quad_norms(X: np.ndarray, inverse: np.ndarray) -> np.ndarray:
    """x_k^T A^-1 x_k for every row (squared ||x_k||_{A^-1}), shape (K,).

    One (K, d) x (d, d) product through BLAS, then row-wise dots: O(K d^2).
    """
    return np.einsum("ij,ij->i", X @ inverse, X)


class Plan(NamedTuple):
    """The stacked rows of one split into certified and exact levels."""

    W: np.ndarray  # (m + certified + exact * d, d): theta_k, v_k, the rows of V_k^-1
    row: list[int]  # per level: its projection row in W (certified), else -1
    block: list[int]  # per level: its block among the exact levels, else -1
    n_head: int  # rows of means and projections
    n_exact: int
    offsets: np.ndarray  # K times the head rows' indices, set per arm count


def build_plan(
    thetas: np.ndarray, top: np.ndarray, inverses: np.ndarray, exact: list[bool]
) -> Plan:
    """The stacked rows W of one split (``exact[k]``: level k is evaluated exactly).

    Rows: theta_k (every level), v_k (``top``, certified levels), the d rows of V_k^-1
    (exact levels).
    """
    m, d = thetas.shape
    cert = [k for k in range(m) if not exact[k]]
    exact_levels = [k for k in range(m) if exact[k]]
    rows = [thetas, top[cert], inverses[exact_levels].reshape(-1, d)]
    row = [-1] * m
    for i, k in enumerate(cert):
        row[k] = m + i
    block = [-1] * m
    for j, k in enumerate(exact_levels):
        block[k] = j
    return Plan(
        np.concatenate(rows),
        row,
        block,
        m + len(cert),
        len(exact_levels),
        np.zeros(0, dtype=np.intp),
    )


def row_tops(forms: np.ndarray, small: bool) -> tuple[list[float], list[int]]:
    """Per row of ``forms``: its maximum and the first arm reaching it (-1: later).

    ``small``: through the arg-maxima (cheaper than the maxima for a few arms; where the
    crossover was measured: docs/performance.md).
    """
    if not small:
        return forms.max(axis=1).tolist(), [-1] * forms.shape[0]
    arg = forms.argmax(axis=1)
    return forms[np.arange(forms.shape[0]), arg].tolist(), arg.tolist()


def first_arg(row: np.ndarray, known: int, up: bool) -> int:
    """The first arm reaching the row's maximum (``up``) or minimum, unless known (>= 0)."""
    if known >= 0:
        return known
    return int(row.argmax()) if up else int(row.argmin())
