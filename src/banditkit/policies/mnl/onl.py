"""ONL-MNL [Hwang2025, Alg. 1]: MNL bandits with non-linear utilities f_w(x).

Phase I (t <= t0): uniformly random assortments; then the pilot estimate

    w_0 = argmin_w L(w),  L(w) = -sum_{t <= t0} log p(i_t | X_t, S_t, w)      (Sec. 3.1)

(Alg. 1, l. 5; the MNL NLL with the outside option, minimised by full-batch Adam with
lr 1e-4 and 2000 steps [Hwang2025, G]).

Phase II (t > t0): each round

    w_t  = argmin_w l_t(w)                                                      (Alg. 1, l. 9)
    l_t(w) = -sum_{s=t0+1}^{t-1} sum_{i in S_s + {0}} y_si log p^_si(w)
             + (lam / 2) ||w - w_0||^2                                                 (Eq. 2)

where p^_si(w) is the MNL probability of the linearised utility
u_si(w) = f_{w_s}(x_si) + g_si^T (w - w_s), g_si = grad_w f_{w_s}(x_si), frozen at the round's
own estimate w_s. l_t is strictly convex (a linear-utility MNL likelihood in w with features
g_si and offsets f_{w_s}(x_si) - g_si^T w_s); it is minimised exactly by damped Newton,
warm-started at w_{t-1} (``glm.fit_mnl``). Then

    V_t  = lam I + sum_{s=t0+1}^{t-1} sum_{i in S_s} g_si g_si^T               (Alg. 1, l. 12)
    z_ti = f_{w_t}(x_ti) + sqrt(beta_t) ||grad f_{w_t}(x_ti)||_{V_t^-1} + beta_t C_h / lam
                                                                                (Alg. 1, l. 10)
    S_t  = argmax_{|S| <= K} sum_{i in S} r_ti e^{z_ti} / (1 + sum_{j in S} e^{z_tj})
                                                                                (Alg. 1, l. 11)

with the network evaluated non-linearly at w_t and the exact assortment optimiser.
Practical constants [Hwang2025, Sec. 4 and G]: lam = c_lam kappa^{-5/2} d_w sqrt(T) and
beta_t = c_beta kappa^{-4} d_w t / T; the kappa factors are absorbed into the scales,
``lam = lam_scale d_w sqrt(T)`` and ``beta_t = beta_scale d_w t / T`` (``beta_schedule=
"practical"``) or ``beta_scale d_w log(1 + t)`` (``"theory"``, Lemma 5's logarithmic rate).
V starts at lam I at the first Phase-II round (Alg. 1 writes V_{t0}; the definition gives
V_{t0+1}).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from banditkit.core import POLICIES
from banditkit.core.params import POSITIVE, Choice, Int, Real, param
from banditkit.core.policy import AssortmentPolicy
from banditkit.core.types import Action, Context, Feedback
from banditkit.core.validation import (
    check_state_array,
)
from banditkit.glm.mnl import MNLSetBuffer, fit_mnl, refit_mnl
from banditkit.linalg import Gram
from banditkit.policies.mnl.common import (
    PHASE1_SAMPLERS,
    UniformAssortmentLaw,
    UtilityNet,
    capacity_of,
    offered_set,
    slot_of,
)
from banditkit.policies.parts.history import SetHistory
from banditkit.policies.parts.models.compute import DEVICE, DTYPE
from banditkit.policies.parts.propensity import PointLaw

__all__ = ["ONLMNL"]

BETA_SCHEDULES = ("practical", "theory")
SOLVERS = ("newton", "lagged")


@POLICIES.register("onl-mnl")
class ONLMNL(AssortmentPolicy):
    """ONL-MNL [Hwang2025, Alg. 1] with a two-layer sigmoid utility network (module docstring).

    Args:
        width: Hidden units m of f_w (3 in the realizable experiments, 15 misspecified).
        t0: Phase-I length (random assortments before the pilot fit).
        lam_scale: lam = lam_scale * d_w * sqrt(T) (T from ``begin``).
        beta_scale: beta_T = beta_scale * d_w (the practical schedule).
        beta_schedule: "practical" (beta_t = beta_scale d_w t / T, the experiments) or
            "theory" (beta_scale d_w log(1 + t)).
        ch: C_h, the Hessian bound in the constant bonus beta_t C_h / lam (0 disables it;
            it changes nothing under equal revenues).
        pilot_lr: Adam step size of the pilot fit.
        pilot_steps: Adam steps of the pilot fit.
        phase1: Phase-I sampler: "uniform" over all sets of at most K items, or "exactly-k".
        update_every: Re-solve Eq. (2) every this many Phase-II rounds (1: every round).
        solver: "newton" (the exact Hessian at every iteration) or "lagged" (start from the
            previous solve's Hessian plus the new set's, switch to the exact Hessian when a
            step leaves more than a quarter of the gradient, rebuild it after a solve of
            more than 2 steps; ``glm.fit_mnl``). Both stop at the same gradient tolerance.
        tol: Newton stops when ||grad l_t|| <= tol * max(1, lam).
        dtype: "float32" (default since 2026-12-06; docs/performance.md, "The default
            dtype") or "float64" (the default before): the utility network and its fits.
        device: "cpu" (default), "cuda", "cuda:N" or "auto": where the network and
            its fits run (``policies.parts.models.compute``).
        seed: Seed of the policy's stream (initialisation, Phase I).

    Example:
        >>> from banditkit.core import Context
        >>> policy = ONLMNL(t0=1, pilot_steps=5, seed=0)
        >>> policy.begin(10)
        >>> ctx = Context(arms=np.eye(4)[:, :3], max_size=2)
        >>> offer = policy.act(ctx); policy.update(ctx, offer, -1)
        >>> len(policy.act(ctx)), policy.phase
        (2, 2)
    """

    needs_torch = True
    requires_horizon: ClassVar[bool] = True
    contract_params: ClassVar[dict[str, Any]] = {
        "width": 2,
        "t0": 3,
        "pilot_steps": 5,
    }

    width: int = param(Int(low=1), default=3)
    t0: int = param(Int(low=0), default=50)
    lam_scale: float = param(POSITIVE, default=0.01)
    beta_scale: float = param(Real(low=0.0), default=0.01)
    beta_schedule: str = param(Choice(BETA_SCHEDULES), default="practical")
    ch: float = param(Real(low=0.0), default=1.0)
    pilot_lr: float = param(POSITIVE, default=1e-4)
    pilot_steps: int = param(Int(low=1), default=2000)
    phase1: str = param(Choice(PHASE1_SAMPLERS), default="uniform")
    update_every: int = param(Int(low=1), default=1)
    solver: str = param(Choice(SOLVERS), default="lagged")
    tol: float = param(POSITIVE, default=1e-6)
    dtype: str = DTYPE
    device: str = DEVICE

    # ------------------------------------------------------------------ state
    def _setup(self, ctx: Context) -> None:
        d = int(self.d)  # type: ignore[arg-type]
        self.net = UtilityNet(
            d, self.width, self.rng, dtype=self.dtype, device=self.device
        )
        p = self.net.n_params
        self.d_w = p
        self.lam = self.lam_scale * p * math.sqrt(float(self.horizon or 1))
        self.pilot = SetHistory(d)  # Phase-I sets, raw features
        # Phase-II sets: features g_si, offsets f_{w_s}(x_si) - g_si^T w_s
        self.linear = MNLSetBuffer(p)
        self.gram = Gram(p, self.lam)
        self.hessian = self.lam * np.eye(
            p
        )  # lagged Hessian of Eq. (2) ("lagged" solver)
        self.w0 = self.net.w
        self.pilot_nll = 0.0
        if self.t0 == 0:
            self._start_phase2()

    def warmup_rounds(self, horizon: int) -> int:
        """Phase I: the t0 rounds of random assortments (at most ``horizon``)."""
        return min(self.t0, horizon)

    @property
    def phase(self) -> int:
        """1 during random exploration, 2 once the pilot estimate is in."""
        return 2 if self.t >= self.t0 else 1

    def beta(self, t: int) -> float:
        """beta_t (class docstring)."""
        if self.beta_schedule == "theory":
            return self.beta_scale * self.d_w * math.log1p(t)
        return self.beta_scale * self.d_w * t / float(self.horizon or t)

    def _start_phase2(self) -> None:
        if self.pilot.n:
            self.pilot_nll = self.net.fit(
                self.pilot, lr=self.pilot_lr, steps=self.pilot_steps
            )
        self.w0 = self.net.w
        self._n_updates += 1

    # ------------------------------------------------------------------ loop
    def _act(self, ctx: Context) -> Action:
        if self.t < self.t0:
            uniform = UniformAssortmentLaw(ctx.n_arms, capacity_of(ctx), self.phase1)
            self.propose(uniform)
            return uniform.draw(self.rng)
        f, G = self.net.evaluate(ctx.arms)
        beta = self.beta(self.t + 1)
        z = (
            f
            + math.sqrt(beta) * self.gram.norms_unchecked(G)
            + beta * self.ch / self.lam
        )
        offer = offered_set(z, ctx)
        self.propose(PointLaw(offer))  # the exact assortment: no draw
        return offer

    def _update(self, ctx: Context, action: Action, feedback: Feedback) -> None:
        assert isinstance(action, tuple) and isinstance(feedback, int)
        X = ctx.arms[list(action)]
        slot = slot_of(action, feedback)
        if self.t < self.t0:
            self.pilot.append(X, slot)
            if self.t + 1 == self.t0:
                self._start_phase2()
            return
        w = self.net.w
        f, G = self.net.evaluate(X)
        self.linear.append(G, f - G @ w, slot)
        for g in G:
            self.gram.update(g)
        if self.linear.n % self.update_every == 0:
            self.net.set_w(self._solve(w))
            self._n_updates += 1

    def _solve(self, w: np.ndarray) -> np.ndarray:
        """w_{t+1} = argmin l_{t+1}(w), Eq. (2), by Newton from ``w``."""
        sets = self.linear.sets
        if self.solver == "newton":
            return fit_mnl(sets, lam=self.lam, center=self.w0, w0=w, tol=self.tol).w
        fit = refit_mnl(
            sets,
            n_new=self.update_every,
            hessian=self.hessian,
            lam=self.lam,
            center=self.w0,
            w0=w,
            tol=self.tol,
        )
        assert fit.hessian is not None
        self.hessian = fit.hessian
        return fit.w

    def _state(self) -> dict[str, Any]:
        return {
            "net": self.net.state_dict(),
            "w0": self.w0,
            "pilot_nll": self.pilot_nll,
            "pilot": self.pilot.state_dict(),
            "linear": self.linear.state_dict(),
            "gram": self.gram.state_dict(),
            "hessian": self.hessian,
        }

    def _load_state(self, state: dict[str, Any]) -> None:
        # rebuild the structures without touching the restored stream or counters
        rng_state, n_updates, t0 = (
            self.rng.bit_generator.state,
            self._n_updates,
            self.t0,
        )
        self.t0 = -1  # no pilot fit in _setup
        try:
            self._setup(None)  # type: ignore[arg-type]
        finally:
            self.t0 = t0
        self.rng.bit_generator.state, self._n_updates = rng_state, n_updates
        self.net.load_state_dict(state["net"])
        self.w0 = check_state_array("w0", state["w0"], self.w0.shape)
        self.pilot_nll = float(state["pilot_nll"])
        self.pilot.load_state_dict(state["pilot"])
        self.linear.load_state_dict(state["linear"])
        self.gram.load_state_dict(state["gram"])
        self.hessian = check_state_array(
            "hessian", state["hessian"], self.hessian.shape
        )
