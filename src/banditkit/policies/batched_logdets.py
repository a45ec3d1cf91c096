"""The effective dimension d_eff = logdet(I + a sum z z^T) of S seed-batched members.

Three trackers with one interface (``value``, ``bounds``, ``resolve``, ``update`` with
one row per member):

    MemberLogdets     the members' own ``linalg.EffectiveDimension`` trackers, one by one:
                      what ``policies.neurallog_batched`` uses for the exact value (blocked
                      and lazy, ``linalg.blocked.BlockedLogdet``, for p <= 512; the
                      "kernel" value above), so the values are the separate runs'
    DiagonalLogdets   the diagonal value (``EffectiveDimension(gram="diagonal")``)
    SeedLogdets       the exact p x p value of S members in one stacked state (blocks
                      of rows, full batched products); kept as a stacked alternative:
                      the members' own blocked trackers fold with half the flops
                      (one triangle) and cost less on NeuralLog-UCB-2 on h1
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.linalg

if TYPE_CHECKING:
    import torch

    from banditkit.linalg import EffectiveDimension
else:
    from banditkit.core.lazy import lazy_import

    torch = lazy_import("torch")  # imported at first use (banditkit.core.lazy)

__all__ = ["DiagonalLogdets", "MemberLogdets", "SeedLogdets"]


class SeedLogdets:
    """logdet(I + a sum_i z_i z_i^T) of S members, one row per member and round, lazily.

    The value of ``linalg.EffectiveDimension`` with an exact p x p Gram (``LogdetGram``)
    for S members at once. Reading V^-1 (p x p) once per round and member is what an
    exact update costs (p = 420: 1.4 MB per member); here the rows are collected in
    blocks and V^-1 is read only when a member's exact value is asked for
    (``resolve``) or a block is full. With V_0 = I + a sum of the rows before the block
    and the block's rows Z = [z_1 .. z_k] (matrix determinant lemma),

        logdet V_j = logdet V_0 + 2 sum_{i <= j} log L_ii,
        L L^T = M = I_k + a Z V_0^-1 Z^T,

    so resolving the pending rows of a member costs one product Y = Z_new V_0^-1 and
    extends the Cholesky factor L of the small k x k matrix M by their rows. A full block
    is folded into V_0^-1 (Woodbury: V_0^-1 -= a W^T W, W = L^-1 Y) and V += a Z^T Z;
    as ``LogdetGram``, V^-1 and the log-determinant are recomputed from V by a Cholesky
    factorisation every ``refactor_every`` rows.

    Until it is resolved, a member's value is bracketed by ``bounds``: every pending row
    adds log(1 + a z^T V^-1 z) in [0, log(1 + a ||z||^2)] (V >= I), which is enough to
    decide most selections (``BatchedNeuralLog.act``).

    Args:
        size: Members S, >= 1.
        d: Feature dimension p, >= 1.
        scale: a > 0.
        block: Rows per block, >= 1 (divides ``refactor_every``).
        refactor_every: Rows between refactorisations (512, as ``LogdetGram``).
    """

    def __init__(
        self,
        size: int,
        d: int,
        scale: float,
        *,
        block: int = 32,
        refactor_every: int = 512,
    ) -> None:
        if size < 1 or d < 1:
            raise ValueError(f"size and d must be >= 1; got {size} and {d}.")
        if not scale > 0.0:
            raise ValueError(f"scale must be > 0; got {scale!r}.")
        if block < 1 or refactor_every % block:
            raise ValueError(
                f"block must be >= 1 and divide refactor_every={refactor_every}; "
                f"got {block!r}."
            )
        self.size, self.d, self.scale = size, d, float(scale)
        self.block, self.refactor_every = block, refactor_every
        eye = torch.eye(d, dtype=torch.float64).expand(size, d, d)
        self._inverse_t = eye.clone()  # V_0^-1
        self._matrix_t = eye.clone()  # V
        self._inverse = self._inverse_t.numpy()  # a view: products through numpy
        self._Z = np.zeros((size, block, d))  # the block's rows z_i
        self._Y = np.zeros((size, block, d))  # their V_0^-1 z_i, once resolved
        self._L = np.zeros((size, block, block))  # Cholesky factor of M
        self._k = 0  # rows in the block (every member has the same)
        self._done = np.zeros(size, dtype=np.int64)  # rows resolved per member
        self._base = np.zeros(size)  # logdet V_0
        self._known = np.zeros(size)  # logdet after the resolved rows
        self._slack = np.zeros(size)  # sum of log(1 + a ||z||^2) of the pending rows
        self.n = 0

    @property
    def value(self) -> np.ndarray:
        """The S exact log-determinants (S,) (resolves every member)."""
        self.resolve(np.ones(self.size, dtype=bool))
        return self._known.copy()

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper bounds (S,) on the log-determinants; equal once resolved."""
        return self._known, self._known + self._slack

    def update(self, Z: np.ndarray) -> None:
        """Add a z_s z_s^T to member s's sum, for the rows z_s of Z (S, p)."""
        k = self._k
        self._Z[:, k] = Z
        self._slack += np.log1p(self.scale * (Z * Z).sum(1))
        self._k = k + 1
        self.n += 1
        if self._k == self.block:
            self._fold()

    def resolve(self, which: np.ndarray) -> None:
        """Make the values of the members ``which`` (S,) bool exact."""
        members = np.flatnonzero(which & (self._done < self._k))
        if members.size == 0:
            return
        a, k = self.scale, self._k
        for s in members:
            j = int(self._done[s])
            Z_new = self._Z[s, j:k]
            Y_new = Z_new @ self._inverse[s]  # (k - j, p): V_0^-1 is symmetric
            self._Y[s, j:k] = Y_new
            L = self._L[s]
            if j:
                # the new rows of L: L_21 = a Z_new Y_old^T L_11^-T
                cross = a * (Z_new @ self._Y[s, :j].T)
                L[j:k, :j] = scipy.linalg.solve_triangular(
                    L[:j, :j], cross.T, lower=True, check_finite=False
                ).T
            M = a * (Z_new @ Y_new.T)
            M[np.diag_indices_from(M)] += 1.0
            if j:
                M -= L[j:k, :j] @ L[j:k, :j].T
            L[j:k, j:k] = np.linalg.cholesky(M)
            diag = np.diagonal(L)[:k]
            self._known[s] = self._base[s] + 2.0 * np.log(diag).sum()
            self._done[s] = k
            self._slack[s] = 0.0

    def _fold(self) -> None:
        """V_0^-1 -= a W^T W (W = L^-1 Y) and V += a Z^T Z; maybe refactor."""
        self.resolve(np.ones(self.size, dtype=bool))
        k, a = self._k, self.scale
        W = np.linalg.solve(self._L[:, :k, :k], self._Y[:, :k])  # (S, k, p)
        W_t = torch.from_numpy(W)
        Z = torch.from_numpy(self._Z[:, :k])
        self._inverse_t.baddbmm_(W_t.mT, W_t, alpha=-a)  # in place
        self._matrix_t.baddbmm_(Z.mT, Z, alpha=a)
        self._base = self._known.copy()
        self._k = 0
        self._done[:] = 0
        self._L[:] = 0.0
        if self.n % self.refactor_every == 0:
            self._refactor()

    def _refactor(self) -> None:
        chol = torch.linalg.cholesky(self._matrix_t)
        self._inverse_t = torch.cholesky_inverse(chol)
        self._inverse = self._inverse_t.numpy()
        diag = torch.diagonal(chol, dim1=1, dim2=2)
        self._base = 2.0 * torch.log(diag).sum(-1).numpy()
        self._known = self._base.copy()


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
