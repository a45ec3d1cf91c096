"""The law of a round's action: the probabilities a policy's propensities are read from.

A policy's propensity is the probability with which its ``act`` chose the action it
returned, over the random draws of that ``act`` only, given the policy's state (its past
draws included: an ensemble's perturbations, a warm-up plan drawn earlier). That is the
probability an importance weight needs: conditioned on everything the policy knew, the
reward of (x, a) does not depend on its state, so IPS stays unbiased wherever it is > 0.

A *law* answers it for any action of the round (``law(action) -> float``); a selection
rule builds one from the arrays it chose from (``selection``), and the base ``Policy.act``
reads it at the action played (``last_propensity``), mixing in uniform play with
``explore_floor``.

    exact       deterministic arg-max rules: 1 / (number of tied best actions)
                (``tie_law``), 1 when ties go to the first index (``PointLaw``);
                explicit randomisation: its probabilities (``ArrayLaw``, ``Mixture``)
    estimated   samplers (Thompson sampling, perturbed scores): the frequency of the action
                among N + 1 draws of the rule, the rule's own draw and N more
                (``SampledLaw``), N = ``MonteCarlo.samples``

The N further draws come from ``MonteCarlo.rng()``, a generator of the round derived from
the policy's seed and the round (``core.seeding.RoundStreams``, stream "propensity"), never
from the policy's own stream: estimating a propensity changes no action.

The frequency among N + 1 draws is never 0 for the action the rule drew, and it is within
1 / (N + 1) of the frequency among N: its standard error is sqrt(p (1 - p) / N).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from banditkit.core.policy import PROPENSITY_SAMPLES, Policy
from banditkit.core.types import Action

__all__ = [
    "PROPENSITY_SAMPLES",
    "ArrayLaw",
    "Law",
    "Mixture",
    "MonteCarlo",
    "PointLaw",
    "SampledLaw",
    "SetLaw",
    "first_shares",
    "monte_carlo",
    "tie_law",
    "tie_shares",
    "uniform_law",
]

#: The probability of each action of a round (module docstring).
Law = Callable[[Any], float]


@dataclass(frozen=True)
class MonteCarlo:
    """The Monte Carlo budget of one round's propensity estimate.

    Attributes:
        samples: N further draws of the rule, >= 1.
        rng: The round's generator of those draws (called once per estimate);
            independent of the policy's own stream.
    """

    samples: int
    rng: Callable[[], np.random.Generator]


def monte_carlo(policy: Policy) -> MonteCarlo | None:
    """The policy's Monte Carlo budget for this round (None: ``propensity_samples`` = 0)."""
    n = policy.propensity_samples
    return MonteCarlo(n, policy.propensity_rng) if n > 0 else None


class ArrayLaw:
    """Probabilities held in an array indexed by the action: (K,) for arms, (K, K) for pairs.

    Example:
        >>> law = ArrayLaw(np.array([[0.0, 0.25], [0.75, 0.0]]))
        >>> law((1, 0)), law((0, 0))
        (0.75, 0.0)
    """

    def __init__(self, probs: np.ndarray) -> None:
        self.probs = probs

    def __call__(self, action: Any) -> float:
        """The probability of ``action`` (an arm, or a pair (i, j))."""
        return float(self.probs[action])


class PointLaw:
    """The law of a deterministic choice: 1 for ``chosen``, 0 for any other action.

    Example:
        >>> PointLaw((0, 1))((0, 1)), PointLaw(2)(1)
        (1.0, 0.0)
    """

    def __init__(self, chosen: Action) -> None:
        self.chosen = chosen

    def __call__(self, action: Any) -> float:
        """1 for the chosen action, else 0."""
        return 1.0 if action == self.chosen else 0.0


def uniform_law(n_arms: int) -> ArrayLaw:
    """The law of a uniform arm: 1 / K each.

    Example:
        >>> uniform_law(4)(2)
        0.25
    """
    return ArrayLaw(np.full(n_arms, 1.0 / n_arms))


def tie_shares(scores: np.ndarray, rtol: float = 0.0) -> np.ndarray:
    """The probability of each entry under "argmax, ties at random", along the last axis.

    1 / (number of ties) for the entries tied with the largest (within a relative
    ``rtol``, as ``selection.tied``), 0 elsewhere; rows of (..., K) scores independently.

    Example:
        >>> tie_shares(np.array([[1.0, 1.0, 0.0], [0.0, 2.0, 1.0]])).tolist()
        [[0.5, 0.5, 0.0], [0.0, 1.0, 0.0]]
    """
    top = scores.max(axis=-1, keepdims=True)
    if rtol:
        # scores >= top - rtol |top|, with exact ties where top = +inf (as ``tied``)
        with np.errstate(invalid="ignore"):  # inf - inf, replaced by top below
            bound = np.where(np.isfinite(top), top - rtol * np.abs(top), top)
        ties = scores >= bound
    else:
        ties = scores == top
    return ties / np.count_nonzero(ties, axis=-1)[..., None]


def first_shares(scores: np.ndarray) -> np.ndarray:
    """One-hot of the first largest entry along the last axis (numpy's argmax), (..., K).

    Example:
        >>> first_shares(np.array([1.0, 1.0, 0.0])).tolist()
        [1.0, 0.0, 0.0]
    """
    best = scores.argmax(axis=-1)
    return np.asarray(best[..., None] == np.arange(scores.shape[-1]), dtype=float)


def tie_law(scores: np.ndarray, rtol: float = 0.0) -> ArrayLaw:
    """The law of "argmax, ties broken uniformly" on (K,) or (K, K) scores.

    Over a (K, K) matrix the ties are among all its entries (a pair rule).

    Example:
        >>> law = tie_law(np.array([0.5, 0.9, 0.9]))
        >>> law(1), law(0)
        (0.5, 0.0)
    """
    flat = scores.reshape(-1)
    return ArrayLaw(tie_shares(flat, rtol).reshape(scores.shape))


class SampledLaw:
    """A sampler's law estimated from N further draws: (c_a + [a = chosen]) / (N + 1).

    c_a is the (fractional, where a draw's maximum is tied) count of a among the N draws;
    the rule's own draw, which chose ``chosen``, is the (N + 1)-th.

    Args:
        counts: (K,) or (K, K) counts of the N draws, indexed by the action.
        samples: N.
        chosen: The action of the rule's own draw.

    Example:
        >>> law = SampledLaw(np.array([3.0, 1.0]), 4, chosen=1)
        >>> law(1), law(0)
        (0.4, 0.6)
    """

    def __init__(self, counts: np.ndarray, samples: int, chosen: Action) -> None:
        self.counts = counts
        self.samples = samples
        self.chosen = chosen

    def __call__(self, action: Any) -> float:
        """The estimated probability of ``action``."""
        own = 1.0 if action == self.chosen else 0.0
        return (float(self.counts[action]) + own) / (self.samples + 1)


class SetLaw:
    """A set rule's law estimated from N further draws of its set (``SampledLaw`` for sets).

    Args:
        draws: The N drawn sets, each a sorted tuple of items.
        chosen: The rule's own set (sorted).

    Example:
        >>> law = SetLaw([(0, 1), (0, 2), (0, 1)], chosen=(0, 1))
        >>> law((0, 1)), law((1, 2))
        (0.75, 0.0)
    """

    def __init__(
        self, draws: Sequence[tuple[int, ...]], chosen: tuple[int, ...]
    ) -> None:
        self.counts = Counter(tuple(int(i) for i in s) for s in draws)
        self.samples = len(draws)
        self.chosen = tuple(int(i) for i in chosen)

    def __call__(self, action: Any) -> float:
        """The estimated probability of the set ``action`` (a sorted tuple)."""
        key = tuple(int(i) for i in action)
        own = 1.0 if key == self.chosen else 0.0
        return (self.counts[key] + own) / (self.samples + 1)


class Mixture:
    """The law of "law_i with probability w_i": sum_i w_i law_i(action).

    Example:
        >>> law = Mixture([(0.5, PointLaw(0)), (0.5, tie_law(np.zeros(2)))])
        >>> law(0), law(1)
        (0.75, 0.25)
    """

    def __init__(self, parts: Sequence[tuple[float, Law]]) -> None:
        self.parts = [(w, law) for w, law in parts if w > 0.0]

    def __call__(self, action: Any) -> float:
        """sum_i w_i law_i(action)."""
        return float(sum(w * law(action) for w, law in self.parts))
