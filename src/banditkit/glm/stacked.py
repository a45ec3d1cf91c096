"""Regularised GLM maximum likelihood for M members at once (ensembles on perturbed data).

Member k minimises, over theta_k in R^d,

    L_k(theta) = sum_u [ c_u b(x_u^T theta) - S_uk x_u^T theta ] + (lam / 2) ||theta||^2

where b is the link's log-partition (mu = b'), x_u are the distinct rows of the data, c_u
how often row u occurs and S_uk the sum of member k's targets over those occurrences. With
all c_u = 1 and S = Y this is the plain regularised NLL sum_i nll(x_i^T theta, y_ik) (up
to a constant); grouping equal rows gives the same objective, gradient and Hessian at the
cost of the distinct rows only (a fixed arm set of K arms: O(K d M) per step, whatever t).

    gradient   X^T (c * mu(X Theta) - S) + lam Theta                      (d, M)
    Hessian_k  X^T diag(c * mu'(X theta_k)) X + lam I                     (M, d, d)

Two solvers, both vectorised over the members (no loop over k):

* ``"gd"``: ``steps`` plain gradient steps Theta -= lr * grad, on L / n with
  ``reduction="mean"`` (n = sum_u c_u; same minimiser) or on L with ``"sum"``.
* ``"newton"``: damped Newton steps with a batched solve (step halved per member until L_k
  does not increase), to convergence: the exact regularised MLE.

Symbols: theta = θ, lam = λ, mu = μ, Theta = the (d, M) stack of member parameters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from banditkit.core.validation import check_choice, check_int, check_scalar
from banditkit.glm.links import Link, get_link

__all__ = ["STACKED_SOLVERS", "fit_glm_stacked", "stacked_objective"]

STACKED_SOLVERS = ("gd", "newton")
_REDUCTIONS = ("mean", "sum")


def stacked_objective(
    X: np.ndarray,
    counts: np.ndarray,
    sums: np.ndarray,
    theta: np.ndarray,
    lam: float,
    link: Link,
) -> np.ndarray:
    """L_k(theta_k) for every member (module docstring), shape (M,).

    b(z) is recovered as nll(z, 0), the link's NLL at target 0 (log(1 + e^z) for the
    logistic link, z^2 / 2 for the identity).
    """
    return _Grouped(X, counts, sums, lam, link).objective(theta)


@dataclass(frozen=True)
class _Grouped:
    """The data of the M objectives L_k: distinct rows (U, d), counts (U,), sums (U, M)."""

    X: np.ndarray
    counts: np.ndarray
    sums: np.ndarray
    lam: float
    link: Link

    def objective(self, theta: np.ndarray) -> np.ndarray:
        """L_k(theta_k) for every member, (M,)."""
        Z = self.X @ theta  # (U, M)
        log_partition = self.link.nll(Z, np.zeros_like(Z))
        data = self.counts @ log_partition - np.einsum("um,um->m", self.sums, Z)
        return np.asarray(data + 0.5 * self.lam * np.einsum("dm,dm->m", theta, theta))

    def gradient(self, theta: np.ndarray) -> np.ndarray:
        """The gradients of the L_k, (d, M)."""
        residual = self.counts[:, None] * self.link.mean(self.X @ theta) - self.sums
        return np.asarray(self.X.T @ residual + self.lam * theta)


def fit_glm_stacked(
    X: Any,
    counts: Any,
    sums: Any,
    theta: Any,
    *,
    lam: float,
    link: str | Link = "logistic",
    solver: str = "gd",
    steps: int = 100,
    lr: float = 0.01,
    reduction: str = "mean",
    tol: float = 1e-10,
    max_iter: int = 100,
) -> np.ndarray:
    """Fit M regularised GLMs on grouped rows, warm-started at ``theta``; returns (d, M).

    Args:
        X: Distinct rows x_u, (U, d).
        counts: c_u >= 0, (U,): occurrences of each row.
        sums: S_uk, (U, M): sum of member k's targets over the occurrences of row u.
        theta: Starting stack Theta, (d, M) (not modified).
        lam: Ridge weight lambda, > 0.
        link: A link name or object (``glm.links``); "logistic" by default.
        solver: "gd" (plain gradient descent) or "newton" (to convergence).
        steps: GD steps, >= 1.
        lr: GD step size eta, > 0.
        reduction: "mean" (GD on L / n, n = sum of counts) or "sum" (GD on L).
        tol: Newton stops when every member's gradient norm is below tol * max(1, n).
        max_iter: Maximum Newton iterations, >= 1.

    Raises:
        ValueError: On shapes that do not match, negative counts, lam <= 0 or an unknown
            solver / reduction; the message names the argument.

    Example:
        >>> X = np.array([[1.0, 0.0], [0.0, 1.0]])
        >>> theta = fit_glm_stacked(X, np.array([3.0, 1.0]), np.array([[3.0], [0.0]]),
        ...                         np.zeros((2, 1)), lam=1.0, solver="newton")
        >>> bool(theta[0, 0] > 0 > theta[1, 0])
        True
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be a (U, d) array; got shape {X.shape}.")
    U, d = X.shape
    counts = np.asarray(counts, dtype=np.float64)
    if counts.shape != (U,) or (U and counts.min() < 0):
        raise ValueError(f"counts must be (U,) = ({U},) and >= 0; got {counts.shape}.")
    sums = np.asarray(sums, dtype=np.float64)
    if sums.ndim != 2 or sums.shape[0] != U:
        raise ValueError(f"sums must be (U, M) with U = {U}; got {sums.shape}.")
    theta = np.array(theta, dtype=np.float64)
    if theta.shape != (d, sums.shape[1]):
        raise ValueError(
            f"theta must be (d, M) = ({d}, {sums.shape[1]}); got {theta.shape}."
        )
    lam = check_scalar("lam", lam, low=0.0, low_open=True)
    link_ = get_link(link)
    solver = check_choice("solver", solver, STACKED_SOLVERS)
    reduction = check_choice("reduction", reduction, _REDUCTIONS)
    n = float(counts.sum())
    problem = _Grouped(X, counts, sums, lam, link_)
    if solver == "gd":
        steps = check_int("steps", steps, low=1)
        lr = check_scalar("lr", lr, low=0.0, low_open=True)
        # GD on L / n with step lr is GD on L with step lr / n.
        step = lr / max(n, 1.0) if reduction == "mean" else lr
        for _ in range(steps):
            theta -= step * problem.gradient(theta)
        return theta
    max_iter = check_int("max_iter", max_iter, low=1)
    eye = np.eye(d)
    value = problem.objective(theta)
    for _ in range(max_iter):
        grad = problem.gradient(theta)  # (d, M)
        if np.all(np.linalg.norm(grad, axis=0) <= tol * max(1.0, n)):
            break
        curvature = counts[:, None] * link_.deriv(X @ theta)  # (U, M)
        hessian = np.einsum("um,ui,uj->mij", curvature, X, X) + lam * eye  # (M, d, d)
        direction = np.linalg.solve(hessian, grad.T[:, :, None])[:, :, 0].T  # (d, M)
        scale = np.ones(theta.shape[1])
        for _ in range(40):  # halve the step of the members whose objective went up
            trial = theta - scale * direction
            new = problem.objective(trial)
            worse = new > value + 1e-12 * np.abs(value)
            if not worse.any():
                break
            scale = np.where(worse, 0.5 * scale, scale)
        theta, value = trial, new
    return theta
