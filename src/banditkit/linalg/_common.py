"""Input checks shared by the ``linalg`` modules (private).

Each helper validates through :mod:`banditkit.core.validation`, adds the shape check
that needs ``d``, and returns a float64 array, so a public method starts with one line
per argument.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from banditkit.core.validation import (
    check_finite_array,
    check_int,
    check_scalar,
    check_spd,
)


def check_vector(name: str, value: Any, d: int) -> np.ndarray:
    """Return ``value`` as finite float64 of shape (d,), else raise ValueError."""
    arr = check_finite_array(name, value, ndim=1)
    if arr.shape != (d,):
        raise ValueError(f"{name} must have shape ({d},); got shape {arr.shape}.")
    return arr


def check_rows(name: str, value: Any, d: int) -> np.ndarray:
    """Return ``value`` as finite float64 of shape (n, d), else raise ValueError."""
    arr = check_finite_array(name, value, ndim=2)
    if arr.shape[1] != d:
        raise ValueError(f"{name} must have shape (n, {d}); got shape {arr.shape}.")
    return arr


def check_rhs(name: str, value: Any, d: int) -> np.ndarray:
    """Return a right-hand side of shape (d,) or (d, n) as finite float64."""
    arr = check_finite_array(name, value)
    if arr.ndim not in (1, 2) or arr.shape[0] != d:
        raise ValueError(f"{name} must have shape ({d},) or ({d}, n); got {arr.shape}.")
    return arr


def check_weights(name: str, value: Any, n: int, *, strict: bool) -> np.ndarray:
    """Return (n,) finite weights, all > 0 if ``strict`` else all >= 0, else raise."""
    arr = check_finite_array(name, value, ndim=1)
    if arr.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},); got shape {arr.shape}.")
    bad = arr <= 0.0 if strict else arr < 0.0
    if bad.any():
        sign = "positive" if strict else "non-negative"
        raise ValueError(f"{name} must be {sign}; got {arr[bad][0]!r} at a row.")
    return arr


def check_weight(value: Any) -> float:
    """Return a single rank-1 weight as a finite float > 0, else raise ValueError."""
    return check_scalar("weight", value, low=0.0, low_open=True)


def check_rng(rng: Any) -> np.random.Generator:
    """Return ``rng`` if it is a numpy Generator, else raise TypeError."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"rng must be a numpy.random.Generator; got {type(rng).__name__}."
        )
    return rng


def sample_shape(size: int | None, d: int) -> tuple[int, ...]:
    """Shape of the standard normal draw for ``sample_normal``: (d,) or (size, d)."""
    if size is None:
        return (d,)
    return (check_int("size", size, low=0), d)


def frozen(arr: np.ndarray) -> np.ndarray:
    """Mark ``arr`` read-only and return it.

    The Gram classes never modify a stored array in place: each update builds new
    arrays. Their properties can therefore hand out the stored arrays themselves,
    read-only, as snapshots that later updates do not change.
    """
    arr.flags.writeable = False
    return arr


def check_square(name: str, value: Any, d: int) -> np.ndarray:
    """Return a finite float64 copy of ``value``, shape (d, d), else raise."""
    arr = check_finite_array(name, value, ndim=2)
    if arr.shape != (d, d):
        raise ValueError(f"{name} must have shape ({d}, {d}); got shape {arr.shape}.")
    return np.array(arr, dtype=np.float64, copy=True)


def check_state(state: Any, kind: str, keys: tuple[str, ...], d: int | None) -> None:
    """Check that ``state`` is a ``kind`` state dict with ``keys`` (and d, if given)."""
    if not isinstance(state, dict):
        raise TypeError(f"state must be a dict; got {type(state).__name__}.")
    if "kind" in state and state["kind"] != kind:
        raise ValueError(f"state is a {state['kind']!r} state; expected {kind!r}.")
    missing = [k for k in keys if k not in state]
    if missing:
        raise ValueError(f"state is missing keys {missing}.")
    if d is not None and state["d"] != d:
        raise ValueError(f"state has d={state['d']}; this {kind} has d={d}.")


def check_cholesky(name: str, value: Any, d: int) -> np.ndarray:
    """Return a float64 copy of a Cholesky factor: (d, d), lower-triangular, diagonal > 0."""
    arr = check_square(name, value, d)
    if np.any(np.triu(arr, 1)) or not np.all(np.diagonal(arr) > 0.0):
        raise ValueError(
            f"{name} must be lower-triangular with a positive diagonal (a Cholesky factor)."
        )
    return arr


def check_pending(value: Any, d: int) -> list[np.ndarray]:
    """The queued rank-1 rows of a full state, (k, d) finite, as read-only rows (None: k = 0)."""
    if value is None:
        return []
    rows = check_finite_array("pending", value, ndim=2)
    if rows.shape[1] != d:
        raise ValueError(f"pending must have shape (k, {d}); got {rows.shape}.")
    return [frozen(row.copy()) for row in rows]


def check_full_arrays(state: dict[str, Any], d: int) -> dict[str, np.ndarray]:
    """V, V^-1 (symmetric positive-definite) and L (a Cholesky factor) of a full state."""
    return {
        "matrix": check_spd("matrix", state["matrix"], d),
        "inverse": check_spd("inverse", state["inverse"], d),
        "cholesky": check_cholesky("cholesky", state["cholesky"], d),
    }
