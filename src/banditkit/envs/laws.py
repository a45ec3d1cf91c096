"""Context laws: how the feature vectors of synthetic environments are drawn.

    uniform       every coordinate i.i.d. Unif(-1, 1)          (our reading of [Bae2025, Sec. 7],
                  which draws the parameters from Unif(-1, 1) but gives no law for x)
    normal        every coordinate i.i.d. N(0, 1)
    unit-sphere   N(0, I_d) normalised to unit L2 norm         [Zhou2020, Sec. 7.1]
    unit-ball     uniform in the unit L2 ball: a unit-sphere direction times the radius
                  U^(1/d), U ~ Unif(0, 1)        [Faury2022, experiments]
    symmetrized   [u; u] / sqrt(2) with u uniform on the unit sphere of dimension d/2
                  (Assumption 4.2 of [Bae2025]; needs even d)

References:
    [Zhou2020] D. Zhou, L. Li, Q. Gu. Neural contextual bandits with UCB-based exploration.
    [Bae2025] S. Bae, D. Lee. Neural logistic bandits. arXiv:2505.02069.
    [Faury2022] L. Faury, M. Abeille, K.-S. Jun, C. Calauzènes. Jointly efficient and
        optimal algorithms for logistic bandits. AISTATS 2022.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from banditkit.core.validation import check_choice

__all__ = ["LAWS", "sample_contexts"]


def _uniform(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    return rng.uniform(-1.0, 1.0, size=(n, d))


def _normal(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    return rng.standard_normal((n, d))


def _unit_sphere(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    x = rng.standard_normal((n, d))
    # The row norms as np.linalg.norm(x, axis=1) computes them, without its overhead.
    return x / np.sqrt(np.add.reduce(x * x, axis=1, keepdims=True))


def _unit_ball(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    # P(||x|| <= r) = r^d for the uniform law on the ball, so ||x|| = U^(1/d).
    direction = _unit_sphere(rng, n, d)
    radius = rng.random(n) ** (1.0 / d)
    return direction * radius[:, None]


def _symmetrized(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    if d % 2:
        raise ValueError(f"law 'symmetrized' needs an even d; got d={d}.")
    u = _unit_sphere(rng, n, d // 2)
    return np.concatenate([u, u], axis=1) / np.sqrt(2.0)


LAWS: dict[str, Callable[[np.random.Generator, int, int], np.ndarray]] = {
    "uniform": _uniform,
    "normal": _normal,
    "unit-sphere": _unit_sphere,
    "unit-ball": _unit_ball,
    "symmetrized": _symmetrized,
}


def sample_contexts(rng: np.random.Generator, law: str, n: int, d: int) -> np.ndarray:
    """Draw ``n`` vectors of dimension ``d`` from the named law; shape (n, d).

    Example:
        >>> x = sample_contexts(np.random.default_rng(0), "unit-sphere", 4, 3)
        >>> np.allclose(np.linalg.norm(x, axis=1), 1.0)
        True
    """
    check_choice("law", law, list(LAWS))
    return LAWS[law](rng, n, d)
