"""Baselines of the rare-update experiments [Yu2026, Sec. 8]: RS-OFUL and three batched ones.

    rs-oful          rarely switching OFUL [Abbasi-Yadkori2011, Fig. 3]: optimism with the
                     estimate recomputed only when det(V_t) > (1 + C) det(V_tau)
    batchlinucb-dg   [Ruan2021] strictly batched: per-round near-G-optimal design on the
                     arms surviving confidence-bound elimination by every past batch
    batch-learning   [Zhang2025] strictly batched: a near-G-optimal design in every round of
                     batch 1 (length ~ sqrt(dT)), then elimination and exploration along the
                     previous batch's least-explored direction (a rule fixed at batch start)
    softbatch        [Hanna2023] soft elimination: arms rescaled by 1 / (1 + gap / eps_m);
                     half the rounds sample a near-G-optimal design of the rescaled set,
                     half play the estimated best arm

The paper gives only the names, citations and a few constants of these baselines; the
recipes are our reading of the original papers and are documented in docs/rare.md
(section "Baselines"). Every design call uses the same near-G-optimal routine as BLCE-G.

References:
    In the package's docstring (``banditkit.policies.rare``): [Yu2026], the batched baselines.
    [Abbasi-Yadkori2011] Y. Abbasi-Yadkori, D. Pal, C. Szepesvari. Improved algorithms for
        linear stochastic bandits. NeurIPS 2011.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from banditkit.core import POLICIES, Context, ContextualPolicy
from banditkit.core.params import POSITIVE, UNIT, Maybe, Real, fixed, param
from banditkit.core.types import Action, Feedback
from banditkit.core.validation import check_scalar, check_spd, check_state_array
from banditkit.linalg import Gram
from banditkit.policies.parts.propensity import ArrayLaw, Mixture, PointLaw
from banditkit.policies.parts.schedules import DeterminantDoubling
from banditkit.policies.rare.base import (
    GridPolicy,
    cdf_probabilities,
    design_pick,
    draw_index,
    near_g_cdf,
    quad_norms,
    ucb_cascade,
)
from banditkit.policies.rare.grids import update_grid

__all__ = ["RSOFUL", "BatchLearning", "BatchLinUCBDG", "SoftBatch"]


@POLICIES.register("rs-oful")
class RSOFUL(ContextualPolicy):
    """Rarely switching OFUL [Abbasi-Yadkori2011, Fig. 3], the paper's RS-OFUL baseline.

    V_t = lam I + sum x x^T and b_t = sum r x are updated every round (reward-free log det by
    the matrix determinant lemma); the estimate and its confidence set are recomputed only
    when log det V_t > log(1 + C) + log det V_tau (``schedules.DeterminantDoubling(1 + C)``):

        theta_tau = V_tau^-1 b_tau,
        beta_tau  = R sqrt(2 ln(1/delta) + ln(det V_tau / det(lam I))) + sqrt(lam) S,
        x_t       = argmax_x <x, theta_tau> + beta_tau ||x||_{V_tau^-1}.

    Each recomputation counts as one parameter update: about d ln(1 + T/(d lam)) / ln(1 + C).

    Args:
        C: Switching parameter > 0 (paper: 1 in Sec. 8, 3 in App. D.1).
        lam: Ridge, > 0.
        R: Sub-Gaussian scale of the noise, > 0.
        S: Bound on ||theta*||, > 0.
        delta: Confidence level in (0, 1); None is 1 / T (needs the horizon, else 0.01).
        seed: Seed of the policy's stream (ties go to the first index).

    Example:
        >>> p = RSOFUL(); p.begin(50)
        >>> p.act(Context(arms=np.eye(2))) in (0, 1)
        True
    """

    C: float = param(POSITIVE, default=1.0)
    lam: float = param(POSITIVE, default=1.0)
    R: float = param(POSITIVE, default=1.0)
    S: float = param(POSITIVE, default=1.0)
    delta: float | None = param(
        Maybe(Real(low=0.0, high=1.0, low_open=True, high_open=True)), default=None
    )

    def _setup(self, ctx: Context) -> None:
        self._build()

    def _build(self) -> None:
        assert self.d is not None
        self.V = Gram(self.d, self.lam)
        self.b = np.zeros(self.d)
        self.schedule = DeterminantDoubling(1.0 + self.C)
        self.theta = np.zeros(self.d)
        self.V_tau_inv = np.eye(self.d) / self.lam
        self.beta = self._radius(self.V.logdet)

    def _radius(self, logdet: float) -> float:
        assert self.d is not None
        if self.delta is not None:
            delta = self.delta
        else:
            delta = 1.0 / self.horizon if self.horizon and self.horizon > 1 else 0.01
        ratio = max(logdet - self.d * math.log(self.lam), 0.0)
        return (
            self.R * math.sqrt(2.0 * math.log(1.0 / delta) + ratio)
            + math.sqrt(self.lam) * self.S
        )

    def _act(self, ctx: Context) -> Action:
        X = ctx.arms
        width = np.sqrt(np.maximum(quad_norms(X, self.V_tau_inv), 0.0))
        action = int(np.argmax(X @ self.theta + self.beta * width))
        self.propose(PointLaw(action))  # ties to the first index: deterministic
        return action

    def _update(self, ctx: Context, action: Action, feedback: Feedback) -> None:
        assert isinstance(action, int)
        x = ctx.arms[action]
        self.V.update(x)
        self.b = self.b + float(feedback) * x
        # The test of round t + 1, evaluated as soon as V_t is known.
        if self.schedule.due(self.t + 1, self.V):
            self.V_tau_inv = np.array(self.V.inverse)
            self.theta = self.V_tau_inv @ self.b
            self.beta = self._radius(self.V.logdet)
            self._n_updates += 1

    def _state(self) -> dict[str, Any]:
        return {
            "V": self.V.state_dict(),
            "b": self.b,
            "schedule": self.schedule.state_dict(),
            "theta": self.theta,
            "V_tau_inv": self.V_tau_inv,
            "beta": self.beta,
        }

    def _load_state(self, state: dict[str, Any]) -> None:
        self._build()
        d = self.V.d
        self.V = Gram.from_state_dict(state["V"], d=d)
        self.b = check_state_array("b", state["b"], (d,))
        self.schedule.load_state_dict(state["schedule"])
        self.theta = check_state_array("theta", state["theta"], (d,))
        self.V_tau_inv = check_spd("V_tau_inv", state["V_tau_inv"], d)
        self.beta = check_scalar("beta", state["beta"], low=0.0)


class _BatchedRidge(GridPolicy):
    """Strictly batched ridge baselines: per-batch ridge (lam I + X^T X), a doubling grid.

    Args:
        nu: Scale of the elimination width, >= 0 (1: the theory's width).
        lam: Ridge, > 0.
        seed: Seed of the design draws.
    """

    grid_name: ClassVar[str] = "doubling"

    nu: float = param(Real(low=0.0), default=1.0)
    lam: float = param(POSITIVE, default=1.0)

    @property
    def lam_value(self) -> float:
        """The ridge lam."""
        return self.lam

    def _width(self, n: int) -> float:
        """Confidence multiplier sqrt(2 ln(n M T^2)) + sqrt(lam).

        delta = 1/T, a union bound over n arms, M batches and T rounds.
        """
        assert self.horizon is not None
        return self.nu * (
            math.sqrt(
                2.0 * math.log(max(n, 1) * self.n_intervals * float(self.horizon) ** 2)
            )
            + math.sqrt(self.lam)
        )

    def _survivors(self, arms: np.ndarray) -> np.ndarray:
        return ucb_cascade(arms, self.thetas, self.inverses, self._width)

    def _estimate(self) -> tuple[np.ndarray, np.ndarray]:
        return self._ridge_estimate()


@POLICIES.register("batchlinucb-dg")
class BatchLinUCBDG(_BatchedRidge):
    """BatchLinUCB-DG [Ruan2021], the per-round G-optimal-design variant.

    Batch 1 samples every round from a near-G-optimal design of the round's arms; batch
    k >= 2 first eliminates, with every finished batch j, the arms whose UCB_j is below the
    best LCB_j (width sqrt(2 ln(|A| M T^2)) + sqrt(lam) times ||x||_{Lambda_j^-1}), then
    samples from the near-G-optimal design of the survivors. Deviation: the original learns
    a distributional optimal design (a mixture of designs of transformed sets) from the
    previous batch's contexts; this is the fallback of a fresh design of each round's
    surviving set, which keeps the per-round design cost the paper attributes to it.
    The grid is ``update_grid("doubling", T)``, T_k = ceil(T^(1 - 2^-k)).

    Example:
        >>> p = BatchLinUCBDG(); p.begin(50)
        >>> p.act(Context(arms=np.eye(3))) in range(3)
        True
    """

    def _choose(self, ctx: Context, ell: int, offset: int) -> int:
        alive = self._survivors(ctx.arms)
        return design_pick(self, ctx.arms[alive], ctx.n_arms, alive)


@POLICIES.register("batch-learning")
class BatchLearning(_BatchedRidge):
    """BatchLearning [Zhang2025, Alg. 1], our reading of its batches.

    Batch 1 has length ceil(sqrt(d T)) and samples every round from a near-G-optimal design
    of the round's arms (the O(K d^3)-per-round cost the paper charges it). Batch k >= 2
    eliminates with every finished batch's confidence bounds, as ``batchlinucb-dg``, then
    plays the survivor with the largest ||x||_{Lambda_{k-1}^-1}: a rule fixed at the batch
    start (strictly batched, no within-batch Gram updates). Later end points follow the
    doubling grid past the first batch.

    Example:
        >>> p = BatchLearning(); p.begin(50)
        >>> p.act(Context(arms=np.eye(3))) in range(3)
        True
    """

    def _default_grid(self) -> tuple[int, ...]:
        assert self.horizon is not None and self.d is not None
        first = min(math.ceil(math.sqrt(self.d * self.horizon)), self.horizon)
        return (first, *(t for t in update_grid("doubling", self.horizon) if t > first))

    def _choose(self, ctx: Context, ell: int, offset: int) -> int:
        if ell == 1:
            return design_pick(self, ctx.arms, ctx.n_arms)
        alive = self._survivors(ctx.arms)
        S = ctx.arms[alive]
        return int(alive[int(np.argmax(quad_norms(S, self.inverses[-1])))])


@POLICIES.register("softbatch")
class SoftBatch(_BatchedRidge):
    """SoftBatch [Hanna2023], our reading of soft elimination.

    Batch 1 samples from a near-G-optimal design of the round's arms. In batch m >= 2, with
    gaps Delta(x) = max_y <theta_{m-1}, y> - <theta_{m-1}, x>, every arm is rescaled to
    x / (1 + Delta(x) / eps_m), eps_m = max(q, sqrt(d / n_{m-1})) (n_{m-1} the previous
    batch's length, q the discretisation parameter, 1 / (8 sqrt d) in the paper); with
    probability ``explore`` (1/2) the round samples an arm from the near-G-optimal design of the rescaled
    set, otherwise it plays argmax <theta_{m-1}, x>. The regression uses the arms as played.

    Args:
        q: Discretisation parameter, > 0; None is 1 / (8 sqrt d) [Yu2026, Sec. 8].
        explore: Probability of a design round in batches m >= 2, in [0, 1]; 1/2 in
            our reading of the original.
        lam: Ridge, > 0.
        seed: Seed of the coins and design draws.

    Example:
        >>> p = SoftBatch(); p.begin(50)
        >>> p.act(Context(arms=np.eye(3))) in range(3)
        True
    """

    q: float | None = param(Maybe(POSITIVE), default=None)
    explore: float = param(UNIT, default=0.5)
    nu = fixed(1.0)  # SoftBatch has no optimism

    def _choose(self, ctx: Context, ell: int, offset: int) -> int:
        arms = ctx.arms
        if ell == 1:
            return design_pick(self, arms, ctx.n_arms)
        assert self.d is not None
        theta = self.thetas[-1]
        scores = arms @ theta
        exploit = self.rng.random() >= self.explore
        previous = self.update_times[ell - 2] - (
            self.update_times[ell - 3] if ell > 2 else 0
        )
        q = self.q if self.q is not None else 1.0 / (8.0 * math.sqrt(self.d))
        eps = max(q, math.sqrt(self.d / previous))
        scaled = arms / (1.0 + (scores.max() - scores) / eps)[:, None]
        # the law of both branches: the design is computed in greedy rounds too
        cdf, greedy = near_g_cdf(scaled), int(np.argmax(scores))
        design = ArrayLaw(cdf_probabilities(cdf))
        self.propose(
            Mixture([(1 - self.explore, PointLaw(greedy)), (self.explore, design)])
        )
        return greedy if exploit else draw_index(cdf, self.rng)
