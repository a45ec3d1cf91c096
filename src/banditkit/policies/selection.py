"""Selection rules: stateless functions from per-arm beliefs to an arm index.

A rule sees arrays (means, widths, sampled scores), never a model, so it can be tested with
hand-written numbers and reused by every family of policies.
"""

from __future__ import annotations

import numpy as np

__all__ = ["argmax_random_tie", "gaussian_sample", "optimistic_argmax"]


def argmax_random_tie(
    scores: np.ndarray, rng: np.random.Generator | None = None
) -> int:
    """Index of the largest score, ties broken at random.

    Exact ties are broken uniformly at random with ``rng`` (by the lowest index when ``rng``
    is None); ``rng`` is drawn from only when there is a tie.

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
    ties = scores == top
    if rng is None or np.count_nonzero(ties) == 1:
        return first
    best = np.flatnonzero(ties)
    return int(best[rng.integers(best.size)])


def optimistic_argmax(
    mean: np.ndarray,
    width: np.ndarray,
    nu: float,
    rng: np.random.Generator | None = None,
) -> int:
    """Upper-confidence rule: argmax_k mean_k + nu * width_k.

    Example:
        >>> optimistic_argmax(np.array([0.5, 0.2]), np.array([0.1, 1.0]), nu=1.0)
        1
        >>> optimistic_argmax(np.array([0.5, 0.2]), np.array([0.1, 1.0]), nu=0.0)
        0
    """
    return argmax_random_tie(np.asarray(mean) + nu * np.asarray(width), rng)


def gaussian_sample(
    mean: np.ndarray, width: np.ndarray, nu: float, rng: np.random.Generator
) -> int:
    """Per-arm Thompson rule [Zhang2021, Alg. 1]: argmax_k of r_k ~ N(mean_k, (nu width_k)^2).

    Reference:
        [Zhang2021] W. Zhang, D. Zhou, L. Li, Q. Gu. Neural Thompson sampling. ICLR 2021.
    """
    mean = np.asarray(mean)
    draws = mean + nu * np.asarray(width) * rng.standard_normal(mean.shape)
    return argmax_random_tie(draws, rng)
