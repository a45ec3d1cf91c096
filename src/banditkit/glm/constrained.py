"""Ball-constrained maximum-likelihood estimation of GLMs.

``fit_glm_constrained`` minimises the regularised negative log-likelihood of
``banditkit.glm.mle`` over the ball ||theta - center|| <= radius: the constrained minimiser
is the unconstrained one of the objective with an extra ridge ``mu``, and ``mu`` is the root
of a scalar equation in the ball's radius (Lagrangian duality, [Boyd2004, Sec. 5.5]).

References:
    [Boyd2004] S. Boyd, L. Vandenberghe. Convex Optimization. Cambridge University
        Press, 2004.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from banditkit.core.validation import check_int, check_scalar
from banditkit.glm.links import Link
from banditkit.glm.mle import (
    GLMFit,
    _check_vector,
    _newton,
    _Problem,
    _SingularHessianError,
    _validate,
)

__all__ = ["fit_glm_constrained"]


def fit_glm_constrained(
    X: Any,
    y: Any,
    *,
    radius: float,
    link: str | Link = "logistic",
    lam: float = 0.0,
    weights: Any = None,
    theta0: Any = None,
    center: Any = None,
    max_iter: int = 200,
    tol: float = 1e-9,
) -> GLMFit:
    """GLM maximum-likelihood estimate restricted to a ball around ``center``.

    Solves

        min_theta L(theta)   subject to   ||theta - center||_2 <= radius,

    with L the objective of ``fit_glm``. Method (exact for convex L): if the
    unconstrained minimiser lies in the ball it is returned. Otherwise the
    constraint binds, and by the KKT conditions the solution is

        theta(m) = argmin_theta L(theta) + (m / 2) * ||theta - center||^2

    for the multiplier m > 0 with ||theta(m) - center|| = radius. The norm of
    theta(m) - center decreases in m, and strong convexity of the penalised objective
    gives ||theta(m) - center|| <= ||grad L_data(center)|| / (lam + m), which brackets
    the root; Brent's method (``scipy.optimize.brentq``) finds the zero of
    1 / radius - 1 / ||theta(m) - center||, which is nearly linear in m (the secular
    equation of trust-region methods, Moré and Sorensen 1983), each evaluation being
    a warm-started Newton solve of ``fit_glm``'s problem with ridge weight lam + m. The result is
    finally scaled back onto the ball to remove rounding excess.

    This is the constrained MLE used when the analysis of a GLM bandit assumes
    ||theta_hat|| <= S, e.g. with center = 0 and radius = S.

    Args:
        X: Features, shape (n, d); n may be 0 (then theta = center).
        y: Targets, shape (n,).
        radius: Radius of the feasible ball, > 0.
        link: Link name or Link instance.
        lam: Ridge weight lam >= 0. lam = 0 is allowed even if the unconstrained MLE
            does not exist or is not unique (e.g. separable logistic data): the ball
            makes the problem well posed whenever the constraint binds.
        weights: Sample weights w_i >= 0, shape (n,); default all ones.
        theta0: Starting point of the first Newton solve, shape (d,); need not be
            feasible. Default ``center``.
        center: Centre of the ball and of the ridge term, shape (d,); default zeros.
        max_iter: Newton steps allowed per inner solve, and root-finding iterations
            allowed for the multiplier, >= 1.
        tol: Newton stopping tolerance of each inner solve, >= 0.

    Returns:
        GLMFit with the feasible minimiser theta (d,), the Newton steps summed over
        all inner solves, whether the root search and the final solve converged,
        and L(theta) (without the multiplier term).

    Raises:
        ValueError: On the input errors of ``fit_glm`` or radius <= 0.

    Example:
        >>> X = np.array([[1.0, 0.0], [0.0, 1.0]])
        >>> fit = fit_glm_constrained(X, [1.0, 1.0], radius=0.5, link="identity")
        >>> np.round(fit.theta, 4)
        array([0.3536, 0.3536])
    """
    problem = _validate(X, y, weights, center, link)
    radius = check_scalar("radius", radius, low=0.0, low_open=True)
    lam = check_scalar("lam", lam, low=0.0)
    max_iter = check_int("max_iter", max_iter, low=1)
    tol = check_scalar("tol", tol, low=0.0)
    d = problem.X.shape[1]
    c = problem.center
    start = c if theta0 is None else _check_vector("theta0", theta0, d)
    if problem.X.shape[0] == 0:
        return GLMFit(c.copy(), 0, True, 0.0)

    grad_c = float(np.linalg.norm(problem.data_grad(c)))
    if grad_c < tol:
        # grad L(center) = 0: the centre of the ball is a minimiser of the convex L.
        return GLMFit(c.copy(), 0, True, problem.objective(c, lam))

    path = _MultiplierPath(problem, lam, radius, start, max_iter, tol)
    # 1. Unconstrained minimiser; with lam = 0 it may not exist or not be unique.
    try:
        free: GLMFit | None = path.solve(0.0)
    except _SingularHessianError:
        free = None
    have_free = free is not None and free.converged
    if free is not None and have_free:
        path.free_norm = float(np.linalg.norm(free.theta - c))
        if path.free_norm <= radius:
            return path.result(free.theta, True)
    # 2. Bracket the multiplier; 3. the root of ||theta(mu) - center|| = radius.
    bracket = _bracket(path, grad_c, have_free)
    if isinstance(bracket, GLMFit):
        return bracket
    return _on_boundary(path, *bracket)


class _MultiplierPath:
    """theta(mu) = argmin_theta L(theta) + (mu / 2) ||theta - center||^2, mu >= 0.

    Each solve is a Newton solve of ``fit_glm``'s problem with ridge lam + mu, started
    from the previous solve's theta; ``n_iter`` sums their Newton steps.
    """

    def __init__(
        self,
        problem: _Problem,
        lam: float,
        radius: float,
        start: np.ndarray,
        max_iter: int,
        tol: float,
    ) -> None:
        self.problem, self.lam, self.radius = problem, lam, radius
        self.max_iter, self.tol = max_iter, tol
        self.last = start.copy()
        self.n_iter = 0
        self.free_norm = np.inf  # ||theta(0) - center||, once the free solve converged

    def solve(self, mu: float) -> GLMFit:
        """theta(mu), warm-started."""
        fit = _newton(self.problem, self.lam + mu, self.last, self.max_iter, self.tol)
        self.n_iter += fit.n_iter
        self.last = fit.theta
        return fit

    def excess(self, mu: float) -> float:
        """1 / radius - 1 / ||theta(mu) - center||: decreasing in mu, zero at the solution.

        Nearly linear in mu (the secular equation of trust-region methods).
        """
        if mu == 0.0:
            norm = self.free_norm
        else:
            norm = float(np.linalg.norm(self.solve(mu).theta - self.problem.center))
        return 1.0 / self.radius - 1.0 / max(norm, np.finfo(np.float64).tiny)

    def result(self, theta: np.ndarray, converged: bool) -> GLMFit:
        """The fit at ``theta``, with the Newton steps so far and L(theta)."""
        objective = self.problem.objective(theta, self.lam)
        return GLMFit(theta, self.n_iter, converged, objective)


def _bracket(
    path: _MultiplierPath, grad_c: float, have_free: bool
) -> tuple[float, float] | GLMFit:
    """[mu_lo, mu_hi] around the multiplier, or the fit when the ball does not bind.

    Strong convexity of L + (mu / 2) ||theta - c||^2 gives ||theta(mu) - c|| <=
    ||grad L_data(c)|| / (lam + mu) <= radius at mu_hi. Without an unconstrained
    minimiser to compare with, mu walks down until the constraint is violated.
    """
    mu_hi = max(grad_c / path.radius - path.lam, np.finfo(np.float64).tiny)
    for _ in range(64):  # guards against rounding only: one evaluation normally
        if path.excess(mu_hi) <= 0.0:
            break
        mu_hi *= 2.0
    if have_free:
        return 0.0, mu_hi
    mu_lo = mu_hi
    for _ in range(16):
        mu_lo *= 0.1
        if path.excess(mu_lo) > 0.0:
            return mu_lo, mu_hi
    # theta(mu) stays in the ball as mu -> 0: the minimisers of L meet the ball and
    # theta(mu_lo) is one of them up to O(mu_lo * radius^2) in L.
    fit = path.solve(mu_lo)
    return path.result(fit.theta, fit.converged)


def _on_boundary(path: _MultiplierPath, mu_lo: float, mu_hi: float) -> GLMFit:
    """The fit at the root of ||theta(mu) - center|| = radius, by Brent's method.

    The result is scaled back onto the ball to remove rounding excess.
    """
    from scipy.optimize import brentq  # imported here: scipy.optimize is slow to import

    mu_star, info = brentq(
        path.excess,
        mu_lo,
        mu_hi,
        xtol=1e-15 * mu_hi,
        rtol=4 * np.finfo(np.float64).eps,
        maxiter=path.max_iter,
        full_output=True,
        disp=False,
    )
    fit = path.solve(mu_star)
    theta, c = fit.theta, path.problem.center
    norm = float(np.linalg.norm(theta - c))
    if norm > path.radius:
        theta = c + (theta - c) * (path.radius / norm)
    return path.result(theta, fit.converged and bool(info.converged))
