"""Regularised maximum-likelihood estimation of GLMs.

Every solver here minimises the weighted, regularised negative log-likelihood

    L(theta) = sum_i w_i * nll(x_i^T theta, y_i) + (lam / 2) * ||theta - center||^2

of a link (``banditkit.glm.links``), the estimator of GLM bandits [Filippi2010]
and, for the logistic link with center = 0, the regularised MLE of [Faury2020].
``fit_glm`` is the unconstrained minimiser (damped Newton) and ``glm_hessian`` the curvature
matrix the confidence sets of GLM bandits are built from; ``banditkit.glm.constrained``
minimises over the ball ||theta - center|| <= radius with the same Newton solver.
``fit_logistic_unchecked`` runs the same solve on rows a caller has already checked.

Symbols: theta = θ, lam = λ, mu = μ (the link), w_i are sample weights.

References:
    [Filippi2010] S. Filippi, O. Cappé, A. Garivier, C. Szepesvári. Parametric
        bandits: the generalized linear case. NeurIPS 2010.
    [Faury2020] L. Faury, M. Abeille, C. Calauzènes, O. Fercoq. Improved optimistic
        algorithms for logistic bandits. ICML 2020.
    [Boyd2004] S. Boyd, L. Vandenberghe. Convex Optimization. Cambridge University
        Press, 2004.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from banditkit.core.lazy import sla, special  # imported at first use
from banditkit.core.validation import check_finite_array, check_int, check_scalar
from banditkit.glm.links import Link, LogisticLink, get_link

__all__ = ["GLMFit", "fit_glm", "fit_logistic_unchecked", "glm_hessian"]

_LOGISTIC = LogisticLink()

# Backtracking line search [Boyd2004, Alg. 9.2]: accept step t when
# L(theta + t d) <= L(theta) + ARMIJO_FRACTION * t * grad^T d, else t *= BACKTRACK_FACTOR.
# Assumption: the values suggested in [Boyd2004, Sec. 9.2] (alpha in [0.01, 0.3],
# beta in [0.1, 0.8]).
ARMIJO_FRACTION = 0.25
BACKTRACK_FACTOR = 0.5
# Smallest step before the line search gives up (about 40 halvings).
_MIN_STEP = 1e-12
# Assumption: the Armijo test tolerates this many ulps of |L| so that steps whose
# predicted decrease is below the rounding of L (at the optimum) are still taken.
_ROUNDING_SLACK = 64.0 * np.finfo(np.float64).eps
# With lam = 0, a Hessian whose Cholesky pivots span more than this ratio (squared)
# is treated as singular: the MLE is then not unique.
_SINGULAR_RTOL = 1e3 * np.finfo(np.float64).eps
# Ridge added (relative to the mean diagonal) when a Cholesky factorisation with
# lam > 0 fails in floating point although the matrix is positive definite.
_JITTER = 1e-12


@dataclass(frozen=True)
class GLMFit:
    """Result of a GLM fit.

    Args:
        theta: The estimate, shape (d,).
        n_iter: Newton iterations taken (summed over the inner solves of
            ``fit_glm_constrained``).
        converged: Whether the stopping rule was met within ``max_iter``.
        objective: L(theta), the objective minimised, at the returned theta.
    """

    theta: np.ndarray
    n_iter: int
    converged: bool
    objective: float


class _SingularHessianError(ValueError):
    """The Hessian of an unregularised objective is singular."""


@dataclass(frozen=True)
class _Problem:
    """Validated data of L(theta): X (n, d), y (n,), w (n,), center (d,), link.

    ``unit_weights``: every w_i is 1 (multiplying by w is then skipped: same values).
    ``blocks``: X's column blocks (:data:`Blocks`) when H is block-diagonal, else None.
    """

    X: np.ndarray
    y: np.ndarray
    w: np.ndarray
    center: np.ndarray
    link: Link
    unit_weights: bool = False
    _latent: list[Any] = field(default_factory=list, compare=False, repr=False)
    blocks: Blocks | None = None

    def latent(self, theta: np.ndarray) -> np.ndarray:
        """Z = X theta, kept for the last theta asked (the array itself, by identity).

        Newton's line search evaluates the objective at the candidate it then accepts,
        and the next gradient and Hessian are taken at that very array: the product is
        computed once (the same values; the iterates are never modified in place).
        """
        cache = self._latent
        if cache and cache[0] is theta:
            return cache[1]
        z = self.X @ theta
        cache[:] = [theta, z]
        return z

    def objective(self, theta: np.ndarray, lam: float) -> float:
        diff = theta - self.center
        z = self.latent(theta)
        if type(self.link) is LogisticLink:  # LogisticLink.nll, without its conversions
            nll = np.logaddexp(0.0, z) - self.y * z
        else:
            nll = self.link.nll(z, self.y)
        return float(self.w @ nll) + 0.5 * lam * float(diff @ diff)

    def data_grad(self, theta: np.ndarray) -> np.ndarray:
        """Return sum_i w_i nll'(x_i^T theta, y_i) x_i, shape (d,)."""
        return self.X.T @ (self.w * self.link.nll_grad(self.X @ theta, self.y))

    def grad_then_hess(
        self, theta: np.ndarray, lam: float
    ) -> tuple[np.ndarray, Callable[[], np.ndarray | _BlockHessian]]:
        """Return the gradient (d,) of L at theta, O(n d), and a function giving H.

        The function returns the Hessian (d, d) of L at theta, O(n d^2) (with ``blocks``,
        its diagonal blocks: :class:`_BlockHessian`). Newton's method stops on ||g|| before it needs H, so H is built only when asked
        (about one Newton iteration in five of a warm-started refit ends there).
        Unit weights (``unit_weights``) are not multiplied in: w_i = 1 changes no value.
        """
        z = self.latent(theta)
        logistic = type(self.link) is LogisticLink
        if logistic:
            # nll_grad = expit(z) - y and nll_hess = expit(z) expit(-z), one expit(z)
            mu = self.link.mean(z)
            grad = mu - self.y
        else:
            grad = self.link.nll_grad(z, self.y)
        g = self.X.T @ (grad if self.unit_weights else self.w * grad)
        g += lam * (theta - self.center)

        def hessian() -> np.ndarray | _BlockHessian:
            hess = mu * special.expit(-z) if logistic else self.link.nll_hess(z, self.y)
            c = hess if self.unit_weights else self.w * hess
            if self.blocks is not None:
                return _BlockHessian.of(self.X, c, lam, self.blocks)
            return _weighted_gram(self.X, c, lam)

        return g, hessian


def _weighted_gram(X: np.ndarray, c: np.ndarray, lam: float) -> np.ndarray:
    """Return sum_i c_i x_i x_i^T + lam I, shape (d, d)."""
    H = (X * c[:, None]).T @ X
    H.flat[:: H.shape[0] + 1] += lam  # the diagonal
    return H


Blocks = tuple[tuple[int, ...], tuple[int, ...], tuple[np.ndarray, ...]]
"""Column blocks of a design X: (starts, ends, rows); block b is the columns
[starts[b], ends[b]) and ``rows[b]`` the rows whose non-zeros all lie in it, every other
entry of those rows and columns being zero (``linalg.spans.column_blocks`` finds them).
Then H = sum_i c_i x_i x_i^T + lam I is block-diagonal, lam I on the columns no block
holds."""


@dataclass(frozen=True)
class _BlockHessian:
    """A block-diagonal H: its blocks, and lam on the columns no row reaches."""

    d: int
    lam: float
    starts: tuple[int, ...]
    ends: tuple[int, ...]
    parts: tuple[np.ndarray, ...]

    @classmethod
    def of(
        cls, X: np.ndarray, c: np.ndarray, lam: float, blocks: Blocks
    ) -> _BlockHessian:
        """sum_i c_i x_i x_i^T + lam I, block by block (:func:`_weighted_gram`'s product)."""
        starts, ends, rows = blocks
        parts = tuple(
            _weighted_gram(X[r, s:e], c[r], lam)
            for s, e, r in zip(starts, ends, rows, strict=True)
        )
        return cls(X.shape[1], lam, starts, ends, parts)

    def direction(self, g: np.ndarray) -> np.ndarray:
        """-H^-1 g, block by block (:func:`_newton_direction` on each block)."""
        if (
            self.lam == 0.0
            and sum(e - s for s, e in zip(self.starts, self.ends, strict=True)) < self.d
        ):
            raise _SingularHessianError(
                "The Hessian of the objective is singular at lam=0, so the MLE is not "
                "unique (some feature is zero in every row); use lam > 0."
            )
        step = -g / self.lam if self.lam > 0.0 else np.empty_like(g)
        for s, e, H in zip(self.starts, self.ends, self.parts, strict=True):
            step[s:e] = _newton_direction(H, g[s:e], self.lam)
        return step


def _check_design(X: Any, weights: Any) -> tuple[np.ndarray, np.ndarray]:
    """Validate X (n, d) with d >= 1 and weights (n,) >= 0 (default ones)."""
    X_ = check_finite_array("X", X, ndim=2)
    n, d = X_.shape
    if d < 1:
        raise ValueError(f"X must have at least one column; got shape {X_.shape}.")
    if weights is None:
        return X_, np.ones(n)
    w = check_finite_array("weights", weights, ndim=1)
    if w.shape != (n,):
        raise ValueError(
            f"weights must have shape (n,) = ({n},) to match X of shape {X_.shape}; "
            f"got {w.shape}."
        )
    if n > 0 and w.min() < 0:
        raise ValueError(f"weights must be >= 0; got min {w.min():g}.")
    return X_, w


def _validate(
    X: Any,
    y: Any,
    weights: Any,
    center: Any,
    link: str | Link,
) -> _Problem:
    link_ = get_link(link)
    X_, w = _check_design(X, weights)
    n, d = X_.shape
    y_ = check_finite_array("y", y, ndim=1)
    if y_.shape != (n,):
        raise ValueError(
            f"y must have shape (n,) = ({n},) to match X of shape {X_.shape}; "
            f"got {y_.shape}."
        )
    if link_.y_bounds is not None and n > 0:
        lo, hi = link_.y_bounds
        if y_.min() < lo or y_.max() > hi:
            raise ValueError(
                f"y must lie in [{lo:g}, {hi:g}] for the {link_.name} link; "
                f"got values in [{y_.min():g}, {y_.max():g}]."
            )
    c = np.zeros(d) if center is None else _check_vector("center", center, d)
    unit = weights is None or bool((w == 1.0).all())
    return _Problem(X=X_, y=y_, w=w, center=c, link=link_, unit_weights=unit)


def _check_vector(name: str, value: Any, d: int) -> np.ndarray:
    v = check_finite_array(name, value, ndim=1)
    if v.shape != (d,):
        raise ValueError(
            f"{name} must have shape (d,) = ({d},) to match X; got {v.shape}."
        )
    return v.copy()


def _cho_factor(H: np.ndarray) -> tuple[np.ndarray, bool]:
    """``sla.cho_factor(H, lower=True, check_finite=False)`` without its wrappers.

    The same LAPACK call (``potrf``, lower, not cleaned), so the same factor; scipy's
    argument handling around it costs more than the factorisation at d = 20.
    """
    if H.size == 0 or H.dtype != np.float64 or H.ndim != 2:
        return sla.cho_factor(H, lower=True, check_finite=False)
    potrf, _ = _lapack()
    c, info = potrf(H, lower=1, overwrite_a=0, clean=0)
    if info > 0:
        raise np.linalg.LinAlgError(
            f"{info}-th leading minor of the array is not positive definite"
        )
    if info < 0:
        raise ValueError(f"illegal value in argument {-info} of potrf")
    return c, True


def _cho_solve(factor: tuple[np.ndarray, bool], g: np.ndarray) -> np.ndarray:
    """``sla.cho_solve(factor, g, check_finite=False)`` by its LAPACK call (potrs)."""
    c, lower = factor
    if c.size == 0 or c.dtype != np.float64 or g.dtype != np.float64:
        return sla.cho_solve(factor, g, check_finite=False)
    _, potrs = _lapack()
    x, info = potrs(c, g, lower=int(lower), overwrite_b=0)
    if info != 0:
        raise ValueError(f"illegal value in argument {-info} of potrs")
    return x


_LAPACK: list[Any] = []


def _lapack() -> tuple[Any, Any]:
    """float64 potrf and potrs, looked up once."""
    if not _LAPACK:
        from scipy.linalg.lapack import get_lapack_funcs

        dummy = np.eye(1)
        _LAPACK.extend(get_lapack_funcs(("potrf", "potrs"), (dummy,)))
    return _LAPACK[0], _LAPACK[1]


def _newton_direction(
    H: np.ndarray | _BlockHessian, g: np.ndarray, lam: float
) -> np.ndarray:
    """Return -H^-1 g by Cholesky; raise _SingularHessianError if lam = 0 and H ~ 0.

    A block-diagonal H (:class:`_BlockHessian`) is solved block by block.
    """
    if isinstance(H, _BlockHessian):
        return H.direction(g)
    try:
        factor = _cho_factor(H)
        if lam == 0.0:
            pivots = np.abs(np.diag(factor[0]))
            if pivots.min() ** 2 <= _SINGULAR_RTOL * pivots.max() ** 2:
                raise np.linalg.LinAlgError("numerically singular")
    except np.linalg.LinAlgError as exc:
        if lam == 0.0:
            raise _SingularHessianError(
                "The Hessian of the objective is singular at lam=0, so the MLE is not "
                "unique (e.g. fewer informative samples than features); use lam > 0."
            ) from exc
        # Positive definite in exact arithmetic (lam > 0): retry with a small ridge.
        ridge = _JITTER * max(float(np.trace(H)) / H.shape[0], lam)
        factor = _cho_factor(H + ridge * np.eye(len(H)))
    return -_cho_solve(factor, g)


def _newton(
    problem: _Problem, lam: float, theta: np.ndarray, max_iter: int, tol: float
) -> GLMFit:
    """Damped Newton's method [Boyd2004, Alg. 9.5] with backtracking [Alg. 9.2].

    Stops when the Newton decrement sqrt(g^T H^-1 g) or the gradient norm ||g|| is
    below tol. n_iter counts the Newton steps taken.
    """
    theta = theta.copy()
    f = problem.objective(theta, lam)
    for it in range(max_iter + 1):
        g, hessian = problem.grad_then_hess(theta, lam)
        if math.sqrt(float(g @ g)) < tol:  # np.linalg.norm(g), one call less
            return GLMFit(theta, it, True, f)
        step = _newton_direction(hessian(), g, lam)
        slope = float(g @ step)  # = -decrement^2 [Boyd2004, Sec. 9.5.1]
        if math.sqrt(max(-slope, 0.0)) < tol:
            return GLMFit(theta, it, True, f)
        if it == max_iter or not slope < 0.0:
            return GLMFit(theta, it, False, f)
        t = 1.0
        slack = _ROUNDING_SLACK * max(abs(f), 1.0)
        while True:
            candidate = theta + t * step
            f_new = problem.objective(candidate, lam)
            # [Boyd2004, Alg. 9.2]: Armijo sufficient decrease.
            if f_new <= f + ARMIJO_FRACTION * t * slope + slack:
                break
            t *= BACKTRACK_FACTOR
            if t < _MIN_STEP:
                return GLMFit(theta, it, False, f)
        theta, f = candidate, f_new
    raise AssertionError("unreachable: the loop returns at it == max_iter")


def fit_glm(
    X: Any,
    y: Any,
    *,
    link: str | Link = "logistic",
    lam: float = 1.0,
    weights: Any = None,
    theta0: Any = None,
    center: Any = None,
    max_iter: int = 100,
    tol: float = 1e-10,
) -> GLMFit:
    """Regularised (weighted) GLM maximum-likelihood estimate by Newton's method.

    Minimises the weighted, regularised negative log-likelihood [Filippi2010],
    [Faury2020]:

        L(theta) = sum_i w_i * nll(x_i^T theta, y_i) + (lam / 2) * ||theta - center||^2

    by Newton's method with a backtracking (Armijo) line search [Boyd2004, Sec. 9.5],
    started at theta0. The gradient and Hessian of L are

        g = sum_i w_i nll'(z_i, y_i) x_i + lam (theta - center),
        H = sum_i w_i nll''(z_i, y_i) x_i x_i^T + lam I,    z_i = x_i^T theta,

    and each step solves H d = -g by Cholesky, O(n d^2 + d^3) per iteration. The
    iteration stops when the Newton decrement sqrt(g^T H^-1 g) or ||g|| is below
    ``tol``. L is convex whenever ``link.nll`` is convex in z (all registered links,
    with y in ``link.y_bounds``), so the result is the global minimiser.

    Args:
        X: Features, shape (n, d); n may be 0, then theta = center is returned.
        y: Targets, shape (n,); within ``[0, 1]`` for the probit link.
        link: Link name (``"identity"``, ``"logistic"``, ``"probit"``) or a Link.
        lam: Ridge weight lam >= 0. lam = 0 gives the plain MLE, which must exist and
            be unique: if the Hessian is singular (e.g. rank(X) < d) a ValueError is
            raised; if it does not exist (e.g. separable logistic data) the iterates
            run off and stop when the gradient vanishes numerically or at max_iter.
        weights: Sample weights w_i >= 0, shape (n,); default all ones.
        theta0: Starting point, shape (d,); default ``center``. A previous solution
            makes a warm start: it converges in at most a couple of iterations.
        center: Point theta is shrunk towards, shape (d,); default zeros.
        max_iter: Maximum number of Newton steps, >= 1.
        tol: Stopping tolerance on the Newton decrement and the gradient norm, >= 0.

    Returns:
        GLMFit with theta (d,), the Newton steps taken, whether the stopping rule was
        met and L(theta).

    Raises:
        ValueError: On NaN/inf, mismatched shapes, lam < 0, negative weights, targets
            outside the link's ``y_bounds``, an unknown link name, or a singular
            Hessian with lam = 0.

    Example:
        >>> X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
        >>> y = np.array([1.0, 0.0, 1.0])
        >>> fit = fit_glm(X, y, link="logistic", lam=1.0)
        >>> fit.converged, np.round(fit.theta, 4)
        (True, array([ 0.6925, -0.1128]))
        >>> ridge = fit_glm(X, y, link="identity", lam=1.0).theta
        >>> bool(np.allclose(ridge, np.linalg.solve(X.T @ X + np.eye(2), X.T @ y)))
        True
    """
    problem = _validate(X, y, weights, center, link)
    lam = check_scalar("lam", lam, low=0.0)
    max_iter = check_int("max_iter", max_iter, low=1)
    tol = check_scalar("tol", tol, low=0.0)
    d = problem.X.shape[1]
    start = problem.center if theta0 is None else _check_vector("theta0", theta0, d)
    if problem.X.shape[0] == 0:
        return GLMFit(problem.center.copy(), 0, True, 0.0)
    return _newton(problem, lam, start, max_iter, tol)


def fit_logistic_unchecked(
    X: np.ndarray,
    y: np.ndarray,
    weights: np.ndarray,
    *,
    lam: float,
    theta0: np.ndarray,
    blocks: Blocks | None = None,
) -> GLMFit:
    """The logistic ``fit_glm`` (center 0, default max_iter and tol), trusting its input.

    ``fit_glm(X, y, link="logistic", lam=lam, weights=weights, theta0=theta0)`` for callers that refit on rows they already hold in float64 (a policy's history): the
    same Newton solve and the same result, without converting and checking X, y and the
    weights again (O(n d) per call). The caller guarantees: X is a float64 array of shape
    (n, d) with n >= 1, y and weights float64 of shape (n,), weights >= 0, theta0 float64
    of shape (d,), lam >= 0. Non-finite data cannot give a converged fit; a fit that has
    not converged is therefore redone by ``fit_glm``, which raises on bad input (and
    otherwise returns the same values); NumPy may warn on the non-finite values first.

    ``blocks`` (:data:`Blocks`, from ``linalg.spans.column_blocks(X)``): the Hessian is
    block-diagonal, and each Newton step builds, factors and solves it block by block
    (on mnist's block-encoded arms, ten 196 x 196 blocks instead of 1,960 x 1,960: the
    same values up to rounding).
    """
    d = X.shape[1]
    problem = _Problem(
        X=X,
        y=y,
        w=weights,
        center=np.zeros(d),
        link=_LOGISTIC,
        unit_weights=bool((weights == 1.0).all()),
        blocks=blocks,
    )
    fit = _newton(problem, float(lam), theta0, 100, 1e-10)
    if fit.converged:
        return fit
    return fit_glm(X, y, link=_LOGISTIC, lam=lam, weights=weights, theta0=theta0)


def glm_hessian(
    X: Any,
    theta: Any,
    *,
    link: str | Link = "logistic",
    lam: float = 1.0,
    weights: Any = None,
    y: Any = None,
) -> np.ndarray:
    """Curvature matrix of the regularised GLM log-likelihood at theta.

    Without targets this is the slope-weighted design matrix of GLM bandits
    [Faury2020] (their H_t(theta)):

        H(theta) = sum_i w_i mu'(x_i^T theta) x_i x_i^T + lam I,

    which equals the Hessian of the ``fit_glm`` objective for the canonical links
    (identity, logistic), where nll''(z, y) = mu'(z). With ``y`` given it is the exact
    Hessian of that objective, sum_i w_i nll''(x_i^T theta, y_i) x_i x_i^T + lam I,
    which differs from the above for the probit link.

    Args:
        X: Features, shape (n, d); n may be 0 (then lam I is returned).
        theta: Parameter, shape (d,).
        link: Link name or Link instance.
        lam: Ridge weight, >= 0.
        weights: Sample weights w_i >= 0, shape (n,); default all ones.
        y: Optional targets, shape (n,); selects the exact (observed) Hessian.

    Returns:
        The symmetric (d, d) matrix H(theta).

    Raises:
        ValueError: On NaN/inf, mismatched shapes, lam < 0 or negative weights.

    Example:
        >>> glm_hessian(np.array([[2.0, 0.0]]), np.zeros(2), lam=1.0)
        array([[2., 0.],
               [0., 1.]])
    """
    link_ = get_link(link)
    X_, w = _check_design(X, weights)
    n, d = X_.shape
    lam = check_scalar("lam", lam, low=0.0)
    theta_ = _check_vector("theta", theta, d)
    z = X_ @ theta_
    if y is None:
        return _weighted_gram(X_, w * link_.deriv(z), lam)
    y_ = check_finite_array("y", y, ndim=1)
    if y_.shape != (n,):
        raise ValueError(
            f"y must have shape (n,) = ({n},) to match X of shape {X_.shape}; "
            f"got {y_.shape}."
        )
    return _weighted_gram(X_, w * link_.nll_hess(z, y_), lam)
