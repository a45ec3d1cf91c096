"""The effective dimension d_eff = logdet(I + a sum z z^T) of S seed-batched members.

Two trackers with one interface (``value``, ``bounds``, ``resolve``, ``update`` with
one row per member):

    MemberLogdets     the members' own ``linalg.EffectiveDimension`` trackers, one by one:
                      what ``policies.neurallog_batched`` uses for the exact value (blocked
                      and lazy, ``linalg.blocked.BlockedLogdet``, for p <= 512; the
                      "kernel" value above), so the values are the separate runs'
    DiagonalLogdets   the diagonal value (``EffectiveDimension(gram="diagonal")``)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from banditkit.linalg import EffectiveDimension

__all__ = ["DiagonalLogdets", "MemberLogdets"]


class DiagonalLogdets:
    """d_eff = sum_j log(1 + a sum_i z_ij^2) of S members (``effdim_kind="diagonal"``).

    Always exact: ``bounds`` returns the value twice.
    """

    def __init__(self, size: int, d: int, scale: float) -> None:
        self.scale = scale
        self._diagonal = np.ones((size, d))

    @property
    def value(self) -> np.ndarray:
        """The S values (S,)."""
        return np.log(self._diagonal).sum(-1)

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """The values twice (always exact)."""
        value = self.value
        return value, value

    def resolve(self, which: np.ndarray) -> None:
        """Always exact: nothing to do."""

    def update(self, Z: np.ndarray) -> None:
        """Add a z_s^2 (elementwise) to member s's diagonal, for the rows of Z (S, p)."""
        self._diagonal += self.scale * (Z * Z)


class MemberLogdets:
    """d_eff of S members by their own ``linalg.EffectiveDimension`` trackers.

    The exact value of a practical NeuralLog member is blocked and lazy
    (``linalg.blocked.BlockedLogdet``, 32 rows per BLAS-3 fold): each member's tracker
    brackets its value until it is read, and ``resolve`` reads it. The values are then
    those of the separate runs' trackers for the same rows, and a member's fold costs
    its own ``dsymm``/``dsyrk`` on one triangle (half the flops of a batched full
    product). The "kernel" value for large p and the rank-1 trackers are exact on
    every row: their bounds are the value twice.
    """

    def __init__(self, trackers: list[EffectiveDimension]) -> None:
        self._trackers = trackers

    @property
    def value(self) -> np.ndarray:
        """The S values (S,) (reads every tracker)."""
        return np.array([t.value for t in self._trackers])

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper bounds (S,) from the trackers' ``bounds``."""
        ends = np.array([t.bounds() for t in self._trackers])
        return ends[:, 0], ends[:, 1]

    def resolve(self, which: np.ndarray) -> None:
        """Read the values of the members ``which`` (S,) bool (their bounds close)."""
        for s in np.flatnonzero(which):
            _ = self._trackers[s].value

    def update(self, Z: np.ndarray) -> None:
        """Add the row Z[s] (S, p) float64 to member s's tracker."""
        for tracker, z in zip(self._trackers, Z, strict=True):
            tracker.update_unchecked(z)
