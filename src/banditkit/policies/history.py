"""A growable buffer of observations (features and targets) with amortised O(1) appends."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["History"]


class History:
    """Rows x (d,) with a scalar target each, stored contiguously; capacity doubles as needed.

    Example:
        >>> h = History(2)
        >>> h.append(np.array([1.0, 2.0]), 1.0); h.append(np.array([3.0, 4.0]), 0.0)
        >>> h.X.tolist(), h.y.tolist()
        ([[1.0, 2.0], [3.0, 4.0]], [1.0, 0.0])
    """

    def __init__(self, d: int, capacity: int = 256) -> None:
        self.d = d
        self._x = np.empty((capacity, d))
        self._y = np.empty(capacity)
        self.n = 0

    def append(self, x: np.ndarray, y: float) -> None:
        """Add one observation."""
        if self.n == self._x.shape[0]:
            self._x = np.concatenate([self._x, np.empty_like(self._x)])
            self._y = np.concatenate([self._y, np.empty_like(self._y)])
        self._x[self.n] = x
        self._y[self.n] = y
        self.n += 1

    @property
    def X(self) -> np.ndarray:
        """The (n, d) features so far (a view)."""
        return self._x[: self.n]

    @property
    def y(self) -> np.ndarray:
        """The (n,) targets so far (a view)."""
        return self._y[: self.n]

    def state_dict(self) -> dict[str, Any]:
        """Arrays only."""
        return {"X": self.X.copy(), "y": self.y.copy()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from :meth:`state_dict`."""
        x, y = np.asarray(state["X"], dtype=float), np.asarray(state["y"], dtype=float)
        self._x = np.empty((max(256, x.shape[0]), self.d))
        self._y = np.empty(self._x.shape[0])
        self.n = x.shape[0]
        self._x[: self.n], self._y[: self.n] = x, y
