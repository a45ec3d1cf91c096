"""The nested elimination cascade of BLCE-G, BLCE and BGLE, fast and exact [Yu2026].

In every round of interval l >= 2 the grid policies shrink the arm set with the l - 1 past
estimates (theta_k, V_k^-1), level by level [Yu2026, Alg. 1 l.13-14, Alg. 2 l.10-11]:

    x^(k)   = argmax_{x in A^(k-1)} <x, theta_k>
    eps_k   = max_{y in A^(k-1)} ||y||_{V_k^-1} * beta(|A^(k-1)|)
    A^(k)   = {x in A^(k-1) : <theta_k, x^(k) - x> <= 2 eps_k}

Evaluated as written this costs one quadratic form per arm and per level, O(K d^2 (l - 1))
per round, in about ten array operations per level. At the paper's sizes (K d^2 = 25,000 at
(1000, 5)) the number of array operations, not the arithmetic, is the cost. Two things keep
it low (and levels that provably never remove an arm are left out: ``never_removes``).

**The pick first** (:meth:`EliminationLevels.survives`, see
:mod:`~banditkit.policies.rare.survival`): a round whose rule's pick over all arms provably
survives needs no set. An exploration round gets its scores x^T H^-1 x and the means of
every level from one product (:meth:`EliminationLevels.forms_first`) and, when the test
fails, computes only the rest of the product below.

**One product for the set** (:meth:`EliminationLevels.evaluate`), when the pick fails or the
set is needed. The estimates are fixed within an interval, so the matrix W whose rows are
theta_k (every level), the top eigenvector v_k of V_k^-1 (the levels tried by certificate)
and the d rows of V_k^-1 (the levels evaluated exactly) is built once per split and reused:

1. one product W X^T gives the means <x, theta_k> of all arms at all levels, the
   projections <x, v_k> and V_k^-1 x; one (arg-)maximum and minimum give every level's best
   and worst mean and largest projection;
2. a certified level: max_y ||y||^2_{V_k^-1} >= l1 max_y <y, v_k>^2 (l1 the top
   eigenvalue of V_k^-1), so if the widest gap is within 2 beta(n) sqrt(l1 max p^2), the
   level removes no arm whatever the exact maximum is (after an earlier level removed arms,
   the arm reaching max p must still be alive). Failing that, the exact forms of the two
   arms reaching furthest along v_k, either way (those still alive), are the bound. A level
   failing both is computed exactly this round and evaluated exactly from then on; an
   exact level that removes nothing for 8 rounds is certified again (the levels that
   remove arms stay the same from round to round);
3. an exact level, in order, on boolean masks: the forms of all arms at the exact levels
   from the product of step 1 (one operation for all of them), their maxima over the
   surviving arms (the whole set's when its arm is still alive), then the comparison of the
   algorithm, written as in the algorithm.

The survivors are therefore those of the level-by-level computation: a level is either
certified to remove nothing (then the exact computation removes nothing either) or
computed exactly. Only the floating-point order of the sums differs from a direct
evaluation (last-bit differences, which could matter only for a gap within about 1e-15
relative of its threshold).

The array operations these steps are built from (the stacked rows of a split, the
per-row maxima, the removal comparison as one array comparison) are in
:mod:`~banditkit.policies.rare.kernels`.

Round-off: a computed quadratic form errs by at most gamma_{2d+1} sqrt(d) cond(V_k)
relative; the bounds are shrunk by twice that, with a factor 2 to spare (a level with
cond(V_k) so large that this exceeds 1e-3 is always exact). A computed projection p errs
by at most gamma_d ||y||; l1 p^2 (1 - 1e-6) is below the true form unless |p| < 2e-9 ||y||,
and then it is below l_min ||y||^2 <= ||y||^2_{V_k^-1} anyway for any cond(V_k) < 1e11. A
computed mean errs by at most gamma_d ||theta_k||_1 max_j |x_j|, whatever product computed
it; the pick's test subtracts four such errors.

References:
    In the package's docstring (``banditkit.policies.rare``): [Yu2026], the batched baselines.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

from banditkit.policies.rare.kernels import (
    Plan,
    build_plan,
    first_arg,
    least_kept,
    quad_norms,
    row_tops,
)
from banditkit.policies.rare.survival import (
    _ARG_EXTREMES_UP_TO,
    _PROJECTION_SLACK,
    _UNIT,
    SurvivalTest,
    never_removes,
)

__all__ = [
    "EliminationLevels",
    "Extremes",
    "SurvivalTest",
    "never_removes",
    "quad_norms",
]

#: Rounds without a removal after which an exact level is tried by certificate again.
_QUIET_ROUNDS = 8

#: Up to this many entries K d, :meth:`EliminationLevels.forms_first` takes the forms
#: and the means from one product with a contiguous copy of X^T; beyond it (where the
#: copy of X^T costs more than it saves) from X A and a product for the means.
_ONE_PRODUCT_UP_TO = 20_000


class Extremes(NamedTuple):
    """Each head row's largest and smallest value and the arms reaching them (-1: later)."""

    hi: list[float]
    lo: list[float]
    i_hi: list[int]
    i_lo: list[int]
    #: Whether the arg-extremes were taken (few arms).
    small: bool


class EliminationLevels:
    """The estimates of the finished intervals, stacked once for the per-round cascade.

    Built at a grid point (the estimates change only there) and used for every round of
    the next interval through :meth:`survives`, :meth:`evaluate` or :meth:`survivors`.

    Args:
        thetas: theta_k, each (d,), in cascade order.
        inverses: V_k^-1, each (d, d), symmetric positive definite.

    Attributes:
        exact: Per level, whether it is evaluated exactly (True) or tried by certificate
            first; ill-conditioned levels are always exact, the others switch as above.
        alive: After :meth:`evaluate`, the surviving arms as a boolean mask, or None when
            every arm survives; ``n_alive`` is their number.
        means: After :meth:`evaluate`, <x, theta_m> of every arm (the last level, the
            greedy rule's scores), shape (K,).
        forms: After :meth:`evaluate` with ``extra``, x^T extra x of every arm, shape (K,).

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
        self.alive: np.ndarray | None = None
        self.n_alive = 0
        self.means = np.zeros(0)
        self.exact = [False] * self.m
        self._quiet = [0] * self.m
        self._Z = np.zeros((0, 0))
        self._plans: dict[tuple[bool, ...], Plan] = {}
        self._out: dict[tuple[str, int, int], np.ndarray] = {}  # reused buffers
        self._off = 0  # the first row of the means in _Z (d after an extra block)
        self._head_rows: dict[int, np.ndarray] = {}  # [extra; thetas], per d
        self._extra_rows: dict[
            tuple[bool, ...], np.ndarray
        ] = {}  # [W; extra], per split
        self._staged: tuple[np.ndarray, tuple[bool, ...]] | None = None
        self._arms_t: np.ndarray | None = None
        self.forms = np.zeros(0)
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
        self._ill = (self.shrink == 0.0).tolist()
        self.exact = list(self._ill)
        # l1 <y, v_k>^2 <= ||y||^2_{V_k^-1}, less the round-off of the projection
        self.lead = values[:, -1] * self.shrink * (1.0 - _PROJECTION_SLACK)
        self._lead = self.lead.tolist()
        self._shrink = self.shrink.tolist()
        self._survival = SurvivalTest(self.thetas, self.inverses, self.shrink)
        self._inverse_list = list(self.inverses)

    @property
    def scores(self) -> np.ndarray:
        """The means <x, theta_k> of the last round, every level, shape (m, K)."""
        return self._Z[self._off : self._off + self.m]

    def _plan(self, d: int) -> Plan:
        """W for the current split into certified and exact levels (cached, ``build_plan``)."""
        key = tuple(self.exact)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = build_plan(
                self.thetas, self.top, self.inverses, self.exact
            )
        return plan

    def _with_extra(self, plan: Plan, d: int) -> np.ndarray:
        """[W; d rows for ``extra``] of the current split (cached; the caller fills them)."""
        key = (*self.exact, True)
        W = self._extra_rows.get(key)
        if W is None:
            W = self._extra_rows[key] = np.concatenate([plan.W, np.zeros((d, d))])
        return W

    def _transposed(self, arms: np.ndarray) -> np.ndarray:
        """X^T as a contiguous array, in a buffer reused from round to round."""
        K, d = arms.shape
        XT = self._buffer(d, K, "arms")
        np.copyto(XT, arms.T)
        return XT

    def _buffer(self, rows: int, K: int, use: str = "product") -> np.ndarray:
        """A (rows, K) buffer reused from round to round, one per use and shape.

        A fresh array of a product's size costs as much as a third of the product.
        """
        Z = self._out.get((use, rows, K))
        if Z is None:
            Z = self._out[(use, rows, K)] = np.empty((rows, K))
        return Z

    def level_means(self, arms: np.ndarray) -> np.ndarray:
        """<x, theta_k> of every arm at every level, (m, K), into a reused buffer."""
        return np.matmul(
            self.thetas, arms.T, out=self._buffer(self.m, arms.shape[0], "means")
        )

    def greedy_pick(
        self, arms: np.ndarray, beta: Callable[[int], float]
    ) -> tuple[int, np.ndarray]:
        """The greedy rule's pick over all arms if it provably survives, else -1.

        argmax_x <x, theta_m> (first on ties), tested by :meth:`survives`; returned with
        the means of every level, (m, K) (the last row is the greedy rule's scores, for
        the cascade when the test fails).
        """
        means = self.level_means(arms)
        pick, passed = self._survival.top_survives(arms, means, beta)
        return (pick if passed else -1), means

    def forms_first(self, arms: np.ndarray, extra: np.ndarray) -> np.ndarray:
        """The first part of :meth:`evaluate` with ``extra``: x^T extra x and the means.

        One product [extra; theta_1..theta_m] X^T gives ``forms`` (x^T extra x of every
        arm) and the means <x, theta_k> of every level, returned, shape (m, K); a
        following :meth:`evaluate` of the same ``arms`` with ``extra`` computes only the
        rest of its product (an exploration round tests its pick with these means first,
        :meth:`survives`, and needs the rest only when the test fails).
        """
        K, d = arms.shape
        m = self.m
        plan = self._plan(d)
        Wa = self._head_rows.get(d)
        if Wa is None:
            Wa = self._head_rows[d] = np.concatenate(
                [np.zeros((d, d)), self.thetas.reshape(m, d)]
            )
        Z = self._Z = self._buffer(d + plan.W.shape[0], K)
        if K * d > _ONE_PRODUCT_UP_TO:  # X A row by row, no transposed copy of X
            np.matmul(self.thetas, arms.T, out=Z[d : d + m])
            self._arms_t = None
            self.forms = quad_norms(arms, extra)
        else:
            Wa[:d] = extra
            np.matmul(Wa, arms.T, out=Z[: d + m])
            # einsum is three times faster on a contiguous X^T than on a strided one
            self._arms_t = self._transposed(arms)
            self.forms = self._forms(Z[:d], arms, first=True)[0]
        self._staged = (arms, tuple(self.exact))
        return Z[d : d + m]

    def evaluate(
        self,
        arms: np.ndarray,
        beta: Callable[[int], float],
        extra: np.ndarray | None = None,
    ) -> None:
        """One round of the cascade: sets ``alive``, ``n_alive``, ``means`` (and ``forms``).

        Args:
            arms: (K, d).
            beta: The confidence multiplier as a function of the current set size.
            extra: A symmetric (d, d) matrix A, or None; with it, ``forms`` holds x^T A x
                of every arm, from the same product as the cascade's.
        """
        K, d = arms.shape
        self.alive, self.n_alive = None, K
        if self.m == 0:
            self._Z = np.zeros((0, K))
            self._off = 0
            if extra is not None:
                self.forms = quad_norms(arms, extra)
            return
        plan = self._plan(d)
        forms = self._product(arms, plan, extra)
        head = self._Z[self._off : self._off + plan.n_head]
        plan, extremes = self._extremes(head, plan, K)
        self.alive, self.n_alive = self._cascade(
            arms, beta, head, plan, extremes, forms
        )

    def _product(
        self, arms: np.ndarray, plan: Plan, extra: np.ndarray | None
    ) -> np.ndarray | None:
        """The rows W X^T of the round (``self._Z`` from row ``self._off``) and the means.

        Returns the forms x^T A x of every row block when the product holds them.
        """
        K, d = arms.shape
        m = self.m
        staged = self._staged
        forms: np.ndarray | None = None
        if (
            extra is not None
            and staged is not None
            and staged[0] is arms
            and staged[1] == tuple(self.exact)
        ):  # after :meth:`forms_first`: rows [extra; W], the rest of the product
            Z = self._Z
            off = d
            if plan.W.shape[0] > m:
                np.matmul(plan.W[m:], arms.T, out=Z[d + m :])
        elif extra is not None:  # one product, rows [W; extra]
            W = self._with_extra(plan, d)
            W[-d:] = extra
            Z = self._Z = self._buffer(W.shape[0], K)
            np.matmul(W, arms.T, out=Z)
            off = 0
            self._arms_t = None
            forms = self._forms(Z[plan.n_head :], arms)
            self.forms = forms[-1]
        else:
            Z = self._Z = self._buffer(plan.W.shape[0], K)
            np.matmul(plan.W, arms.T, out=Z)
            off = 0
            self._arms_t = None
        self._staged = None
        self._off = off
        self.means = Z[off + m - 1]
        return forms

    def _extremes(self, head: np.ndarray, plan: Plan, K: int) -> tuple[Plan, Extremes]:
        """Every head row's largest and smallest value, with the arms reaching them.

        Through the first arg-extreme (cheaper than max / min, and the arms reaching them
        serve the levels below); -1 where the arg-extreme is taken when needed.
        """
        offsets = plan.offsets
        if offsets.shape[0] != plan.n_head or (plan.n_head > 1 and offsets[1] != K):
            offsets = np.arange(plan.n_head, dtype=np.intp) * K
            plan = self._plans[tuple(self.exact)] = plan._replace(offsets=offsets)
        if K <= _ARG_EXTREMES_UP_TO:
            flat = head.ravel()
            arg_hi = head.argmax(axis=1)
            arg_lo = head.argmin(axis=1)
            hi = flat[arg_hi + offsets].tolist()
            lo = flat[arg_lo + offsets].tolist()
            return plan, Extremes(hi, lo, arg_hi.tolist(), arg_lo.tolist(), True)
        none = [-1] * plan.n_head
        return plan, Extremes(
            head.max(axis=1).tolist(), head.min(axis=1).tolist(), none, none, False
        )

    def _cascade(
        self,
        arms: np.ndarray,
        beta: Callable[[int], float],
        head: np.ndarray,
        plan: Plan,
        ext: Extremes,
        forms: np.ndarray | None,
    ) -> tuple[np.ndarray | None, int]:
        """The levels in turn: the survivors (None: all) and their number."""
        K = arms.shape[0]
        tops: list[float] = []
        i_tops: list[int] = []
        if forms is not None:
            tops, i_tops = row_tops(forms, ext.small)
        alive: np.ndarray | None = None
        n = K
        b = 2.0 * beta(K)
        rows, blocks, exact, quiet = plan.row, plan.block, self.exact, self._quiet
        for k in range(self.m):
            r = rows[k]
            if r >= 0:  # a certified level: try the certificates
                if self._certified(k, r, arms, head, ext, alive, b):
                    continue
                # the certificates fail: this level exactly, this round and the next
                exact[k] = True
                quiet[k] = 0
                q = quad_norms(arms, self._inverse_list[k])
                q_arg = int(q.argmax())
                q_top = float(q[q_arg])
            else:
                if forms is None:
                    forms = self._forms(self._Z[self._off + plan.n_head :], arms)
                    tops, i_tops = row_tops(forms, ext.small)
                jb = blocks[k]
                q, q_top, q_arg = forms[jb], tops[jb], i_tops[jb]
            count = self._level(k, head[k], ext, (q, q_top, q_arg), alive, n, beta(n))
            alive, removed = count[0], count[1] < n
            if removed:
                n = count[1]
                b = 2.0 * beta(n)
            if r < 0:  # a planned level
                if removed or self._ill[k]:
                    quiet[k] = 0
                else:
                    quiet[k] += 1
                    if quiet[k] >= _QUIET_ROUNDS:  # try the certificates again
                        exact[k] = False
        return alive, n

    def _certified(
        self,
        k: int,
        r: int,
        arms: np.ndarray,
        head: np.ndarray,
        ext: Extremes,
        alive: np.ndarray | None,
        b: float,
    ) -> bool:
        """Whether level k provably removes no survivor (its certificate row r)."""
        p_hi, p_lo = ext.hi[r], ext.lo[r]
        width = ext.hi[k] - ext.lo[k]  # >= the gaps of the surviving arms
        up = p_hi >= -p_lo
        pm = p_hi if up else -p_lo
        i = ext.i_hi[r] if up else ext.i_lo[r]
        if width <= math.sqrt(self._lead[k] * pm * pm) * b:
            if alive is None:
                return True
            if i < 0:
                i = first_arg(head[r], i, up)
            if alive[i]:  # the bound's arm survives: it bounds the maximum
                return True
        elif i < 0:
            i = first_arg(head[r], i, up)
        # the exact forms of the arms reaching furthest along v_k, either way
        low = 0.0
        j2 = ext.i_lo[r] if up else ext.i_hi[r]
        if j2 < 0:
            j2 = first_arg(head[r], j2, not up)
        inverse = self._inverse_list[k]
        for j in (i, j2):
            if alive is None or alive[j]:
                x = arms[j]
                low = max(low, float(x @ (inverse @ x)))
                if width <= math.sqrt(low * self._shrink[k]) * b:
                    return True
        return False

    def _level(
        self,
        k: int,
        s: np.ndarray,
        ext: Extremes,
        widths: tuple[np.ndarray, float, int],
        alive: np.ndarray | None,
        n: int,
        beta_n: float,
    ) -> tuple[np.ndarray | None, int]:
        """Level k as written: x^(k), eps_k over the survivors, the comparison.

        The maxima over the survivors are the whole set's when the arm holding them
        survives. Returns the survivors and their number.
        """
        q, q_top, q_arg = widths
        best = ext.hi[k]
        if alive is not None:
            s_arg = ext.i_hi[k]
            if s_arg < 0:
                s_arg = int(s.argmax())
            if q_arg < 0:
                q_arg = int(q.argmax())
            if not alive[s_arg]:  # the maximum over the survivors (exact)
                masked = np.where(alive, s, -np.inf)
                best = masked.item(masked.argmax())
            if not alive[q_arg]:  # with the removed arms at 0, as max(0, max q)
                masked = np.where(alive, q, 0.0)
                q_top = masked.item(masked.argmax())
        w = 2.0 * math.sqrt(max(q_top, 0.0)) * beta_n
        if best - ext.lo[k] <= w:
            return alive, n
        # the worst arm goes: compare every arm. best - s <= w as written, as one
        # comparison: s >= the least float c with fl(best - c) <= w (fl(best - s)
        # falls as s grows)
        c = least_kept(best, w)
        keep = best - s <= w if c is None else s >= c
        if alive is None:
            alive = keep
        else:
            alive &= keep
        return alive, int(np.count_nonzero(alive))

    def survives(
        self,
        arms: np.ndarray,
        i: int,
        beta: Callable[[int], float],
        means: np.ndarray | None = None,
        maxima: tuple[list[float], float] | None = None,
    ) -> bool:
        """A sufficient test that arm i survives every level (``SurvivalTest``).

        ``means``: the (m, K) means of every level if known; ``maxima``:
        :meth:`round_maxima` of these means, when several arms of one round are tested.
        """
        if self.m == 0:
            return True
        if means is None:
            means = self.thetas @ arms.T
        return self._survival(arms, i, beta, means, maxima)

    def round_maxima(
        self, arms: np.ndarray, means: np.ndarray
    ) -> tuple[list[float], float]:
        """max_x <x, theta_k> of every level and max_{x, j} |x_j| (for :meth:`survives`)."""
        return self._survival.maxima(arms, means)

    def _forms(
        self, rows: np.ndarray, arms: np.ndarray, first: bool = False
    ) -> np.ndarray:
        """x^T M x of every arm for the matrices whose rows M x are ``rows``, (blocks, K).

        einsum is faster on a contiguous X^T than on a strided one (docs/performance.md).
        """
        K, d = arms.shape
        if self._arms_t is None:
            self._arms_t = self._transposed(arms)
        blocks = rows.shape[0] // d
        return np.einsum(
            "rdk,dk->rk",
            rows.reshape(blocks, d, K),
            self._arms_t,
            out=self._buffer(blocks, K, "forms" if first else "exact forms"),
        )

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
