"""Validation helpers shared by every public entry point.

Messages follow scikit-learn's shape: ``"nu must be a float in [0, inf); got -0.5."`` so
that a user sees the parameter, the valid range and the offending value in one line.
All helpers raise ``ValueError`` (bad value) or ``TypeError`` (bad type) and return the
validated value, so they compose in constructors::

    self.nu = check_scalar("nu", nu, low=0.0)
"""

from __future__ import annotations

import difflib
import math
import numbers
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

__all__ = [
    "REAL_KINDS",
    "ArgumentTypeError",
    "check_arms",
    "check_bool",
    "check_choice",
    "check_finite_array",
    "check_int",
    "check_scalar",
    "check_spd",
    "check_state_array",
    "suggest",
]


class ArgumentTypeError(TypeError, ValueError):
    """An argument of the wrong type at a public boundary.

    Both a ``TypeError`` (Python's convention for a wrong type) and a ``ValueError`` (the
    library's rule: every bad input to ``act`` / ``update`` raises a ``ValueError`` naming the
    argument), so callers may catch either.

    Example:
        >>> issubclass(ArgumentTypeError, ValueError) and issubclass(ArgumentTypeError, TypeError)
        True
    """


def _interval(
    low: float | None, high: float | None, low_open: bool, high_open: bool
) -> str:
    lo = "-inf" if low is None else f"{low:g}"
    hi = "inf" if high is None else f"{high:g}"
    left = "(" if (low is None or low_open) else "["
    right = ")" if (high is None or high_open) else "]"
    return f"{left}{lo}, {hi}{right}"


def check_scalar(
    name: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """Return ``value`` as a finite float inside the interval, else raise.

    Args:
        name: Parameter name used in the message.
        value: The value to check; bools are rejected.
        low: Lower bound, or None for none.
        high: Upper bound, or None for none.
        low_open: Exclude ``low`` itself.
        high_open: Exclude ``high`` itself.

    Returns:
        The value as a Python float.

    Raises:
        TypeError: If the value is not a real number.
        ValueError: If it is NaN, infinite or outside the interval.

    Example:
        >>> check_scalar("lam", 0.5, low=0.0, low_open=True)
        0.5
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        span = _interval(low, high, low_open, high_open)
        raise TypeError(f"{name} must be a float in {span}; got {value!r}.")
    v = float(value)
    bad = (
        not math.isfinite(v)
        or (low is not None and (v < low or (low_open and v == low)))
        or (high is not None and (v > high or (high_open and v == high)))
    )
    if bad:
        span = _interval(low, high, low_open, high_open)
        raise ValueError(f"{name} must be a float in {span}; got {value!r}.")
    return v


def check_int(
    name: str, value: Any, *, low: int | None = None, high: int | None = None
) -> int:
    """Return ``value`` as an int in the closed interval [low, high], else raise.

    Example:
        >>> check_int("width", 20, low=1)
        20
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        span = _interval(low, high, False, False)
        raise TypeError(f"{name} must be an int in {span}; got {value!r}.")
    v = int(value)
    if (low is not None and v < low) or (high is not None and v > high):
        span = _interval(low, high, False, False)
        raise ValueError(f"{name} must be an int in {span}; got {value!r}.")
    return v


def suggest(name: str, known: Iterable[str], n: int = 3) -> str:
    """Return ``" Did you mean 'a', 'b'?"`` for the closest known names, or ``""``.

    Names are compared ignoring case.

    Example:
        >>> suggest("linucbb", ["linucb", "random"])
        " Did you mean 'linucb'?"
        >>> suggest("MNIST", ["mnist", "shuttle"])
        " Did you mean 'mnist'?"
    """
    by_folded: dict[str, str] = {}
    for k in known:
        by_folded.setdefault(k.casefold(), k)
    folded = difflib.get_close_matches(
        name.casefold(), list(by_folded), n=n, cutoff=0.5
    )
    close = [by_folded[f] for f in folded]
    if not close:
        return ""
    return " Did you mean " + ", ".join(repr(c) for c in close) + "?"


def check_bool(name: str, value: Any) -> bool:
    """``value`` if it is a bool (not merely truthy), else ValueError naming ``name``.

    Example:
        >>> check_bool("grouped", True)
        True
    """
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be a bool; got {value!r}.")
    return value


def check_choice(name: str, value: Any, choices: Sequence[str]) -> str:
    """Return ``value`` if it is one of ``choices``, else raise with a suggestion.

    Example:
        >>> check_choice("gram", "full", ["full", "diagonal"])
        'full'
    """
    if not isinstance(value, str) or value not in choices:
        hint = suggest(value, choices) if isinstance(value, str) else ""
        listed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {listed}; got {value!r}.{hint}")
    return value


#: NumPy dtype kinds that hold real numbers: booleans, signed and unsigned integers, floats.
REAL_KINDS = "biuf"


def _describe(arr: np.ndarray) -> str:
    """What a non-real array holds, for a message ("complex128", "strings", "objects")."""
    return {"U": "strings", "S": "bytes", "O": "objects", "V": "records"}.get(
        arr.dtype.kind, str(arr.dtype)
    )


def check_finite_array(
    name: str, value: Any, *, ndim: int | None = None, dtype: Any = np.float64
) -> np.ndarray:
    """Return ``value`` as an array of ``dtype``, checking its rank and finiteness.

    Only real numbers are accepted (booleans, integers, floats): strings, even numeric
    ones ("1.5"), complex numbers (whose imaginary part a cast would drop) and objects
    are refused.

    Raises:
        ArgumentTypeError: If ``value`` does not hold real numbers (both a ``TypeError``
            and a ``ValueError``).
        ValueError: On a wrong number of dimensions, NaN or inf.

    Example:
        >>> check_finite_array("x", ["1.5"])
        Traceback (most recent call last):
        ...
        banditkit.core.validation.ArgumentTypeError: x must hold real numbers; got strings (['1.5']).
    """
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise ArgumentTypeError(
            f"{name} must be numeric array-like; got {type(value).__name__} ({exc})."
        ) from None
    if raw.dtype.kind not in REAL_KINDS:
        shown = repr(value if not isinstance(value, np.ndarray) else value.tolist())
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise ArgumentTypeError(
            f"{name} must hold real numbers; got {_describe(raw)} ({shown})."
        )
    arr = raw.astype(dtype, copy=False)
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-d array; got shape {arr.shape}.")
    if not np.isfinite(arr).all():
        bad = "NaN" if np.isnan(arr).any() else "inf"
        raise ValueError(f"{name} contains {bad}; every entry must be finite.")
    return arr


def check_spd(name: str, value: Any, d: int, *, rtol: float = 1e-8) -> np.ndarray:
    """Return a float64 copy of ``value`` if it is a symmetric positive-definite (d, d) matrix.

    Symmetric up to ``rtol`` times its largest entry (incremental updates leave rounding
    asymmetry); positive-definite when its Cholesky factorisation succeeds.

    Raises:
        ValueError: On another shape, NaN or inf, asymmetry or a matrix that is not
            positive-definite; the message names ``name``.

    Example:
        >>> check_spd("inverse", [[1.0, 0.0], [0.0, -1.0]], 2)
        Traceback (most recent call last):
        ...
        ValueError: inverse must be symmetric positive-definite; it is not positive-definite.
    """
    arr = np.array(check_finite_array(name, value, ndim=2), dtype=np.float64)
    if arr.shape != (d, d):
        raise ValueError(f"{name} must have shape ({d}, {d}); got shape {arr.shape}.")
    scale = float(np.abs(arr).max(initial=0.0))
    if float(np.abs(arr - arr.T).max(initial=0.0)) > rtol * scale:
        raise ValueError(
            f"{name} must be symmetric positive-definite; it is not symmetric."
        )
    try:
        np.linalg.cholesky(arr)
    except np.linalg.LinAlgError:
        raise ValueError(
            f"{name} must be symmetric positive-definite; it is not positive-definite."
        ) from None
    return arr


def check_state_array(
    name: str,
    value: Any,
    shape: tuple[int | None, ...],
    *,
    dtype: Any = np.float64,
    low: float | None = None,
    below: float | None = None,
) -> np.ndarray:
    """Return an owned copy of a saved array if it has ``shape`` and real, finite entries.

    The parts of a policy check what they restore with it (``load_state_dict``), so a
    forged or damaged state cannot give them arrays of another shape or dtype.

    Args:
        name: The entry, for the message (``"theta"``).
        value: The saved array.
        shape: The expected shape; ``None`` for an axis of any length (a history's n).
        dtype: The dtype of the copy; an integer dtype also requires integer entries.
        low: Smallest value allowed (0 for counts and weights), or None.
        below: A bound every entry must stay under (the length of what an array of
            indices indexes), or None.

    Raises:
        ValueError: On another shape, a non-real dtype, NaN, inf, fractional entries of
            an integer array, an entry below ``low`` or not below ``below``; the message
            names ``name``.

    Example:
        >>> check_state_array("theta", np.zeros(4), (3,))
        Traceback (most recent call last):
        ...
        ValueError: theta must have shape (3,); got shape (4,).
    """
    arr = check_finite_array(name, value, dtype=np.float64)
    expected = "(" + ", ".join("n" if s is None else str(s) for s in shape)
    expected += ",)" if len(shape) == 1 else ")"
    if arr.ndim != len(shape) or any(
        s is not None and s != n for s, n in zip(shape, arr.shape, strict=False)
    ):
        raise ValueError(f"{name} must have shape {expected}; got shape {arr.shape}.")
    if np.dtype(dtype).kind in "iub" and not np.array_equal(arr, np.round(arr)):
        raise ValueError(f"{name} must hold integers; got fractions.")
    if low is not None and arr.size and float(arr.min()) < low:
        raise ValueError(f"{name} must be >= {low:g}; got {float(arr.min())!r}.")
    if below is not None and arr.size and float(arr.max()) >= below:
        raise ValueError(f"{name} must be < {below:g}; got {float(arr.max())!r}.")
    return np.array(value, dtype=dtype, copy=True)


def check_arms(arms: Any, *, d: int | None = None, name: str = "arms") -> np.ndarray:
    """Validate a (K, d) matrix of arm features: 2-d, K >= 1, finite, width ``d`` if given.

    Example:
        >>> check_arms([[0.0, 1.0], [1.0, 0.0]]).shape
        (2, 2)
    """
    arr = check_finite_array(name, arms, ndim=2)
    if arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ValueError(
            f"{name} must have at least one row and one column; got {arr.shape}."
        )
    if d is not None and arr.shape[1] != d:
        raise ValueError(
            f"{name} has dimension {arr.shape[1]} but this policy was built for d={d} "
            "at its first round; the feature dimension cannot change between rounds."
        )
    return arr
