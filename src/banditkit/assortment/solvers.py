"""Exact static-MNL assortment optimisation under a capacity (cardinality) constraint.

Problem (Rusmevichientong, Shen & Shmoys 2010, eq. 1):

    max_{S subset [N], |S| <= K}  R(S) = sum_{i in S} r_i v_i / (v_0 + sum_{j in S} v_j),

with ``v_i = exp(u_i)``, ``r_i >= 0`` and outside weight ``v_0 > 0``. Methods:

* ``topk``: equal revenues ``r_i = r > 0``. ``R = r V / (v_0 + V)`` increases in
  ``V = sum_S v_i``, so the ``min(K, N)`` largest utilities are optimal. O(N).
* ``dinkelbach`` (default otherwise): the parametric fixed point of Dinkelbach (1967).
  ``R* >= rho`` iff ``max_{|S| <= K} sum_S v_i (r_i - rho) >= rho v_0``; for fixed ``rho``
  the inner maximum takes the (at most K) largest positive ``v_i (r_i - rho)``. Starting at
  ``rho = 0``, ``rho <- R(S(rho))`` increases strictly until it reaches ``R*``. O(N) per
  step (``np.argpartition``), a handful of steps.
* ``rss``: the candidate family of Rusmevichientong, Shen & Shmoys (2010): the inner set
  ``S(rho)`` changes only where two lines ``v_i (r_i - rho)`` cross or one crosses zero, so
  the best of the sets taken between consecutive breakpoints is optimal. O(N^2) candidates,
  a cross-check for moderate N.
* ``lp``: the linear program of Davis, Gallego & Topaloglu (2013) (its constraint matrix
  is totally unimodular, so a vertex solution is an assortment), solved by HiGHS.
* ``brute``: every subset of at most K items; a test oracle for N <= 16.

All methods work with the scaled weights of :func:`~banditkit.assortment.model.scaled_weights`
(every weight, ``v_0`` included, divided by the largest), so utilities of any magnitude are
safe. Ties are deterministic: ranking ties go to the lower index, and items that would leave
the revenue unchanged (``r_i`` equal to the optimal revenue) are left out.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from banditkit.assortment.model import (
    Assortment,
    check_capacity,
    check_outside,
    check_revenues,
    check_utilities,
    revenue_of,
    scaled_weights,
)
from banditkit.core.validation import check_choice

__all__ = ["METHODS", "optimal_assortment", "revenue_ordered_assortment"]

METHODS = ("auto", "topk", "dinkelbach", "rss", "lp", "brute")
BRUTE_MAX_ITEMS = 16
_ULPS = 8 * np.finfo(float).eps  # relative slack on r_i - rho
_CHUNK = 1 << 21  # scores held at once by the rss sweep


def top_k(score: np.ndarray, k: int, *, positive: bool) -> np.ndarray:
    """Sorted indices of the ``k`` largest entries of ``score`` (lower index wins ties).

    With ``positive``, only entries ``> 0`` qualify, so fewer than ``k`` may come back.
    O(N) through ``np.argpartition``'s sibling ``np.partition`` and two masks.
    """
    n = score.size
    if positive:
        eligible = score > 0
        if int(eligible.sum()) <= k:
            return np.flatnonzero(eligible)
    elif n <= k:
        return np.arange(n)
    kth = np.partition(score, n - k)[n - k]  # the k-th largest value, > 0 if positive
    chosen = score > kth
    ties = np.flatnonzero(score == kth)[: k - int(chosen.sum())]
    chosen[ties] = True
    return np.flatnonzero(chosen)


def _dinkelbach(
    w: np.ndarray, w0: float, r: np.ndarray, k: int, max_steps: int = 10_000
) -> np.ndarray:
    """Dinkelbach's (1967) fixed point ``rho <- R(S(rho))`` on scaled weights."""
    rho = 0.0
    best = np.zeros(0, dtype=np.intp)
    for _ in range(max_steps):
        # r_i - rho within a few ulps of 0 counts as 0: rho carries rounding error, and
        # with weights spanning e^40 a spurious 1e-16 margin on a heavy item would
        # outrank a light item's true margin (such an item adds < 1e-15 relative revenue)
        margin = r - rho
        margin[margin <= _ULPS * rho] = 0.0
        candidate = top_k(w * margin, k, positive=True)
        if candidate.size == 0:
            return best
        rho_new = revenue_of(candidate, w, w0, r)
        if rho_new <= rho:
            # No strict progress: rho = R*. The candidate also attains the inner maximum
            # at R*, hence is optimal, and it leaves out items with r_i = R* (score 0),
            # which add nothing; keep it unless rounding made it (1e-12) worse.
            return candidate if rho_new >= rho * (1 - 1e-12) else best
        rho, best = rho_new, candidate
    raise RuntimeError(  # pragma: no cover - rho increases strictly over finitely many sets
        f"Dinkelbach iteration did not converge in {max_steps} steps."
    )


def _rss(w: np.ndarray, w0: float, r: np.ndarray, k: int) -> np.ndarray:
    """Best set over the Rusmevichientong-Shen-Shmoys (2010) breakpoint intervals.

    The lines ``l_i(rho) = w_i (r_i - rho)`` cross at
    ``rho_ij = (w_i r_i - w_j r_j) / (w_i - w_j)`` and meet zero at ``rho = r_i``. Between
    consecutive breakpoints in ``[0, max r]`` their order and signs are fixed, hence so is
    the inner top-K set; one ``rho`` per interval (its midpoint) yields every candidate.
    """
    n = w.size
    hi = float(r.max())
    if hi == 0:
        return np.zeros(0, dtype=np.intp)
    i, j = np.triu_indices(n, 1)
    dw = w[i] - w[j]
    cross = dw != 0
    wr = w * r
    rho = (wr[i[cross]] - wr[j[cross]]) / dw[cross]
    points = np.unique(np.concatenate(([0.0, hi], r, rho)))
    points = points[(points >= 0) & (points <= hi)]
    mids = 0.5 * (points[:-1] + points[1:])
    best, best_rev = np.zeros(0, dtype=np.intp), 0.0
    order_k = min(k, n)
    rows = max(1, _CHUNK // n)
    for start in range(0, mids.size, rows):
        score = w * (r - mids[start : start + rows, None])
        # stable sort of -score: lower index first among equal scores
        top = np.argsort(-score, axis=1, kind="stable")[:, :order_k]
        keep = np.take_along_axis(score, top, axis=1) > 0
        chosen = np.zeros_like(score, dtype=bool)
        np.put_along_axis(chosen, top, keep, axis=1)
        rev = (chosen @ wr) / (w0 + chosen @ w)
        at = int(np.argmax(rev))
        if rev[at] > best_rev:
            best, best_rev = np.flatnonzero(chosen[at]), float(rev[at])
    return best


def _lp(w: np.ndarray, w0: float, r: np.ndarray, k: int) -> np.ndarray:
    """Davis, Gallego & Topaloglu (2013) LP, in the scaled variables ``y_i = p_i / w_i``.

    Their LP over choice probabilities ``p_0, p_i >= 0``,

        max sum_i r_i p_i  s.t.  p_0 + sum_i p_i = 1,  sum_i p_i / v_i <= K p_0 / v_0,
                                  p_i / v_i <= p_0 / v_0,

    becomes, with ``y_i = p_i / w_i`` and ``y_0 = p_0 / w_0`` (no division by tiny
    weights), ``max sum_i r_i w_i y_i`` s.t. ``w_0 y_0 + sum_i w_i y_i = 1``,
    ``sum_i y_i <= K y_0`` and ``0 <= y_i <= y_0``. At a vertex ``y_i / y_0`` is 0 or 1;
    items with ``y_i / y_0 > 0.5`` form the assortment (HiGHS returns values at tolerance
    level, so ``> 0`` would not do).
    """
    from scipy import sparse
    from scipy.optimize import linprog

    n = w.size
    r = r / r.max()  # revenues of order 1 for the solver's absolute tolerances
    cost = np.concatenate(([0.0], -(w * r)))
    a_eq = np.concatenate(([w0], w))[None, :]
    cap_row = sparse.csr_matrix(
        np.concatenate(([-float(min(k, n))], np.ones(n)))[None, :]
    )
    each = sparse.hstack([-np.ones((n, 1)), sparse.identity(n)])
    a_ub = sparse.vstack([cap_row, each]).tocsr()
    res = linprog(
        cost,
        A_ub=a_ub,
        b_ub=np.zeros(n + 1),
        A_eq=a_eq,
        b_eq=[1.0],
        bounds=(0, None),
        method="highs-ds",
    )
    if res.status != 0:  # pragma: no cover - the LP is always feasible and bounded
        raise RuntimeError(f"assortment LP failed: {res.message}")
    y = res.x
    return np.flatnonzero(y[1:] > 0.5 * y[0])


def _brute(w: np.ndarray, w0: float, r: np.ndarray, k: int) -> np.ndarray:
    """Every subset of at most ``k`` items; the smallest among the best (rel. 1e-12)."""
    n = w.size
    codes = np.arange(1 << n)
    member = ((codes[:, None] >> np.arange(n)) & 1).astype(bool)
    size = member.sum(axis=1)
    member, size = member[size <= k], size[size <= k]
    rev = (member @ (w * r)) / (w0 + member @ w)
    top = rev >= rev.max() * (1 - 1e-12)
    at = np.flatnonzero(top)[np.argmin(size[top])]
    return np.flatnonzero(member[at])


def _validate(
    utilities: Any, revenues: Any, capacity: Any, outside: Any
) -> tuple[np.ndarray, np.ndarray, int, float]:
    u = check_utilities(utilities)
    r = check_revenues(revenues, u.size)
    k = check_capacity(capacity)
    v0 = check_outside(outside)
    return u, r, k, v0


def optimal_assortment(
    utilities: Any,
    revenues: Any = None,
    *,
    capacity: int,
    outside: float = 1.0,
    method: str = "auto",
) -> Assortment:
    """An optimal MNL assortment of at most ``capacity`` items, and its expected revenue.

    Solves ``max_{|S| <= K} sum_{i in S} r_i v_i / (v_0 + sum_{j in S} v_j)`` exactly,
    with ``v_i = exp(u_i)``, ``v_0 = outside`` and ``K = capacity``.

    Args:
        utilities: ``(N,)`` finite item utilities ``u_i``.
        revenues: ``(N,)`` finite revenues ``r_i >= 0``; None means 1 for every item.
        capacity: The most items an assortment may hold, ``>= 1``. A capacity ``>= N``
            means no limit.
        outside: The outside option's weight ``v_0 > 0`` (1: utility 0).
        method: ``"auto"`` (``"topk"`` when all revenues are equal, else
            ``"dinkelbach"``), ``"topk"`` (equal revenues only), ``"dinkelbach"``,
            ``"rss"``, ``"lp"`` (needs scipy) or ``"brute"`` (``N <= 16``). All are exact;
            the last three are for cross-checks.

    Returns:
        ``Assortment(items, revenue)``: the sorted item indices (possibly fewer than
        ``capacity``, and empty when every revenue is 0) and ``R(items)``. The set is
        deterministic: ranking ties go to lower indices and items whose inclusion leaves
        the revenue unchanged are left out. When several sets are optimal, methods may
        return different ones with the same revenue.

    Raises:
        ValueError: On NaN/inf utilities, negative or non-finite revenues, a shape
            mismatch, ``capacity < 1``, ``outside <= 0``, an unknown method, ``"topk"``
            with unequal revenues or ``"brute"`` with more than 16 items.

    Example:
        >>> import banditkit as bk
        >>> bk.assortment.optimal_assortment([1.0, 0.5, 0.0, -1.0], capacity=2).items
        (0, 1)
    """
    u, r, k, v0 = _validate(utilities, revenues, capacity, outside)
    check_choice("method", method, METHODS)
    equal = bool((r == r[0]).all())
    if method == "topk" and not equal:
        raise ValueError(
            "method='topk' is exact only when all revenues are equal; got unequal "
            "revenues. Use method='auto' or 'dinkelbach'."
        )
    if method == "brute" and u.size > BRUTE_MAX_ITEMS:
        raise ValueError(
            f"method='brute' enumerates 2^N subsets and accepts at most "
            f"{BRUTE_MAX_ITEMS} utilities; got {u.size}."
        )
    if r.max() == 0:  # nothing earns anything: the empty set, whatever the method
        return Assortment((), 0.0)
    if method == "topk" or (method == "auto" and equal):
        items = top_k(u, k, positive=False)
    else:
        w, w0 = scaled_weights(u, v0)
        solver = {"auto": _dinkelbach, "dinkelbach": _dinkelbach, "rss": _rss}.get(
            method, _lp if method == "lp" else _brute
        )
        items = solver(w, w0, r, k)
    return _result(items, u, r, v0)


def revenue_ordered_assortment(
    utilities: Any,
    revenues: Any = None,
    *,
    capacity: int,
    outside: float = 1.0,
) -> Assortment:
    """The best revenue-ordered set of at most ``capacity`` items (a heuristic).

    Ranks items by revenue (ties: lower index first) and returns the best of the nested
    prefixes ``{i_1}, {i_1, i_2}, ...`` of length ``<= capacity`` (first best wins).
    Without a binding capacity (``capacity >= N``) it is optimal (Talluri & van Ryzin
    2004); with one it can be strictly suboptimal, which is why
    :func:`optimal_assortment` does not use it. O(N log N).

    Example:
        >>> revenue_ordered_assortment([0.0, 0.0], [2.0, 1.0], capacity=2).items
        (0,)
    """
    u, r, k, v0 = _validate(utilities, revenues, capacity, outside)
    w, w0 = scaled_weights(u, v0)
    order = np.argsort(-r, kind="stable")[:k]
    rev = np.cumsum(w[order] * r[order]) / (w0 + np.cumsum(w[order]))
    best = int(np.argmax(rev))
    if rev[best] <= 0:
        return Assortment((), 0.0)
    return _result(np.sort(order[: best + 1]), u, r, v0)


def _result(items: np.ndarray, u: np.ndarray, r: np.ndarray, v0: float) -> Assortment:
    """``Assortment`` with the revenue evaluated on the set's own shift (most accurate)."""
    if items.size == 0:
        return Assortment((), 0.0)
    w, w0 = scaled_weights(u[items], v0)
    revenue = float(w @ r[items] / (w0 + w.sum()))
    return Assortment(tuple(int(i) for i in items), revenue)
