"""What the Gram classes of this package share: checked entry points and the state round trip.

Each Gram keeps its own arithmetic (``update_unchecked``, ``norms_unchecked``,
``pair_norms_unchecked``). :class:`GramBase` checks the arguments of the public methods once
and hands them on, and builds a Gram back from its state; :class:`FullGramBase` adds what
the two full Grams (``Gram``, which hands out snapshots, and ``InPlaceGram``, which updates
its arrays in place) share: the refactorisation counter, the readers of V and log det V,
the pairwise norms and the state dict.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, TypeVar

import numpy as np

from banditkit.core.validation import check_int, check_scalar

from ._common import (
    check_full_arrays,
    check_pending,
    check_rng,
    check_rows,
    check_state,
    check_vector,
    check_weight,
    check_weights,
    sample_shape,
)
from .rank1 import pair_norms_from_cross

__all__ = ["FullGramBase", "GramBase"]


def _rows(rows: list[np.ndarray], d: int) -> np.ndarray:
    """The queued rank-1 rows as one (k, d) array (a copy)."""
    return np.array(rows, dtype=np.float64).reshape(len(rows), d)


G = TypeVar("G", bound="GramBase")


class GramBase(ABC):
    """d, lam, the update count, the checked public methods, ``from_state_dict`` and repr.

    A subclass sets ``_KIND`` (the ``kind`` of its state dict), ``_STATE_KEYS`` and, when it
    restores the state of another class, ``_LOADS`` (those kinds), and implements the
    unchecked arithmetic.
    """

    _KIND: ClassVar[str]
    _STATE_KEYS: ClassVar[tuple[str, ...]]
    _LOADS: ClassVar[tuple[str, ...]] = ()

    _d: int
    _lam: float
    _n_updates: int

    def __init__(self, d: int, lam: float) -> None:
        self._d = check_int("d", d, low=1)
        self._lam = check_scalar("lam", lam, low=0.0, low_open=True)
        self._n_updates = 0

    @property
    def d(self) -> int:
        """Dimension of the feature vectors."""
        return self._d

    @property
    def lam(self) -> float:
        """Regulariser lam of the starting matrix lam * I."""
        return self._lam

    @property
    def n_updates(self) -> int:
        """Number of rank-1 terms added so far (a batch of n counts n)."""
        return self._n_updates

    def update(self, x: Any, weight: float = 1.0) -> None:
        """Add w x x^T to V (see :meth:`update_unchecked` for the arithmetic).

        Args:
            x: Feature vector, shape (d,), finite.
            weight: w > 0, finite.

        Raises:
            ValueError: On a wrong shape, NaN or inf in x, or weight <= 0.
        """
        self.update_unchecked(check_vector("x", x, self._d), check_weight(weight))

    @abstractmethod
    def update_unchecked(self, x: np.ndarray, w: float) -> None:
        """:meth:`update` for a checked pull: x finite float64 (d,), w a float > 0."""

    def update_batch(self, X: Any, weights: Any = None) -> None:
        """Add sum_i w_i x_i x_i^T to V for the n rows of X (:meth:`update_rows` says how).

        Args:
            X: Feature vectors, shape (n, d), finite; n = 0 is a no-op.
            weights: w_i > 0, shape (n,); None means all ones.

        Raises:
            ValueError: On a wrong shape, NaN or inf, or a weight <= 0.
        """
        self.update_rows(*self._checked_rows(X, weights))

    @abstractmethod
    def update_rows(self, X: np.ndarray, w: np.ndarray) -> None:
        """:meth:`update_batch` for checked rows: X finite float64 (n, d), w (n,) all > 0."""

    def _checked_rows(self, X: Any, weights: Any) -> tuple[np.ndarray, np.ndarray]:
        """X checked as (n, d) rows and its weights w_i > 0 (all ones for None)."""
        X = check_rows("X", X, self._d)
        n = X.shape[0]
        w = (
            np.ones(n)
            if weights is None
            else check_weights("weights", weights, n, strict=True)
        )
        return X, w

    def sample_normal(
        self, rng: np.random.Generator, size: int | None = None
    ) -> np.ndarray:
        """Draw from N(0, V^-1): z ~ N(0, I) mapped by :meth:`_unwhiten`.

        Every Gram draws the same z for the same rng state.

        Args:
            rng: Source of randomness; the only one used.
            size: Number of draws, >= 0, or None for a single draw.

        Returns:
            Shape (d,) if size is None, else (size, d).
        """
        return self._unwhiten(
            check_rng(rng).standard_normal(sample_shape(size, self._d))
        )

    @abstractmethod
    def _unwhiten(self, z: np.ndarray) -> np.ndarray:
        """Rows z ~ N(0, I), shape (d,) or (n, d), mapped to draws from N(0, V^-1)."""

    def norms(self, X: Any) -> np.ndarray:
        """Return ||x_k||_{V^-1} = sqrt(x_k^T V^-1 x_k) for all K rows of X.

        Args:
            X: Rows x_k, shape (K, d).

        Returns:
            Norms, shape (K,).

        Raises:
            ValueError: On a wrong shape or NaN or inf in X.
        """
        return self.norms_unchecked(check_rows("X", X, self._d))

    @abstractmethod
    def norms_unchecked(self, X: np.ndarray) -> np.ndarray:
        """:meth:`norms` for features built by a model: float64 (K, d), no checks."""

    def pair_norms(self, Z: Any) -> np.ndarray:
        """Return ||z_i - z_j||_{V^-1} for all pairs of the K rows of Z, shape (K, K).

        Computed as sqrt(max(q_i + q_j - 2 G_ij, 0)) with G = Z V^-1 Z^T and q = diag(G),
        rather than from the K^2 differences. Symmetric, with an exactly zero diagonal;
        equal rows are exactly 0 apart.

        Args:
            Z: Rows z_k, shape (K, d).

        Raises:
            ValueError: On a wrong shape or NaN or inf in Z.
        """
        return self.pair_norms_unchecked(check_rows("Z", Z, self._d))

    @abstractmethod
    def pair_norms_unchecked(self, Z: np.ndarray) -> np.ndarray:
        """:meth:`pair_norms` for features built by a model: float64 (K, d), no checks."""

    @abstractmethod
    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state of :meth:`state_dict`; its d must equal this Gram's d."""

    @classmethod
    def _state_kind(cls, state: Any) -> str:
        """The kind ``state`` must have: its own when this class loads it, else ``_KIND``."""
        kind = state.get("kind") if isinstance(state, dict) else None
        return kind if kind in cls._LOADS else cls._KIND

    @classmethod
    def _init_kwargs(cls, state: dict[str, Any]) -> dict[str, Any]:
        """Keyword arguments of the constructor besides d and lam, read from a state."""
        return {}

    @classmethod
    def from_state_dict(cls: type[G], state: dict[str, Any], d: int | None = None) -> G:
        """Build a Gram of this class from :meth:`state_dict` output.

        Args:
            state: The state.
            d: The dimension the state must have (a policy's own); None: any, read from
                the state (its arrays must have that size before anything is allocated).

        Raises:
            ValueError: On missing keys, another kind or d, or malformed entries.
        """
        check_state(state, cls._state_kind(state), cls._STATE_KEYS, d)
        size = check_int("d", state["d"], low=1)
        for name in cls._STATE_KEYS:
            shape = np.shape(state[name])
            if shape and any(n != size for n in shape):
                raise ValueError(f"{name} has shape {shape}; the state has d={size}.")
        gram = cls(size, state["lam"], **cls._init_kwargs(state))
        gram.load_state_dict(state)
        return gram

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(d={self._d}, lam={self._lam!r}, "
            f"n_updates={self._n_updates})"
        )


class FullGramBase(GramBase):
    """What ``Gram`` and ``InPlaceGram`` share: V, V^-1, L and log det V kept in full.

    A subclass keeps ``_matrix`` (V), ``_inverse`` (V^-1), ``_cholesky`` (L as it
    stands), ``_logdet``, ``_pending`` (the rank-1 terms not yet applied to L), the
    counters, and implements ``_factor`` (L with the pending terms applied) and
    ``_set_arrays`` (how it stores restored arrays).
    """

    _STATE_KEYS = (
        "kind",
        "d",
        "lam",
        "refactor_every",
        "n_updates",
        "since_refactor",
        "logdet",
        "matrix",
        "inverse",
        "cholesky",
    )

    _refactor_every: int
    _since_refactor: int
    _matrix: np.ndarray
    _inverse: np.ndarray
    _cholesky: np.ndarray  # L before the queued terms
    _logdet: float
    _pending: list[np.ndarray]
    #: Lists only ever appended to (or replaced): an update is undone by their length
    #: (``core.transaction``), not by a walk over their read-only rows.
    _append_only: ClassVar[tuple[str, ...]] = ("_pending",)

    def __init__(self, d: int, lam: float, *, refactor_every: int = 512) -> None:
        super().__init__(d, lam)
        self._refactor_every = check_int("refactor_every", refactor_every, low=1)
        self._since_refactor = 0

    @property
    def refactor_every(self) -> int:
        """Number of rank-1 updates between exact refactorisations."""
        return self._refactor_every

    @property
    def since_refactor(self) -> int:
        """Rank-1 updates since the last exact refactorisation (0 right after one)."""
        return self._since_refactor

    @property
    def is_diagonal(self) -> bool:
        """False: V is kept in full (``DiagonalGram`` answers True)."""
        return False

    @property
    def diagonal(self) -> np.ndarray:
        """diag(V), shape (d,) (a copy)."""
        return np.diagonal(self._matrix).copy()

    @property
    def logdet(self) -> float:
        """Log-determinant log det V."""
        return self._logdet

    def pair_norms_unchecked(self, Z: np.ndarray) -> np.ndarray:
        """:meth:`pair_norms` for features built by a model: float64 (K, d), no checks."""
        inverse = self._inverse
        return pair_norms_from_cross(Z, lambda U: (U @ inverse) @ U.T)

    @abstractmethod
    def _factor(self) -> np.ndarray:
        """L with every queued rank-1 term applied, in the order they were added."""

    @abstractmethod
    def _set_arrays(
        self, matrix: np.ndarray, inverse: np.ndarray, cholesky: np.ndarray
    ) -> None:
        """Store restored V, V^-1 and L (checked (d, d) arrays)."""

    def state_dict(self) -> dict[str, Any]:
        """Return the full state: numpy arrays and JSON-able scalars, no pickle.

        Keys: kind, d, lam, refactor_every, n_updates, since_refactor, logdet (scalars),
        matrix, inverse, cholesky ((d, d) copies) and, when k > 0 rank-1 terms sqrt(w) x
        are queued since L was last read, pending ((k, d)): L is stored as it stands,
        before them, and the restored Gram applies them, in the order they came, at its
        first read of L, as this one would. The incremental quantities are stored as they
        are, so a restored Gram continues bit for bit, and taking the state does no
        arithmetic: O(d^2 + k d) copies (applying up to ``refactor_every`` queued terms
        took milliseconds of a service's interpreter at every snapshot).
        """
        state = {
            "kind": self._KIND,
            "d": self._d,
            "lam": self._lam,
            "refactor_every": self._refactor_every,
            "n_updates": self._n_updates,
            "since_refactor": self._since_refactor,
            "logdet": self._logdet,
            "matrix": np.array(self._matrix),
            "inverse": np.array(self._inverse),
            "cholesky": np.array(self._cholesky),
        }
        # absent when none is queued: the states of earlier versions load as saved
        if self._pending:
            state["pending"] = _rows(self._pending, self._d)
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state from :meth:`state_dict`; its d must equal this Gram's d.

        A state without ``pending`` (written before it was stored) has no queued terms.

        Raises:
            ValueError: On missing keys, another kind or d, or malformed entries: V and
                V^-1 must be symmetric positive-definite, L lower-triangular with a
                positive diagonal and the pending rows finite, (k, d).
        """
        check_state(state, self._state_kind(state), self._STATE_KEYS, self._d)
        arrays = check_full_arrays(state, self._d)
        pending = check_pending(state.get("pending"), self._d)
        lam = check_scalar("lam", state["lam"], low=0.0, low_open=True)
        refactor_every = check_int("refactor_every", state["refactor_every"], low=1)
        n_updates = check_int("n_updates", state["n_updates"], low=0)
        since_refactor = check_int("since_refactor", state["since_refactor"], low=0)
        logdet = check_scalar("logdet", state["logdet"])
        # Assign only after every entry has been checked.
        self._lam, self._refactor_every, self._logdet = lam, refactor_every, logdet
        self._n_updates, self._since_refactor = n_updates, since_refactor
        self._set_arrays(arrays["matrix"], arrays["inverse"], arrays["cholesky"])
        self._pending = pending

    @classmethod
    def _init_kwargs(cls, state: dict[str, Any]) -> dict[str, Any]:
        return {"refactor_every": state["refactor_every"]}
