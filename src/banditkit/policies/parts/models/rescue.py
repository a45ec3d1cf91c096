"""A neural refit that diverged is retried at a smaller step; a finite one is never touched.

Every neural model is trained by gradient steps from its current parameters. At inputs or
targets far from unit scale (arms of norm 1e3, a reward of 1e6) the step that suits unit
scale overshoots: the objective of a squared or cross-entropy loss grows with the square of
the scale, and GD at the default lr overflows to inf or NaN within a few steps. Such a fit
used to raise (or, without a check, to leave NaN parameters that broke every later round).

:func:`rescue` retries it from the same start at lr / 10, lr / 100, ... (at most
:data:`RESCUES` times) and reports the step that stayed finite, which the model keeps for
later refits (and saves with its state). A fit that ends finite is taken as it is, so every
run that trained before trains bit for bit as before; only fits that would have failed
change. When no step helps, it raises ``FloatingPointError`` and the caller puts the
parameters back (``docs/reliability.md``, "Policy inputs").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from banditkit.core.lazy import torch  # imported at first use
from banditkit.core.validation import check_state_array

if TYPE_CHECKING:
    from banditkit.nn import FitResult

__all__ = [
    "GROWTH",
    "RESCUES",
    "finite_fit",
    "improved",
    "rescue",
    "rounding_rtol",
    "saved_lr",
    "settled",
    "settled_members",
]

#: Retries at lr / 10 of a diverged fit: 10^-20 covers the largest accepted input
#: (|x| <= 1e8, whose squared loss scales the curvature by up to 1e16).
RESCUES = 20

#: A fit whose objective ends above GROWTH * max(J_start, 1) diverged, even if finite: GD
#: at a stable step never climbs that far (an unstable one multiplies J at every step).
GROWTH = 100.0

R = TypeVar("R")


def rescue(
    result: R,
    lr: float,
    fit: Callable[[float], R],
    finite: Callable[[R], bool],
    describe: Callable[[R, float], str],
) -> tuple[R, float]:
    """``result`` of a fit at ``lr`` when ``finite``; else ``fit`` again at lr / 10, ...

    Args:
        result: What the fit at ``lr`` gave.
        lr: Its step size.
        fit: One fit at a step size, from the parameters the first fit started from.
        finite: Whether a fit's result is usable (it settled, :func:`settled`, with
            finite parameters).
        describe: What went wrong, for the error (the last result and its lr).

    Returns:
        The first finite result and the step size that gave it (``result`` and ``lr``
        themselves when finite: nothing is run).

    Raises:
        FloatingPointError: If no step size down to lr / 10^RESCUES gave a finite fit.

    Example:
        >>> import math
        >>> def fit(lr):
        ...     return 0.5 if lr < 0.05 else math.nan
        >>> rescue(fit(1.0), 1.0, fit, math.isfinite, lambda r, lr: "")
        (0.5, 0.01)
    """
    for _ in range(RESCUES):
        if finite(result):
            return result, lr
        lr = lr / 10.0
        result = fit(lr)
    if finite(result):
        return result, lr
    raise FloatingPointError(
        f"training diverged even at lr={lr:g} ({RESCUES} retries at lr / 10): "
        f"{describe(result, lr)}."
    )


def saved_lr(state: Mapping[str, Any], lr0: float) -> float:
    """The step size a state saved (``"lr"``, once a fit lowered it), else ``lr0``.

    Raises:
        ValueError: If the saved lr is not a finite number in (0, lr0).
    """
    if "lr" not in state:
        return lr0
    lr = float(check_state_array("lr", state["lr"], ()))
    if not 0.0 < lr < lr0:
        raise ValueError(f"lr must be in (0, {lr0:g}), below the built one; got {lr}.")
    return lr


def settled(first: Any, last: Any) -> bool:
    """Whether a fit from objective ``first`` to ``last`` did not diverge (each member).

    Finite, and not above ``GROWTH * max(first, 1)``.

    Example:
        >>> settled(36.5, 1.1e62), settled(0.8, 0.5), settled(0.8, float("nan"))
        (False, True, False)
    """
    return bool(settled_members(first, last).all())


def settled_members(first: Any, last: Any) -> np.ndarray:
    """:func:`settled` member by member: a bool array of the shape of ``last``.

    Example:
        >>> settled_members([36.5, 0.8], [1.1e62, 0.5]).tolist()
        [False, True]
    """
    first, last = (
        np.asarray(first, dtype=np.float64),
        np.asarray(last, dtype=np.float64),
    )
    with np.errstate(invalid="ignore", over="ignore"):
        bound = GROWTH * np.maximum(first, 1.0)
        return np.isfinite(last) & (last <= bound)


def rounding_rtol(dtype: Any) -> float:
    """The relative change of an objective that rounding alone can make: sqrt(eps).

    A converged fit ends where its objective moves by rounding only (the sums of the
    loss over n rows, each term the square of a difference of two close numbers): a fit
    "above its start" by less than sqrt(eps) of it (3.5e-4 in float32,
    1.5e-8 in float64) did not climb, and backtracking it would divide the step by 10
    for nothing, again at every later fit that ends on the same noise (measured:
    Neural-UCB in float32 went from lr 1e-3 to 1e-9 in 1,400 rounds that way).

    Example:
        >>> rounding_rtol("float32") > 1e-4 > 1e-7 > rounding_rtol("float64")
        True
    """
    return float(np.sqrt(np.finfo(np.dtype(str(dtype).removeprefix("torch."))).eps))


def improved(first: Any, last: Any, rtol: float = 0.0) -> np.ndarray:
    """Whether each fit ended finite and not above its start (else it is backtracked).

    ``rtol``: an end above the start by at most ``rtol |start|`` counts as not above
    (:func:`rounding_rtol` of the fit's dtype: a change that rounding alone makes).

    Example:
        >>> improved([1.0, 1.0, 1.0], [0.5, 1.5, float("nan")]).tolist()
        [True, False, False]
        >>> improved([1.0, 1.0], [1.0 + 1e-5, 1.001], rtol=3.5e-4).tolist()
        [True, False]
    """
    first, last = (
        np.asarray(first, dtype=np.float64),
        np.asarray(last, dtype=np.float64),
    )
    with np.errstate(invalid="ignore"):
        return np.isfinite(last) & (last <= first + rtol * np.abs(first))


def finite_fit(result: FitResult) -> bool:
    """Whether an ``nn.fit`` settled (:func:`settled`) with finite parameters."""
    history = result.history
    return settled(history[0], history[-1]) and all(
        bool(torch.isfinite(p).all()) for p in result.params.values()
    )
