"""Sufficient tests that spare the grid policies' cascade its surviving set [Yu2026].

The cascade of :mod:`~banditkit.policies.rare.elimination` computes, in every round of
interval l >= 2, the arms surviving the levels k = 1..l-1. Two tests prove facts about it
without computing it:

**A level that never removes** (:func:`never_removes`). For surviving arms of norm at most
r, the gaps <theta_k, x^(k) - x> are at most 2 ||theta_k|| r and
eps_k = beta(n) max_y ||y||_{V_k^-1} is at least beta(1) sqrt(l_min(V_k^-1)) r. A level with
||theta_k|| <= beta(1) sqrt(l_min) removes no arm from any arm set, in any round: the
policies leave it out of the cascade (decided once per estimate).

**The pick first** (:class:`SurvivalTest`). A greedy or exploration round only needs the
survivor with the largest score. The arm i with the largest score over all arms is that
survivor as soon as i survives every level, and it does if, at every level k,

    max_x <x, theta_k> - <x_i, theta_k> <= 2 beta(1) ||x_i||_{V_k^-1}

(while i survives, the best survivor's mean is at most the whole set's maximum, eps_k at
least i's own width, and beta(n) >= beta(1)). The test costs the means of every level (one
product) and the forms of arm i; no set is computed.

Round-off: a computed quadratic form errs by at most gamma_{2d+1} sqrt(d) cond(V_k)
relative (the forms are shrunk by twice that: ``shrink``, as for the certificates of the
cascade); a computed mean errs by at most gamma_d ||theta_k||_1 max_j |x_j| (max_j |x_j|
bounded by ``reach_bound``), whatever product computed it, and the test subtracts four
such errors; the eigenvalues of V_k^-1 err by a few units of round-off of the largest.

References:
    [Yu2026] S. Yu, M. Oh. Practical and optimal algorithm for linear contextual bandits
        with rare parameter updates. arXiv:2606.00984.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

__all__ = ["SurvivalTest", "never_removes", "reach_bound"]

#: Unit round-off of float64.
_UNIT = 2.0**-53

#: Up to this many arms, NumPy's arg-extremes plus a take beat its max / min (about 2x at
#: K = 1000); at K = 5000 they do not, and the extremes are taken directly.
_ARG_EXTREMES_UP_TO = 2000

#: Relative slack of the projection bound l1 <y, v_k>^2 for the round-off of <y, v_k>.
_PROJECTION_SLACK = 1e-6


def reach_bound(arms: np.ndarray) -> float:
    """An upper bound on max_{x, j} |x_j| over the arms: sqrt(sum_{x, j} x_j^2), rounded up.

    One BLAS dot (cheaper than the arg-maximum and arg-minimum of every entry); the bound
    only scales the round-off slack of the computed means (about 1e-15 relative), so its
    looseness (at most sqrt(K d)) costs nothing. The sum errs by at most gamma_{Kd}
    relative (covered by the factor 1 + 2.3e-16 K d + 1e-12) and by the underflow of the
    squares (at most K d 2^-1074 in all, covered by the 1e-300 for K d < 1e20); an overflow
    gives inf, which makes the test fail (safe).

    Example:
        >>> reach_bound(np.array([[3.0, 0.0], [0.0, -4.0]])) >= 4.0
        True
    """
    factor = 1.0 + 1e-12 + 2.3e-16 * arms.size
    return math.sqrt(float(np.vdot(arms, arms)) * factor + 1e-300)


def never_removes(theta: np.ndarray, inverse: np.ndarray, beta_1: float) -> bool:
    """Whether a level (theta_k, V_k^-1) provably removes no arm, whatever the arms.

    For surviving arms x and x^(k), all of norm at most r (the longest surviving arm),
    <theta_k, x^(k) - x> <= 2 ||theta_k|| r, while eps_k >= beta(1) sqrt(l_min) r, l_min
    the smallest eigenvalue of V_k^-1 (||y||^2_{V_k^-1} >= l_min ||y||^2 for the longest
    y, and beta(n) >= beta(1)). So if ||theta_k|| <= beta(1) sqrt(l_min), every gap is
    within 2 eps_k in every round, and the level can be left out of the cascade (it
    changes neither the set nor its size). l_min is lowered by the error of the
    eigenvalues and the bound by the round-off of the computed forms (as for the
    certificates) and of the means; an ill-conditioned level never qualifies.

    Example:
        >>> never_removes(np.array([0.1, 0.0]), np.eye(2), 1.0)
        True
    """
    values = np.linalg.eigvalsh(inverse)
    d = values.shape[0]
    low = values[0] - 8.0 * d * _UNIT * abs(values[-1])
    if low <= 0.0:
        return False
    gamma = (2 * d + 1) * _UNIT / (1.0 - (2 * d + 1) * _UNIT)
    margin = 4.0 * gamma * math.sqrt(d) * values[-1] / low
    if margin >= 1e-3:
        return False
    bound = beta_1 * math.sqrt(low * (1.0 - margin)) * (1.0 - 1e-6)
    return float(np.linalg.norm(theta)) <= bound


class SurvivalTest:
    """The pick-first test for the levels (theta_k, V_k^-1) of one interval.

    Args:
        thetas: (m, d), m >= 1.
        inverses: (m, d, d), symmetric positive definite.
        shrink: (m,), 1 less the relative round-off margin of a computed form (0: an
            ill-conditioned level, whose forms are not trusted: the test then fails).

    Example:
        >>> thetas = np.array([[1.0, 0.0]])
        >>> test = SurvivalTest(thetas, np.eye(2)[None] * 1e-6, np.ones(1))
        >>> arms = np.array([[1.0, 0.0], [0.0, 1.0]])
        >>> test(arms, 0, lambda n: 1.0, thetas @ arms.T), test(arms, 1, lambda n: 1.0, thetas @ arms.T)
        (True, False)
    """

    def __init__(
        self, thetas: np.ndarray, inverses: np.ndarray, shrink: np.ndarray
    ) -> None:
        m, d = thetas.shape
        self.m = m
        self._rows_of_inverses = inverses.reshape(m * d, d)
        self._root_shrink = np.sqrt(shrink).tolist()
        # |fl<x, theta_k> - <x, theta_k>| <= gamma_d ||theta_k||_1 max|x_i|, twice for the
        # two means of a gap, twice for two products
        gamma_d = d * _UNIT / (1.0 - d * _UNIT)
        self.mean_slack = (4.0 * gamma_d * np.abs(thetas).sum(axis=1)).tolist()
        self._room: list[float] = []  # 2 beta(1) sqrt(shrink_k), less the slack
        self._room_beta: Callable[[int], float] | None = None
        self._offsets = np.zeros(0, dtype=np.intp)
        self._offsets_for = (0, 0)

    def __call__(
        self,
        arms: np.ndarray,
        i: int,
        beta: Callable[[int], float],
        means: np.ndarray,
        maxima: tuple[list[float], float] | None = None,
    ) -> bool:
        """Whether arm i provably survives every level (True: it does; False: unknown).

        Args:
            arms: (K, d).
            i: The arm.
            beta: The confidence multiplier as a function of the set size.
            means: <x, theta_k> of every arm at every level, (m, K).
            maxima: :meth:`maxima` of these means (computed when None).
        """
        tops, reach = self.maxima(arms, means) if maxima is None else maxima
        return self._passes(arms, i, beta, means, tops, reach)

    def top_survives(
        self, arms: np.ndarray, means: np.ndarray, beta: Callable[[int], float]
    ) -> tuple[int, bool]:
        """The last level's best arm (first on ties) and whether it provably survives.

        The greedy rule's pick over all arms: ``means[-1].argmax()``, tested as
        :meth:`__call__` tests it, with the arg-maxima of every level read once.
        """
        m, K = means.shape
        if K <= _ARG_EXTREMES_UP_TO:
            arg = means.argmax(axis=1)
            i = arg.item(m - 1)
            if self._offsets_for != (m, K):
                self._offsets = np.arange(m, dtype=np.intp) * K
                self._offsets_for = (m, K)
            tops = means.ravel()[arg + self._offsets].tolist()
        else:
            i = int(means[m - 1].argmax())
            tops = means.max(axis=1).tolist()
        return i, self._passes(arms, i, beta, means, tops, reach_bound(arms))

    def _passes(
        self,
        arms: np.ndarray,
        i: int,
        beta: Callable[[int], float],
        means: np.ndarray,
        tops: list[float],
        reach: float,
    ) -> bool:
        """The test of arm i, given every level's maximum mean and max_{x, j} |x_j|."""
        m = self.m
        x = arms[i]
        forms = ((self._rows_of_inverses @ x).reshape(m, -1) @ x).tolist()
        own = means[:, i].tolist()
        if self._room_beta is not beta:
            b = 2.0 * beta(1) * (1.0 - _PROJECTION_SLACK)
            self._room = [b * r for r in self._root_shrink]
            self._room_beta = beta
        room, mean_slack = self._room, self.mean_slack
        for k in range(m):
            if (
                tops[k] - own[k]
                > room[k] * math.sqrt(max(forms[k], 0.0)) - mean_slack[k] * reach
            ):
                return False
        return True

    def maxima(self, arms: np.ndarray, means: np.ndarray) -> tuple[list[float], float]:
        """max_x <x, theta_k> of every level and an upper bound on max_{x, j} |x_j|."""
        m, K = means.shape
        if self._offsets_for != (m, K):
            self._offsets = np.arange(m, dtype=np.intp) * K
            self._offsets_for = (m, K)
        if K <= _ARG_EXTREMES_UP_TO:  # maxima through arg-maxima (cheaper here)
            tops = means.ravel()[means.argmax(axis=1) + self._offsets].tolist()
        else:
            tops = means.max(axis=1).tolist()
        return tops, reach_bound(arms)
