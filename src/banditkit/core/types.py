"""The records every policy and environment exchange (docs/architecture.md section 3).

Three families share one loop: each round the environment shows a :class:`Context`, the policy
answers with an action, and the environment returns a :class:`Step`.

    family        action                     feedback
    contextual    int (arm index)            float reward
    dueling       (i, j) ordered pair        1 if arm i won the duel else 0
    assortment    sorted tuple of items      chosen item index, or -1 for no purchase
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, TypeAlias

import numpy as np

from banditkit.core.validation import (
    ArgumentTypeError,
    check_arms,
    check_finite_array,
    check_int,
)

__all__ = [
    "FAMILIES",
    "MAX_ABS_FEATURE",
    "Action",
    "Context",
    "Family",
    "Feedback",
    "Step",
    "check_action",
]

Family: TypeAlias = Literal["contextual", "dueling", "assortment"]
FAMILIES: tuple[str, ...] = ("contextual", "dueling", "assortment")

Action: TypeAlias = int | tuple[int, ...]
"""An arm index (contextual), an ordered pair (dueling) or a tuple of items (assortment)."""

Feedback: TypeAlias = float | int
"""A reward (contextual), 1/0 for 'first arm won' (dueling), a chosen item or -1 (assortment)."""


#: Largest |x| accepted for an arm feature: ``Context`` refuses larger entries. A squared
#: feature of 1e16 still leaves a Gram of a long run (sums of x x^T) far from overflow and
#: its rank-1 updates well defined, and one round of arms at 1e20 would swamp a learner's
#: state for good (docs/reliability.md, "Policy inputs").
MAX_ABS_FEATURE = 1e8


def _check_range(name: str, arr: np.ndarray) -> None:
    """Refuse entries with |x| > :data:`MAX_ABS_FEATURE` (``arr`` is finite, non-empty)."""
    largest = float(np.max(np.abs(arr)))
    if largest > MAX_ABS_FEATURE:
        raise ValueError(
            f"{name} entries must satisfy |x| <= MAX_ABS_FEATURE = {MAX_ABS_FEATURE:g}; "
            f"got an entry of magnitude {largest:.4g}. Rescale the features (standardise "
            "them, or divide by a constant)."
        )


def _owned(checked: np.ndarray, given: object) -> np.ndarray:
    """``checked``, copied when it shares memory with what the caller ``given``.

    A Context keeps its own read-only arrays: changing the caller's array afterwards
    (or its ``writeable`` flag) cannot reach a policy through a Context built from it.
    """
    if isinstance(given, np.ndarray) and np.shares_memory(checked, given):
        return checked.copy()
    return checked


@dataclass(frozen=True)
class Context:
    """What a policy sees in one round.

    The arrays are copied when they share memory with the caller's (so later changes to
    the caller's array do not reach the policies) and made read-only.

    Args:
        arms: (K, d) float64 features, one row per arm (per item for assortments).
        revenues: (K,) item revenues; assortment family only.
        max_size: Largest assortment allowed (the capacity); assortment family only.

    Raises:
        ValueError: If ``arms`` is not a finite 2-d array of real numbers, has an entry
            with |x| > :data:`MAX_ABS_FEATURE`, or ``revenues`` does not match it; the
            message names ``ctx.arms`` (``ctx.revenues``). Strings
            (even numeric ones), complex numbers and objects raise an
            :class:`~banditkit.core.validation.ArgumentTypeError` (also a ``TypeError``).

    Example:
        >>> Context(arms=[[1.0, 0.0], [0.0, 1.0]]).n_arms
        2
    """

    arms: np.ndarray
    revenues: np.ndarray | None = None
    max_size: int | None = None

    def __post_init__(self) -> None:
        arms = _owned(check_arms(self.arms, name="ctx.arms"), self.arms)
        _check_range("ctx.arms", arms)
        arms.setflags(write=False)
        object.__setattr__(self, "arms", arms)
        if self.revenues is not None:
            rev = check_finite_array("ctx.revenues", self.revenues, ndim=1)
            rev = _owned(rev, self.revenues)
            if rev.shape[0] != arms.shape[0]:
                raise ValueError(
                    f"revenues has {rev.shape[0]} entries but there are {arms.shape[0]} items."
                )
            rev.setflags(write=False)
            object.__setattr__(self, "revenues", rev)
        if self.max_size is not None:
            object.__setattr__(
                self, "max_size", check_int("max_size", self.max_size, low=1)
            )

    @classmethod
    def unchecked(cls, arms: np.ndarray) -> Context:
        """A contextual Context around ``arms`` without the checks of the constructor.

        For environments on their hot path that build ``arms`` themselves as a finite
        float64 (K, d) array with K, d >= 1 and entries within :data:`MAX_ABS_FEATURE`
        (users go through ``Context(...)``). The
        array is made read-only, as the constructor does, and not copied.

        Example:
            >>> Context.unchecked(np.eye(2)).arms.flags.writeable
            False
        """
        ctx = object.__new__(cls)
        arms.setflags(write=False)
        object.__setattr__(ctx, "arms", arms)
        object.__setattr__(ctx, "revenues", None)
        object.__setattr__(ctx, "max_size", None)
        return ctx

    @classmethod
    def from_shared(cls, x: object, n_arms: int) -> Context:
        """A round in which every one of ``n_arms`` arms sees the same feature vector ``x``.

        The arms matrix is a read-only (K, d) broadcast view of one copy of ``x``: no block
        encoding and no K copies are built. Per-arm policies (``make_policy(name,
        per_arm=True)``) keep one model per arm on it; shared-parameter policies see K
        identical arms (and cannot tell them apart).

        Args:
            x: (d,) finite features of the round.
            n_arms: K >= 1.

        Raises:
            ValueError: If ``x`` is not a finite 1-d array with d >= 1 and entries
                |x| <= :data:`MAX_ABS_FEATURE`, or ``n_arms`` < 1.

        Example:
            >>> ctx = Context.from_shared([1.0, 2.0], n_arms=3)
            >>> ctx.arms.shape, ctx.is_shared
            ((3, 2), True)
        """
        K = check_int("n_arms", n_arms, low=1)
        row = _owned(check_finite_array("x", x), x)  # a copy: the caller may reuse x
        if row.ndim != 1 or row.shape[0] < 1:
            raise ValueError(
                f"x must be a 1-d array of d >= 1 features; got shape {row.shape}."
            )
        _check_range("x", row)
        row = np.ascontiguousarray(row)
        # K rows that are all the same memory (stride 0), read-only; no K copies
        arms = np.ndarray(
            (K, row.shape[0]), dtype=np.float64, buffer=row, strides=(0, 8)
        )
        arms.setflags(write=False)
        ctx = object.__new__(cls)
        object.__setattr__(ctx, "arms", arms)
        object.__setattr__(ctx, "revenues", None)
        object.__setattr__(ctx, "max_size", None)
        return ctx

    @property
    def is_shared(self) -> bool:
        """True when every arm is the same row in memory (built by :meth:`from_shared`)."""
        return bool(self.arms.strides[0] == 0)

    @property
    def n_arms(self) -> int:
        """K, the number of arms (items) this round."""
        return int(self.arms.shape[0])

    @property
    def d(self) -> int:
        """The feature dimension."""
        return int(self.arms.shape[1])


@dataclass(frozen=True)
class Step:
    """What the environment returns after an action.

    Args:
        feedback: What the learner observes (see the module docstring).
        reward: The realised reward (assortment: revenue; dueling: per the paper's metric).
        regret: The expected (pseudo-)regret of the action under the family's definition.
        accepted: Replay only: False means the event was rejected and must not be learned from.
        values: The round's other declared records (``Environment.records``, e.g.
            ``{"weak_regret": 0.5, "strong_regret": 1.0}``), as scalars; exactly the names
            of ``Environment.step_values()``, None when there are none.
    """

    feedback: Feedback
    reward: float
    regret: float
    accepted: bool = True
    values: Mapping[str, float] | None = None


def _index(value: object, what: str) -> int:
    """An int-like arm index (Python or NumPy integer, not bool) as an int."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        raise ArgumentTypeError(
            f"action must hold int arm indices; got {what} {value!r}."
        )
    return int(value)


def check_action(action: object, ctx: Context, family: str) -> Action:
    """Validate an action for ``family`` against the round's context and return it normalised.

    contextual: an int arm index in [0, K). dueling: an ordered pair (i, j) of indices in
    [0, K); i == j is allowed (the best arm duelling itself is the zero-regret play).
    assortment: a non-empty set of distinct items in [0, K), at most ``ctx.max_size`` of
    them, returned as a sorted tuple. Python and NumPy integers are accepted, bools and
    floats are not.

    Raises:
        ValueError: If the action is out of range or malformed for the family; a wrong type
            raises :class:`~banditkit.core.validation.ArgumentTypeError`, which is both a
            ``ValueError`` and a ``TypeError``. Every message names ``action``.

    Example:
        >>> ctx = Context(arms=np.zeros((3, 2)))
        >>> check_action(2, ctx, "contextual")
        2
        >>> check_action([2, 0], ctx, "assortment")
        (0, 2)
    """
    k = ctx.n_arms
    if family == "contextual":
        index = _index(action, "a contextual action")
        if not 0 <= index < k:
            raise ValueError(f"action {index} is out of range for {k} arms.")
        return index
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; expected one of {FAMILIES}.")
    if isinstance(action, np.ndarray):
        if action.ndim != 1:
            raise ValueError(
                f"a {family} action must be 1-d; got shape {action.shape}."
            )
        action = action.tolist()
    if not isinstance(action, tuple | list):
        raise ArgumentTypeError(
            f"a {family} action must be a tuple of indices; got {action!r}."
        )
    items = tuple(_index(a, f"a {family} action item") for a in action)
    if any(not 0 <= a < k for a in items):
        raise ValueError(f"action {items} has an index out of range for {k} arms.")
    if family == "dueling":
        if len(items) != 2:
            raise ValueError(f"a dueling action is a pair of arms; got {items}.")
        return items
    if not items:
        raise ValueError("an assortment action must offer at least one item; got ().")
    if len(set(items)) != len(items):
        raise ValueError(f"an assortment action may not repeat items; got {items}.")
    if ctx.max_size is not None and len(items) > ctx.max_size:
        raise ValueError(
            f"assortment action {items} has {len(items)} items; the capacity is {ctx.max_size}."
        )
    return tuple(sorted(items))
