"""Near-G-optimal experimental design over a finite set of arms (Frank-Wolfe).

For arms x_1, ..., x_n (rows of X, shape (n, d)) and a design pi in the simplex,

    A(pi) = sum_i pi_i x_i x_i^T,        g(pi) = max_i x_i^T A(pi)^-1 x_i.

A G-optimal design minimises g(pi); a D-optimal design maximises log det A(pi). By the
Kiefer-Wolfowitz theorem the two problems have the same solutions and min g = d', the
dimension of the span of the arms [Kiefer1960], [Lattimore2020, Ch. 21]. Playing arm i
about pi_i * m times makes the least-squares width at every arm at most
sqrt(g(pi) / m) times the noise scale, so g(pi) <= 2 d' costs a factor sqrt(2) in
width over the optimal design.

The leverages x_i^T A(pi)^-1 x_i are the gradient of log det A(pi), so the D-optimal
problem is solved by Frank-Wolfe with exact line search: Fedorov-Wynn's algorithm,
which from uniform weights is Khachiyan's algorithm [Khachiyan1996], [Todd2016].

References:
    [Kiefer1960] J. Kiefer, J. Wolfowitz. The equivalence of two extremum problems.
        Canadian Journal of Mathematics 12, 1960.
    [Khachiyan1996] L. G. Khachiyan. Rounding of polytopes in the real number model of
        computation. Mathematics of Operations Research 21(2), 1996.
    [Todd2016] M. J. Todd. Minimum-Volume Ellipsoids: Theory and Algorithms. SIAM,
        2016.
    [Lattimore2020] T. Lattimore, C. Szepesvari. Bandit Algorithms. Cambridge
        University Press, 2020.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from banditkit.core.lazy import sla  # imported at first use
from banditkit.core.validation import check_arms, check_choice, check_int, check_scalar

from ._common import check_weights

__all__ = ["g_optimal_design", "max_leverage"]

_METHODS = ("frank-wolfe",)
# Recompute A^-1 and the leverages from pi after this many rank-1 steps, so that the
# O(n d') Sherman-Morrison updates of each step do not accumulate round-off.
_RECOMPUTE_EVERY = 64


def g_optimal_design(
    X: Any,
    *,
    factor: float = 2.0,
    max_iter: int = 10_000,
    method: str = "frank-wolfe",
) -> np.ndarray:
    """Return a design pi over the rows of X with max leverage <= factor * rank(X).

    Frank-Wolfe on log det A(pi) with exact line search [Todd2016], started from the
    uniform design pi_i = 1 / n. With kappa the largest leverage, at arm j,

        gamma <- (kappa / d' - 1) / (kappa - 1)
        pi    <- (1 - gamma) pi + gamma e_j

    until kappa <= factor * d'. Each step updates A^-1 and all n leverages by
    Sherman-Morrison in O(n d' + d'^2). Rank-deficient X is handled in its row space:
    with the thin SVD X = U S V^T truncated to the d' nonzero singular values, the
    rows of U have the same leverages as the rows of X (A^-1 taken on the row space),
    and their Gram starts well conditioned at A = I / n.

    Every arm keeps a positive weight (the start is uniform); a caller that plays
    ceil(pi_i * m) rounds per arm may drop tiny weights and renormalise.

    Args:
        X: Arms as rows, shape (n, d), n >= 1; duplicated rows are allowed.
        factor: Required ratio max_i leverage_i / d', > 1. The optimum has ratio 1
            [Kiefer1960]; the number of steps grows like d' / (factor - 1).
        max_iter: Maximum number of Frank-Wolfe steps, >= 0.
        method: "frank-wolfe" (Fedorov-Wynn / Khachiyan; the only method).

    Returns:
        Weights pi, shape (n,), pi_i >= 0 and sum_i pi_i = 1 (all pi_i > 0 when
        rank(X) >= 2; one-hot on the longest arm when rank(X) = 1).

    Raises:
        ValueError: On NaN or inf, an empty X, factor <= 1 or an unknown method.

    Warns:
        RuntimeWarning: If max_iter steps do not reach the bound; the last design is
            returned.

    Example:
        >>> X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.5, 0.5]])
        >>> pi = g_optimal_design(X, factor=1.1)
        >>> bool(max_leverage(X, pi) <= 1.1 * 2)
        True
        >>> round(float(pi.sum()), 12)
        1.0
    """
    X = check_arms(X, name="X")
    factor = check_scalar("factor", factor, low=1.0, low_open=True)
    max_iter = check_int("max_iter", max_iter, low=0)
    check_choice("method", method, _METHODS)
    Z = _row_space(X)
    n, rank = Z.shape
    pi = np.full(n, 1.0 / n)
    if rank == 0:
        return pi  # every arm is zero; any design is optimal
    if rank == 1:
        # The line search gives gamma = 1: all weight on the longest arm, whose
        # leverage 1 = d' is optimal. (The update below divides by 1 - gamma.)
        return np.eye(n)[int(np.argmax(np.abs(Z[:, 0])))]
    target = factor * rank
    A_inv, leverages = _exact_leverages(Z, pi)
    exact, steps = True, 0
    for _ in range(max_iter):
        j = int(np.argmax(leverages))
        kappa = float(leverages[j])
        if kappa <= target:
            if exact:
                return pi / pi.sum()
            A_inv, leverages = _exact_leverages(Z, pi)
            exact = True
            continue
        # [Todd2016]: exact line search for log det((1 - gamma) A + gamma z_j z_j^T)
        gamma = (kappa / rank - 1.0) / (kappa - 1.0)
        u = A_inv @ Z[j]
        v = Z @ u  # v_i = z_i^T A^-1 z_j
        # Sherman-Morrison on A' = (1 - gamma) (A + gamma / (1 - gamma) z_j z_j^T)
        scale = gamma / ((1.0 - gamma) + gamma * kappa)
        A_inv = (A_inv - scale * np.outer(u, u)) / (1.0 - gamma)
        leverages = (leverages - scale * v * v) / (1.0 - gamma)
        pi *= 1.0 - gamma
        pi[j] += gamma
        steps += 1
        exact = steps % _RECOMPUTE_EVERY == 0
        if exact:
            A_inv, leverages = _exact_leverages(Z, pi)
    pi /= pi.sum()
    worst = float(np.max(_exact_leverages(Z, pi)[1]))
    if worst > target:
        warnings.warn(
            f"g_optimal_design stopped after max_iter={max_iter} steps with max "
            f"leverage {worst:.4g} > factor * rank = {target:.4g}; returning the last "
            "design. Raise max_iter or factor.",
            RuntimeWarning,
            stacklevel=2,
        )
    return pi


def max_leverage(X: Any, weights: Any) -> float:
    """Return max_i x_i^T A(weights)^-1 x_i, the G-criterion of a design.

    A(weights) = sum_i weights_i x_i x_i^T is inverted on the row space of X (its
    pseudo-inverse when the weighted arms span that space). If they do not span it,
    some arm has a direction the design never observes, and the criterion is +inf
    (the pseudo-inverse would report a misleadingly small value).

    Args:
        X: Arms as rows, shape (n, d), n >= 1.
        weights: Non-negative design weights, shape (n,); need not sum to 1.

    Returns:
        The largest leverage, 0.0 if X is zero, inf if the design is singular on the
        row space of X.

    Raises:
        ValueError: On NaN or inf, an empty X, wrong shapes or negative weights.
    """
    X = check_arms(X, name="X")
    w = check_weights("weights", weights, X.shape[0], strict=False)
    Z = _row_space(X)
    n, rank = Z.shape
    if rank == 0:
        return 0.0
    eigvals, eigvecs = np.linalg.eigh((Z.T * w) @ Z)
    if eigvals[0] <= max(n, rank) * np.finfo(float).eps * max(eigvals[-1], 0.0):
        return float("inf")
    projected = Z @ eigvecs
    return float(np.max((projected * projected) @ (1.0 / eigvals)))


def _row_space(X: np.ndarray) -> np.ndarray:
    """Return U_r (n, r) from the thin SVD of X, r = numerical rank (matrix_rank's)."""
    U, s, _ = np.linalg.svd(X, full_matrices=False)
    if s.size == 0 or s[0] == 0.0:
        return U[:, :0]
    tol = s[0] * max(X.shape) * np.finfo(float).eps
    return U[:, : int(np.sum(s > tol))]


def _exact_leverages(Z: np.ndarray, pi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return A^-1 and the leverages z_i^T A^-1 z_i for A = Z^T diag(pi) Z."""
    chol = sla.cholesky((Z.T * pi) @ Z, lower=True)
    W = sla.solve_triangular(chol, Z.T, lower=True)  # columns L^-1 z_i
    A_inv = sla.cho_solve((chol, True), np.eye(Z.shape[1]))
    return A_inv, np.sum(W * W, axis=0)
