"""Shared machinery of the grid policies with rare parameter updates [Yu2026, Sec. 2, 6].

A grid policy plays intervals (T_{l-1}, T_l] of a static grid fixed by the horizon before
round 1 (:mod:`~banditkit.policies.rare.grids`). Inside an interval it may keep reward-free
state that changes with the contexts and actions (a Gram matrix H of the interval's pulled
arms, updated by Sherman-Morrison after every pull); the rewards of the interval are only
read at its end T_l, where the interval's own estimate (theta_l, V_l^-1) is computed from that
interval's data alone (not pooled) and H is reset to lam * I [Yu2026, Alg. 1 l.10/22]. Each
estimate counts as one parameter update (``n_updates``), so a run of T rounds makes exactly B.

Parts: the interval buffer is an ``IntervalRows`` (a row ``History`` with a leaner
append), H a ``WithinGram`` (rank-1 inverse updates, bit for bit those of
``linalg.Gram``), the refit times a ``schedules.Grid``; the
elimination cascade is :mod:`~banditkit.policies.rare.elimination` (stacked once per
interval by ``GridPolicy._levels``, which leaves out the levels a policy proves inert), the
near-G-optimal draw a function of this module. A policy whose later rounds of an interval
no longer read H skips their Gram updates (``_gram_read``).

Rounds after T_B = T (a policy played past its horizon) play greedily with the last
estimate, with no further update.

References:
    In the package's docstring (``banditkit.policies.rare``): [Yu2026], the batched baselines.
"""

from __future__ import annotations

import functools
import math
from abc import abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

from banditkit.core import Context, ContextualPolicy, Policy
from banditkit.core.params import Check, Maybe, Real, param
from banditkit.core.types import Action, Feedback
from banditkit.core.validation import check_spd, check_state_array
from banditkit.linalg import g_optimal_design
from banditkit.policies.parts.propensity import ArrayLaw, PointLaw
from banditkit.policies.parts.schedules import Grid
from banditkit.policies.rare.elimination import (
    EliminationLevels,
    never_removes,
    quad_norms,
)
from banditkit.policies.rare.grids import check_grid, interval_of, update_grid
from banditkit.policies.rare.within import IntervalRows, WithinGram

__all__ = [
    "GRID",
    "RATE",
    "EliminationLevels",
    "GridPolicy",
    "blce_widths",
    "cascade",
    "cdf_probabilities",
    "design_pick",
    "draw_index",
    "near_g_cdf",
    "near_g_draw",
    "never_removes",
    "quad_norms",
    "ucb_cascade",
]


def cascade(
    arms: np.ndarray,
    thetas: Sequence[np.ndarray],
    inverses: Sequence[np.ndarray],
    beta: Callable[[int], float],
) -> np.ndarray:
    """Nested elimination with past estimates [Yu2026, Alg. 1 l.13-14, Alg. 2 l.10-11].

    Starting from A^(0) = all arms, for each level k (in order)

        x^(k)   = argmax_{x in A^(k-1)} <x, theta_k>
        eps_k   = max_{y in A^(k-1)} ||y||_{V_k^-1} * beta(|A^(k-1)|)
        A^(k)   = {x in A^(k-1) : <theta_k, x^(k) - x> <= 2 eps_k}

    One-off form of :class:`~banditkit.policies.rare.elimination.EliminationLevels`, which
    the policies build once per interval (see there for how a level is certified to
    remove nothing without its quadratic forms, and computed exactly otherwise).

    Args:
        arms: (K, d).
        thetas: theta_k, each (d,).
        inverses: V_k^-1, each (d, d).
        beta: The confidence multiplier as a function of the current set size.

    Returns:
        Indices of the surviving arms, increasing (the best arm of every level survives).
    """
    return EliminationLevels(thetas, inverses).survivors(arms, beta)


def ucb_cascade(
    arms: np.ndarray,
    thetas: Sequence[np.ndarray],
    inverses: Sequence[np.ndarray],
    beta: Callable[[int], float],
) -> np.ndarray:
    """Elimination by confidence bounds: keep x with UCB_k(x) >= max_y LCB_k(y), per level.

    UCB_k(x) = <theta_k, x> + beta ||x||_{V_k^-1}, LCB_k the same with a minus: the
    elimination of the strictly batched baselines [Ruan2021, Alg. 2; Zhang2025, Alg. 1].
    The arm with the largest LCB always survives. Returns the surviving indices.
    """
    idx = np.arange(arms.shape[0])
    for theta, inverse in zip(thetas, inverses, strict=True):
        S = arms[idx]
        mean = S @ theta
        width = beta(idx.size) * np.sqrt(np.maximum(quad_norms(S, inverse), 0.0))
        idx = idx[mean + width >= np.max(mean - width)]
    return idx


def near_g_draw(arms: np.ndarray, rng: np.random.Generator) -> int:
    """Draw a row index from a near-G-optimal design of the rows [Yu2026, Sec. 6.2].

    The design (``linalg.g_optimal_design`` with factor 2: max leverage <= 2 rank, Frank-Wolfe
    / Khachiyan from uniform weights, rank-deficient sets on their span) is recomputed on
    every call, since the arm set changes every round. One uniform draw per call.
    """
    return draw_index(near_g_cdf(arms), rng)


def near_g_cdf(arms: np.ndarray) -> np.ndarray:
    """The cumulative weights (n,) of the near-G-optimal design of the n rows (1 row: [1])."""
    if arms.shape[0] == 1:
        return np.ones(1)
    return np.cumsum(g_optimal_design(arms, factor=2.0))


def draw_index(cdf: np.ndarray, rng: np.random.Generator) -> int:
    """Index i with u cdf_n in [cdf_{i-1}, cdf_i), u ~ U[0, 1): one draw from ``rng``.

    Its probability is (cdf_i - cdf_{i-1}) / cdf_n (:func:`cdf_probabilities`).
    """
    u = rng.random()
    return int(min(np.searchsorted(cdf, u * cdf[-1], side="right"), cdf.shape[0] - 1))


def cdf_probabilities(cdf: np.ndarray) -> np.ndarray:
    """The probability of each index under :func:`draw_index`.

    Example:
        >>> cdf_probabilities(np.array([0.5, 1.5, 2.0])).tolist()
        [0.25, 0.5, 0.25]
    """
    return np.diff(cdf, prepend=0.0) / cdf[-1]


def design_pick(
    policy: Policy,
    rows: np.ndarray,
    n_arms: int,
    alive: np.ndarray | None = None,
) -> int:
    """A :func:`near_g_draw` over ``rows`` (the arms ``alive``, or all), its law proposed.

    Args:
        policy: The policy whose stream draws and to which the law is proposed.
        rows: The rows of the design (the surviving arms, possibly rescaled).
        n_arms: K, all the arms of the round.
        alive: The arm of each row (None: row k is arm k).

    Returns:
        The arm drawn, in [0, K).
    """
    cdf = near_g_cdf(rows)
    i = draw_index(cdf, policy.rng)
    law = np.zeros(n_arms)
    law[slice(None) if alive is None else alive] = cdf_probabilities(cdf)
    policy.propose(ArrayLaw(law))
    return i if alive is None else int(alive[i])


def blce_widths(
    d: int, n_intervals: int, horizon: int, lam: float
) -> Callable[[int], float]:
    """min(beta_1(n), beta_2) of Lemma 3 with delta = 2 / T [Yu2026, Sec. 6.2, eps_{t,k}].

        beta_1(n) = sqrt(2 ln(n (B - 1) T^2)) + sqrt(lam)
        beta_2    = 2 sqrt(ln(2^(6d-5) pi d (B - 1)^2 T^2 / 15^(d-1))) + 2 sqrt(lam)

    beta_2 is evaluated in log space and needs d >= 2 (Lemma 2); for d = 1 only beta_1 is
    used. With B = 1 (no elimination ever happens inside the grid) B - 1 is taken as 1.

    Example:
        >>> round(blce_widths(5, 8, 10_000, math.log(5 * 10_000))(1000), 2)
        10.68
    """
    b1 = max(n_intervals - 1, 1)
    root = math.sqrt(lam)
    if d >= 2:
        log_arg = (
            (6 * d - 5) * math.log(2.0)
            + math.log(math.pi * d)
            + 2.0 * math.log(b1)
            + 2.0 * math.log(horizon)
            - (d - 1) * math.log(15.0)
        )
        beta2 = 2.0 * math.sqrt(max(log_arg, 0.0)) + 2.0 * root
    else:
        beta2 = math.inf
    log_bt2 = math.log(b1) + 2.0 * math.log(horizon)

    def beta(n: int) -> float:
        return min(math.sqrt(2.0 * (math.log(max(n, 1)) + log_bt2)) + root, beta2)

    # called several times per round with set sizes up to K: remembered
    return functools.lru_cache(maxsize=1 << 16)(beta)


def _grid(name: str, value: Any) -> list[int]:
    """A grid of interval end points (``grids.check_grid``), stored as a list."""
    return list(check_grid(value))


#: The ``grid`` option: interval end points T_1 < ... (completed with T at the first round).
GRID = Check(_grid)
#: The within-interval allocation rate c, in (0, 1).
RATE = Real(low=0.0, high=1.0, low_open=True, high_open=True)


class GridPolicy(ContextualPolicy):
    """A policy refitted only at the end points of a static grid, from each interval's data.

    Subclasses set ``grid_name`` (the default grid, computed from the horizon), implement
    ``_choose(ctx, ell, offset)`` and ``_estimate()`` (the interval's estimate from
    ``self.buffer``), and may override ``_gram_weight`` (the weight of a pull in H).

    Args:
        grid: None (the algorithm's grid for the horizon, in its docstring) or the interval
            (batch) end points T_1 < ... (validated at the first round; completed with T).
        seed: Seed of the policy's own stream.

    Attributes:
        update_times: The end points T_1..T_B in use (after the first round).

    Notes:
        The defaults (the grids and allocation rates of the algorithm boxes) are made for
        the paper's horizon, T = 10^4 [Yu2026, Sec. 8]. Far shorter runs get a handful of
        updates and explore most of the time (at T = 1000, BLCE makes 7 updates:
        docs/rare.md); ``begin(T)`` warns below T = 2,500 unless ``c`` or ``grid`` is set.
    """

    requires_horizon: ClassVar[bool] = True
    design_horizon: ClassVar[int | None] = 10_000
    horizon_params: ClassVar[tuple[str, ...]] = ("c", "grid")
    grid_name: ClassVar[str] = "blce"

    grid: list[int] | None = param(Maybe(GRID), default=None)

    # ------------------------------------------------------------------ setup
    def _begin(self) -> None:
        if self.horizon is not None and self.grid is not None:
            check_grid(self.grid, self.horizon)

    def _setup(self, ctx: Context) -> None:
        assert self.horizon is not None
        if self.grid is None:
            self.update_times = self._default_grid()
        else:
            self.update_times = check_grid(self.grid, self.horizon)
        self.schedule = Grid(self.update_times)
        self._build()

    def _default_grid(self) -> tuple[int, ...]:
        """The algorithm's own grid for the horizon (``update_grid(grid_name, T)``)."""
        assert self.horizon is not None
        return update_grid(self.grid_name, self.horizon)

    def _build(self) -> None:
        assert self.d is not None
        self.buffer = IntervalRows(self.d, self.update_times[0])
        self.H = WithinGram(self.d, self.lam_value)
        self.thetas: list[np.ndarray] = []
        self.inverses: list[np.ndarray] = []
        self._levels_key: tuple[int, int] | None = None
        self._levels_cache = EliminationLevels([], [])
        self._window = (0, 0, 0)  # (T_{l-1}, T_l, l) of the current interval

    def _levels(self, start: int = 0) -> EliminationLevels:
        """The cascade of the estimates ``thetas[start:]``, stacked once per interval.

        The estimates change only at grid points, so the stacked matrices (and their top
        eigenvectors) are rebuilt only when an estimate has been added.
        """
        key = (start, len(self.thetas))
        if key != self._levels_key:
            last = len(self.thetas) - 1
            keep = [
                k for k in range(start, last + 1) if k == last or not self._inert(k)
            ]
            self._levels_cache = EliminationLevels(
                [self.thetas[k] for k in keep], [self.inverses[k] for k in keep]
            )
            self._levels_key = key
        return self._levels_cache

    def _inert(self, k: int) -> bool:
        """Whether estimate k provably never removes an arm (then the cascade skips it).

        Default: no level is skipped; BLCE-G and BLCE use ``never_removes``. The last
        estimate is always kept (the greedy rule reads its means).
        """
        return False

    @property
    def n_intervals(self) -> int:
        """B, the number of intervals (and of parameter updates over the horizon)."""
        return len(self.update_times)

    @property
    @abstractmethod
    def lam_value(self) -> float:
        """The ridge lam of H = lam I + sum x x^T (resolved from the horizon)."""

    # ------------------------------------------------------------------ the loop
    def _act(self, ctx: Context) -> Action:
        t = self.t + 1
        if t > self.update_times[-1] and self.thetas:
            # Past the horizon: greedy with the last estimate, no more updates.
            action = int(np.argmax(ctx.arms @ self.thetas[-1]))
        else:
            start, end, ell = self._window
            if not start < t <= end:  # a new interval (the grid is fixed)
                ell = interval_of(self.update_times, t)
                start = 0 if ell == 1 else self.update_times[ell - 2]
                end = self.update_times[ell - 1]
                self._window = (start, end, ell)
            action = self._choose(ctx, ell, t - start)
        if self._law is None:  # no draw: an arg-max rule, ties to the first index
            self.propose(PointLaw(action))
        return action

    @abstractmethod
    def _choose(self, ctx: Context, ell: int, offset: int) -> int:
        """The arm of round ``offset`` (1-based) of interval ``ell``.

        A rule that draws proposes its law (``design_pick``); a round that proposed none
        is deterministic (propensity 1).
        """

    def _gram_weight(self, x: np.ndarray) -> float:
        """Weight of a pull in the within-interval Gram H (1 for the linear algorithms)."""
        return 1.0

    def _gram_read(self, t: int) -> bool:
        """Whether H after round t is read again before the interval ends (default: yes).

        A policy whose later rounds of an interval no longer read H (BLCE's greedy phase)
        skips their reward-free updates: H is reset at the interval's end anyway.
        """
        return True

    def _update(self, ctx: Context, action: Action, feedback: Feedback) -> None:
        assert isinstance(action, int)
        x = ctx.arms[action]
        t = self.t + 1
        if t > self.update_times[-1]:
            return  # past the horizon: no more updates
        # Reward-free state: H <- H + w x x^T by Sherman-Morrison; the reward only goes
        # into the interval buffer, read at the interval's end.
        if self._gram_read(t):
            w = self._gram_weight(x)
            if x.dtype == np.float64 and 0.0 < w < math.inf:  # the Context checked x
                self.H.update_unchecked(x, float(w))
            else:
                self.H.update(x, w)
        self.buffer.append(x, float(feedback))
        if self.schedule.due(t):
            theta, inverse = self._estimate()
            self.thetas.append(theta)
            self.inverses.append(inverse)
            self._n_updates += 1
            ell = len(self.thetas)  # the next interval's rows, if it is in the grid
            times = self.update_times
            size = times[ell] - t if ell < len(times) else 1
            self.buffer = IntervalRows(self.d or 1, size)
            self.H = WithinGram(self.H.d, self.lam_value)

    @abstractmethod
    def _estimate(self) -> tuple[np.ndarray, np.ndarray]:
        """(theta_l, V_l^-1) from the interval's buffer and H."""

    def _ridge_estimate(self) -> tuple[np.ndarray, np.ndarray]:
        """Per-interval ridge: V = lam I + X^T X recomputed exactly, theta = V^-1 X^T r."""
        X, r = self.buffer.X, self.buffer.y
        V = self.lam_value * np.eye(X.shape[1]) + X.T @ X
        theta = np.linalg.solve(V, X.T @ r)
        inverse = np.linalg.inv(V)
        return theta, 0.5 * (inverse + inverse.T)

    # ------------------------------------------------------------------ state
    def _state(self) -> dict[str, Any]:
        d = self.d or 1
        return {
            "buffer": self.buffer.state_dict(),
            "H": self.H.state_dict(),
            "thetas": np.array(self.thetas).reshape(-1, d),
            "inverses": np.array(self.inverses).reshape(-1, d, d),
        }

    def _load_state(self, state: dict[str, Any]) -> None:
        assert self.horizon is not None
        self._setup(Context(arms=np.zeros((1, self.d or 1))))
        self.buffer.load_state_dict(state["buffer"])
        d = self.H.d
        self.H = WithinGram.from_state_dict(state["H"], d=d)
        thetas = check_state_array("thetas", state["thetas"], (None, d))
        inverses = check_state_array(
            "inverses", state["inverses"], (thetas.shape[0], d, d)
        )
        for k, inverse in enumerate(inverses):
            check_spd(f"inverses[{k}]", inverse, d)
        self.thetas, self.inverses = list(thetas), list(inverses)
