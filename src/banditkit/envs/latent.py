"""Latent reward functions h: R^d -> R of the logistic paper, and their instance parameters.

With theta in R^d and Theta in R^{d x d}, entries i.i.d. Unif(-1, 1) drawn per run from the
environment's instance stream [Bae2025, Sec. 7; App. J for h4-h6, which follow [Zhou2020]]:

    h1(x) = 0.2 (x^T theta)^4
    h2(x) = 20 cos(x^T theta)
    h3(x) = 5 x^T Theta x
    h4(x) = 10 (x^T theta)^2
    h5(x) = x^T Theta^T Theta x
    h6(x) = cos(3 x^T theta)
    linear(x) = x^T theta

Assumption: h4-h6 draw theta and Theta like h1-h3 ("all other parameters as in Sec. 7").

A fixed ``theta`` replaces the drawn vector in the latents that use one (``THETA_LATENTS``):
a number c means theta = c * (1, ..., 1), e.g. c = 4 / sqrt(d) for the theta* of the
logistic-bandit experiments of [Faury2022]; a sequence of d numbers is used as it is. The
random draws are made all the same, so the rest of the instance stream does not change.

References:
    [Bae2025] S. Bae, D. Lee. Neural logistic bandits. arXiv:2505.02069.
    [Zhou2020] D. Zhou, L. Li, Q. Gu. Neural contextual bandits with UCB-based exploration.
    [Faury2022] L. Faury, M. Abeille, K.-S. Jun, C. Calauzènes. Jointly efficient and
        optimal algorithms for logistic bandits. AISTATS 2022.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from banditkit.core.validation import check_choice, check_finite_array, check_scalar

__all__ = [
    "LATENT_FUNCTIONS",
    "THETA_LATENTS",
    "LatentFn",
    "check_theta",
    "make_latent",
]

LatentFn = Callable[[np.ndarray], np.ndarray]
"""Maps a (K, d) matrix of arm features to the (K,) latent values."""


def _quad(theta_mat: np.ndarray) -> LatentFn:
    return lambda x: np.einsum("ki,ij,kj->k", x, theta_mat, x)


_FACTORIES: dict[str, Callable[[np.ndarray, np.ndarray], LatentFn]] = {
    "h1": lambda th, _: lambda x: 0.2 * (x @ th) ** 4,
    "h2": lambda th, _: lambda x: 20.0 * np.cos(x @ th),
    "h3": lambda _, big: (lambda q: lambda x: 5.0 * q(x))(_quad(big)),
    "h4": lambda th, _: lambda x: 10.0 * (x @ th) ** 2,
    "h5": lambda _, big: _quad(big.T @ big),
    "h6": lambda th, _: lambda x: np.cos(3.0 * (x @ th)),
    "linear": lambda th, _: lambda x: x @ th,
}
LATENT_FUNCTIONS: tuple[str, ...] = tuple(_FACTORIES)
#: The latents that depend on the vector theta (and so accept a fixed ``theta``).
THETA_LATENTS: tuple[str, ...] = ("h1", "h2", "h4", "h6", "linear")


def check_theta(theta: Any, h: Any) -> float | list[float] | None:
    """Validate a fixed ``theta`` for the latent ``h``; return a float, a list or None.

    Raises:
        ValueError: If ``h`` does not use a theta vector, or an entry is NaN or inf.
        TypeError: If ``theta`` is neither a number nor a sequence of numbers.

    Example:
        >>> check_theta(0.5, "linear"), check_theta((1, 2), "h1")
        (0.5, [1.0, 2.0])
    """
    if theta is None:
        return None
    if callable(h) or h not in THETA_LATENTS:
        listed = ", ".join(repr(n) for n in THETA_LATENTS)
        raise ValueError(
            f"theta can only be fixed for the latents {listed}; got h={h!r}."
        )
    if isinstance(theta, str) or not isinstance(theta, Sequence | np.ndarray):
        return check_scalar("theta", theta)
    vector = check_finite_array("theta", theta, ndim=1)
    return [float(v) for v in vector]


def make_latent(
    h: str | LatentFn,
    d: int,
    rng: np.random.Generator,
    theta: float | Sequence[float] | None = None,
) -> LatentFn:
    """Instantiate a named latent function with fresh parameters, or wrap a user callable.

    A user callable receives the (K, d) arm matrix and must return K finite values; the
    wrapper checks this every call so that a mistake surfaces with a clear message.
    ``theta`` fixes the vector of a latent of ``THETA_LATENTS`` (see the module docstring).

    Raises:
        ValueError: If ``theta`` is given for another latent or does not have d entries.

    Example:
        >>> f = make_latent("h1", 3, np.random.default_rng(0))
        >>> f(np.zeros((2, 3))).tolist()
        [0.0, 0.0]
        >>> g = make_latent("linear", 4, np.random.default_rng(0), theta=2.0)
        >>> g(np.ones((1, 4))).tolist()
        [8.0]
    """
    fixed = check_theta(theta, h)
    if callable(h):
        user = h

        def checked(x: np.ndarray) -> np.ndarray:
            out = check_finite_array("latent function output", user(x))
            if out.shape != (x.shape[0],):
                raise ValueError(
                    f"the latent function must map a (K, d) array to shape (K,); "
                    f"got {out.shape} for input {x.shape}."
                )
            return out

        return checked
    check_choice("h", h, list(LATENT_FUNCTIONS))
    theta_vec = rng.uniform(-1.0, 1.0, size=d)
    theta_mat = rng.uniform(-1.0, 1.0, size=(d, d))
    if isinstance(fixed, float):
        theta_vec = np.full(d, fixed)
    elif fixed is not None:
        if len(fixed) != d:
            raise ValueError(
                f"theta must be a number or have d={d} entries; got {len(fixed)}."
            )
        theta_vec = np.array(fixed)
    return _FACTORIES[h](theta_vec, theta_mat)
