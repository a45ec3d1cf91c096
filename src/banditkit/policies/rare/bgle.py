"""BGLE [Yu2026, Alg. 3, App. C] and the B-GLinCB baseline [Sawarni2024]: logistic bandits.

BGLE is BLCE for generalised linear rewards: per-interval constrained MLEs of the log-loss,
a weighted within-interval Gram and a cascade that starts at the second estimate. With
L = log2 log2 T, lam = R^2 (d + ln T) and

    beta = 24 R S (sqrt(d + ln T) + R (d + ln T) / sqrt(lam)) + 2 S sqrt(lam),

interval 1 explores with argmax ||x||_{H^-1} (H unweighted). In interval l >= 2, for
k = 2..l-1 the set shrinks to {x : <theta_k, x^(k) - x> <= 2 beta max_y ||y||_{V_k^-1}}
(Alg. 3 l.11-13); the first ceil(c T^(1 - 2^min(4-l,1)/3) / L) rounds play argmax
||x||_{H^-1} on the survivors, the rest argmax <x, theta_{l-1}>, and every pull adds

    alpha mu'(<x, theta_{l-1}>) x x^T to H,
    alpha = exp(-2 R S) if l - 1 = 1, else exp(-R min(2S, beta ||x||_{V_{l-1}^-1}))

(Alg. 3 l.18). theta_l = argmin_{||theta|| <= S} sum_{interval l} m(<x, theta>) - r <x, theta>
(the paper assumes ||theta_l|| <= S; we impose it, ``glm.fit_glm_constrained``, warm-started
at theta_{l-1}), V_l = H at T_l.

References:
    In the package's docstring (``banditkit.policies.rare``): [Yu2026], the batched baselines.
    [Sawarni2024] A. Sawarni, N. Das, S. Barman, G. Sinha. Generalized linear bandits with
        limited adaptivity. NeurIPS 2024.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
from scipy.special import expit

from banditkit.core import POLICIES, Context
from banditkit.core.params import POSITIVE, Int, Maybe, Real, param
from banditkit.glm import fit_glm_constrained
from banditkit.policies.rare.base import (
    RATE,
    GridPolicy,
    design_pick,
    quad_norms,
    ucb_cascade,
)
from banditkit.policies.rare.grids import phase_scale

__all__ = ["BGLE", "BGLinCB", "bglincb_warmup"]


def _mu_dot(z: np.ndarray | float) -> Any:
    """mu'(z) = mu(z) (1 - mu(z)) of the logistic link."""
    m = expit(z)
    return m * (1.0 - m)


class _LogisticGrid(GridPolicy):
    """Logistic rewards in [0, 1], the constrained per-interval MLE, its warm start."""

    reward_kind = "binary"

    S: float = param(POSITIVE, default=1.0)
    R: float = param(POSITIVE, default=1.0)

    def _resolve(self) -> None:
        self.n_constrained = 0

    def _mle(self) -> np.ndarray:
        """Argmin over ||theta|| <= S of the interval's log-loss (warm start theta_{l-1})."""
        start = self.thetas[-1] if self.thetas else None
        fit = fit_glm_constrained(
            self.buffer.X, self.buffer.y, radius=self.S, lam=0.0, theta0=start
        )
        if np.linalg.norm(fit.theta) >= self.S * (1.0 - 1e-9):
            self.n_constrained += 1
        return np.asarray(fit.theta, dtype=float)


@POLICIES.register("bgle")
class BGLE(_LogisticGrid):
    """BGLE [Yu2026, Alg. 3]: batched GLM elimination, kappa-free, O(log log T) updates.

    Grid T_l = l ceil(T^(1/3)/L) for l <= 3, T_l = min(T_{l-1} + ceil(T^(1-1/(3 2^(l-4)))/L),
    T) for l >= 4; logistic link; see the module docstring for the rules. Leading regret
    O(RS sqrt(d (d + log T) T log T log log T / kappa_hat)) with no kappa [Thm 3].

    Args:
        c: Allocation rate in (0, 1); the paper's default 0.5.
        S: Bound on ||theta*||, > 0 (the MLE is constrained to this ball).
        R: Bound on the rewards, > 0 (1 for Bernoulli rewards).
        seed: Seed of the policy's stream (BGLE itself draws nothing).

    Notes:
        At T = 1000 it makes 9 updates (defaults made for T = 10^4: ``GridPolicy``).

    Example:
        >>> p = BGLE(); p.begin(100)
        >>> p.act(Context(arms=np.eye(3))) in range(3)
        True
    """

    grid_name: ClassVar[str] = "bgle"

    c: float = param(RATE, default=0.5)

    def _resolve(self) -> None:
        super()._resolve()
        self._ell = 1

    @property
    def lam_value(self) -> float:
        """Lam = R^2 (d + ln T) [Alg. 3 l.3]."""
        assert self.d is not None and self.horizon is not None
        return self.R**2 * (self.d + math.log(self.horizon))

    @property
    def beta(self) -> float:
        """The elimination width: 24 R S (sqrt(g) + R g / sqrt(lam)) + 2 S sqrt(lam), g = d + ln T."""
        assert self.d is not None and self.horizon is not None
        g = self.d + math.log(self.horizon)
        lam = self.lam_value
        return 24.0 * self.R * self.S * (
            math.sqrt(g) + self.R * g / math.sqrt(lam)
        ) + 2.0 * self.S * math.sqrt(lam)

    def _choose(self, ctx: Context, ell: int, offset: int) -> int:
        arms = ctx.arms
        self._ell = ell
        if ell == 1:
            return int(np.argmax(quad_norms(arms, self.H.inverse)))
        beta = self.beta
        # theta_2 .. theta_{l-1} (inside the horizon, thetas holds theta_1 .. theta_{l-1})
        levels = self._levels(1)
        alive = levels.survivors(arms, lambda n: beta)
        everyone = alive.size == arms.shape[0]
        assert self.horizon is not None
        if offset <= math.ceil(self.c * phase_scale("bgle", self.horizon, ell)):
            S = arms if everyone else arms[alive]
            return int(alive[int(np.argmax(quad_norms(S, self.H.inverse)))])
        # <x, theta_{l-1}>: the cascade's last level (none yet in interval 2)
        means = arms @ self.thetas[-1] if levels.m == 0 else levels.scores[-1]
        return int(alive[int(np.argmax(means if everyone else means[alive]))])

    def _gram_weight(self, x: np.ndarray) -> float:
        t = self.t + 1
        if t <= self.update_times[0] or not self.thetas:
            return 1.0  # interval 1: unweighted (Alg. 3 l.6)
        theta = self.thetas[-1]
        if len(self.thetas) == 1:
            alpha = math.exp(-2.0 * self.R * self.S)
        else:
            norm = math.sqrt(max(float(x @ self.inverses[-1] @ x), 0.0))
            alpha = math.exp(-self.R * min(2.0 * self.S, norm * self.beta))
        return max(alpha * float(_mu_dot(float(x @ theta))), 1e-300)

    def _estimate(self) -> tuple[np.ndarray, np.ndarray]:
        inverse = np.linalg.inv(self.H.matrix)
        return self._mle(), 0.5 * (inverse + inverse.T)


def bglincb_warmup(
    horizon: int, d: int, *, kappa: float, R: float = 1.0, S: float = 1.0
) -> int:
    """Warm-up length of B-GLinCB, (900 R^2 S sqrt(kappa) e^(3RS) d^3 ln T sqrt(T))^(2/3).

    As quoted by [Yu2026, App. D.2] from [Sawarni2024]; at T = 10^4 it exceeds T for every
    d >= 1, so B-GLinCB stays in its warm-up (one batch).

    Example:
        >>> bglincb_warmup(10_000, 2, kappa=1.0) > 10_000
        True
    """
    value = (
        900.0
        * R**2
        * S
        * math.sqrt(kappa)
        * math.exp(3.0 * R * S)
        * d**3
        * math.log(horizon)
        * math.sqrt(horizon)
    ) ** (2.0 / 3.0)
    return math.ceil(value)


@POLICIES.register("b-glincb")
class BGLinCB(_LogisticGrid):
    """B-GLinCB [Sawarni2024], our reading; the GLM baseline of [Yu2026, App. D.2].

    Warm-up: every round samples from a near-G-optimal design of the round's arms, for
    tau_1 = ``bglincb_warmup(T, d, kappa)`` rounds (capped at T: with the paper's constants
    the whole run is warm-up, one batch, one MLE). After a warm-up shorter than T (a
    smaller ``warmup``), batches end at tau_k = ceil(sqrt(T tau_{k-1})); in batch k >= 2 the
    arms are eliminated with every finished batch's MLE and the widths
    beta ||x||_{W_j^-1}, W_j = lam I + sum mu'(<x, theta_w>) x x^T / e over batch j
    (theta_w the warm-up MLE, beta = sqrt(2 ln(|A| M T^2)) + sqrt(lam)), and an arm is
    sampled from the near-G-optimal design of the survivors scaled by sqrt(mu'(<x, theta_w>)).

    Args:
        kappa: The instance's kappa = max 1 / mu'(<x, theta*>); None is the worst case
            1 / mu'(S) for ||x|| <= 1.
        warmup: Warm-up length override (None: the formula).
        nu: Scale of the elimination width, >= 0 (1: the width above).
        lam: Ridge of W_j, > 0.
        S: Bound on ||theta*||, > 0.
        R: Bound on the rewards, > 0.
        seed: Seed of the design draws.

    Example:
        >>> p = BGLinCB(); p.begin(100)
        >>> p.act(Context(arms=np.eye(3))) in range(3)
        True
    """

    grid_name: ClassVar[str] = "doubling"

    kappa: float | None = param(Maybe(Real(low=1.0)), default=None)
    warmup: int | None = param(Maybe(Int(low=1)), default=None)
    nu: float = param(Real(low=0.0), default=1.0)
    lam: float = param(POSITIVE, default=1.0)

    @property
    def lam_value(self) -> float:
        """The ridge lam of W."""
        return self.lam

    def _default_grid(self) -> tuple[int, ...]:
        assert self.horizon is not None and self.d is not None
        T = self.horizon
        kappa = self.kappa if self.kappa is not None else 1.0 / float(_mu_dot(self.S))
        tau = self.warmup or bglincb_warmup(T, self.d, kappa=kappa, R=self.R, S=self.S)
        ends = [min(max(tau, 1), T)]
        while ends[-1] < T:
            ends.append(min(max(math.ceil(math.sqrt(T * ends[-1])), ends[-1] + 1), T))
        return tuple(ends)

    def _width(self, n: int) -> float:
        assert self.horizon is not None
        return self.nu * (
            math.sqrt(
                2.0 * math.log(max(n, 1) * self.n_intervals * float(self.horizon) ** 2)
            )
            + math.sqrt(self.lam)
        )

    def _choose(self, ctx: Context, ell: int, offset: int) -> int:
        arms = ctx.arms
        if ell == 1:
            return design_pick(self, arms, ctx.n_arms)
        alive = ucb_cascade(arms, self.thetas[1:], self.inverses[1:], self._width)
        scale = np.sqrt(_mu_dot(arms[alive] @ self.thetas[0]))
        return design_pick(self, arms[alive] * scale[:, None], ctx.n_arms, alive)

    def _gram_weight(self, x: np.ndarray) -> float:
        if not self.thetas:
            return 1.0
        return max(float(_mu_dot(float(x @ self.thetas[0]))) / math.e, 1e-300)

    def _estimate(self) -> tuple[np.ndarray, np.ndarray]:
        inverse = np.linalg.inv(self.H.matrix)
        return self._mle(), 0.5 * (inverse + inverse.T)
