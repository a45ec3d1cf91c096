"""Warm-up of ensemble sampling: G-optimal design and its rounding [Sun2025, App. B.4].

Algorithm 2 of [Sun2025] pulls tau arms before the ensemble is first fitted: a G-optimal
design zeta over the K arms (``linalg.g_optimal_design``), rounded to integer pull counts
N_1..N_K summing to tau by Algorithm 3:

    N_i <- ceil((tau - K/2) zeta_i)
    while sum N != tau:
        sum < tau:  N_j += 1,  j = argmin_i (N_i - 1) / zeta_i
        sum > tau:  N_j -= 1,  j = argmax_i (N_i - 1) / zeta_i
    N_i <- max(N_i, r(a) / K),   r(a) = (d (d + 1) / 2 + 1) / a           (line 13)

As printed the rule divides by zero for arms outside the design's support and line 13
can make the warm-up much longer than tau (d = 20, K = 50, a = 0.5: 8.44 pulls per arm,
422 in all before the main loop). Our reading, all of it optional:

* the argmin / argmax run over the support S = {i : zeta_i > 1e-12} only, and N_i >= 0;
* ``rounding="pukelsheim"``: efficient rounding [Pukelsheim2006, Ch. 12], (tau - |S|/2)
  in the first line and argmin N_i / zeta_i for increments;
* ``enforce_min_pulls=False`` (default) skips line 13, so that the warm-up lasts exactly
  tau rounds as in the experiments; True applies it with ceil(r(a) / K).

The pulls are then played in a random order (a permutation of the multiset).

References:
    [Sun2025] J. Sun, W. Wang, P. Xu. Provable anytime ensemble sampling algorithms in
        nonlinear contextual bandits. arXiv:2510.10730.
    [Pukelsheim2006] F. Pukelsheim. Optimal Design of Experiments. SIAM, 2006.
"""

from __future__ import annotations

import math

import numpy as np

from banditkit.core.policy import Policy
from banditkit.core.validation import check_choice, check_int, check_scalar
from banditkit.linalg import g_optimal_design
from banditkit.policies.parts.propensity import ArrayLaw, Law, PointLaw, uniform_law

__all__ = [
    "ROUNDINGS",
    "WARMUPS",
    "design_plan",
    "plan_law",
    "round_design",
    "warmup_pull",
]

#: Roundings of a design to pull counts (``round_design``): as printed, or efficient.
ROUNDINGS = ("paper", "pukelsheim")
#: Warm-up strategies: G-optimal design (Algorithm 2), one pull per arm in turn, uniform.
WARMUPS = ("design", "round-robin", "random")
_SUPPORT = 1e-12


def round_design(
    tau: int,
    zeta: np.ndarray,
    *,
    d: int,
    a: float = 0.5,
    rounding: str = "paper",
    enforce_min_pulls: bool = False,
) -> np.ndarray:
    """Integer pull counts N (K,) from a design zeta: Algorithm 3 of [Sun2025] (module doc).

    Args:
        tau: Warm-up length, >= 0.
        zeta: Design weights (K,), >= 0, summing to 1.
        d: Feature dimension (for r(a) of line 13).
        a: The a of r(a) = (d (d + 1) / 2 + 1) / a, in (0, 1).
        rounding: "paper" (as printed, on the support) or "pukelsheim".
        enforce_min_pulls: Apply line 13 (N_i >= ceil(r(a) / K)); the total may then
            exceed tau.

    Returns:
        Non-negative int64 counts; they sum to tau unless ``enforce_min_pulls``.

    Example:
        >>> round_design(10, np.array([0.5, 0.25, 0.25, 0.0]), d=2).tolist()
        [4, 3, 3, 0]
    """
    tau = check_int("tau", tau, low=0)
    zeta = np.asarray(zeta, dtype=np.float64)
    if zeta.ndim != 1 or zeta.size == 0 or zeta.min() < 0:
        raise ValueError("zeta must be a non-empty (K,) array of weights >= 0.")
    a = check_scalar("a", a, low=0.0, high=1.0, low_open=True, high_open=True)
    rounding = check_choice("rounding", rounding, ROUNDINGS)
    K = zeta.size
    support = np.flatnonzero(zeta > _SUPPORT)
    if support.size == 0:
        raise ValueError("zeta must have a positive weight.")
    z = zeta[support]
    shift = K / 2 if rounding == "paper" else support.size / 2
    N = np.maximum(np.ceil((tau - shift) * z), 0.0)
    offset = 1.0 if rounding == "paper" else 0.0
    total = int(N.sum())
    while total != tau:
        if total < tau:
            j = int(np.argmin((N - offset) / z))
            N[j] += 1
            total += 1
        else:
            j = int(np.argmax(np.where(N > 0, (N - 1) / z, -np.inf)))
            N[j] -= 1
            total -= 1
    counts = np.zeros(K, dtype=np.int64)
    counts[support] = N.astype(np.int64)
    if enforce_min_pulls:
        r = (d * (d + 1) / 2 + 1) / a
        counts = np.maximum(counts, math.ceil(r / K))
    return counts


def design_plan(
    arms: np.ndarray,
    tau: int,
    rng: np.random.Generator,
    *,
    a: float = 0.5,
    rounding: str = "paper",
    enforce_min_pulls: bool = False,
    factor: float = 1.01,
) -> np.ndarray:
    """The warm-up pulls of Algorithm 2 in a random order: arm indices, (tau,) (or more).

    zeta is the near-G-optimal design with max leverage <= ``factor`` d' (Frank-Wolfe,
    ``linalg.g_optimal_design``; 1.01 is the eps_fw = 0.01 of the usual stopping rule).
    """
    zeta = g_optimal_design(arms, factor=factor)
    counts = round_design(
        tau,
        zeta,
        d=arms.shape[1],
        a=a,
        rounding=rounding,
        enforce_min_pulls=enforce_min_pulls,
    )
    return rng.permutation(np.repeat(np.arange(arms.shape[0]), counts))


def plan_law(plan: np.ndarray, i: int, n_arms: int, *, drawn_now: bool) -> Law:
    """The law of pull ``i`` of a warm-up plan (``design_plan``: a random order).

    Drawn in this round, the plan is a uniform permutation of its multiset of pulls, so
    its i-th entry is arm a with probability N_a / tau; drawn in an earlier round, it is
    part of the policy's state and the pull is certain.

    Example:
        >>> plan_law(np.array([0, 1, 1, 1]), 0, 3, drawn_now=True)(1)
        0.75
    """
    if drawn_now:
        return ArrayLaw(np.bincount(plan, minlength=n_arms) / plan.size)
    return PointLaw(int(plan[i]))


def warmup_pull(
    policy: Policy,
    arms: np.ndarray,
    i: int,
    strategy: str,
    plan: np.ndarray | None,
    plan_arms: np.ndarray | None,
    *,
    drawn_now: bool,
) -> int:
    """Pull ``i`` of a warm-up under ``strategy``, its law proposed to ``policy``.

    "round-robin": arm i mod K. "design": pull i of ``plan`` (``design_plan``, drawn on
    ``plan_arms``; ``drawn_now``: in this round) while the round shows those arms and the
    plan lasts. Otherwise, and for "random", a uniform arm from the policy's stream.
    """
    K = arms.shape[0]
    if strategy == "round-robin":
        policy.propose(PointLaw(i % K))
        return i % K
    if strategy == "design" and plan is not None:
        same = plan_arms is not None and np.array_equal(plan_arms, arms)
        if same and i < plan.size:
            policy.propose(plan_law(plan, i, K, drawn_now=drawn_now))
            return int(plan[i])
    policy.propose(uniform_law(K))
    return int(policy.rng.integers(K))
