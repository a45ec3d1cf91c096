"""The nested elimination cascade of BLCE-G, BLCE and BGLE, fast and exact [Yu2026].

In every round of interval l >= 2 the grid policies shrink the arm set with the l - 1 past
estimates (theta_k, V_k^-1), level by level [Yu2026, Alg. 1 l.13-14, Alg. 2 l.10-11]:

    x^(k)   = argmax_{x in A^(k-1)} <x, theta_k>
    eps_k   = max_{y in A^(k-1)} ||y||_{V_k^-1} * beta(|A^(k-1)|)
    A^(k)   = {x in A^(k-1) : <theta_k, x^(k) - x> <= 2 eps_k}

Evaluated as written this costs one quadratic form per arm and per level, O(K d^2 (l - 1))
per round. The quadratic forms only enter through their maximum eps_k, and that maximum
only matters when some arm's gap is close to the threshold. :class:`EliminationLevels`
stacks the estimates of an interval once (they are fixed until the next grid point) and
evaluates a round in three steps:

1. one product gives the means <x, theta_k> of all arms at all levels, another their
   projections on the top eigenvector v_k of V_k^-1;
2. a lower bound on max_y ||y||^2_{V_k^-1}: the exact quadratic form of the two arms with
   the largest and smallest projection on v_k (the arms that stretch furthest along the
   least explored direction), shrunk by a rigorous round-off margin. If the largest gap
   of level k is within 2 sqrt(bound) beta, no arm of level k can be removed whatever the
   exact maximum is, and the level costs no quadratic form at all;
3. the first level where this certificate fails, and every later level whose own
   certificate fails on the surviving set, is evaluated exactly: the quadratic forms of
   the surviving arms, their maximum, the comparison of the algorithm.

The survivors are therefore those of the level-by-level computation: a level is either
certified to remove nothing (then the exact computation removes nothing either) or
computed exactly. Only the floating-point order of the quadratic forms differs from a
direct evaluation (last-bit differences, which could matter only for a gap within about
1e-15 relative of the threshold).

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

#: K d^2 (levels) up to which computing every quadratic form in one product is cheaper
#: than bounding them level by level (one 1000 x 5 round with 7 levels: 175,000).
_SMALL_WORK = 200_000


def quad_norms(X: np.ndarray, inverse: np.ndarray) -> np.ndarray:
    """x_k^T A^-1 x_k for every row (squared ||x_k||_{A^-1}), shape (K,).

    One (K, d) x (d, d) product through BLAS, then row-wise dots: O(K d^2).
    """
    return np.einsum("ij,ij->i", X @ inverse, X)


class EliminationLevels:
    """The estimates of the finished intervals, stacked once for the per-round cascade.

    Built at a grid point (the estimates change only there) and used for every round of
    the next interval through :meth:`survivors`.

    Args:
        thetas: theta_k, each (d,), in cascade order.
        inverses: V_k^-1, each (d, d), symmetric positive definite.

    Example:
        >>> levels = EliminationLevels([np.array([1.0, 0.0])], [np.eye(2) * 1e-6])
        >>> levels.survivors(np.array([[1.0, 0.0], [0.0, 1.0], [0.9, 0.1]]), lambda n: 1.0)
        array([0])
    """

    def __init__(
        self, thetas: Sequence[np.ndarray], inverses: Sequence[np.ndarray]
    ) -> None:
        self.m = len(thetas)
        self._sq_norms: np.ndarray | None = None  # ||y||^2 of this round's arms
        self._sq_top = 0.0
        self.scores = np.zeros((0, 0))
        self._certified_last = True  # did the last round's certificates all hold?
        if len(inverses) != self.m:
            raise ValueError(
                f"inverses must hold one matrix per estimate ({self.m}); got {len(inverses)}."
            )
        if self.m == 0:
            return
        self.thetas = np.asarray(thetas, dtype=float)  # (m, d)
        d = self.thetas.shape[1]
        self.inverses = np.asarray(inverses, dtype=float).reshape(self.m, d, d)
        values, vectors = np.linalg.eigh(self.inverses)
        # Rows 0..m-1: theta_k; rows m..2m-1: the top eigenvector v_k of V_k^-1.
        self.rows = np.concatenate([self.thetas, vectors[:, :, -1]])
        # Relative round-off of a computed quadratic form y^T M y, whatever the order of
        # its sums: gamma_{2d+1} |y|^T |M| |y| <= gamma sqrt(d) cond(M) y^T M y. Twice that
        # (the bound's arm and the exact maximum both err), with a factor 2 to spare.
        gamma = (2 * d + 1) * _UNIT / (1.0 - (2 * d + 1) * _UNIT)
        with np.errstate(divide="ignore", invalid="ignore"):
            cond = np.where(values[:, 0] > 0.0, values[:, -1] / values[:, 0], np.inf)
        margin = 4.0 * gamma * math.sqrt(d) * cond
        # A level whose margin is not small (ill-conditioned V_k) is always computed exactly.
        self.shrink = np.where(margin < 1e-3, 1.0 - margin, 0.0)
        # ||y||^2_{V_k^-1} <= (l1 - l2) <y, v_k>^2 + l2 ||y||^2 (l1 >= l2 the top two
        # eigenvalues): the arms whose bound is below the floor cannot hold the maximum.
        # ``slack`` (times max ||y||^2) covers the round-off of the bound and of the forms.
        top2 = values[:, -2] if d >= 2 else np.zeros(self.m)
        self.lead = values[:, -1] - top2
        self.rest = top2
        self.slack = 16.0 * gamma * math.sqrt(d) * np.abs(values[:, -1])

    def _floor(self, arms: np.ndarray, rows: np.ndarray, levels: slice) -> np.ndarray:
        """Lower bounds on max_y ||y||^2_{V_k^-1}: the larger exact form of two arms per level.

        ``rows`` holds, per level, the indices of the two arms (2, m'); the result is
        shrunk by the round-off margin so that it never exceeds the computed maximum.
        """
        M = self.inverses[levels]
        Y = arms[rows]  # (2, m', d)
        q = np.einsum("jkd,kde,jke->jk", Y, M, Y)
        return np.maximum(q.max(axis=0), 0.0) * self.shrink[levels]

    def _max_form(
        self,
        arms: np.ndarray,
        idx: np.ndarray | None,
        P: np.ndarray,
        k: int,
        low: float,
    ) -> float:
        """max_{y in set} ||y||^2_{V_k^-1}, computed exactly on the arms that may hold it.

        ``low`` is a lower bound on the maximum attained by an arm of the set; arms whose
        eigenvalue bound (plus the round-off slack) is below it are skipped.
        """
        sq = self._sq_norms
        if sq is None:
            sq = self._sq_norms = np.einsum("ij,ij->i", arms, arms)
            self._sq_top = float(sq.max())
        p = P[k] if idx is None else P[k, idx]
        nn = sq if idx is None else sq[idx]
        bound = p * p
        bound *= self.lead[k]
        bound += self.rest[k] * nn
        pick = np.flatnonzero(bound >= low - self.slack[k] * self._sq_top)
        rows = pick if idx is None else idx[pick]
        if rows.size == 0:  # only if round-off defeats the bound: use every arm
            rows = np.arange(arms.shape[0]) if idx is None else idx
        return float(quad_norms(arms[rows], self.inverses[k]).max())

    def _direct(
        self, arms: np.ndarray, S: np.ndarray, first: int, beta: Callable[[int], float]
    ) -> np.ndarray:
        """Levels ``first`` .. m - 1 as written, all arms alive at ``first``.

        The quadratic forms of every arm at those levels come from one product; for a
        small K d^2 (m - first) this is cheaper than bounding them level by level.
        """
        K, d = arms.shape
        rest = self.inverses[first:]
        mm = rest.shape[0]
        stacked = rest.transpose(1, 0, 2).reshape(d, mm * d)
        sq = np.einsum("kmd,kd->mk", (arms @ stacked).reshape(K, mm, d), arms)
        alive = np.ones(K, dtype=bool)
        n = K
        top, neg_inf = np.maximum.reduce, -np.inf
        for j in range(mm):
            s = S[first + j]
            best = top(s, where=alive, initial=neg_inf)
            u = math.sqrt(max(float(top(sq[j], where=alive, initial=0.0)), 0.0))
            alive &= best - s <= 2.0 * u * beta(n)
            n = int(np.count_nonzero(alive))
        return np.flatnonzero(alive)

    def survivors(self, arms: np.ndarray, beta: Callable[[int], float]) -> np.ndarray:
        """Indices of the arms surviving every level, increasing.

        Args:
            arms: (K, d).
            beta: The confidence multiplier as a function of the current set size.

        Returns:
            The surviving indices (the best arm of every level survives). Afterwards
            ``scores`` holds the means <x, theta_k> of all arms, shape (m, K) (the last
            row serves the greedy rule).
        """
        K = arms.shape[0]
        if self.m == 0:
            return np.arange(K)
        m = self.m
        self._sq_norms = None  # ||y||^2 of this round's arms, when first needed
        Z = self.rows @ arms.T  # one product for the means and the projections
        S, P = Z[:m], Z[m:]  # S[k] = <x, theta_k>, P[k] = <x, v_k>, shape (m, K)
        self.scores = S
        small = K * arms.shape[1] ** 2 * m <= _SMALL_WORK
        if small and not self._certified_last:
            # Where all the forms are cheap and the certificates failed last round (arms
            # are being removed), compute every level as written.
            kept = self._direct(arms, S, 0, beta)
            self._certified_last = kept.size == K
            return kept
        # Every level at once, as if no earlier level removed an arm.
        best = S.max(axis=1)
        widest = best - S.min(axis=1)
        rows = np.empty((2, m), dtype=np.intp)
        P.argmax(axis=1, out=rows[0])
        P.argmin(axis=1, out=rows[1])
        floor = self._floor(arms, rows, slice(None))
        certified = widest <= 2.0 * np.sqrt(floor) * beta(K)
        self._certified_last = bool(certified.all())
        if self._certified_last:
            return np.arange(K)
        # Levels before the first failed certificate remove nothing; from it on, level by
        # level on the surviving set.
        first = int(np.argmin(certified))
        if small:
            return self._direct(arms, S, first, beta)
        idx: np.ndarray | None = None
        for k in range(first, m):
            n = K if idx is None else idx.size
            s = S[k] if idx is None else S[k, idx]
            if k == first:
                top = float(best[k])  # the pass above was exact up to this level
                low = float(floor[k])
            else:
                top = float(s.max())
                p = P[k] if idx is None else P[k, idx]
                pair = np.array([[p.argmax()], [p.argmin()]])
                if idx is not None:
                    pair = idx[pair]
                low = float(self._floor(arms, pair, slice(k, k + 1))[0])
                if top - float(s.min()) <= 2.0 * math.sqrt(low) * beta(n):
                    continue
            u = math.sqrt(max(self._max_form(arms, idx, P, k, low), 0.0))
            keep = top - s <= 2.0 * u * beta(n)
            if not keep.all():
                idx = np.flatnonzero(keep) if idx is None else idx[keep]
        return np.arange(K) if idx is None else idx
