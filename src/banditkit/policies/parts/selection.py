"""Selection rules: from per-arm (or per-pair) beliefs to an action.

A rule sees arrays (means, widths, sampled scores), never a model, so it can be tested with
hand-written numbers and reused by every family of policies.

    functions   argmax_random_tie, optimistic_argmax, gaussian_sample   one arm
                argmax_on_bounds       one arm for every radius of an interval
                top_k                                                 a set of k arms
                pair_argmax                                           an ordered pair
    parts       Greedy, Optimistic, Sampled, TopK, OptimisticPair, SampledPair:
                ``select(mean, width, rng)`` objects a composed policy holds, each a
                ``ScoreRule`` that states its score function (``select`` and ``law``
                are the base class's);
                Optimistic and Sampled also ``select_bracketed(mean, norms, radius,
                rng)``, the same choice when the radius B is known only within bounds
                (``RadiusRange``)
    laws        each part's ``law(mean, width, chosen, mc)`` (and ``law_bracketed``):
                the probability of every action of the round under the rule
                (``propensity``): exact for the arg-max rules, a Monte Carlo estimate
                from ``mc`` for the samplers (None when ``mc`` is None)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from banditkit.core.policy import Policy
from banditkit.core.types import Action
from banditkit.core.validation import check_int
from banditkit.policies.parts.propensity import (
    ArrayLaw,
    Law,
    Mixture,
    MonteCarlo,
    PointLaw,
    SampledLaw,
    SetLaw,
    monte_carlo,
    tie_law,
    tie_shares,
)

__all__ = [
    "BOUND_MARGIN",
    "TIE_RTOL",
    "ArmRule",
    "Greedy",
    "Optimistic",
    "OptimisticPair",
    "PairRule",
    "RadiusRange",
    "Rule",
    "Sampled",
    "SampledPair",
    "ScoreRule",
    "TopK",
    "argmax_on_bounds",
    "argmax_random_tie",
    "bracketed_argmax",
    "epsilon_greedy",
    "epsilon_greedy_law",
    "gaussian_argmax_law",
    "gaussian_sample",
    "optimistic_argmax",
    "pair_argmax",
    "play",
    "sampled_arm_law",
    "tied",
    "top_k",
    "top_k_law",
]


#: Relative tolerance within which the linear and GLM policies tie two scores (about 4500
#: ulps: far above the rounding of a sum of a few hundred terms, far below any difference a
#: policy means).
TIE_RTOL = 1e-12
#: Relative margin by which a selection decided on bounds must win (``argmax_on_bounds``):
#: far above the rounding of the scores, so the exact computation would pick the same arm.
BOUND_MARGIN = 1e-9


def argmax_random_tie(
    scores: np.ndarray, rng: np.random.Generator | None = None, rtol: float = 0.0
) -> int:
    """Index of the largest score, ties broken at random.

    Ties are broken uniformly at random with ``rng`` (the first largest score when ``rng`` is
    None); ``rng`` is drawn from only when there is a tie. With ``rtol`` > 0, scores within
    a relative ``rtol`` of the largest are ties too (:func:`tied`): the linear and GLM
    policies pass :data:`TIE_RTOL`, so that scores equal in exact arithmetic that differ only
    by rounding (the same sum taken in another order, as the block-encoded and the per-arm
    policies take it for arms never played) tie, and the choice among them does not depend
    on the BLAS or the memory layout.

    Raises:
        ValueError: If a score is NaN.

    Example:
        >>> argmax_random_tie(np.array([0.1, 0.7, 0.2]))
        1
    """
    scores = np.asarray(scores)
    first = int(scores.argmax())
    top = scores[first]
    if top != top:  # NaN: argmax stops at the first NaN
        raise ValueError(
            "scores contain NaN; for a neural policy this usually means that its "
            "training diverged (lower lr)."
        )
    if rng is None:
        return first
    ties = tied(scores, top, rtol) if rtol else scores == top
    if np.count_nonzero(ties) == 1:
        return first
    best = np.flatnonzero(ties)
    return int(best[rng.integers(best.size)])


def tied(scores: np.ndarray, top: float | None = None, rtol: float = 0.0) -> np.ndarray:
    """Mask of the scores tied with the largest: within a relative ``rtol`` of it.

    Args:
        scores: (K,) scores without NaN.
        top: Their maximum, if known.
        rtol: Relative tolerance, >= 0 (0: exact ties).

    Example:
        >>> tied(np.array([1.0, 1.0 + 1e-15, 0.9]), rtol=TIE_RTOL).tolist()
        [True, True, False]
    """
    top = float(scores.max() if top is None else top)
    bound = top - rtol * abs(top)  # Python floats: inf - inf is NaN, no warning
    if bound != bound:  # top = +inf: exact ties only
        return scores == top
    return scores >= bound


def argmax_on_bounds(
    mean: np.ndarray,
    slope: np.ndarray,
    low: np.ndarray | float,
    high: np.ndarray | float,
    margin: float = BOUND_MARGIN,
) -> np.ndarray:
    """The arm argmax_k mean_k + B slope_k for every B in [low, high], or -1 if unsure.

    The scores are linear in B, so an arm that is the unique best, by a relative
    ``margin``, at both ends is the best at every B in between, with no tie: the exact
    selection at any radius of the interval (whose B is not computed yet, e.g. from a
    d_eff known only within bounds) picks it and draws nothing for a tie-break.

    Args:
        mean: Means (..., K).
        slope: Per-arm factors of B (..., K), e.g. nu * ||z_k||.
        low: The lower end of the interval of B (...).
        high: Its upper end (...).
        margin: The best score must beat the second by margin * max(|best|, 1).

    Returns:
        The arm (...), int, or -1 where the ends disagree or the margin is not met.

    Example:
        >>> int(argmax_on_bounds(np.array([1.0, 0.0]), np.array([0.1, 0.2]), 1.0, 2.0))
        0
        >>> int(argmax_on_bounds(np.array([1.0, 0.0]), np.array([0.1, 0.9]), 1.0, 2.0))
        -1
    """
    if np.ndim(mean) == 1:  # one selection: the same test on Python floats
        return np.asarray(_argmax_on_bounds_1d(mean, slope, low, high, margin))
    arms = []
    for radius in (low, high):
        scores = mean + np.asarray(radius)[..., None] * slope
        order = np.sort(scores, axis=-1)
        if scores.shape[-1] > 1:
            gap = order[..., -1] - order[..., -2]
        else:
            gap = np.full(scores.shape[:-1], np.inf)
        tol = margin * np.maximum(np.abs(order[..., -1]), 1.0)
        arms.append(np.where(gap > tol, scores.argmax(-1), -1))
    return np.where(arms[0] == arms[1], arms[0], -1)


def _argmax_on_bounds_1d(
    mean: np.ndarray, slope: np.ndarray, low: Any, high: Any, margin: float
) -> int:
    """``argmax_on_bounds`` for (K,) arrays in Python floats (the same test).

    The scores mean_k + B slope_k round as NumPy's do (a product, then a sum).
    """
    means, slopes = mean.tolist(), slope.tolist()
    best = -1
    for radius in (float(low), float(high)):
        top = second = -math.inf
        arm = -1
        for k, (m, g) in enumerate(zip(means, slopes, strict=True)):
            score = m + radius * g
            if score != score:  # NaN: undecided, as the sorted test
                return -1
            if score > top:
                top, second, arm = score, top, k
            elif score > second:
                second = score
        if not top - second > margin * max(abs(top), 1.0) or best not in (-1, arm):
            return -1
        best = arm
    return best


def optimistic_argmax(
    mean: np.ndarray,
    width: np.ndarray,
    nu: float,
    rng: np.random.Generator | None = None,
    rtol: float = 0.0,
) -> int:
    """Upper-confidence rule: argmax_k mean_k + nu * width_k.

    Example:
        >>> optimistic_argmax(np.array([0.5, 0.2]), np.array([0.1, 1.0]), nu=1.0)
        1
        >>> optimistic_argmax(np.array([0.5, 0.2]), np.array([0.1, 1.0]), nu=0.0)
        0
    """
    return argmax_random_tie(np.asarray(mean) + nu * np.asarray(width), rng, rtol)


def gaussian_sample(
    mean: np.ndarray,
    width: np.ndarray,
    nu: float,
    rng: np.random.Generator,
    rtol: float = 0.0,
) -> int:
    """Per-arm Thompson rule [Zhang2021, Alg. 1]: argmax_k of r_k ~ N(mean_k, (nu width_k)^2).

    Samples within a relative ``rtol`` of the largest tie (:func:`argmax_random_tie`).

    Reference:
        [Zhang2021] W. Zhang, D. Zhou, L. Li, Q. Gu. Neural Thompson sampling. ICLR 2021.
    """
    mean = np.asarray(mean)
    draws = mean + nu * np.asarray(width) * rng.standard_normal(mean.shape)
    return argmax_random_tie(draws, rng, rtol)


def epsilon_greedy(
    scores: np.ndarray, epsilon: float, rng: np.random.Generator, rtol: float = TIE_RTOL
) -> tuple[int, float]:
    """Epsilon-greedy rule and the probability of the arm it chose.

    With probability ``epsilon`` a uniform arm, else the best score (near-ties within
    ``rtol`` broken at random, :func:`argmax_random_tie`). The propensity is
    P(action) = epsilon / K + (1 - epsilon) / (number of tied best arms) if the action is one
    of them, epsilon / K otherwise (what off-policy estimators need).

    Example:
        >>> epsilon_greedy(np.array([0.1, 0.9]), 0.0, np.random.default_rng(0))
        (1, 1.0)
    """
    K = scores.shape[0]
    explore = rng.random() < epsilon
    action = int(rng.integers(K)) if explore else argmax_random_tie(scores, rng, rtol)
    return action, epsilon_greedy_law(scores, epsilon, rtol)(action)


def epsilon_greedy_law(
    scores: np.ndarray, epsilon: float, rtol: float = TIE_RTOL
) -> Mixture:
    """The law of :func:`epsilon_greedy`: epsilon / K + (1 - epsilon) / (tied best arms).

    Example:
        >>> law = epsilon_greedy_law(np.array([0.1, 0.9]), 0.5)
        >>> law(1), law(0)
        (0.75, 0.25)
    """
    K = scores.shape[0]
    uniform = ArrayLaw(np.full(K, 1.0 / K))
    return Mixture([(epsilon, uniform), (1.0 - epsilon, tie_law(scores, rtol))])


def sampled_arm_law(
    draw: Callable[[np.random.Generator, int], np.ndarray],
    chosen: int,
    mc: MonteCarlo | None,
    rtol: float = 0.0,
) -> SampledLaw | None:
    """The law of "argmax of a random score vector", estimated from ``mc.samples`` draws.

    Args:
        draw: ``draw(rng, n)`` -> (n, K) independent draws of the rule's scores.
        chosen: The arm of the rule's own draw.
        mc: The round's Monte Carlo budget (None: no estimate).
        rtol: The rule's relative tie tolerance (ties share a draw).

    Returns:
        A ``propensity.SampledLaw``, or None without ``mc``.

    Example:
        >>> mc = MonteCarlo(99, lambda: np.random.default_rng(0))
        >>> law = sampled_arm_law(lambda rng, n: rng.normal(size=(n, 2)) + [0.0, 9.0], 1, mc)
        >>> law(1)
        1.0
    """
    if mc is None:
        return None
    draws = draw(mc.rng(), mc.samples)
    if np.isnan(draws).any():
        return None
    return SampledLaw(tie_shares(draws, rtol).sum(axis=0), mc.samples, chosen)


def gaussian_argmax_law(
    mean: np.ndarray,
    cov: np.ndarray,
    chosen: int,
    mc: MonteCarlo | None,
    rtol: float = 0.0,
) -> SampledLaw | None:
    """The law of argmax_k s_k, s ~ N(mean, cov) (K correlated scores), by Monte Carlo.

    The scores of Thompson sampling in parameter space: x_k^T theta~ with theta~ ~
    N(theta, Sigma) are N(X theta, X Sigma X^T). The draws are mean + F xi, F F^T = cov
    (from its eigen-decomposition: a singular cov is allowed), xi ~ N(0, I_K).

    Example:
        >>> mc = MonteCarlo(999, lambda: np.random.default_rng(0))
        >>> law = gaussian_argmax_law(np.zeros(2), np.eye(2), 0, mc)
        >>> round(law(0), 1)
        0.5
    """
    if mc is None or not np.isfinite(cov).all():
        return None
    values, vectors = np.linalg.eigh(cov)
    factor = vectors * np.sqrt(np.maximum(values, 0.0))

    def draw(rng: np.random.Generator, n: int) -> np.ndarray:
        return mean + rng.standard_normal((n, mean.shape[0])) @ factor.T

    return sampled_arm_law(draw, chosen, mc, rtol)


def top_k(
    scores: np.ndarray, k: int, rng: np.random.Generator | None = None
) -> tuple[int, ...]:
    """The k arms of largest score, best first; ties broken at random with ``rng``.

    The assortment rule under uniform revenues (top-K by utility).

    Raises:
        ValueError: If k is not in [1, K] or a score is NaN.

    Example:
        >>> top_k(np.array([0.1, 0.7, 0.2, 0.5]), 2)
        (1, 3)
    """
    scores = np.asarray(scores, dtype=float)
    k = check_int("k", k, low=1, high=scores.shape[0])
    if np.isnan(scores).any():
        raise ValueError("scores contain NaN.")
    # A random permutation first, then a stable sort: equal scores in random order.
    order = (
        np.arange(scores.shape[0]) if rng is None else rng.permutation(scores.shape[0])
    )
    ranked = order[np.argsort(-scores[order], kind="stable")]
    return tuple(int(i) for i in ranked[:k])


def pair_argmax(
    scores: np.ndarray, rng: np.random.Generator | None = None, *, diagonal: bool = True
) -> tuple[int, int]:
    """The ordered pair (k, k') of largest score in a K x K matrix, ties at random.

    Args:
        scores: (K, K) score of playing k against k'.
        rng: Tie-breaks (lowest flat index when None).
        diagonal: Whether (k, k) may be chosen.

    Example:
        >>> pair_argmax(np.array([[0.0, 2.0], [1.0, 3.0]]), diagonal=False)
        (0, 1)
    """
    scores = np.array(scores, dtype=float)
    K = scores.shape[0]
    if scores.shape != (K, K):
        raise ValueError(f"scores must be a square (K, K) matrix; got {scores.shape}.")
    if not diagonal:
        if K < 2:
            raise ValueError("scores must be at least 2 x 2 when diagonal=False.")
        np.fill_diagonal(scores, -np.inf)
    flat = argmax_random_tie(scores.reshape(-1), rng)
    return flat // K, flat % K


class Rule(Protocol):
    """A selection part: means and widths (per arm, or (K, K) per pair) to an action."""

    def select(
        self, mean: np.ndarray, width: np.ndarray, rng: np.random.Generator
    ) -> Action:
        """The action for these beliefs; ``rng`` breaks ties and draws samples."""
        ...

    def law(
        self,
        mean: np.ndarray,
        width: np.ndarray,
        chosen: Action,
        mc: MonteCarlo | None = None,
    ) -> Law | None:
        """The probability of each action under ``select`` on these beliefs.

        ``chosen`` is what ``select`` returned; a sampler estimates its law from
        ``mc.samples`` further draws from ``mc.rng()`` (None without ``mc``).
        """
        ...


def play(policy: Policy, rule: Rule, mean: np.ndarray, width: np.ndarray) -> Any:
    """``rule.select`` with the policy's stream, its law proposed to the policy.

    The law is the rule's ``law`` at its choice, with the policy's Monte Carlo budget
    (``propensity.monte_carlo``) for a sampler. A :class:`ScoreRule` does both at once
    (:meth:`ScoreRule.decide`: an exact rule scores and finds the ties once).
    """
    if isinstance(rule, ScoreRule):
        action, law = rule.decide(mean, width, policy.rng, monte_carlo(policy))
    else:
        action = rule.select(mean, width, policy.rng)
        law = rule.law(mean, width, action, monte_carlo(policy))
    policy.propose(law)
    return action


@dataclass(frozen=True)
class RadiusRange:
    """The width factor nu * B(d_eff) of a round, with d_eff known exactly or in bounds.

    A blocked d_eff tracker (``linalg.EffectiveDimension(block=...)``) brackets d_eff
    between reads; B does not decrease with d_eff, so B(d_eff) lies in [low, high].

    Attributes:
        nu: The exploration scale.
        low: B at the lower bound of d_eff.
        high: B at its upper bound.
        pending: Whether the bounds of d_eff differ (else ``exact()`` costs nothing).
        exact: B(d_eff), reading d_eff (computing it when it is pending).
    """

    nu: float
    low: float
    high: float
    pending: bool
    exact: Callable[[], float]

    @classmethod
    def known(cls, nu: float, radius: float) -> RadiusRange:
        """A radius known exactly.

        Example:
            >>> RadiusRange.known(0.5, 2.0).exact()
            2.0
        """
        return cls(nu, radius, radius, False, lambda: radius)


class ScoreRule:
    """A rule that plays the best action by one score function of the beliefs.

    ``select`` and ``law`` are those of every rule: a subclass states its ``score`` (the
    default is mean + width) and, for an action other than one arm, ``_pick`` and the two
    laws. An exact rule scores the
    beliefs; a sampler (``sampled``) scores them with standard normals ``noise`` drawn from
    ``rng``, and estimates its law from ``mc.samples`` further draws of the noise.

    Attributes:
        sampled: Whether the scores take noise.
        rtol: Scores within this relative tolerance of the best are ties
            (:func:`argmax_random_tie`); 0: exact ties.
    """

    sampled: bool = False
    rtol: float = 0.0

    def score(
        self, mean: np.ndarray, width: np.ndarray, noise: np.ndarray | None
    ) -> np.ndarray:
        """The scores (..., actions): mean + width, or mean + width * noise (a sampler's).

        ``noise``: None, or standard normals of shape (..., *``_noise_shape``).
        """
        return mean + (width if noise is None else width * noise)

    def _noise_shape(self, mean: np.ndarray, width: np.ndarray) -> tuple[int, ...]:
        return mean.shape

    def _pick(self, scores: np.ndarray, rng: np.random.Generator | None) -> Any:
        return argmax_random_tie(scores, rng, self.rtol)

    def _exact_law(self, scores: np.ndarray) -> Law:
        """1 / (number of tied best actions) for each of them."""
        return tie_law(scores, self.rtol)

    def _sampled_law(
        self, draws: np.ndarray, chosen: Action, samples: int
    ) -> Law | None:
        """The share of each action among the best of ``samples`` draws (ties split)."""
        flat = draws.reshape(samples, -1)
        if np.isnan(flat).any():
            return None
        shares = tie_shares(flat, self.rtol).sum(axis=0)
        return SampledLaw(shares.reshape(draws.shape[1:]), samples, chosen)

    def select(
        self, mean: np.ndarray, width: np.ndarray, rng: np.random.Generator | None
    ) -> Any:
        """The action of best score; ``rng`` breaks ties and draws a sampler's noise."""
        mean, width = np.asarray(mean), np.asarray(width)
        noise = None
        if self.sampled:
            assert rng is not None
            noise = rng.standard_normal(self._noise_shape(mean, width))
        return self._pick(self.score(mean, width, noise), rng)

    def decide(
        self,
        mean: np.ndarray,
        width: np.ndarray,
        rng: np.random.Generator | None,
        mc: MonteCarlo | None = None,
    ) -> tuple[Any, Law | None]:
        """``select`` and ``law`` at once: the same action, draws and law as the two.

        An exact rule over one arm's float64 beliefs scores them once and finds the tied
        best once, for the choice (:func:`argmax_random_tie`) and for the law
        (:func:`~banditkit.policies.parts.propensity.tie_law`); any other rule calls the
        two in turn.
        """
        cls = type(self)
        if (
            self.sampled
            or cls._pick is not ScoreRule._pick
            or cls._exact_law is not ScoreRule._exact_law
            or getattr(mean, "dtype", None) != np.float64
            or getattr(width, "dtype", None) != np.float64
        ):
            action = self.select(mean, width, rng)
            return action, self.law(mean, width, action, mc)
        scores = self.score(mean, width, None)
        if scores.ndim != 1:
            action = self._pick(scores, rng)
            return action, self._exact_law(scores)
        first = int(scores.argmax())
        top = scores[first]
        if top != top:
            argmax_random_tie(scores)  # raises its error for NaN scores
        ties = tied(scores, top, self.rtol) if self.rtol else scores == top
        count = np.count_nonzero(ties)
        action = first
        if rng is not None and count > 1:
            best = np.flatnonzero(ties)
            action = int(best[rng.integers(best.size)])
        return action, ArrayLaw(ties / count)

    def law(
        self,
        mean: np.ndarray,
        width: np.ndarray,
        chosen: Action,
        mc: MonteCarlo | None = None,
    ) -> Law | None:
        """Exact for an exact rule; a sampler's by Monte Carlo (None without ``mc``)."""
        mean, width = np.asarray(mean, dtype=float), np.asarray(width, dtype=float)
        if not self.sampled:
            return self._exact_law(self.score(mean, width, None))
        if mc is None:
            return None
        noise = mc.rng().standard_normal((mc.samples, *self._noise_shape(mean, width)))
        return self._sampled_law(self.score(mean, width, noise), chosen, mc.samples)


class Greedy(ScoreRule):
    """argmax_k mean_k (widths ignored)."""

    def score(
        self, mean: np.ndarray, width: np.ndarray, noise: np.ndarray | None
    ) -> np.ndarray:
        """The means."""
        return mean


def bracketed_argmax(
    mean: np.ndarray,
    norms: np.ndarray,
    radius: RadiusRange,
    draws: np.ndarray | None,
    rng: np.random.Generator,
    rtol: float = 0.0,
) -> int:
    """argmax_k mean_k + nu B norms_k (xi_k), B(d_eff) known exactly or within bounds.

    ``draws`` None: the optimistic score; else the Thompson sample with the standard
    normals xi (drawn before, as ``gaussian_sample`` draws them). The score is linear in
    B, so an arm that is the unique best, by a margin, at both ends of [B(low), B(high)]
    is the exact choice (:func:`argmax_on_bounds`) and d_eff is not read; otherwise
    B(d_eff) is computed and the arm is the exact argmax (ties at random, ``rtol``).

    Example:
        >>> bracket = RadiusRange(1.0, 1.0, 2.0, True, lambda: 1 / 0)  # never read
        >>> mean, norms = np.array([1.0, 0.0]), np.array([0.1, 0.2])
        >>> bracketed_argmax(mean, norms, bracket, None, np.random.default_rng(0))
        0
    """
    if radius.pending:
        slope = radius.nu * norms if draws is None else (radius.nu * norms) * draws
        arm = int(argmax_on_bounds(mean, slope, radius.low, radius.high))
        if arm >= 0:
            return arm
    width = (radius.nu * radius.exact()) * norms
    return argmax_random_tie(
        mean + 1.0 * (width if draws is None else width * draws), rng, rtol
    )


class ArmRule(ScoreRule):
    """A rule over arms by mean_k + width_k, or by a sample of N(mean_k, width_k^2).

    ``select_bracketed`` is ``select`` with widths nu * B(d_eff) * norms, decided on the
    bounds of B when they suffice (:func:`bracketed_argmax`); a Thompson rule makes its
    draws first, as ``select`` makes them.

    Args:
        rtol: Scores within this relative tolerance of the best are ties
            (:func:`argmax_random_tie`); 0 (default): exact ties.
    """

    def __init__(self, rtol: float = 0.0) -> None:
        self.rtol = rtol

    def select_bracketed(
        self,
        mean: np.ndarray,
        norms: np.ndarray,
        radius: RadiusRange,
        rng: np.random.Generator,
    ) -> int:
        """The arm for widths nu * B * norms, B(d_eff) in ``radius``'s bounds."""
        draws = rng.standard_normal(mean.shape) if self.sampled else None
        return bracketed_argmax(mean, norms, radius, draws, rng, self.rtol)

    def law_bracketed(
        self,
        mean: np.ndarray,
        norms: np.ndarray,
        radius: RadiusRange,
        chosen: int,
        mc: MonteCarlo | None = None,
    ) -> Law | None:
        """The law of ``select_bracketed``, decided on the bounds of B where they suffice.

        An exact rule plays the arm that is the unique best at every B of the interval
        whatever d_eff is (:func:`argmax_on_bounds`): probability 1. A sampler's draw xi
        is decided where one arm is the unique best of mean + nu B norms xi at both ends.
        B(d_eff) is read only when the bounds do not decide (``law`` at its widths).
        """
        if not self.sampled:
            if radius.pending:
                slope = radius.nu * norms
                arm = int(argmax_on_bounds(mean, slope, radius.low, radius.high))
                if arm >= 0:
                    return PointLaw(arm)
            return self.law(mean, (radius.nu * radius.exact()) * norms, chosen, mc)
        if mc is None:
            return None
        xi = mc.rng().standard_normal((mc.samples, mean.shape[0]))
        if radius.pending:
            slope = (radius.nu * norms) * xi
            arms = argmax_on_bounds(
                np.broadcast_to(mean, xi.shape), slope, radius.low, radius.high
            )
            if (arms >= 0).all():
                counts = np.bincount(arms, minlength=mean.shape[0]).astype(float)
                return SampledLaw(counts, mc.samples, chosen)
        width = (radius.nu * radius.exact()) * norms
        return self._sampled_law(self.score(mean, width, xi), chosen, mc.samples)


class Optimistic(ArmRule):
    """argmax_k mean_k + width_k (the widths carry nu): upper confidence bounds.

    Example:
        >>> rule, rng = Optimistic(), np.random.default_rng(0)
        >>> bracket = RadiusRange(1.0, 1.0, 2.0, True, lambda: 1 / 0)  # never read
        >>> rule.select_bracketed(np.array([1.0, 0.0]), np.array([0.1, 0.2]), bracket, rng)
        0
    """


class Sampled(ArmRule):
    """argmax_k of r_k ~ N(mean_k, width_k^2) (per-arm Thompson sampling)."""

    sampled = True


class _TopKLaw:
    """The law of :func:`top_k` with random tie-breaks (``top_k_law``)."""

    def __init__(self, sure: frozenset[int], tied: frozenset[int], draws: int) -> None:
        self.sure, self.tied, self.draws = sure, tied, draws
        self.p = 1.0 / math.comb(len(tied), draws)

    def __call__(self, action: Any) -> float:
        items = frozenset(int(i) for i in action)
        rest = items - self.sure
        if len(items) != len(action) or not self.sure <= items:
            return 0.0
        return self.p if len(rest) == self.draws and rest <= self.tied else 0.0


def top_k_law(scores: np.ndarray, k: int) -> Law:
    """The law of the set :func:`top_k` (random tie-breaks) chooses: exact.

    Every arm above the k-th largest score is in the set; the r places left go to r of the
    n arms tied at that score, each r-subset with probability 1 / C(n, r).

    Example:
        >>> law = top_k_law(np.array([3.0, 1.0, 1.0, 0.0]), 2)
        >>> law((0, 1)), law((0, 2)), law((1, 2))
        (0.5, 0.5, 0.0)
    """
    kth = np.sort(scores)[::-1][k - 1]
    sure = frozenset(int(i) for i in np.flatnonzero(scores > kth))
    tied = frozenset(int(i) for i in np.flatnonzero(scores == kth))
    return _TopKLaw(sure, tied, k - len(sure))


class TopK(ScoreRule):
    """The k arms of largest mean + width (or of a Gaussian sample): an assortment.

    The action is the sorted tuple of the chosen arms (the assortment contract); its law
    is exact for mean + width (``top_k_law``), by Monte Carlo over the samples' sets.

    Args:
        k: Assortment size, >= 1.
        sampled: Rank Gaussian samples N(mean, width^2) instead of mean + width.

    Example:
        >>> TopK(2).select(np.array([0.1, 0.7, 0.2]), np.array([0.5, 0.0, 0.0]), None)
        (0, 1)
    """

    def __init__(self, k: int, *, sampled: bool = False) -> None:
        self.k = check_int("k", k, low=1)
        self.sampled = sampled

    def _pick(
        self, scores: np.ndarray, rng: np.random.Generator | None
    ) -> tuple[int, ...]:
        return tuple(sorted(top_k(scores, min(self.k, len(scores)), rng)))

    def _exact_law(self, scores: np.ndarray) -> Law:
        return top_k_law(scores, min(self.k, scores.shape[-1]))

    def _sampled_law(self, draws: np.ndarray, chosen: Action, samples: int) -> Law:
        k = min(self.k, draws.shape[-1])
        sets = np.sort(np.argsort(-draws, axis=1, kind="stable")[:, :k], axis=1)
        assert isinstance(chosen, tuple)
        return SetLaw([tuple(row) for row in sets.tolist()], chosen)


class PairRule(ScoreRule):
    """Dueling rule: the ordered pair (k, k') of best joint score of mean_k + mean_k'.

    ``width`` is the (K, K) matrix of pair widths, e.g. nu ||z_k - z_k'||_{A^-1}
    (``Scorer.pair_scores``); the joint score adds it (``OptimisticPair``) or a
    sample of N(0, width[k, k']^2), one independent draw per ordered pair
    (``SampledPair``).

    Args:
        diagonal: Whether an arm may duel itself.
    """

    def __init__(self, *, diagonal: bool = True) -> None:
        self.diagonal = diagonal

    def score(
        self, mean: np.ndarray, width: np.ndarray, noise: np.ndarray | None
    ) -> np.ndarray:
        """The (..., K, K) joint scores, -inf on the diagonal unless ``diagonal``."""
        spread = width if noise is None else width * noise
        return _off_diagonal(mean[:, None] + mean[None, :] + spread, self.diagonal)

    def _noise_shape(self, mean: np.ndarray, width: np.ndarray) -> tuple[int, ...]:
        return width.shape

    def _pick(
        self, scores: np.ndarray, rng: np.random.Generator | None
    ) -> tuple[int, int]:
        return pair_argmax(scores, rng, diagonal=self.diagonal)


class OptimisticPair(PairRule):
    """argmax over (k, k') of mean_k + mean_k' + width[k, k'] (see :class:`PairRule`).

    Example:
        >>> w = np.array([[0.0, 1.0], [1.0, 0.0]])
        >>> OptimisticPair().select(np.array([0.4, 0.0]), w, None)
        (0, 1)
    """


class SampledPair(PairRule):
    """argmax over (k, k') of s ~ N(mean_k + mean_k', width[k, k']^2) (:class:`PairRule`)."""

    sampled = True


def _off_diagonal(scores: np.ndarray, diagonal: bool) -> np.ndarray:
    """(..., K, K) scores with -inf on the diagonal unless ``diagonal`` (as ``pair_argmax``)."""
    if diagonal:
        return scores
    K = scores.shape[-1]
    return np.where(np.eye(K, dtype=bool), -np.inf, scores)
