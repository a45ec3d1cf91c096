"""The perturbed history of ensemble sampling: shared rows, one stored perturbation per member.

Member j of an ensemble is trained on D_t^j = {(x_l, y_l + Z_l^j)}_{l <= t}. The rows x_l
and rewards y_l are shared; the perturbations Z (t, M) are drawn once, when round l is
recorded, and never redrawn [Sun2025, Alg. 1, lines 7-8]. Memory O(t (d + M)).

Many losses only need the **distinct** rows: with c_u the number of occurrences of row u
and S_uj the sum of member j's targets over them, the squared and GLM losses (and their
gradients) are functions of (x_u, c_u, S_uj) alone. ``grouped()`` returns them; on a fixed
arm set of K arms a refit then costs O(K) per step instead of O(t).

References:
    In the package's docstring (``banditkit.policies.ensemble``): [Sun2025].
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from banditkit.core.validation import check_int
from banditkit.policies.parts.history import History

__all__ = ["GroupedRows", "PerturbedHistory"]


class GroupedRows(NamedTuple):
    """A history's distinct rows and what the grouped losses read of them (module docstring)."""

    #: Distinct rows x_u, (U, d).
    X: np.ndarray
    #: Occurrences c_u of each row, (U,).
    counts: np.ndarray
    #: Sums S_u of each member's targets over its occurrences, (U, M).
    sums: np.ndarray


class PerturbedHistory(History):
    """Rows (x_l, y_l) with a stored perturbation Z_l (M,) per row, and the grouped view.

    Args:
        d: Feature dimension.
        members: M, the number of perturbation columns (>= 1; 0 is allowed for a history
            without stored perturbations, e.g. perturbed-history exploration).

    Example:
        >>> h = PerturbedHistory(1, 2)
        >>> h.append(np.array([1.0]), 1.0, np.array([0.1, -0.1]))
        >>> h.append(np.array([1.0]), 0.0, np.array([0.2, 0.0]))
        >>> X, c, S = h.grouped()
        >>> X.tolist(), c.tolist(), S.round(12).tolist()
        ([[1.0]], [2.0], [[1.3, 0.9]])
    """

    def __init__(self, d: int, members: int) -> None:
        super().__init__(d)
        self.members = check_int("members", members, low=0)
        self._Z = np.empty((256, self.members))
        self._reset_groups()

    def _reset_groups(self) -> None:
        self._index: dict[bytes, int] = {}
        self._rows: list[np.ndarray] = []
        self._inverse: list[int] = []
        self._counts = np.zeros(16)
        self._ysum = np.zeros(16)
        self._zsum = np.zeros((16, self.members))

    def append(  # type: ignore[override]
        self, x: np.ndarray, y: float, z: np.ndarray | None = None, weight: float = 1.0
    ) -> None:
        """Record round l: the row x, the reward y and its M perturbations z (stored)."""
        z = np.zeros(self.members) if z is None else np.asarray(z, dtype=np.float64)
        if z.shape != (self.members,):
            raise ValueError(f"z must have shape ({self.members},); got {z.shape}.")
        n = self.n
        super().append(x, y, weight)
        if n >= self._Z.shape[0]:
            grown = np.empty((2 * self._Z.shape[0], self.members))
            grown[:n] = self._Z[:n]
            self._Z = grown
        self._Z[n] = z
        self._group(np.asarray(x, dtype=np.float64), float(y), z)

    def _group(self, x: np.ndarray, y: float, z: np.ndarray) -> None:
        key = x.tobytes()
        u = self._index.get(key)
        if u is None:
            u = len(self._rows)
            self._index[key] = u
            self._rows.append(x.copy())
            if u >= self._counts.shape[0]:
                size = 2 * self._counts.shape[0]
                self._counts = np.resize(self._counts, size)
                self._ysum = np.resize(self._ysum, size)
                zsum = np.zeros((size, self.members))
                zsum[:u] = self._zsum[:u]
                self._zsum = zsum
            self._counts[u] = 0.0
            self._ysum[u] = 0.0
            self._zsum[u] = 0.0
        self._inverse.append(u)
        self._counts[u] += 1.0
        self._ysum[u] += y
        self._zsum[u] += z

    def _transaction(self) -> Callable[[], None]:
        """Undo what comes next (``core.transaction``), in O(U) and not O(t).

        An append writes rows and perturbations past n (the buffers keep their references),
        appends to the group lists and adds to one group's sums: the undo keeps the
        attribute references, the lists' lengths, the groups' keys and copies of the U sums.
        """
        attributes, undo_buffers = dict(vars(self)), self._buf._transaction()
        n_rows, n_inverse = len(self._rows), len(self._inverse)
        groups = (self._counts, self._ysum, self._zsum)
        sums = tuple(array.copy() for array in groups)

        def undo() -> None:
            vars(self).update(attributes)
            undo_buffers()
            for key in [key for key, u in self._index.items() if u >= n_rows]:
                del self._index[key]
            del self._rows[n_rows:], self._inverse[n_inverse:]
            for array, saved in zip(groups, sums, strict=True):
                np.copyto(array, saved)

        return undo

    @property
    def Z(self) -> np.ndarray:
        """The (n, M) stored perturbations (a view)."""
        return self._Z[: self.n]

    @property
    def inverse(self) -> np.ndarray:
        """Row l's group index u, (n,)."""
        return np.asarray(self._inverse, dtype=np.int64)

    @property
    def n_groups(self) -> int:
        """Number of distinct rows U."""
        return len(self._rows)

    def grouped(self) -> GroupedRows:
        """Distinct rows X (U, d), counts c (U,), target sums S (U, M) = sum of y + Z."""
        U = len(self._rows)
        X = np.array(self._rows).reshape(U, self.d)
        sums = self._ysum[:U, None] + self._zsum[:U]
        return GroupedRows(X, self._counts[:U].copy(), sums)

    def grouped_rewards(self) -> GroupedRows:
        """Distinct rows X (U, d), counts c (U,) and the unperturbed reward sums (U, 1)."""
        U = len(self._rows)
        X = np.array(self._rows).reshape(U, self.d)
        return GroupedRows(X, self._counts[:U].copy(), self._ysum[:U, None].copy())

    def grouped_with(self, z: np.ndarray) -> GroupedRows:
        """Distinct rows, counts and the sums of y + z for fresh perturbations z (n, M')."""
        U = len(self._rows)
        X = np.array(self._rows).reshape(U, self.d)
        targets = self.y[:, None] + z
        sums = np.zeros((U, targets.shape[1]))
        np.add.at(sums, self.inverse, targets)
        return GroupedRows(X, self._counts[:U].copy(), sums)

    def state_dict(self) -> dict[str, Any]:
        """Rows, rewards, weights and perturbations (the groups are rebuilt on load)."""
        return {**super().state_dict(), "Z": self.Z.copy()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore; the grouped sums are re-accumulated in the original order."""
        super().load_state_dict({k: v for k, v in state.items() if k != "Z"})
        Z = np.asarray(state["Z"], dtype=np.float64).reshape(self.n, self.members)
        self._Z = np.empty((max(256, self.n), self.members))
        self._Z[: self.n] = Z
        self._reset_groups()
        for x, y, z in zip(self.X, self.y, Z, strict=True):
            self._group(np.array(x), float(y), z)
