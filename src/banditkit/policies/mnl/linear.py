"""MNL bandits with linear utilities u(x) = x^T theta: UCB-MNL, TS-MNL and OFU-MNL+.

The baselines of [Hwang2025, Sec. 4], which assume linear utilities and see the raw item
features. Shared pieces (the per-round MNL likelihood includes the outside option):

    p_i(theta) = e^{x_i^T theta} / (1 + sum_{j in S} e^{x_j^T theta})
    l_s(theta) = -sum_{i in S_s + {0}} y_si log p_si(theta)

* ``ucb-mnl`` [Oh2021, Alg. 1]: theta_t = argmin sum_{s<t} l_s(theta) + (lam/2)||theta||^2
  (``glm.refit_mnl``: Newton warm-started at theta_{t-1} with the previous round's Hessian,
  refit every round to the gradient tolerance 1e-6 max(1, lam)), V_t = lam I + sum x x^T over
  offered items, z_ti = x_ti^T theta_t + alpha_t ||x_ti||_{V_t^-1}, with
  alpha_t = alpha_scale / (2 kappa) sqrt(2 d log(1 + t/d) + 2 log t).
* ``ts-mnl`` [Oh2019, Alg. 1]: the same estimate and Gram; M samples
  theta~ ~ N(theta_t, alpha_t^2 V_t^-1) and z_ti = max_j x_ti^T theta~^(j) (M = 1, the
  Gaussian approximation of the public code, by default).
* ``ofu-mnl-plus`` [Lee2024, Alg. 1]: online mirror descent, O(1) per round:
  theta_{t+1} = theta_t - M_t^-1 grad l_t(theta_t), M_t = H_t / (2 eta) + hess l_t(theta_t) / 2,
  H_{t+1} = H_t + hess l_t(theta_{t+1}), H_1 = lam I, lam = 84 sqrt(2) eta d,
  eta = (S + 1) + log(K + 1) / 2, z_ti = x_ti^T theta_t + beta ||x_ti||_{H_t^-1}.

The assortment is the exact optimum under z (top-K under equal revenues). The original
papers of UCB-MNL and TS-MNL start with T0 rounds of random K-item assortments; the
public code does not, nor do we by default (``warmup=0``; ``warmup=T0`` restores it). As in the public
code of Lee & Oh (2024), alpha_t and beta are evaluated at t = 1 and kept (``schedule=
"fixed"``); ``schedule="per-round"`` re-evaluates them every round.

References:
    [Oh2019] M. Oh, G. Iyengar. Thompson sampling for multinomial logit contextual bandits.
        NeurIPS 2019.
    [Oh2021] M. Oh, G. Iyengar. Multinomial logit contextual bandits: provable optimality
        and practicality. AAAI 2021.
    [Lee2024] J. Lee, M. Oh. Nearly minimax optimal regret for multinomial logistic bandit.
        NeurIPS 2024.
    [Hwang2025] see ``policies.mnl.common``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from banditkit.core import POLICIES
from banditkit.core.params import POSITIVE, Choice, Int, Maybe, Real, param
from banditkit.core.policy import AssortmentPolicy
from banditkit.core.types import Action, Context, Feedback
from banditkit.core.validation import (
    check_int,
    check_scalar,
    check_state_array,
)
from banditkit.glm.mnl import MNLSetBuffer, refit_mnl
from banditkit.linalg import Gram
from banditkit.policies.mnl.common import (
    UniformAssortmentLaw,
    capacity_of,
    default_kappa,
    offered_set,
    offered_sets,
    slot_of,
)
from banditkit.policies.parts.propensity import Law, PointLaw, SetLaw, monte_carlo

__all__ = [
    "TSMNL",
    "UCBMNL",
    "OFUMNLPlus",
    "OptimisticUtilities",
    "SampledUtilities",
    "set_hessian",
]

SCHEDULES = ("fixed", "per-round")


def set_hessian(X: np.ndarray, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities p (S,) and Hessian sum_i p_i x_i x_i^T - q q^T of one set's NLL."""
    u = X @ theta
    m = max(0.0, float(u.max()))
    e = np.exp(u - m)
    p = e / (math.exp(-m) + e.sum())
    q = X.T @ p
    return p, (X * p[:, None]).T @ X - q[:, None] * q  # q q^T (np.outer's bits)


Array = np.ndarray
Rng = np.random.Generator


@dataclass(frozen=True)
class OptimisticUtilities:
    """UCB-MNL's utilities x_i^T theta + alpha ||x_i||_{V^-1} [Oh2021].

    It reads V^-1 only, so the Gram takes rank-K Woodbury updates (``woodbury``).
    """

    woodbury: ClassVar[bool] = True

    def __call__(
        self, X: Array, theta: Array, gram: Gram, alpha: float, rng: Rng
    ) -> Array:
        """The (N,) utilities of the items X (N, d)."""
        width = alpha * gram.norms_unchecked(X)
        return X @ theta + width


@dataclass(frozen=True)
class SampledUtilities:
    """TS-MNL's utilities max_m x_i^T theta~_m, theta~_m ~ N(theta, alpha^2 V^-1) [Oh2019].

    It reads the factor of V every round, so the Gram is refactorised (not ``woodbury``).

    Args:
        samples: M, the number of draws (1: the draw itself).
    """

    samples: int
    woodbury: ClassVar[bool] = False

    def __call__(
        self, X: Array, theta: Array, gram: Gram, alpha: float, rng: Rng
    ) -> Array:
        """The (N,) utilities of the items X (N, d), one draw of M parameters."""
        return self.sample(X, theta, gram, alpha, rng, 1)[0]

    def sample(
        self, X: Array, theta: Array, gram: Gram, alpha: float, rng: Rng, n: int
    ) -> Array:
        """Draws of the utilities, (n, N): n independent sets of M parameters from ``rng``."""
        draws = theta + alpha * gram.sample_normal(rng, n * self.samples)
        scores = X @ draws.T  # (N, n M), draw i's M parameters in columns i M ..
        return scores.reshape(X.shape[0], n, self.samples).max(axis=2).T


class _LinearMLE(AssortmentPolicy):
    """UCB-MNL and TS-MNL: the regularised MLE refit every round, the Gram of offered items."""

    lam: float = param(POSITIVE, default=1.0)
    alpha_scale: float = param(Real(low=0.0), default=1.0)
    kappa: float | None = param(Maybe(POSITIVE), default=None)
    schedule: str = param(Choice(SCHEDULES), default="fixed")
    warmup: int = param(Int(low=0), default=0)

    #: The utilities of the items (``OptimisticUtilities`` or ``SampledUtilities``).
    utilities: OptimisticUtilities | SampledUtilities

    def get_params(self) -> dict[str, Any]:
        """The hyper-parameters; ``warmup`` only when > 0.

        Runs stored before the option existed ran ``warmup=0``: they keep their ids.
        """
        params = super().get_params()
        if self.warmup == 0:
            params.pop("warmup")
        return params

    def warmup_rounds(self, horizon: int) -> int:
        """The T0 = ``warmup`` rounds of random K-sets (at most ``horizon``)."""
        return min(self.warmup, horizon)

    def _setup(self, ctx: Context) -> None:
        d = int(self.d)  # type: ignore[arg-type]
        self.theta = np.zeros(d)
        self.gram = Gram(d, self.lam)
        self.sets = MNLSetBuffer(d)
        self.hessian = self.lam * np.eye(d)  # lagged Hessian of the MLE (glm.refit_mnl)
        self.fit_value = 0.0  # L(theta) and its gradient over the sets so far, at theta
        self.fit_grad = np.zeros(d)

    def alpha(self, t: int, capacity: int) -> float:
        """alpha_t = alpha_scale / (2 kappa) sqrt(2 d log(1 + t/d) + 2 log t) [Oh2021, Thm 1]."""
        d = int(self.d)  # type: ignore[arg-type]
        t = 1 if self.schedule == "fixed" else max(t, 1)
        kappa = default_kappa(capacity) if self.kappa is None else self.kappa
        return (
            self.alpha_scale
            / (2 * kappa)
            * math.sqrt(2 * d * math.log1p(t / d) + 2 * math.log(t))
        )

    def _act(self, ctx: Context) -> Action:
        if self.t < self.warmup:  # [Oh2021, Oh2019]: T0 rounds of random K-sets first
            uniform = UniformAssortmentLaw(ctx.n_arms, capacity_of(ctx), "exactly-k")
            self.propose(uniform)
            return uniform.draw(self.rng)
        alpha = self.alpha(self.t + 1, capacity_of(ctx))
        z = self.utilities(ctx.arms, self.theta, self.gram, alpha, self.rng)
        offer = offered_set(z, ctx)
        self.propose(self._offer_law(ctx, alpha, offer))
        return offer

    def _offer_law(
        self, ctx: Context, alpha: float, offer: tuple[int, ...]
    ) -> Law | None:
        """UCB-MNL's offer is certain; TS-MNL's law, from N further draws of theta~."""
        utilities = self.utilities
        if not isinstance(utilities, SampledUtilities):
            return PointLaw(offer)
        mc = monte_carlo(self)
        if mc is None:
            return None
        z = utilities.sample(
            ctx.arms, self.theta, self.gram, alpha, mc.rng(), mc.samples
        )
        return SetLaw(offered_sets(z, ctx), offer)

    def _update(self, ctx: Context, action: Action, feedback: Feedback) -> None:
        assert isinstance(action, tuple) and isinstance(feedback, int)
        X = ctx.arms[list(action)]
        self.sets.append(X, np.zeros(len(action)), slot_of(action, feedback))
        if self.utilities.woodbury:  # V^-1 only: a rank-K update, no refactorisation
            self.gram.update_woodbury(X)
        else:  # the factor L every round: refactorise
            self.gram.update_batch(X)
        fit = refit_mnl(
            self.sets.sets,
            n_new=1,
            hessian=self.hessian,
            lam=self.lam,
            w0=self.theta,
            previous=(self.fit_value, self.fit_grad),
        )
        assert fit.hessian is not None and fit.value is not None
        assert fit.grad is not None
        self.theta, self.hessian = fit.w, fit.hessian
        self.fit_value, self.fit_grad = fit.value, fit.grad
        self._n_updates += 1

    def _state(self) -> dict[str, Any]:
        return {
            "theta": self.theta,
            "gram": self.gram.state_dict(),
            "sets": self.sets.state_dict(),
            "hessian": self.hessian,
            "fit_value": self.fit_value,
            "fit_grad": self.fit_grad,
        }

    def _load_state(self, state: dict[str, Any]) -> None:
        self._setup(None)  # type: ignore[arg-type]
        d = self.theta.shape[0]
        self.theta = check_state_array("theta", state["theta"], (d,))
        self.gram.load_state_dict(state["gram"])
        self.sets.load_state_dict(state["sets"])
        self.hessian = check_state_array("hessian", state["hessian"], (d, d))
        self.fit_value = check_scalar("fit_value", state["fit_value"])
        self.fit_grad = check_state_array("fit_grad", state["fit_grad"], (d,))


@POLICIES.register("ucb-mnl")
class UCBMNL(_LinearMLE):
    """UCB-MNL [Oh2021]: optimistic linear utilities, the exact assortment (module docstring).

    Args:
        lam: Ridge of the MLE and of the Gram V (1, as in the public code).
        alpha_scale: Multiplies alpha_t (1: the theory's value).
        kappa: Lower bound on p_0 p_i; None: e^-1 / (1 + K e)^2 (``default_kappa``).
        schedule: "fixed" (alpha at t = 1, the public code) or "per-round".
        warmup: T0, rounds of uniformly random K-item assortments before the
            optimistic rule (the original papers' initialisation; 0, as the public code).
        seed: Seed of the policy's stream (the warm-up's draws).

    Example:
        >>> from banditkit.core import Context
        >>> UCBMNL().act(Context(arms=np.eye(4), max_size=2))
        (0, 1)
    """

    def _resolve(self) -> None:
        self.utilities = OptimisticUtilities()


@POLICIES.register("ts-mnl")
class TSMNL(_LinearMLE):
    """TS-MNL [Oh2019]: sampled linear utilities, the exact assortment (module docstring).

    Args:
        samples: M, the number of parameter draws (utility = max over them); 1 by default.
        lam, alpha_scale, kappa, schedule, warmup: As :class:`UCBMNL`.
        seed: Seed of the policy's stream (the draws theta~ and the warm-up's sets).

    Example:
        >>> from banditkit.core import Context
        >>> len(TSMNL(seed=0).act(Context(arms=np.eye(4), max_size=2)))
        2
    """

    samples: int = param(Int(low=1), default=1)

    def _resolve(self) -> None:
        self.utilities = SampledUtilities(self.samples)


@POLICIES.register("ofu-mnl-plus")
class OFUMNLPlus(AssortmentPolicy):
    """OFU-MNL+ [Lee2024]: online mirror descent with constant cost per round.

    Constants of the public code: S = 1 (norm bound), eta = (S + 1) + log(K + 1) / 2,
    lam = 84 sqrt(2) eta d, and

        beta_t = sqrt(2 eta [(3 log(1 + (K + 1) t) + 3)(17/16 lam + 2 sqrt(lam)
                 log(2 sqrt(1 + 2t)) + 16 log^2(2 sqrt(1 + 2t))) + 2
                 + sqrt(6) 7/6 eta d log(1 + (t + 1) / (2 lam))] + 4 lam),

    at t = 1 (``schedule="fixed"``) or every round. The step uses the public code's
    M_t = H_t / (2 eta) + hess l_t / 2 and no projection (module docstring).

    Args:
        norm_bound: S.
        beta_scale: Multiplies beta_t (1: the theory's value).
        schedule: "fixed" (beta at t = 1) or "per-round".
        seed: Seed of the policy's stream (unused: the policy is deterministic).

    Example:
        >>> from banditkit.core import Context
        >>> OFUMNLPlus().act(Context(arms=np.eye(4), max_size=2))
        (0, 1)
    """

    norm_bound: float = param(POSITIVE, default=1.0)
    beta_scale: float = param(Real(low=0.0), default=1.0)
    schedule: str = param(Choice(SCHEDULES), default="fixed")

    def _setup(self, ctx: Context) -> None:
        d = int(self.d)  # type: ignore[arg-type]
        self.theta = np.zeros(d)
        self.H = np.zeros(
            (d, d)
        )  # H_t - lam I; lam depends on K, known at the first act
        self.capacity = 0

    def _constants(self, capacity: int) -> tuple[float, float]:
        eta = (self.norm_bound + 1) + math.log(capacity + 1) / 2
        return eta, 84 * math.sqrt(2) * eta * int(self.d)  # type: ignore[arg-type]

    def beta(self, t: int, capacity: int) -> float:
        """beta_t of the public code (class docstring)."""
        if self.schedule == "fixed":  # the same value every round: computed once
            cached = self.__dict__.get("_beta_fixed")
            if cached is None or cached[0] != capacity:
                cached = (capacity, self._beta(1, capacity))
                self._beta_fixed = cached
            return float(cached[1])
        return self._beta(max(t, 1), capacity)

    def _beta(self, t: int, capacity: int) -> float:
        eta, lam = self._constants(capacity)
        d = int(self.d)  # type: ignore[arg-type]
        log2 = math.log(2 * math.sqrt(1 + 2 * t))
        inner = (3 * math.log(1 + (capacity + 1) * t) + 3) * (
            17 / 16 * lam + 2 * math.sqrt(lam) * log2 + 16 * log2**2
        )
        inner += 2 + math.sqrt(6) * 7 / 6 * eta * d * math.log(1 + (t + 1) / (2 * lam))
        return self.beta_scale * math.sqrt(2 * eta * inner + 4 * lam)

    def _matrix(self, capacity: int) -> tuple[float, np.ndarray]:
        if self.capacity == 0:
            self.capacity = capacity  # lam (hence H_1) fixed by the first round's K
        cached = self.__dict__.get("_ridge")
        if cached is None or cached[0] != (self.capacity, self.H.shape[0]):
            eta, lam = self._constants(self.capacity)
            cached = (
                (self.capacity, self.H.shape[0]),
                eta,
                lam * np.eye(self.H.shape[0]),
            )
            self._ridge = cached
        return cached[1], self.H + cached[2]

    def _act(self, ctx: Context) -> Action:
        _, H = self._matrix(capacity_of(ctx))
        X = ctx.arms
        width = np.sqrt(
            np.maximum(np.einsum("ij,jk,ik->i", X, np.linalg.inv(H), X), 0.0)
        )
        z = X @ self.theta + self.beta(self.t + 1, self.capacity) * width
        offer = offered_set(z, ctx)
        self.propose(PointLaw(offer))  # the exact assortment: no draw
        return offer

    def _update(self, ctx: Context, action: Action, feedback: Feedback) -> None:
        assert isinstance(action, tuple) and isinstance(feedback, int)
        eta, H = self._matrix(capacity_of(ctx))
        X = ctx.arms[list(action)]
        y = np.zeros(len(action))
        slot = slot_of(action, feedback)
        if slot >= 0:
            y[slot] = 1.0
        p, hess = set_hessian(X, self.theta)
        grad = X.T @ (p - y)
        self.theta = self.theta - np.linalg.solve(H / (2 * eta) + hess / 2, grad)
        self.H = self.H + set_hessian(X, self.theta)[1]
        self._n_updates += 1

    def _state(self) -> dict[str, Any]:
        return {"theta": self.theta, "H": self.H, "capacity": self.capacity}

    def _load_state(self, state: dict[str, Any]) -> None:
        assert self.d is not None
        self.theta = check_state_array("theta", state["theta"], (self.d,))
        self.H = check_state_array("H", state["H"], (self.d, self.d))
        self.capacity = check_int("capacity", state["capacity"], low=1)

    contract_params: ClassVar[dict[str, Any]] = {}
