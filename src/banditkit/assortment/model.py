"""The static multinomial-logit (MNL) choice model: choice probabilities and revenue.

Item ``i`` has utility ``u_i`` and weight ``v_i = exp(u_i)``; the outside option (no
purchase) has weight ``v_0`` (``outside``, 1 by default). Offered an assortment ``S``, a
customer picks ``i in S`` with probability

    p_i(S) = v_i / (v_0 + sum_{j in S} v_j),     p_0(S) = v_0 / (v_0 + sum_{j in S} v_j),

and the expected revenue is ``R(S) = sum_{i in S} r_i p_i(S)`` (McFadden 1974; Talluri &
van Ryzin 2004). The outside option breaks the shift invariance of the softmax, so every
computation here shifts by ``m = max(log v_0, max_{i in S} u_i)`` and keeps the outside
term ``v_0 e^{-m}``: no ``exp`` overflows, whatever the scale of the utilities.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from banditkit.core.validation import (
    ArgumentTypeError,
    check_finite_array,
    check_int,
    check_scalar,
)

__all__ = ["Assortment", "choice_probabilities", "expected_revenue"]


class Assortment(NamedTuple):
    """An assortment and its expected revenue; unpacks as ``items, revenue = ...``.

    Attributes:
        items: The offered item indices, sorted ascending (a tuple of ints, possibly empty).
        revenue: The expected revenue ``R(items)`` under the MNL model.
    """

    items: tuple[int, ...]
    revenue: float


def _typed(check: Any, *args: Any, **kwargs: Any) -> Any:
    """Run a ``core.validation`` check; a wrong type becomes an ``ArgumentTypeError``.

    ``ArgumentTypeError`` is both a ``TypeError`` and a ``ValueError``, so every bad input
    to this package raises a ``ValueError`` naming the argument, as the library promises.
    """
    try:
        return check(*args, **kwargs)
    except ArgumentTypeError:
        raise
    except TypeError as exc:
        raise ArgumentTypeError(str(exc)) from exc


def check_utilities(utilities: Any) -> np.ndarray:
    """Return ``utilities`` as a finite 1-d float array with at least one entry."""
    u = _typed(check_finite_array, "utilities", utilities, ndim=1)
    if u.size < 1:
        raise ValueError("utilities must hold at least one item; got an empty array.")
    return u


def check_revenues(revenues: Any, n_items: int) -> np.ndarray:
    """Return ``revenues`` (ones when None) as a finite, non-negative array of length N."""
    if revenues is None:
        return np.ones(n_items)
    r = _typed(check_finite_array, "revenues", revenues, ndim=1)
    if r.shape != (n_items,):
        raise ValueError(
            f"revenues must have one entry per item ({n_items}); got shape {r.shape}."
        )
    if (r < 0).any():
        raise ValueError(
            f"revenues must be >= 0; got {float(r.min())!r} at index {int(r.argmin())}."
        )
    return r


def check_outside(outside: Any) -> float:
    """Return the outside option's weight ``v_0`` as a positive finite float."""
    return float(_typed(check_scalar, "outside", outside, low=0.0, low_open=True))


def check_capacity(capacity: Any) -> int:
    """Return ``capacity`` as an int >= 1 (a capacity >= N means no limit)."""
    return int(_typed(check_int, "capacity", capacity, low=1))


def check_items(items: Any, n_items: int) -> np.ndarray:
    """Return ``items`` as an int array of distinct indices in ``[0, n_items)``."""
    arr = np.asarray(items)
    if arr.size == 0:
        return np.zeros(0, dtype=np.intp)
    if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(
            f"items must be a 1-d sequence of integer indices; got {items!r}."
        )
    if arr.min() < 0 or arr.max() >= n_items:
        raise ValueError(
            f"items must be indices in [0, {n_items}); got {arr.tolist()!r}."
        )
    if np.unique(arr).size != arr.size:
        raise ValueError(f"items must be distinct; got {arr.tolist()!r}.")
    return arr.astype(np.intp, copy=False)


def scaled_weights(u: np.ndarray, outside: float) -> tuple[np.ndarray, float]:
    """Return ``(v e^{-m}, v_0 e^{-m})`` with ``m = max(log v_0, max u)``.

    Scaling every weight, ``v_0`` included, by one factor changes neither the choice
    probabilities nor the revenue of any set, nor therefore the optimal assortment; the
    largest scaled weight is 1, so nothing overflows.
    """
    log_v0 = math.log(outside)
    m = max(log_v0, float(u.max())) if u.size else log_v0
    return np.exp(u - m), math.exp(log_v0 - m)


def revenue_of(items: np.ndarray, w: np.ndarray, w0: float, r: np.ndarray) -> float:
    """``R(S)`` from already scaled weights (no validation; the solvers' inner call)."""
    if items.size == 0:
        return 0.0
    ws = w[items]
    return float(ws @ r[items] / (w0 + ws.sum()))


def choice_probabilities(
    items: Any, utilities: Any, *, outside: float = 1.0
) -> np.ndarray:
    """Probabilities of the outside option and of each offered item under the MNL model.

    A log-softmax over ``[log v_0, u_i for i in items]``, shifted by its maximum, so
    utilities of any magnitude (``+-1000`` included) give finite probabilities.

    Args:
        items: Distinct indices into ``utilities`` (the assortment ``S``); may be empty.
        utilities: ``(N,)`` item utilities ``u_i`` (``v_i = exp(u_i)``), finite.
        outside: The outside option's weight ``v_0 > 0``.

    Returns:
        ``(len(items) + 1,)`` probabilities: entry 0 is the no-purchase probability
        ``p_0(S)``, entry ``k + 1`` is ``p_{items[k]}(S)``, in the order ``items`` gives.

    Example:
        >>> choice_probabilities([0, 2], [0.0, 5.0, 0.0]).round(4).tolist()
        [0.3333, 0.3333, 0.3333]
    """
    u = check_utilities(utilities)
    v0 = check_outside(outside)
    idx = check_items(items, u.size)
    logits = np.concatenate(([math.log(v0)], u[idx]))
    z = np.exp(logits - logits.max())
    return z / z.sum()


def expected_revenue(
    items: Any, utilities: Any, revenues: Any = None, *, outside: float = 1.0
) -> float:
    """Expected revenue ``R(S) = sum_{i in S} r_i v_i / (v_0 + sum_{j in S} v_j)``.

    Args:
        items: Distinct indices into ``utilities`` (the assortment ``S``); may be empty,
            which earns 0.
        utilities: ``(N,)`` item utilities ``u_i``, finite.
        revenues: ``(N,)`` non-negative revenues ``r_i``; None means 1 for every item
            (then ``R(S)`` is the purchase probability).
        outside: The outside option's weight ``v_0 > 0``.

    Returns:
        ``R(S)`` as a float.

    Example:
        >>> round(expected_revenue([0, 1], [0.0, 0.0], [1.0, 4.0]), 6)
        1.666667
    """
    u = check_utilities(utilities)
    r = check_revenues(revenues, u.size)
    v0 = check_outside(outside)
    idx = check_items(items, u.size)
    if idx.size == 0:
        return 0.0
    w, w0 = scaled_weights(u[idx], v0)
    return float(w @ r[idx] / (w0 + w.sum()))
