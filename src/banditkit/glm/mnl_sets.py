"""The offered sets of an MNL likelihood, as padded arrays and as a growing history.

:class:`MNLSets` holds padded arrays; :class:`MNLSetBuffer` is the history a policy
appends one set per round to.

``banditkit.glm.mnl`` fits the likelihood on them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

__all__ = ["MNLSetBuffer", "MNLSets"]


class MNLSets(NamedTuple):
    """Padded sets of a linear-utility MNL likelihood.

    ``Z`` (n, S, p) features, ``offset`` (n, S), ``mask`` (n, S) of offered slots,
    ``choice`` (n,) the chosen slot or -1 (outside option). Padded slots are ignored.
    """

    Z: np.ndarray
    offset: np.ndarray
    mask: np.ndarray
    choice: np.ndarray


class MNLSetBuffer:
    """Padded sets that grow by appending, read as :class:`MNLSets` views without copying.

    Rows double when full (amortised O(1) appends); the width grows to the largest set.

    Args:
        p: Feature dimension.

    Example:
        >>> buf = MNLSetBuffer(2)
        >>> buf.append(np.ones((2, 2)), np.zeros(2), choice=-1)
        >>> buf.append(np.ones((1, 2)), np.zeros(1), choice=0)
        >>> buf.sets.mask.tolist(), buf.sets.choice.tolist()
        ([[True, True], [True, False]], [-1, 0])
    """

    _Z: np.ndarray
    _offset: np.ndarray
    _mask: np.ndarray
    _choice: np.ndarray

    def __init__(self, p: int) -> None:
        self.p = int(p)
        self.n = 0
        self._alloc(8, 1, keep=False)

    def _alloc(self, rows: int, width: int, *, keep: bool = True) -> None:
        Z, offset = np.zeros((rows, width, self.p)), np.zeros((rows, width))
        mask, choice = np.zeros((rows, width), bool), np.full(rows, -1, np.int64)
        if keep:
            n, w = self.n, self._Z.shape[1]
            Z[:n, :w], offset[:n, :w] = self._Z[:n], self._offset[:n]
            mask[:n, :w], choice[:n] = self._mask[:n], self._choice[:n]
        self._Z, self._offset, self._mask, self._choice = Z, offset, mask, choice

    def append(self, Z: np.ndarray, offset: np.ndarray, choice: int) -> None:
        """Add one set: features (k, p), offsets (k,), chosen slot in [0, k) or -1."""
        k = Z.shape[0]
        rows, width = self._Z.shape[:2]
        if self.n == rows or k > width:
            self._alloc(2 * rows if self.n == rows else rows, max(width, k))
        i = self.n
        self._Z[i, :k], self._offset[i, :k], self._mask[i, :k] = Z, offset, True
        self._choice[i] = choice
        self.n += 1

    def _transaction(self) -> Callable[[], None]:
        """Undo what comes next (``core.transaction``) in O(width p), not O(n).

        An append writes row n only (after growing into new arrays when full); rows past n
        are kept clean (zeros, no mask, choice -1), so the undo puts back the arrays and n
        and cleans row n.
        """
        arrays, n = (self._Z, self._offset, self._mask, self._choice), self.n

        def undo() -> None:
            self._Z, self._offset, self._mask, self._choice = arrays
            if n < self._Z.shape[0]:  # clean the row the failed append wrote
                self._Z[n], self._offset[n] = 0.0, 0.0
                self._mask[n], self._choice[n] = False, -1
            self.n = n

        return undo

    @property
    def sets(self) -> MNLSets:
        """The first n sets (views)."""
        n = self.n
        return MNLSets(self._Z[:n], self._offset[:n], self._mask[:n], self._choice[:n])

    def state_dict(self) -> dict[str, np.ndarray]:
        """The sets as arrays (copies)."""
        return {k: v.copy() for k, v in self.sets._asdict().items()}

    def load_state_dict(self, state: dict[str, np.ndarray]) -> None:
        """Restore :meth:`state_dict`."""
        Z = np.asarray(state["Z"], dtype=float)
        self.n = 0
        self._alloc(max(8, Z.shape[0]), max(1, Z.shape[1]), keep=False)
        n, w = Z.shape[0], Z.shape[1]
        self._Z[:n, :w], self._offset[:n, :w] = Z, state["offset"]
        self._mask[:n, :w], self._choice[:n] = state["mask"], state["choice"]
        self.n = n
