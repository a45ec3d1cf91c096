"""Off-policy estimators of a target policy's value from a logged bandit feedback.

A log holds n rounds i = 1..n: the logged action a_i in [0, K), its reward r_i and the
logging (behaviour) policy's probability p_i = pi_0(a_i | x_i) of having played it. The target
policy is given by its action probabilities on every logged row, ``target[i, k] = pi(k | x_i)``,
and w_i = pi(a_i | x_i) / p_i is the importance weight. IPS and SNIPS need only
pi(a_i | x_i), so they also take it directly (``target_propensities``, (n,)): on logs whose
action is an ordered pair or a set (duels, assortments; ``banditkit.datasets.logs``), one
weight per row re-weights the pair or set as a whole, and the estimators below are unchanged. With q[i, k] an estimate of the
expected reward of action k on row i, the estimates of V(pi) = E_x E_{a~pi}[r] are

    IPS    V = (1/n) sum_i w_i r_i                                   [Horvitz1952; Dudik2011]
    SNIPS  V = sum_i w_i r_i / sum_i w_i                             [Swaminathan2015]
    DM     V = (1/n) sum_i sum_k pi(k|x_i) q[i, k]                   [Dudik2011, Sec. 2]
    DR     V = (1/n) sum_i [ sum_k pi(k|x_i) q[i, k] + w_i (r_i - q[i, a_i]) ]   [Dudik2011, eq. 2]

Confidence intervals use the normal approximation: each estimate is (or, for SNIPS, is
linearised into) a mean of per-row terms z_i, its standard error is sd(z) / sqrt(n) with the
sample standard deviation (ddof = 1), and the interval is V -/+ z_{(1+level)/2} * se. SNIPS, a
ratio of means, is linearised by the delta method, z_i = w_i (r_i - V) / mean(w). The DM
interval treats q as fixed: it ignores the error of the reward model, whose bias it cannot
see, so it is too narrow when the model is wrong; IPS and DR are unbiased whatever q is (for DR,
when q is fitted on other rows than the ones it is evaluated on: see
:func:`banditkit.ope.reward_model.cross_fit`).

References:
    [Horvitz1952] D. G. Horvitz, D. J. Thompson. A generalization of sampling without
        replacement from a finite universe. JASA 47(260), 1952.
    [Dudik2011] M. Dudik, J. Langford, L. Li. Doubly robust policy evaluation and learning.
        ICML 2011.
    [Swaminathan2015] A. Swaminathan, T. Joachims. The self-normalized estimator for
        counterfactual learning. NeurIPS 2015.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from banditkit.core.lazy import special  # imported at first use
from banditkit.core.validation import check_finite_array, check_scalar
from banditkit.ope.reward_model import cross_fit

__all__ = [
    "Estimate",
    "direct_method",
    "dm",
    "doubly_robust",
    "dr",
    "ips",
    "on_policy",
    "snips",
]

#: Tolerance on the row sums of ``target`` (probabilities stored as float32 still pass).
ROW_SUM_ATOL = 1e-6


@dataclass(frozen=True)
class Estimate:
    """An estimate of a policy's value with its normal-approximation confidence interval.

    Attributes:
        value: The point estimate.
        ci: (low, high), the two-sided interval at ``level``.
        std_error: The estimated standard error.
        n: Logged rows used.
        method: "ips", "snips", "dm", "dr" or "on-policy".
        level: Coverage of ``ci``, e.g. 0.95.

    Example:
        >>> e = Estimate(value=0.5, ci=(0.4, 0.6), std_error=0.05, n=100, method="ips", level=0.95)
        >>> str(e)
        'ips: 0.5 (95% CI 0.4 to 0.6; se 0.05, n = 100)'
    """

    value: float
    ci: tuple[float, float]
    std_error: float
    n: int
    method: str
    level: float

    def __str__(self) -> str:
        low, high = self.ci
        return (
            f"{self.method}: {self.value:.4g} ({self.level:.0%} CI {low:.4g} to {high:.4g}; "
            f"se {self.std_error:.3g}, n = {self.n})"
        )

    def contains(self, value: float) -> bool:
        """Whether ``value`` lies inside the interval (bounds included)."""
        return bool(self.ci[0] <= value <= self.ci[1])


# ---------------------------------------------------------------------- validation
def _check_level(level: Any) -> float:
    return check_scalar(
        "level", level, low=0.0, high=1.0, low_open=True, high_open=True
    )


def _check_rows(name: str, value: Any, n: int | None) -> np.ndarray:
    arr = check_finite_array(name, value, ndim=1)
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"{name} must have {n} rows like target; got {arr.shape[0]}.")
    return arr


def _check_target(target: Any) -> np.ndarray:
    pi = check_finite_array("target", target, ndim=2)
    n, k = pi.shape
    if n < 2 or k < 1:
        raise ValueError(
            f"target must have at least 2 rows and 1 column (n, K); got shape {pi.shape}."
        )
    if (pi < 0).any():
        raise ValueError("target must hold probabilities >= 0; got a negative entry.")
    sums = pi.sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1.0) > ROW_SUM_ATOL)
    if bad.size:
        raise ValueError(
            f"target rows must sum to 1 (the target policy's action probabilities); row "
            f"{int(bad[0])} sums to {sums[bad[0]]:.6g}."
        )
    return pi


def _check_actions(actions: Any, n: int, k: int) -> np.ndarray:
    arr = np.asarray(actions)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(
            f"actions must be a 1-d array of {n} rows; got shape {arr.shape}."
        )
    integral = arr.dtype.kind in "iu" or (
        arr.dtype.kind == "f"
        and bool(np.all(np.isfinite(arr) & (arr == np.round(arr))))
    )
    if not integral:
        raise ValueError(
            f"actions must be integer action indices; got dtype {arr.dtype}."
        )
    arr = arr.astype(np.int64)
    if arr.size and (arr.min() < 0 or arr.max() >= k):
        raise ValueError(
            f"actions must lie in [0, {k}) (target has {k} columns); got values in "
            f"[{arr.min()}, {arr.max()}]."
        )
    return arr


def _check_propensities(propensities: Any, n: int) -> np.ndarray:
    p = _check_rows("propensities", propensities, n)
    if (p <= 0).any() or (p > 1).any():
        raise ValueError(
            "propensities must lie in (0, 1] (the logging policy's probability of the logged "
            f"action); got values in [{p.min():.6g}, {p.max():.6g}]."
        )
    return p


def _logged(
    rewards: Any, actions: Any, propensities: Any, target: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    pi = _check_target(target)
    n, k = pi.shape
    r = _check_rows("rewards", rewards, n)
    a = _check_actions(actions, n, k)
    p = _check_propensities(propensities, n)
    return r, a, p, pi


def _weighted(
    rewards: Any,
    actions: Any,
    propensities: Any,
    target: Any,
    target_propensities: Any,
) -> tuple[np.ndarray, np.ndarray]:
    """(rewards, weights w_i = pi(a_i | x_i) / p_i) from either form of the target.

    ``target`` (n, K) with the logged ``actions``, or ``target_propensities`` (n,), the
    target's probability of each logged action (a pair or a set, whose law is not a row of
    K columns).
    """
    if (target is None) == (target_propensities is None):
        raise ValueError(
            "give exactly one of target ((n, K) action probabilities, with actions) and "
            "target_propensities ((n,) the target's probability of each logged action)."
        )
    if target is not None:
        r, a, p, pi = _logged(rewards, actions, propensities, target)
        return r, pi[np.arange(r.shape[0]), a] / p
    pi_a = check_finite_array("target_propensities", target_propensities, ndim=1)
    n = pi_a.shape[0]
    if n < 2:
        raise ValueError(f"target_propensities must have at least 2 rows; got {n}.")
    if (pi_a < 0).any() or (pi_a > 1 + ROW_SUM_ATOL).any():
        raise ValueError(
            "target_propensities must be probabilities in [0, 1]; got values in "
            f"[{pi_a.min():.6g}, {pi_a.max():.6g}]."
        )
    r = _check_rows("rewards", rewards, n)
    p = _check_propensities(propensities, n)
    return r, pi_a / p


def _from_terms(value: float, terms: np.ndarray, method: str, level: float) -> Estimate:
    """The estimate ``value`` with the normal interval of the mean of ``terms``."""
    n = terms.shape[0]
    se = float(np.std(terms, ddof=1) / np.sqrt(n))
    half = float(special.ndtri(0.5 + level / 2.0)) * se
    return Estimate(
        value=float(value),
        ci=(float(value - half), float(value + half)),
        std_error=se,
        n=n,
        method=method,
        level=level,
    )


# ---------------------------------------------------------------------- estimators
def ips(
    *,
    rewards: Any,
    actions: Any = None,
    propensities: Any,
    target: Any = None,
    target_propensities: Any = None,
    level: float = 0.95,
) -> Estimate:
    """Inverse propensity scoring: V = (1/n) sum_i w_i r_i, w_i = target[i, a_i] / p_i.

    Unbiased when the logging policy gives every action the target plays a positive
    probability [Dudik2011, Sec. 2]. The interval is V -/+ z sd(w r) / sqrt(n).

    Args:
        rewards: (n,) logged rewards.
        actions: (n,) logged actions, integers in [0, K).
        propensities: (n,) logging probabilities of the logged actions, in (0, 1].
        target: (n, K) the evaluated policy's action probabilities on each logged row; each
            row sums to 1. Or, instead of ``actions`` and ``target``:
        target_propensities: (n,) the evaluated policy's probability of each logged action,
            for logs of pairs or sets (whose law is over K^2 pairs or the sets, not K arms).
        level: Coverage of the interval, in (0, 1).

    Raises:
        ValueError: A bad argument; the message names it.

    Example:
        >>> e = ips(rewards=[1.0, 0.0], actions=[0, 1], propensities=[0.5, 0.5],
        ...         target=[[1.0, 0.0], [1.0, 0.0]])
        >>> e.value
        1.0
    """
    level = _check_level(level)
    r, w = _weighted(rewards, actions, propensities, target, target_propensities)
    terms = w * r
    return _from_terms(float(terms.mean()), terms, "ips", level)


def snips(
    *,
    rewards: Any,
    actions: Any = None,
    propensities: Any,
    target: Any = None,
    target_propensities: Any = None,
    level: float = 0.95,
) -> Estimate:
    """Self-normalised IPS: V = sum_i w_i r_i / sum_i w_i [Swaminathan2015].

    Biased by O(1/n) but bounded by the rewards' range and often of lower variance than IPS.
    The interval comes from the delta method: se = sd(z) / sqrt(n) with
    z_i = w_i (r_i - V) / mean(w).

    Args:
        rewards: (n,) logged rewards.
        actions: (n,) logged actions, integers in [0, K).
        propensities: (n,) logging probabilities of the logged actions, in (0, 1].
        target: (n, K) the evaluated policy's action probabilities per logged row; or
        target_propensities: (n,) its probability of each logged action (pairs, sets).
        level: Coverage of the interval, in (0, 1).

    Raises:
        ValueError: A bad argument, or every weight is zero (the target never plays a
            logged action).

    Example:
        >>> snips(rewards=[1.0, 0.0], actions=[0, 1], propensities=[0.5, 0.5],
        ...       target=[[0.5, 0.5], [0.5, 0.5]]).value
        0.5
    """
    level = _check_level(level)
    r, w = _weighted(rewards, actions, propensities, target, target_propensities)
    mean_w = float(w.mean())
    if mean_w <= 0:
        raise ValueError(
            "target gives probability 0 to every logged action: SNIPS is undefined."
        )
    value = float((w * r).sum() / w.sum())
    terms = w * (r - value) / mean_w
    return _from_terms(value, terms, "snips", level)


def _reward_predictions(
    q: Any,
    regressor: Any,
    n: int,
    k: int,
    rewards: np.ndarray | None,
    actions: np.ndarray | None,
    contexts: Any,
    features: Any,
    n_folds: int,
    seed: int,
) -> np.ndarray:
    if (q is None) == (regressor is None):
        raise ValueError(
            "give exactly one of q (reward predictions, (n, K)) and regressor (a "
            "scikit-learn estimator fitted here by cross-fitting)."
        )
    if q is not None:
        pred = check_finite_array("q", q, ndim=2)
        if pred.shape != (n, k):
            raise ValueError(
                f"q must have shape {(n, k)} like target; got {pred.shape}."
            )
        return pred
    if rewards is None or actions is None:
        raise ValueError("rewards and actions are needed to fit the regressor.")
    return cross_fit(
        regressor,
        rewards=rewards,
        actions=actions,
        n_actions=k,
        contexts=contexts,
        features=features,
        n_folds=n_folds,
        seed=seed,
    )


def direct_method(
    *,
    target: Any,
    q: Any = None,
    regressor: Any = None,
    rewards: Any = None,
    actions: Any = None,
    contexts: Any = None,
    features: Any = None,
    n_folds: int = 2,
    seed: int = 0,
    level: float = 0.95,
) -> Estimate:
    """Direct method: V = (1/n) sum_i sum_k target[i, k] q[i, k] [Dudik2011, Sec. 2].

    The reward model is either given as predictions ``q`` or fitted here from ``regressor``
    (a scikit-learn estimator) on the logged rows by cross-fitting
    (:func:`banditkit.ope.reward_model.cross_fit`). The interval treats q as exact, so it
    ignores the model's error and is too narrow when the model is biased.

    Args:
        target: (n, K) the evaluated policy's action probabilities per logged row.
        q: (n, K) predicted expected reward of every action on every row.
        regressor: A scikit-learn regressor (``predict``) or binary classifier
            (``predict_proba``), used when ``q`` is None.
        rewards: (n,) logged rewards, to fit ``regressor``.
        actions: (n,) logged actions, to fit ``regressor``.
        contexts: (n, K, d) features of every (row, action) pair, or
        features: (n, d) features of each row, shared by its actions (a one-hot of the action
            is appended); give one of the two with ``regressor``.
        n_folds: Folds of the cross-fitting, >= 2.
        seed: Seed of the fold assignment.
        level: Coverage of the interval, in (0, 1).

    Example:
        >>> direct_method(target=[[1.0, 0.0], [0.0, 1.0]], q=[[0.2, 0.4], [0.6, 0.8]]).value
        0.5
    """
    level = _check_level(level)
    pi = _check_target(target)
    n, k = pi.shape
    r = None if rewards is None else _check_rows("rewards", rewards, n)
    a = None if actions is None else _check_actions(actions, n, k)
    pred = _reward_predictions(
        q, regressor, n, k, r, a, contexts, features, n_folds, seed
    )
    terms = (pi * pred).sum(axis=1)
    return _from_terms(float(terms.mean()), terms, "dm", level)


def doubly_robust(
    *,
    rewards: Any,
    actions: Any,
    propensities: Any,
    target: Any,
    q: Any = None,
    regressor: Any = None,
    contexts: Any = None,
    features: Any = None,
    n_folds: int = 2,
    seed: int = 0,
    level: float = 0.95,
) -> Estimate:
    """Doubly robust: DM plus the IPS-weighted residual of the logged action [Dudik2011, eq. 2].

        V = (1/n) sum_i [ sum_k target[i, k] q[i, k] + w_i (r_i - q[i, a_i]) ]

    Unbiased when the propensities are right, whatever q (fitted on other rows); its
    variance is lower than IPS's when q is close to the expected reward. The interval is the
    normal one of the mean of the bracketed terms.

    Args:
        rewards: (n,) logged rewards.
        actions: (n,) logged actions, integers in [0, K).
        propensities: (n,) logging probabilities of the logged actions, in (0, 1].
        target: (n, K) the evaluated policy's action probabilities per logged row.
        q: (n, K) predicted expected reward of every action on every row, or
        regressor: a scikit-learn estimator fitted by cross-fitting (see
            :func:`direct_method`).
        contexts: (n, K, d) features per (row, action), with ``regressor``; or
        features: (n, d) features per row (the one-hot action is appended).
        n_folds: Folds of the cross-fitting, >= 2.
        seed: Seed of the fold assignment.
        level: Coverage of the interval, in (0, 1).

    Raises:
        ValueError: A bad argument; the message names it.

    Example:
        >>> doubly_robust(rewards=[1.0, 0.0], actions=[0, 1], propensities=[0.5, 0.5],
        ...               target=[[1.0, 0.0], [1.0, 0.0]], q=[[0.5, 0.5], [0.5, 0.5]]).value
        1.0
    """
    level = _check_level(level)
    r, a, p, pi = _logged(rewards, actions, propensities, target)
    n, k = pi.shape
    pred = _reward_predictions(
        q, regressor, n, k, r, a, contexts, features, n_folds, seed
    )
    rows = np.arange(n)
    w = pi[rows, a] / p
    terms = (pi * pred).sum(axis=1) + w * (r - pred[rows, a])
    return _from_terms(float(terms.mean()), terms, "dr", level)


def on_policy(*, rewards: Any, level: float = 0.95) -> Estimate:
    """The mean logged reward with its normal interval: the logging policy's own value.

    Example:
        >>> on_policy(rewards=[0.0, 1.0, 1.0, 0.0]).value
        0.5
    """
    level = _check_level(level)
    r = check_finite_array("rewards", rewards, ndim=1)
    if r.shape[0] < 2:
        raise ValueError(f"rewards must have at least 2 rows; got {r.shape[0]}.")
    return _from_terms(float(r.mean()), r, "on-policy", level)


dm = direct_method
dr = doubly_robust
