"""Observations for the trainer: rows, pairs and sets over one feature table.

Each container holds a feature table X (N, d) that the network evaluates once per step,
and observations that index into it, so pairs and sets never duplicate features:

    Rows   observation i is row i of X with target y_i                   (n = N)
    Pairs  observation i compares rows first_i and second_i; y_i = 1 when first_i won
    Sets   observation i offers the rows items[i, :] (-1 pads an empty slot) and records
           the chosen slot choice_i in [0, S), or -1 for the outside option

Per-member data (M members trained as one stack): targets y and weights may be (n,),
shared by every member, or (M, n), one row per member (bootstrap counts, 0/1 masks,
perturbed targets of ensemble sampling). They are stored data: the trainer never draws.
The table X of rows and pairs may be per member too, (M, N, d): each member its own rows
(seeds of one configuration trained as one stack), the pairs' indices shared. Sets over
per-member tables carry per-member sets too: items (M, n, S) and choice (M, n), each
member's indices into its own table (the seeds' assortments differ in their items and
sizes; the members share n and the padded width S).

Every container checks its data (shapes, finite values, index ranges) unless built with
``validate=False``, for tensors already checked where they were stored (a model's device
history, whose rows are checked once when they arrive): the checks read every entry and,
on a GPU, wait for the device.
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["Pairs", "Rows", "Sets"]


def _features(
    value: Any,
    name: str,
    dtype: torch.dtype,
    device: torch.device | str,
    per_member: bool = False,
) -> torch.Tensor:
    x = torch.as_tensor(value, dtype=dtype, device=device)
    if x.ndim not in ((2, 3) if per_member else (2,)) or x.shape[-2] < 1:
        shapes = "(N, d) or (M, N, d)" if per_member else "(N, d)"
        raise ValueError(
            f"{name} must have shape {shapes} with N >= 1; got {tuple(x.shape)}."
        )
    _check_finite(x, name)
    return x


def _check_finite(x: torch.Tensor, name: str) -> None:
    if not bool(torch.isfinite(x).all()):
        bad = "NaN" if bool(torch.isnan(x).any()) else "inf"
        raise ValueError(f"{name} contains {bad}; every entry must be finite.")


def per_member(
    value: Any, name: str, n: int, dtype: torch.dtype, device: torch.device
) -> torch.Tensor:
    """Return a finite (n,) or (M, n) tensor, else raise ValueError naming ``name``."""
    v = torch.as_tensor(value, dtype=dtype, device=device)
    if v.ndim not in (1, 2) or v.shape[-1] != n:
        raise ValueError(
            f"{name} must have shape ({n},) or (M, {n}); got {tuple(v.shape)}."
        )
    _check_finite(v, name)
    return v


def _weights(
    value: Any, n: int, dtype: torch.dtype, device: torch.device
) -> torch.Tensor | None:
    if value is None:
        return None
    w = per_member(value, "weights", n, dtype, device)
    if bool((w < 0).any()):
        raise ValueError("weights must be >= 0.")
    return w


def _indices(
    value: Any, name: str, shape: tuple[int, ...], low: int, high: int, device: Any
) -> torch.Tensor:
    t = torch.as_tensor(value, device=device)
    if t.dtype.is_floating_point or t.dtype == torch.bool or t.shape != shape:
        raise ValueError(
            f"{name} must be an integer array of shape {shape}; "
            f"got {t.dtype} {tuple(t.shape)}."
        )
    t = t.to(torch.int64)
    if t.numel() and not bool(((t >= low) & (t < high)).all()):
        raise ValueError(f"{name} must hold integers in [{low}, {high}).")
    return t


def _shape(value: Any) -> tuple[int, ...]:
    return tuple(torch.as_tensor(value).shape)


class Rows:
    """Row observations (x_i, y_i) with optional weights.

    Args:
        X: Features (n, d), shared by the members, or per member (M, n, d) (member k
            sees its own rows, e.g. seeds of one configuration run side by side).
        y: Targets (n,) or per member (M, n): labels in [0, 1] for BCE, reals for
            Gaussian/MSE (e.g. y + sigma_r * noise drawn once per member).
        weights: None, or weights >= 0 of shape (n,) or (M, n); 0 drops a row for
            that member, an integer count is a bootstrap resample.
        dtype: Floating dtype of the tensors (the network's).
        device: Device of the tensors (the network's).
        validate: False takes X, y and weights as given (tensors of ``dtype`` on
            ``device``, already checked; module docstring).

    Raises:
        ValueError: On a wrong shape, NaN or inf, or a negative weight.

    Example:
        >>> rows = Rows(torch.ones(4, 2), torch.zeros(4), weights=torch.ones(3, 4))
        >>> rows.n, tuple(rows.weights.shape)
        (4, (3, 4))
    """

    def __init__(
        self,
        X: Any,
        y: Any,
        weights: Any = None,
        *,
        dtype: torch.dtype = torch.float64,
        device: torch.device | str = "cpu",
        validate: bool = True,
    ) -> None:
        if not validate:
            self.X, self.y, self.weights = X, y, weights
            self.n = X.shape[-2]
            return
        self.X = _features(X, "X", dtype, device, per_member=True)
        self.n = self.X.shape[-2]
        self.y = per_member(y, "y", self.n, dtype, self.X.device)
        self.weights = _weights(weights, self.n, dtype, self.X.device)


class Pairs:
    """Pairwise comparisons between rows of a feature table.

    Args:
        X: Arm-feature table (N, d), shared by the members, or per member (M, N, d)
            (member k compares rows of its own table: seeds of one configuration run
            side by side, each with its own duels laid out alike).
        first: Row of the first item of each pair (n,), integers in [0, N).
        second: Row of the second item (n,), integers in [0, N).
        y: 1 when the first item won, 0 when the second did, (n,) or (M, n); values in
            between are soft labels.
        weights: None, or (n,) / (M, n) weights >= 0, e.g. the inverse variance
            1 / sigma_i^2 of each pair in a weighted MLE.
        dtype: Floating dtype of the tensors.
        device: Device of the tensors.
        validate: False takes the arguments as given (tensors on ``device``, indices
            int64, already checked; module docstring).

    Raises:
        ValueError: On a wrong shape, an index out of range, NaN or inf, or a
            negative weight.

    Example:
        >>> pairs = Pairs(torch.eye(3), first=[0, 1], second=[2, 0], y=[1.0, 0.0])
        >>> pairs.n
        2
    """

    def __init__(
        self,
        X: Any,
        first: Any,
        second: Any,
        y: Any,
        weights: Any = None,
        *,
        dtype: torch.dtype = torch.float64,
        device: torch.device | str = "cpu",
        validate: bool = True,
    ) -> None:
        if not validate:
            self.X, self.first, self.second = X, first, second
            self.y, self.weights, self.n = y, weights, first.shape[0]
        else:
            self.X = _features(X, "X", dtype, device, per_member=True)
            N = self.X.shape[-2]
            self.first = _indices(first, "first", _shape(first), 0, N, self.X.device)
            if self.first.ndim != 1:
                raise ValueError(f"first must be 1-D; got {tuple(self.first.shape)}.")
            self.n = self.first.shape[0]
            self.second = _indices(second, "second", (self.n,), 0, N, self.X.device)
            self.y = per_member(y, "y", self.n, dtype, self.X.device)
            self.weights = _weights(weights, self.n, dtype, self.X.device)
        n = self.n
        rows = torch.arange(n, device=self.first.device)
        #: The table is [first rows; second rows]: first = 0..n-1, second = n..2n-1
        #: (how a history's duels are laid out); the losses then slice instead of
        #: gathering and scattering.
        self.halves = (
            self.X.shape[-2] == 2 * n
            and bool(torch.equal(self.first, rows))
            and bool(torch.equal(self.second, rows + n))
        )


class Sets:
    """Choices from offered assortments (sets) of rows, with an outside option.

    Args:
        X: Item-feature table (N, d), or one per member (M, N, d).
        items: Offered rows (n, S), integers in [-1, N); -1 pads an empty slot. With
            per-member tables, (M, n, S): each member's rows of its own table.
        choice: Chosen slot (n,) in [0, S), or -1 for the outside option (no choice);
            a chosen slot must hold an item. (M, n) with per-member tables.
        weights: None, or (n,) / (M, n) weights >= 0.
        dtype: Floating dtype of the tensors.
        device: Device of the tensors.
        validate: False takes the arguments as given (tensors on ``device``, indices
            int64, already checked; module docstring).

    Raises:
        ValueError: On a wrong shape, an index out of range, a chosen empty slot,
            NaN or inf, or a negative weight.

    Example:
        >>> sets = Sets(torch.eye(3), items=[[0, 1], [2, -1]], choice=[1, -1])
        >>> sets.n, sets.S
        (2, 2)
    """

    def __init__(
        self,
        X: Any,
        items: Any,
        choice: Any,
        weights: Any = None,
        *,
        dtype: torch.dtype = torch.float64,
        device: torch.device | str = "cpu",
        validate: bool = True,
    ) -> None:
        if not validate:
            self.X, self.items, self.choice, self.weights = X, items, choice, weights
            self.n, self.S = items.shape[-2:]
            self.offered = items >= 0
            return
        self.X = _features(X, "X", dtype, device, per_member=True)
        N = self.X.shape[-2]
        members = self.X.shape[:-2]  # () shared, (M,) per member
        shape = _shape(items)
        if len(shape) != 2 + len(members) or shape[:-2] != members or shape[-1] < 1:
            want = "(M, n, S) for per-member tables" if members else "(n, S)"
            raise ValueError(f"items must have shape {want} with S >= 1; got {shape}.")
        self.items = _indices(items, "items", shape, -1, N, self.X.device)
        self.n, self.S = shape[-2:]
        self.choice = _indices(
            choice, "choice", (*members, self.n), -1, self.S, self.X.device
        )
        self.offered = self.items >= 0
        chosen = torch.gather(self.offered, -1, self.choice.clamp(min=0).unsqueeze(-1))[
            ..., 0
        ]
        if not bool((chosen | (self.choice < 0)).all()):
            raise ValueError(
                "choice must point at an offered slot (item >= 0) or be -1."
            )
        self.weights = _weights(weights, self.n, dtype, self.X.device)
