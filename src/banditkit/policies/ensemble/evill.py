"""EVILL: exploration via linearly perturbed loss minimisation [Janz2024], a GLM comparator.

Round t (after the warm-up), with L_t(theta) = (lam/2)||theta||^2 + sum_{s<t} [b(x_s^T theta)
- y_s x_s^T theta] the regularised NLL of Eq. (4.2) of [Sun2025]:

    theta_hat = argmin L_t(theta)                                        (the MLE)
    W_t       = nu ( sqrt(lam) z_0 + sum_{s<t} sqrt(mu'(x_s^T theta_hat)) z_s x_s ),
                z_0 ~ N(0, I_d), z_s ~ N(0, 1)       so  W_t ~ N(0, nu^2 H_t(theta_hat))
    theta_til = argmin L_t(theta) - <W_t, theta>                         (one linear term)
    a_t       = argmax_k x_k^T theta_til

with H_t(theta) = lam I + sum_s mu'(x_s^T theta) x_s x_s^T the Hessian of L_t. In a linear
model theta_til = theta_hat + H^-1 W ~ N(theta_hat, nu^2 H^-1), Thompson sampling; in a GLM
the random direction carries the curvature at the MLE, where perturbing the rewards
(GLM-FPL, GLM-ES) gives sum_s z_s x_s with covariance sigma^2 sum_s x_s x_s^T instead.

On grouped rows (x_u with count c_u) the sum over the c_u pulls of x_u is, in law,
sqrt(c_u mu'(x_u^T theta_hat)) z_u x_u with one z_u ~ N(0, 1) per distinct row: we draw
that (d + U normals a round; the same distribution as the per-pull draws). The linear term
enters ``glm.fit_glm_stacked`` as d unit rows of count 0 and target sums W, and the MLE and
the perturbed fit are both warm-started (the perturbed fit at the MLE).

References:
    In the package's docstring (``banditkit.policies.ensemble``): [Sun2025], [Janz2024].
"""

from __future__ import annotations

from typing import Any

import numpy as np

from banditkit.core import POLICIES
from banditkit.core.params import Choice, Real, param, pin
from banditkit.glm import fit_glm_stacked, get_link
from banditkit.glm.links import Link
from banditkit.glm.stacked import STACKED_SOLVERS
from banditkit.policies.ensemble.base import Perturbations, Rng
from banditkit.policies.ensemble.history import PerturbedHistory
from banditkit.policies.ensemble.policies import GLMES, ONE_MODEL

__all__ = [
    "EVILL",
    "LinearPerturbation",
    "evill_perturbation",
    "fit_linearly_perturbed",
]


def evill_perturbation(
    X: np.ndarray,
    counts: np.ndarray,
    theta_hat: np.ndarray,
    *,
    lam: float,
    nu: float,
    link: str | Link,
    rng: np.random.Generator,
) -> np.ndarray:
    """W = nu (sqrt(lam) z_0 + sum_u sqrt(c_u mu'(x_u^T theta_hat)) z_u x_u), (d,).

    W ~ N(0, nu^2 H), H = lam I + sum_u c_u mu'(x_u^T theta_hat) x_u x_u^T: the EVILL
    perturbation of [Janz2024] on grouped rows (module docstring). Draws d + U normals.

    Example:
        >>> W = evill_perturbation(np.eye(2), np.array([3.0, 1.0]), np.zeros(2), lam=1.0,
        ...                        nu=2.0, link="logistic", rng=np.random.default_rng(0))
        >>> W.shape
        (2,)
    """
    link_ = get_link(link)
    d = X.shape[1]
    z0 = rng.standard_normal(d)
    z = rng.standard_normal(X.shape[0])
    scale = np.sqrt(counts * link_.deriv(X @ theta_hat))  # (U,)
    return np.asarray(nu * (np.sqrt(lam) * z0 + X.T @ (scale * z)))


def fit_linearly_perturbed(
    X: np.ndarray,
    counts: np.ndarray,
    sums: np.ndarray,
    theta: np.ndarray,
    W: np.ndarray,
    **solver: Any,
) -> np.ndarray:
    """argmin_theta sum_u [c_u b(x_u^T theta) - S_u^T x_u^T theta] + (lam/2)||theta||^2 - W^T theta.

    ``W`` is (d, M) (one linear term per column of ``sums`` (U, M)); ``theta`` (d, M) is the
    start; ``solver`` are the keyword arguments of ``glm.fit_glm_stacked`` (lam, link,
    solver, steps, lr, reduction). The linear term is d unit rows of count 0 and target
    sums W: the objective of ``fit_glm_stacked`` on the augmented rows is exactly this one,
    and n (the mean reduction) still counts the real observations only.
    """
    d = X.shape[1]
    return fit_glm_stacked(
        np.vstack([X, np.eye(d)]),
        np.concatenate([counts, np.zeros(d)]),
        np.vstack([sums, W]),
        theta,
        **solver,
    )


class LinearPerturbation(Perturbations):
    """EVILL's refit: the MLE, then the loss plus a random linear term (module docstring).

    Keeps the MLE theta_hat (d, 1) between refits (both fits are warm-started); the
    model holds theta_til.

    Args:
        d: Feature dimension.
        nu: Perturbation scale a, >= 0.
        solver: The keyword arguments of ``glm.fit_glm_stacked`` (lam, link, solver,
            steps, lr, reduction).
    """

    def __init__(self, d: int, nu: float, solver: dict[str, Any]) -> None:
        self.nu = nu
        self.solver = solver
        self.theta_hat = np.zeros((d, 1))

    def refit(self, model: Any, rows: PerturbedHistory, rng: Rng, sigma: float) -> None:
        """theta_hat = argmin L; W ~ N(0, nu^2 H(theta_hat)); theta_til = argmin L - <W, .>."""
        X, counts, sums = rows.grouped_rewards()
        self.theta_hat = fit_glm_stacked(X, counts, sums, self.theta_hat, **self.solver)
        W = evill_perturbation(
            X,
            counts,
            self.theta_hat[:, 0],
            lam=self.solver["lam"],
            nu=self.nu,
            link=self.solver["link"],
            rng=rng,
        )
        model.theta = fit_linearly_perturbed(
            X, counts, sums, self.theta_hat, W[:, None], **self.solver
        )

    def state_dict(self) -> dict[str, Any]:
        """theta_hat."""
        return {"theta_hat": self.theta_hat.copy()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore theta_hat."""
        self.theta_hat = np.asarray(state["theta_hat"], dtype=float).reshape(
            self.theta_hat.shape
        )


@POLICIES.register("evill")
@pin(**ONE_MODEL, sigma_r=0.0)  # perturbed by W, not through its targets
class EVILL(GLMES):
    """EVILL [Janz2024, Alg. 1]: the MLE's loss plus a random linear term, minimised.

        theta_hat = argmin L(theta);  W ~ N(0, nu^2 H(theta_hat))  (as a sum over the data);
        theta_til = argmin L(theta) - <W, theta>;  a_t = argmax_k x_k^T theta_til

    (module docstring). A GLM comparator of GLM-ES ([Sun2025], Remark 5.6 sets GLM-ES next
    to GLM-TSL, GLM-FPL and EVILL): the same warm-up (G-optimal design, Algorithm 2 of
    [Sun2025]) and the same GLM solvers as ``glm-es``; the default solver is Newton to
    convergence (exact minimisers, as [Janz2024] computes them by IRLS).

    Symbols: nu = a (the perturbation scale of [Janz2024]), lam = lambda.

    Args:
        nu: Perturbation scale a, >= 0 (0: the greedy MLE).
        lam: Ridge weight lambda, > 0.
        warmup: Warm-up pulls tau before the first fit (500 as GLM-ES).
        warmup_strategy: "design", "round-robin" or "random" (as ``glm-es``).
        link: "logistic" (default), "probit" or "identity".
        solver: "newton" (default) or "gd" (``steps`` steps of ``lr`` for each of the two
            fits, warm-started, as GLM-ES).
        steps: GD steps per fit (solver "gd").
        lr: GD step size (solver "gd").
        reduction: "mean" or "sum" (solver "gd").
        update_every: Refit every this many rounds (1: every round).
        seed: Seed of the policy's own stream (warm-up order, perturbations, ties).

    Notes:
        Deviation: [Janz2024] draws one N(0, 1) per past observation; we draw one per
        distinct row with the count in its scale, the same law of W (d + U draws a round).
        Rewards are real, as ``glm-es`` (the NLL is defined for any real target).

    Example:
        >>> from banditkit.core import Context
        >>> EVILL(warmup=2).act(Context(arms=np.eye(3))) in range(3)
        True
    """

    contract_params = {"warmup": 4}  # noqa: RUF012

    nu: float = param(Real(low=0.0), default=1.0)
    solver: str = param(Choice(STACKED_SOLVERS), default="newton")

    def _perturbations(self) -> Perturbations:
        assert self.d is not None
        solver = {
            "lam": self.lam,
            "link": self.link,
            "solver": self.solver,
            "steps": self.steps,
            "lr": self.lr,
            "reduction": self.reduction,
        }
        return LinearPerturbation(self.d, self.nu, solver)
