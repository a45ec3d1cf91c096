"""BLCE-G and BLCE: linear contextual bandits with O(log log T) parameter updates [Yu2026].

Both play the static grid of their algorithm box, keep one ridge estimate per finished
interval (that interval's data only), and in every round of interval l >= 2 shrink the arm
set by the nested cascade of the l - 1 past estimates [Yu2026, Alg. 1 l.13-14] with the
widths eps_{t,k} = max_y ||y||_{V_k^-1} * min(beta_1(|A^(k-1)|), beta_2) of Lemma 3
(delta = 2/T). Inside an interval they are context adaptive: the uncertainty rule
argmax_x ||x||_{H_{t-1}^-1} reads the running within-interval Gram H, updated after every
pull by Sherman-Morrison without rewards. H is read only by the design and uncertainty
rounds, which come first in an interval, so the pulls of the greedy rounds skip it (H is
reset at the interval's end; the estimate is refitted from the interval's buffer).

A greedy or uncertainty round first tests whether the rule's pick over all arms survives the
cascade (``EliminationLevels.survives``, a sufficient test; the uncertainty rounds of an
interval stop testing in most rounds once it passes in less than 30 % of them); if it does,
that pick is the rule's pick over the survivors and the surviving set is not computed
(``last_survivors`` is then -1; set ``count_survivors = True`` to compute the set in every
round). Levels that provably never remove an arm are left out of the cascade
(``never_removes``). The actions are those of the cascade as written.

With N_l = T^(1 - 2^-l) / log2 log2 T and c the allocation rate:

    BLCE-G (Alg. 1)  lam = ln(d T)
        interval 1:  ceil(c sqrt(T) / L) rounds x ~ pi_G'(A_t), then argmax ||x||_{H^-1}
        l >= 2:      ceil(c^2 N_l) rounds x ~ pi_G'(A^(l-1)), ceil(c (1 - c) N_l) rounds
                     argmax ||x||_{H^-1}, the rest greedy argmax <x, theta_{l-1}>
    BLCE (Alg. 2)    lam = 1
        interval 1:  argmax ||x||_{H^-1}
        l >= 2:      ceil(c N_l) rounds argmax ||x||_{H^-1}, the rest greedy

pi_G' is the near-G-optimal design (max leverage <= 2 rank, ``linalg.g_optimal_design``).
Ties go to the first index (reproducible runs).

References:
    In the package's docstring (``banditkit.policies.rare``): [Yu2026], the batched baselines.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from banditkit.core import POLICIES, Context
from banditkit.core.params import POSITIVE, Maybe, param
from banditkit.policies.rare.base import (
    RATE,
    GridPolicy,
    blce_widths,
    design_pick,
    never_removes,
    quad_norms,
)
from banditkit.policies.rare.grids import interval_of, phase_scale

__all__ = ["BLCE", "BLCEG"]


class _Eliminating(GridPolicy):
    """BLCE-G / BLCE: cascade, phases of the current interval, per-interval ridge.

    Args:
        c: Allocation rate in (0, 1); the paper's default 0.5.
    """

    #: Phase names of the rounds, for diagnostics ("design", "uncertainty", "greedy").
    PHASES: ClassVar[tuple[str, ...]] = ("design", "uncertainty", "greedy")

    c: float = param(RATE, default=0.5)
    lam: float | None = param(Maybe(POSITIVE), default=None)

    def _resolve(self) -> None:
        self.last_phase = ""
        self.last_survivors = 0
        #: Compute the surviving set in every round, for ``last_survivors`` (diagnostics);
        #: otherwise an exploration or greedy round whose pick provably survives skips it.
        self.count_survivors = False
        self._pick_stats = [0, 0, 0, 0]  # interval, tests, passes, rounds skipped

    def _build(self) -> None:
        assert self.d is not None and self.horizon is not None
        self._beta = blce_widths(self.d, self.n_intervals, self.horizon, self.lam_value)
        self._phase_cache: tuple[int, tuple[int, int]] = (0, (0, 0))
        self._read_window = (0, 0, 0)  # (T_{l-1}, T_l, the round H is last read)
        self._inert_flags: list[bool] = []
        super()._build()

    def _phase_lengths(self, ell: int) -> tuple[int, int]:
        """(G-design rounds, uncertainty rounds) of interval ell; the rest is greedy."""
        raise NotImplementedError

    def _inert(self, k: int) -> bool:
        """Estimate k removes no arm in any round (``never_removes``; decided once)."""
        while len(self._inert_flags) <= k:
            j = len(self._inert_flags)
            self._inert_flags.append(
                never_removes(self.thetas[j], self.inverses[j], self._beta(1))
            )
        return self._inert_flags[k]

    def _phases(self, ell: int) -> tuple[int, int]:
        """:meth:`_phase_lengths`, computed once per interval."""
        if self._phase_cache[0] != ell:
            self._phase_cache = (ell, self._phase_lengths(ell))
        return self._phase_cache[1]

    def _choose(self, ctx: Context, ell: int, offset: int) -> int:
        arms = ctx.arms
        # interval 1 has no estimate yet: an empty cascade, every arm survives
        levels = self._levels()
        n_design, n_uncertain = self._phases(ell)
        if offset <= n_design:
            self.last_phase = "design"
            levels.evaluate(arms, self._beta)
            self.last_survivors = levels.n_alive
            if levels.alive is None:
                return design_pick(self, arms, ctx.n_arms)
            alive = np.flatnonzero(levels.alive)
            return design_pick(self, arms[alive], ctx.n_arms, alive)
        if offset <= n_design + n_uncertain:
            self.last_phase = "uncertainty"
            if levels.m == 0:  # interval 1: no estimate yet, every arm survives
                self.last_survivors = arms.shape[0]
                return int(np.argmax(quad_norms(arms, self.H.inverse)))
            if self.H.n_updates == 0:
                # H = lam I: near-equal forms, whose ties the summation order decides;
                # computed on the survivors as written
                levels.evaluate(arms, self._beta)
                self.last_survivors = levels.n_alive
                if levels.alive is None:
                    return int(np.argmax(quad_norms(arms, self.H.inverse)))
                idx = np.flatnonzero(levels.alive)
                return int(idx[int(np.argmax(quad_norms(arms[idx], self.H.inverse)))])
            # ||x||^2_{H^-1} and the means of every level from one product; the most
            # uncertain arm, if it provably survives the cascade (then the surviving
            # set is not needed); else the rest of the cascade's product
            if self._pick_due(ell):
                means = levels.forms_first(arms, self.H.inverse)
                pick = int(levels.forms.argmax())
                passed = levels.survives(arms, pick, self._beta, means)
                self._pick_stats[1] += 1
                if passed:
                    self._pick_stats[2] += 1
                    self.last_survivors = -1
                    return pick
            levels.evaluate(arms, self._beta, self.H.inverse)
            scores = levels.forms
        else:
            self.last_phase = "greedy"
            # <x, theta_k> of every level; the greedy rule reads the last. Its pick over
            # all arms, if it provably survives the cascade; else the cascade
            if self.count_survivors:
                means = levels.level_means(arms)
            else:
                pick, means = levels.greedy_pick(arms, self._beta)
                if pick >= 0:
                    self.last_survivors = -1
                    return pick
            levels.evaluate(arms, self._beta)
            scores = means[-1]
        self.last_survivors = levels.n_alive
        if levels.alive is None:
            return int(scores.argmax())
        # argmax over the survivors, first index on ties
        return int(np.where(levels.alive, scores, -np.inf).argmax())

    def _pick_due(self, ell: int) -> bool:
        """Whether to test the exploration pick (``EliminationLevels.survives``) this round.

        A passed test saves the rest of the cascade, a failed one costs about a third of
        that. In later intervals the most uncertain arm often lies outside the surviving
        set (under uniform contexts the test then fails in four rounds of five): once
        eight tests of the interval have passed less than 30 % of the time, only every
        eighth round is tested. The actions do not depend on it.
        """
        if self.count_survivors:
            return False
        stats = self._pick_stats
        if stats[0] != ell:
            stats[:] = [ell, 0, 0, 0]
        if stats[1] < 8 or 10 * stats[2] >= 3 * stats[1]:
            return True
        stats[3] += 1
        return stats[3] % 8 == 0

    def _gram_read(self, t: int) -> bool:
        """Whether H after round t is read again in its interval (exploration rounds follow).

        The phases run design, uncertainty, greedy: H is read last by the final
        uncertainty round, so the pulls from that round on need not enter it (H is
        reset at the interval's end and the estimate is refitted from the buffer).
        """
        start, end, stop = self._read_window
        if not start < t <= end:  # a new interval: its rounds and its last reader
            ell = interval_of(self.update_times, t)
            start = 0 if ell == 1 else self.update_times[ell - 2]
            end = self.update_times[ell - 1] if ell <= len(self.update_times) else t
            stop = start + sum(self._phases(ell))
            self._read_window = (start, end, stop)
        return t < stop

    def _estimate(self) -> tuple[np.ndarray, np.ndarray]:
        return self._ridge_estimate()


@POLICIES.register("blce-g")
class BLCEG(_Eliminating):
    """BLCE-G [Yu2026, Alg. 1]: elimination cascade + near-G-optimal design + uncertainty.

    Phases of interval l >= 2: c^2 : c(1 - c) : (1 - c) of N_l (G-design, uncertainty,
    greedy); interval 1: c : (1 - c) of sqrt(T) / L (G-design, uncertainty). The grid is
    T_1 = ceil(sqrt(T)/L) + 1, T_l = min(T_{l-1} + ceil(T^(1-2^-l)/L) + 2, T). Regret
    O(sqrt(dT) (sqrt(log KT) ^ sqrt(d + log T)) sqrt(log d log log T)) [Thm 1].

    Args:
        lam: Ridge of H and V_l; None is the paper's ln(d T).
        seed: Seed of the design draws.

    Notes:
        At T = 1000 it makes 7 updates (defaults made for T = 10^4: ``GridPolicy``).

    Example:
        >>> p = BLCEG(); p.begin(100)
        >>> p.act(Context(arms=np.eye(3))) in range(3)
        True
    """

    grid_name: ClassVar[str] = "blce-g"

    @property
    def lam_value(self) -> float:
        """lam, or ln(d T) [Alg. 1 l.3] (at least 1, for the tiny d T < e)."""
        assert self.d is not None and self.horizon is not None
        if self.lam is not None:
            return self.lam
        return max(math.log(self.d * self.horizon), 1.0)

    def _phase_lengths(self, ell: int) -> tuple[int, int]:
        assert self.horizon is not None
        c = self.c
        if ell == 1:
            return math.ceil(c * phase_scale("blce-g", self.horizon, 1)), self.horizon
        N = phase_scale("blce-g", self.horizon, ell)
        return math.ceil(c * c * N), math.ceil(c * (1.0 - c) * N)


@POLICIES.register("blce")
class BLCE(_Eliminating):
    """BLCE [Yu2026, Alg. 2]: elimination cascade + uncertainty exploration, no G-design.

    Interval 1 is pure uncertainty exploration; interval l >= 2 explores (argmax
    ||x||_{H^-1} on the surviving set) for ceil(c N_l) rounds, then plays greedily. The grid
    is T_1 = ceil(sqrt(T)/L), T_l = min(T_{l-1} + ceil(T^(1-2^-l)/L) + 1, T); lam = 1.
    Regret O(sqrt(dT) (sqrt(log KT) ^ sqrt(d + log T)) sqrt(log T log log T)) [Thm 2], time
    O(K d^2 T log log T).

    Args:
        lam: Ridge of H and V_l; None is the paper's 1.
        seed: Seed of the policy's stream (BLCE itself draws nothing).

    Notes:
        At T = 1000 it makes 7 updates (defaults made for T = 10^4: ``GridPolicy``).

    Example:
        >>> p = BLCE(); p.begin(100)
        >>> p.act(Context(arms=np.eye(3))) in range(3)
        True
    """

    grid_name: ClassVar[str] = "blce"

    @property
    def lam_value(self) -> float:
        """lam, or 1 [Alg. 2 l.3]."""
        return self.lam if self.lam is not None else 1.0

    def _phase_lengths(self, ell: int) -> tuple[int, int]:
        assert self.horizon is not None
        if ell == 1:
            return 0, self.horizon
        return 0, math.ceil(self.c * phase_scale("blce", self.horizon, ell))


def phase_counts(policy: Any, horizon: int) -> dict[str, int]:
    """Rounds per phase over a run of ``horizon`` rounds (deterministic; for reports).

    Example:
        >>> p = BLCE(); p.begin(10_000); _ = p.act(Context(arms=np.eye(2)))
        >>> phase_counts(p, 10_000)
        {'design': 0, 'uncertainty': 5271, 'greedy': 4729}
    """
    counts = {"design": 0, "uncertainty": 0, "greedy": 0}
    start = 0
    for ell, end in enumerate(policy.update_times, 1):
        length = end - start
        n_design, n_uncertain = policy._phase_lengths(ell)
        design = min(n_design, length)
        uncertain = min(n_uncertain, length - design)
        counts["design"] += design
        counts["uncertainty"] += uncertain
        counts["greedy"] += length - design - uncertain
        start = end
    return counts
