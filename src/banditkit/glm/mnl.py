"""Regularised multinomial-logit (MNL) MLE with linear utilities, solved exactly by Newton.

Data: n offered sets, set s holding up to S items with features z_si (p,) and offsets a_si;
item i of set s has the affine utility ``u_si(w) = a_si + z_si^T w`` and the outside option
utility 0. With y_s the one-hot choice over ``S_s + {0}`` (``choice[s] = -1`` for the
outside option), the objective is the full multinomial negative log-likelihood plus a ridge
around a centre c:

    L(w) = sum_s [ log(1 + sum_{i in S_s} e^{u_si(w)}) - sum_{i in S_s} y_si u_si(w) ]
           + (lam / 2) ||w - c||^2

    grad L = sum_s sum_i (p_si - y_si) z_si + lam (w - c)
    hess L = lam I + sum_s [ sum_i p_si z_si z_si^T - q_s q_s^T ],   q_s = sum_i p_si z_si

(McFadden 1974; the linearised loss of Hwang, Kim & Oh 2025, Eq. 2, whose gradient and Hessian
in App. C include the outside option's term, as here). L is strictly convex for lam > 0.

The linear-utility MNL bandits (UCB-MNL, TS-MNL) use a = 0 and c = 0; ONL-MNL uses the
stored gradients g_si = grad f_{w_s}(x_si) as z_si, offsets a_si = f_{w_s}(x_si) - g_si^T w_s
and the pilot estimate as c.

:func:`fit_mnl` runs a damped Newton method with backtracking (Armijo) line search from a
warm start; it stops when ``||grad L||_2 <= tol * max(1, lam)``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy.linalg.blas import dsyrk
from scipy.linalg.lapack import dposv

from banditkit.glm.mnl_sets import MNLSetBuffer, MNLSets

_SMALL_ROWS = 64
"""Hessians of at most this many padded items are formed by plain products."""

_VALUE_NOISE = 64 * float(np.finfo(float).eps)
"""Relative rounding slack of the Armijo test of :func:`fit_mnl`."""

__all__ = [
    "MNLFit",
    "MNLSetBuffer",
    "MNLSets",
    "fit_mnl",
    "mnl_objective",
    "set_hessian",
]


class MNLFit(NamedTuple):
    """Result of :func:`fit_mnl`.

    The estimate, the iterations, the final gradient norm and (with ``return_hessian``) a
    Hessian of L for the next warm start.
    """

    w: np.ndarray
    iterations: int
    grad_norm: float
    hessian: np.ndarray | None = None
    value: float | None = None
    """L at ``w`` (with the ridge), for :func:`refit_mnl`'s ``previous``."""
    grad: np.ndarray | None = None
    """grad L at ``w``, for :func:`refit_mnl`'s ``previous``."""


def _softmax(masked: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities (n, S) and log(1 + sum e^u) (n,) of utilities (n, S), -inf on padding.

    The reductions run over the slot axis of a slot-major copy (S, n): NumPy reduces a
    short last axis row by row, much slower than the element-wise passes over S rows of
    n (docs/performance.md); the sums add the slots in the same order either way.
    """
    uT = masked.T.copy()
    m = uT.max(axis=0, initial=0.0)  # the outside option's utility is 0
    uT -= m
    e = np.exp(uT, out=uT)
    denom = np.exp(-m) + e.sum(axis=0)
    e /= denom
    return e.T, m + np.log(denom)


def _probs(sets: MNLSets, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Choice probabilities of the items (n, S) (0 on padding) and log(1 + sum e^u) (n,)."""
    u = sets.Z @ w + sets.offset
    return _softmax(np.where(sets.mask, u, -np.inf))


def _chosen_utility(sets: MNLSets, w: np.ndarray) -> np.ndarray:
    """u_s,choice (n,), 0 for the outside option."""
    n = sets.choice.shape[0]
    rows = np.arange(n)
    slot = np.maximum(sets.choice, 0)
    u = sets.Z[rows, slot] @ w + sets.offset[rows, slot]
    return np.where(sets.choice >= 0, u, 0.0)


def _onehot(sets: MNLSets) -> np.ndarray:
    n, width = sets.mask.shape
    y = np.zeros((n, width))
    chosen = sets.choice >= 0
    y[np.flatnonzero(chosen), sets.choice[chosen]] = 1.0
    return y


def mnl_objective(
    sets: MNLSets, w: np.ndarray, *, lam: float, center: np.ndarray | None = None
) -> tuple[float, np.ndarray, np.ndarray]:
    """The objective L(w), its gradient (p,) and its Hessian (p, p) (module docstring).

    Example:
        >>> Z = np.ones((1, 2, 1)); sets = MNLSets(Z, np.zeros((1, 2)), np.ones((1, 2), bool),
        ...                                       np.array([-1]))
        >>> value, grad, hess = mnl_objective(sets, np.zeros(1), lam=0.0)
        >>> round(value, 4), grad.round(4).tolist()  # log 3; p_1 + p_2 = 2/3
        (1.0986, [0.6667])
    """
    c = np.zeros_like(w) if center is None else center
    p, lse = _probs(sets, w)
    value = float(lse.sum() - _chosen_utility(sets, w).sum())
    value += 0.5 * lam * float((w - c) @ (w - c))
    resid = p - _onehot(sets)
    grad = np.einsum("nsp,ns->p", sets.Z, resid) + lam * (w - c)
    return value, grad, _hessian(sets, p, lam)


def set_hessian(sets: MNLSets, w: np.ndarray) -> np.ndarray:
    """The data part of the Hessian, sum_s [sum_i p_si z_si z_si^T - q_s q_s^T], at w."""
    return _hessian(sets, _probs(sets, w)[0], 0.0)


def _hessian(sets: MNLSets, p: np.ndarray, lam: float) -> np.ndarray:
    n, width, dim = sets.Z.shape
    if n * width <= _SMALL_ROWS:  # a few new sets: plain products beat BLAS set-up
        flat = sets.Z.reshape(n * width, dim)
        Q = np.einsum("nsp,ns->np", sets.Z, p)
        H = (flat.T * p.reshape(-1)) @ flat - Q.T @ Q
        H[np.diag_indices(dim)] += lam
        return H
    A = (sets.Z * np.sqrt(p)[:, :, None]).reshape(n * width, dim)
    Q = np.einsum("nsp,ns->np", sets.Z, p)
    # A^T A - Q^T Q + lam I by two symmetric rank-k updates (BLAS syrk, half the work)
    # A.T and Q.T are Fortran-ordered views: no copy before BLAS
    H = dsyrk(1.0, A.T, lower=1)
    H = dsyrk(-1.0, Q.T, beta=1.0, c=H, lower=1, overwrite_c=1)
    H = np.tril(H) + np.tril(H, -1).T
    H[np.diag_indices(dim)] += lam
    return H


class _Layout(NamedTuple):
    """What one fit reads off the sets once instead of in every pass over them."""

    chosen: np.ndarray
    """Flat indices ``s * S + slot`` of the chosen items (sets whose choice is an item)."""
    dense: bool
    """No padded slot (every set has S items): no masking needed."""
    offset: bool
    """Some offset is non-zero (else adding them is skipped)."""


def _layout(sets: MNLSets) -> _Layout:
    rows = np.flatnonzero(sets.choice >= 0)
    return _Layout(
        chosen=rows * sets.mask.shape[1] + sets.choice[rows],
        dense=bool(sets.mask.all()),
        offset=bool(sets.offset.any()),
    )


def _value_grad(
    sets: MNLSets,
    w: np.ndarray,
    lam: float,
    c: np.ndarray,
    layout: _Layout | None = None,
) -> tuple[float, np.ndarray, np.ndarray]:
    """L(w), grad L(w) and the item probabilities, from one pass over the utilities.

    ``layout`` (``_layout(sets)``) saves re-deriving the chosen slots and the padding in
    every pass of a fit; the result is the same bit for bit.
    """
    n, width, dim = sets.Z.shape
    lay = _layout(sets) if layout is None else layout
    flat = sets.Z.reshape(n * width, dim)  # a view: the buffer is C-contiguous
    u = (flat @ w).reshape(n, width)
    if lay.offset:
        u += sets.offset
    p, lse = _softmax(u if lay.dense else np.where(sets.mask, u, -np.inf))
    diff = w - c
    value = float(lse.sum() - u.reshape(-1)[lay.chosen].sum())
    value += 0.5 * lam * float(diff @ diff)
    resid = p.copy()
    resid.reshape(-1)[lay.chosen] -= 1.0
    grad = resid.reshape(-1) @ flat + lam * diff
    return value, grad, p


def fit_mnl(
    sets: MNLSets,
    *,
    lam: float,
    center: np.ndarray | None = None,
    w0: np.ndarray | None = None,
    tol: float = 1e-6,
    max_iter: int = 50,
    hessian: np.ndarray | None = None,
    refresh: float = 0.25,
    return_hessian: bool = False,
    start: tuple[float, np.ndarray] | None = None,
) -> MNLFit:
    """Minimise L(w) by damped Newton with backtracking, warm-started at ``w0``.

    Each iteration solves ``hess L(w) step = -grad L(w)`` (Cholesky), then halves the step
    until the Armijo condition ``L(w + a step) <= L(w) + 1e-4 a grad^T step`` holds. With
    lam > 0 the objective is strictly convex and Newton converges quadratically near the
    optimum; a warm start from the previous round's estimate usually needs one step.

    With ``hessian`` (a lagged Hessian, e.g. the previous round's plus the new set's), the
    iterations use that matrix instead of rebuilding the O(n S p^2) Hessian, until a step
    reduces the gradient norm by less than the factor ``refresh``; from then on the exact
    Hessian is used. The stopping rule is the same, so the result meets the same tolerance.

    Args:
        sets: The padded sets.
        lam: Ridge lam > 0 (lam = 0 is accepted when the data alone make L strictly convex).
        center: Centre c of the ridge (p,); None is 0.
        w0: Starting point (p,); None is the centre.
        tol: Stop when ``||grad L||_2 <= tol * max(1, lam)``.
        max_iter: Most Newton iterations.
        hessian: A positive-definite approximation of the Hessian to start with, or None.
        refresh: Switch to the exact Hessian when a lagged step leaves more than this
            fraction of the gradient norm.
        return_hessian: Also return the Hessian at the returned point, or the lagged one
            if it still converged fast (to warm-start the next call).
        start: ``(L(w0), grad L(w0))`` when the caller knows them (saves one pass over
            the sets); None computes them.

    Returns:
        ``MNLFit(w, iterations, grad_norm, hessian, value, grad)``.

    Raises:
        ValueError: If lam < 0, or the shapes disagree.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> Z = rng.normal(size=(50, 3, 2)); mask = np.ones((50, 3), bool)
        >>> sets = MNLSets(Z, np.zeros((50, 3)), mask, rng.integers(-1, 3, 50))
        >>> fit = fit_mnl(sets, lam=1.0)
        >>> fit.grad_norm < 1e-6
        True
    """
    return _newton(
        sets,
        lam=lam,
        center=center,
        w0=w0,
        tol=tol,
        max_iter=max_iter,
        hessian=hessian,
        refresh=refresh,
        return_hessian=return_hessian,
        start=start,
    )[0]


def _one_set(sets: MNLSets, w: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """The NLL of the single set in ``sets``, its gradient and Hessian at w (no ridge)."""
    keep = sets.mask[0]
    Z, u = sets.Z[0][keep], sets.Z[0][keep] @ w + sets.offset[0][keep]
    m = max(0.0, float(u.max()))  # the outside option's utility is 0
    e = np.exp(u - m)
    denom = math.exp(-m) + float(e.sum())
    p = e / denom
    q = p @ Z
    slot = int(sets.choice[0])
    value = m + math.log(denom)
    grad = q
    if slot >= 0:
        value -= float(u[slot])
        grad = q - Z[slot]
    return value, grad, (Z.T * p) @ Z - np.outer(q, q)


def _solve(H: np.ndarray, g: np.ndarray) -> np.ndarray:
    """H^-1 g by Cholesky, LU if H is not positive definite, g itself if H is singular.

    LAPACK's dposv directly, without ``np.linalg.solve``'s overhead (docs/performance.md).
    """
    _, x, info = dposv(H, g)
    if info == 0:
        return np.asarray(x)
    try:
        return np.asarray(np.linalg.solve(H, g))
    except np.linalg.LinAlgError:  # pragma: no cover - lam > 0 keeps H PD
        return g


def _newton(
    sets: MNLSets,
    *,
    lam: float,
    center: np.ndarray | None,
    w0: np.ndarray | None,
    tol: float,
    max_iter: int,
    hessian: np.ndarray | None,
    refresh: float,
    return_hessian: bool,
    start: tuple[float, np.ndarray] | None,
) -> tuple[MNLFit, np.ndarray | None]:
    """:func:`fit_mnl`, also returning the item probabilities at the estimate (or None)."""
    if not lam >= 0:
        raise ValueError(f"lam must be >= 0; got {lam!r}.")
    n, width, dim = sets.Z.shape
    if sets.offset.shape != (n, width) or sets.mask.shape != (n, width):
        raise ValueError(
            f"sets.offset and sets.mask must have shape {(n, width)}; got "
            f"{sets.offset.shape} and {sets.mask.shape}."
        )
    c = np.zeros(dim) if center is None else np.asarray(center, dtype=float)
    w = (c if w0 is None else np.asarray(w0, dtype=float)).copy()
    threshold = tol * max(1.0, lam)
    layout = _layout(sets)  # read once, not in every pass
    p: np.ndarray | None
    if start is None:
        value, grad, p = _value_grad(sets, w, lam, c, layout)
    else:
        value, grad, p = float(start[0]), np.asarray(start[1], dtype=float), None
    gnorm = float(np.linalg.norm(grad))
    H = None if hessian is None else np.asarray(hessian, dtype=float)
    lagged = H is not None
    it = 0
    while gnorm > threshold and it < max_iter:
        if not lagged:
            if p is None:
                p = _probs(sets, w)[0]
            H = _hessian(sets, p, lam)
        assert H is not None
        step = -_solve(H, grad)
        slope = float(grad @ step)
        if lagged and slope >= 0:  # a stale matrix that gives no descent: Newton now
            lagged = False
            continue
        a = 1.0
        # L is a float sum known to a few ulps of |L|; near the optimum the predicted
        # decrease a |slope| falls below that and the Armijo test would fail on rounding
        # alone (halving the step 34 times, then stalling for max_iter). Allow that slack.
        noise = _VALUE_NOISE * max(1.0, abs(value))
        while True:
            cand = w + a * step
            new_value, new_grad, new_p = _value_grad(sets, cand, lam, c, layout)
            if new_value <= value + 1e-4 * a * slope + noise or a < 1e-10:
                break
            a *= 0.5
        new_gnorm = float(np.linalg.norm(new_grad))
        if lagged and new_gnorm > refresh * gnorm:
            lagged = (
                False  # the lagged matrix converges too slowly: Newton from here on
            )
        w, value, grad, p, gnorm = cand, new_value, new_grad, new_p, new_gnorm
        it += 1
    if return_hessian and H is None:
        p = _probs(sets, w)[0] if p is None else p
        H = _hessian(sets, p, lam)
    return MNLFit(w, it, gnorm, H if return_hessian else None, value, grad), p


def refit_mnl(
    sets: MNLSets,
    *,
    n_new: int,
    hessian: np.ndarray | None,
    lam: float,
    w0: np.ndarray,
    center: np.ndarray | None = None,
    tol: float = 1e-6,
    previous: tuple[float, np.ndarray] | None = None,
) -> MNLFit:
    """Re-solve after ``n_new`` sets were appended, from the previous solve (lagged Newton).

    Starts :func:`fit_mnl` at ``w0`` with the lagged matrix ``hessian`` plus the new sets'
    Hessian at ``w0`` (None: exact Newton). The returned ``hessian`` is the one to pass next
    time: the lagged matrix while it converges in at most two steps, else the exact Hessian
    at the new estimate. ``previous`` is ``(fit.value, fit.grad)`` of the previous solve
    (the objective over the old sets at ``w0``): with it the starting value and gradient
    are that plus the new sets' terms, and no pass over the old sets is needed to start.

    Example:
        >>> buf = MNLSetBuffer(1)
        >>> buf.append(np.ones((1, 1)), np.zeros(1), choice=0)
        >>> fit = refit_mnl(buf.sets, n_new=1, hessian=None, lam=1.0, w0=np.zeros(1))
        >>> fit.hessian.shape
        (1, 1)
    """
    n = sets.Z.shape[0]
    lagged = None
    begin = None
    if hessian is not None:
        new = MNLSets(*(a[n - n_new :] for a in sets))
        if previous is None:
            lagged = hessian + set_hessian(new, w0)
        else:
            w = np.asarray(w0, dtype=float)
            if n_new == 1:  # the usual round: one set, in a few small products
                value, grad, hess = _one_set(new, w)
            else:
                c = np.zeros_like(w) if center is None else np.asarray(center, float)
                value, grad, p_new = _value_grad(new, w, 0.0, c)
                hess = _hessian(new, p_new, 0.0)
            lagged = hessian + hess  # the new sets' terms at w0
            begin = (float(previous[0]) + value, np.asarray(previous[1]) + grad)
    fit, p_end = _newton(
        sets,
        lam=lam,
        center=center,
        w0=w0,
        tol=tol,
        max_iter=50,
        hessian=lagged,
        refresh=0.25,
        return_hessian=True,
        start=begin,
    )
    if hessian is not None and fit.iterations > 2:  # drifted: rebuild at the estimate
        # from the last pass's probabilities at the estimate (no extra pass)
        assert p_end is not None  # an iteration ran: its pass left the probabilities
        return fit._replace(hessian=_hessian(sets, p_end, lam))
    return fit
