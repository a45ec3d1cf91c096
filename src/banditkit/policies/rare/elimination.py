"""The nested elimination cascade of BLCE-G, BLCE and BGLE, fast and exact [Yu2026].

In every round of interval l >= 2 the grid policies shrink the arm set with the l - 1 past
estimates (theta_k, V_k^-1), level by level [Yu2026, Alg. 1 l.13-14, Alg. 2 l.10-11]:

    x^(k)   = argmax_{x in A^(k-1)} <x, theta_k>
    eps_k   = max_{y in A^(k-1)} ||y||_{V_k^-1} * beta(|A^(k-1)|)
    A^(k)   = {x in A^(k-1) : <theta_k, x^(k) - x> <= 2 eps_k}

Evaluated as written this costs one quadratic form per arm and per level, O(K d^2 (l - 1))
per round, in about ten array operations per level. At the paper's sizes (K d^2 = 25,000 at
(1000, 5)) the count of operations, not the arithmetic, is the cost. The estimates are fixed
within an interval, so :class:`EliminationLevels` stacks, once per interval, one matrix W
whose rows are theta_k (every level), the top eigenvector v_k of V_k^-1 (the levels first
tried by certificate) and the rows of V_k^-1 (the levels evaluated exactly), and a round is:

1. one product W X^T: the means <x, theta_k> of all arms at all levels, the projections
   <x, v_k> and V_k^-1 x; one maximum and one minimum over the arms give every level's best and worst mean and
   largest projection at once;
2. the certified levels (those before ``exact_from``), all at once, as if no earlier level
   removed an arm: max_y ||y||^2_{V_k^-1} >= l1 max_y <y, v_k>^2 (l1 the top eigenvalue),
   so if the widest gap of level k is within 2 sqrt(l1 max p^2) beta, no arm of level k can
   be removed whatever the exact maximum is. A level failing this is tried with the exact
   forms of the two arms of largest and smallest projection; a level failing both is the
   first level evaluated exactly, this round and the following ones of the interval (the
   levels that remove arms stay the same from round to round);
3. the exact levels, in order, on masks: the forms of all arms at those levels from the
   product of step 1 (one more operation), their maxima over the surviving arms (read from
   the whole-set maximum when its arm is still alive), the comparison of the algorithm.

The survivors are therefore those of the level-by-level computation: a level is either
certified to remove nothing (then the exact computation removes nothing either) or
computed exactly, with the comparison written as in the algorithm. Only the floating-point
order of the quadratic forms differs from a direct evaluation (last-bit differences, which
could matter only for a gap within about 1e-15 relative of the threshold).

Round-off of the certificates: a computed quadratic form errs by at most gamma_{2d+1}
sqrt(d) cond(V_k) relative; the bounds are shrunk by twice that, with a factor 2 to spare
(a level with cond(V_k) so large that this exceeds 1e-3 is always exact). A computed
projection p errs by at most gamma_d ||y||; l1 p^2 (1 - 1e-6) is below the true form unless
|p| < 2e-9 ||y||, and then it is below l_min ||y||^2 <= ||y||^2_{V_k^-1} anyway for any
cond(V_k) < 1e11.

References:
    [Yu2026] S. Yu, M. Oh. Practical and optimal algorithm for linear contextual bandits
        with rare parameter updates. arXiv:2606.00984.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["EliminationLevels", "quad_norms"]

#: Unit round-off of float64.
_UNIT = 2.0**-53

#: Relative slack of the projection bound l1 <y, v_k>^2 for the round-off of <y, v_k>.
_PROJECTION_SLACK = 1e-6


def quad_norms(X: np.ndarray, inverse: np.ndarray) -> np.ndarray:
    """x_k^T A^-1 x_k for every row (squared ||x_k||_{A^-1}), shape (K,).

    One (K, d) x (d, d) product through BLAS, then row-wise dots: O(K d^2).
    """
    return np.einsum("ij,ij->i", X @ inverse, X)


class EliminationLevels:
    """The estimates of the finished intervals, stacked once for the per-round cascade.

    Built at a grid point (the estimates change only there) and used for every round of
    the next interval through :meth:`evaluate` (or :meth:`survivors`).

    Args:
        thetas: theta_k, each (d,), in cascade order.
        inverses: V_k^-1, each (d, d), symmetric positive definite.

    Attributes:
        exact_from: The first level evaluated exactly; the levels before it are tried by
            certificate first. Starts at m (or at the first ill-conditioned level) and
            moves down when a certificate fails.
        alive: After :meth:`evaluate`, the surviving arms as a boolean mask, or None when
            every arm survives; ``n_alive`` is their number.
        means: After :meth:`evaluate`, <x, theta_m> of every arm (the last level, the
            greedy rule's scores), shape (K,).

    Example:
        >>> levels = EliminationLevels([np.array([1.0, 0.0])], [np.eye(2) * 1e-6])
        >>> levels.survivors(np.array([[1.0, 0.0], [0.0, 1.0], [0.9, 0.1]]), lambda n: 1.0)
        array([0])
    """

    def __init__(
        self, thetas: Sequence[np.ndarray], inverses: Sequence[np.ndarray]
    ) -> None:
        self.m = len(thetas)
        if len(inverses) != self.m:
            raise ValueError(
                f"inverses must hold one matrix per estimate ({self.m}); got {len(inverses)}."
            )
        self.exact_from = self.m
        self.alive: np.ndarray | None = None
        self.n_alive = 0
        self.means = np.zeros(0)
        self._Z = np.zeros((0, 0))
        self._plans: dict[tuple[int, int], np.ndarray] = {}
        if self.m == 0:
            return
        self.thetas = np.asarray(thetas, dtype=float)  # (m, d)
        d = self.thetas.shape[1]
        self.inverses = np.asarray(inverses, dtype=float).reshape(self.m, d, d)
        values, vectors = np.linalg.eigh(self.inverses)
        self.top = np.ascontiguousarray(vectors[:, :, -1])  # v_k, (m, d)
        gamma = (2 * d + 1) * _UNIT / (1.0 - (2 * d + 1) * _UNIT)
        with np.errstate(divide="ignore", invalid="ignore"):
            cond = np.where(values[:, 0] > 0.0, values[:, -1] / values[:, 0], np.inf)
        margin = 4.0 * gamma * math.sqrt(d) * cond
        # A level whose margin is not small (ill-conditioned V_k) is always computed exactly.
        self.shrink = np.where(margin < 1e-3, 1.0 - margin, 0.0)
        ill = np.flatnonzero(self.shrink == 0.0)
        if ill.size:
            self.exact_from = int(ill[0])
        # l1 <y, v_k>^2 <= ||y||^2_{V_k^-1}, less the round-off of the projection
        self.lead = values[:, -1] * self.shrink * (1.0 - _PROJECTION_SLACK)

    @property
    def scores(self) -> np.ndarray:
        """The means <x, theta_k> of the last round, every level, shape (m, K)."""
        return self._Z[: self.m]

    def _rows(self, d: int) -> np.ndarray:
        """W for the current ``exact_from`` (cached).

        Rows: theta_k (every level), v_k (levels before ``exact_from``), the d rows of
        V_k^-1 (the other levels).
        """
        m, f = self.m, self.exact_from
        key = (f, d)
        W = self._plans.get(key)
        if W is None:
            W = np.zeros((m + f + (m - f) * d, d))
            W[:m] = self.thetas
            W[m : m + f] = self.top[:f]
            W[m + f : m + f + (m - f) * d] = self.inverses[f:].reshape(-1, d)
            self._plans[key] = W
        return W

    def evaluate(
        self,
        arms: np.ndarray,
        beta: Callable[[int], float],
    ) -> None:
        """One round of the cascade: sets ``alive``, ``n_alive`` and ``means``.

        Args:
            arms: (K, d).
            beta: The confidence multiplier as a function of the current set size.
        """
        K, d = arms.shape
        self.alive, self.n_alive = None, K
        X_T = arms.T
        if self.m == 0:
            self._Z = np.zeros((0, K))
            return
        m, f = self.m, self.exact_from
        W = self._rows(d)
        Z = self._Z
        if Z.shape != (W.shape[0], K):
            Z = self._Z = np.empty((W.shape[0], K))
        np.matmul(W, X_T, out=Z)
        self.means = Z[m - 1]
        head = Z[: m + f]
        hi = head.max(axis=1)
        lo = head.min(axis=1)
        start = f
        if f > 0:
            # Levels 0..f-1 at once, as if no earlier level removed an arm.
            proj = np.maximum(hi[m:], -lo[m:])
            width = np.sqrt(self.lead[:f] * (proj * proj))
            width *= 2.0 * beta(K)
            certified = hi[:f] - lo[:f] <= width
            if not certified.all():
                start = self._first_uncertified(
                    arms, Z, np.flatnonzero(~certified), hi, lo, beta(K)
                )
        if start == m:
            return
        X_T = np.ascontiguousarray(X_T)  # a strided einsum is three times slower
        forms = np.einsum(
            "rdk,dk->rk", Z[m + f : m + f + (m - f) * d].reshape(m - f, d, K), X_T
        )
        if start < f:  # a certificate failed: its levels join the exact ones
            stacked = self.inverses[start:f].transpose(1, 0, 2).reshape(d, -1)
            before = np.einsum(
                "kjd,kd->jk", (arms @ stacked).reshape(K, f - start, d), arms
            )
            forms = np.concatenate([before, forms])
            self.exact_from = start
        self._exact(Z[:m], forms, start, hi, lo, beta)

    def _first_uncertified(
        self,
        arms: np.ndarray,
        Z: np.ndarray,
        failed: np.ndarray,
        hi: np.ndarray,
        lo: np.ndarray,
        beta_all: float,
    ) -> int:
        """The first level of ``failed`` that the second certificate fails too (or m).

        The exact forms of the two arms with the largest and smallest projection on v_k,
        shrunk by the round-off margin, bound max ||y||^2_{V_k^-1} from below.
        """
        m = self.m
        for k in failed.tolist():
            p = Z[m + k]
            pair = arms[[int(p.argmax()), int(p.argmin())]]
            q = np.einsum("jd,de,je->j", pair, self.inverses[k], pair)
            low = max(float(q.max()), 0.0) * float(self.shrink[k])
            if hi[k] - lo[k] > 2.0 * math.sqrt(low) * beta_all:
                return int(k)
        return self.exact_from

    def _exact(
        self,
        S: np.ndarray,
        forms: np.ndarray,
        start: int,
        hi: np.ndarray,
        lo: np.ndarray,
        beta: Callable[[int], float],
    ) -> None:
        """Levels ``start`` .. m - 1 as written, every arm alive at ``start``.

        ``forms[j]`` holds ||x||^2_{V_k^-1} of every arm at level k = start + j; ``hi``
        and ``lo`` the largest and smallest mean of every level over all arms.
        """
        K = S.shape[1]
        top = forms.max(axis=1)
        alive: np.ndarray | None = None
        best_arm = form_arm = None
        n = K
        for j in range(forms.shape[0]):
            k = start + j
            s = S[k]
            if alive is None:
                best = float(hi[k])
                u = math.sqrt(max(float(top[j]), 0.0))
                w = 2.0 * u * beta(n)
                if best - float(lo[k]) <= w:
                    continue  # the worst arm stays: every arm does
                alive = best - s <= w
            else:
                if best_arm is None:
                    best_arm = S[start:].argmax(axis=1)
                    form_arm = forms.argmax(axis=1)
                assert form_arm is not None
                # the maximum over the survivors is the whole set's if its arm survives
                if alive[best_arm[j]]:
                    best = float(hi[k])
                else:
                    best = float(np.maximum.reduce(s, where=alive, initial=-np.inf))
                if alive[form_arm[j]]:
                    q = float(top[j])
                else:
                    q = float(np.maximum.reduce(forms[j], where=alive, initial=0.0))
                u = math.sqrt(max(q, 0.0))
                alive &= best - s <= 2.0 * u * beta(n)
            n = int(np.count_nonzero(alive))
        self.alive, self.n_alive = alive, n

    def survivors(self, arms: np.ndarray, beta: Callable[[int], float]) -> np.ndarray:
        """Indices of the arms surviving every level, increasing (see :meth:`evaluate`).

        Args:
            arms: (K, d).
            beta: The confidence multiplier as a function of the current set size.

        Returns:
            The surviving indices (the best arm of every level survives). Afterwards
            ``scores`` holds the means <x, theta_k> of all arms, shape (m, K) (the last
            row serves the greedy rule).
        """
        self.evaluate(arms, beta)
        if self.alive is None:
            return np.arange(arms.shape[0])
        return np.flatnonzero(self.alive)
