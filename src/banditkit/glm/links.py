"""Link functions of generalised linear models: identity, logistic and probit.

A GLM models an observation y given features x through the linear predictor
z = x^T theta and an increasing link (mean) function mu:

    E[y | x] = mu(z),    z = x^T theta.

Each link here gives mu and its first two derivatives, and the per-sample negative
log-likelihood nll(z, y) of its noise model with the derivatives in z that a Newton
solver needs. Every method is elementwise, broadcasts z against y, and is
numerically stable: no overflow, NaN or warning for |z| up to 1e3 (and far beyond).

    link        mu(z)                 nll(z, y)
    identity    z                     (z - y)^2 / 2   (Gaussian, unit variance)
    logistic    1 / (1 + exp(-z))     log(1 + exp(z)) - y * z
    probit      Phi(z)                -[y log Phi(z) + (1 - y) log Phi(-z)]

Symbols: mu = μ (mean function), Phi = Φ (standard normal CDF), phi = φ (its density).

For the identity and logistic links (canonical links) nll_hess(z, y) = mu'(z) for
every y; for the probit link the observed curvature nll_hess depends on y.

References:
    [Filippi2010] S. Filippi, O. Cappé, A. Garivier, C. Szepesvári. Parametric
        bandits: the generalized linear case. NeurIPS 2010.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from banditkit.core.lazy import special  # imported at first use
from banditkit.core.validation import check_choice

__all__ = [
    "LINKS",
    "IdentityLink",
    "Link",
    "LogisticLink",
    "ProbitLink",
    "get_link",
]

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)

# Below this z the probit ratio phi(z) / Phi(z) is taken from its continued fraction,
# which avoids the cancellation in z + phi(z) / Phi(z); 30 terms reach double
# precision for -z >= 5 (checked against a 5000-term evaluation).
_MILLS_SWITCH = -5.0
_MILLS_TERMS = 30


def _as_float(a: Any) -> np.ndarray:
    return np.asarray(a, dtype=np.float64)


class Link(ABC):
    """Mean function of a GLM with the negative log-likelihood of its noise model.

    Subclasses set ``name`` and implement the six methods. ``y_bounds`` is the closed
    interval of targets on which ``nll`` is a convex function of z (None: all reals);
    the solvers in ``banditkit.glm`` reject targets outside it.

    Shapes:
        z and y are arrays of any broadcastable shapes; each method returns their
        broadcast shape (``mean``, ``deriv`` and ``deriv2`` return the shape of z).
    """

    name: str
    y_bounds: tuple[float, float] | None = None

    @abstractmethod
    def mean(self, z: np.ndarray) -> np.ndarray:
        """Return mu(z), elementwise."""

    @abstractmethod
    def deriv(self, z: np.ndarray) -> np.ndarray:
        """Return mu'(z), elementwise."""

    @abstractmethod
    def deriv2(self, z: np.ndarray) -> np.ndarray:
        """Return mu''(z), elementwise."""

    @abstractmethod
    def nll(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Return the per-sample negative log-likelihood of y given z (no constants)."""

    @abstractmethod
    def nll_grad(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Return d nll(z, y) / dz, elementwise."""

    @abstractmethod
    def nll_hess(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Return d^2 nll(z, y) / dz^2, elementwise; >= 0 for y within ``y_bounds``."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class IdentityLink(Link):
    """Identity link with Gaussian noise of unit variance (linear regression).

        mu(z) = z,    nll(z, y) = (z - y)^2 / 2,
        d nll / dz = z - y,    d^2 nll / dz^2 = 1.

    Example:
        >>> IdentityLink().nll(np.array([1.0]), np.array([3.0]))
        array([2.])
    """

    name = "identity"

    def mean(self, z: np.ndarray) -> np.ndarray:
        """Return z as a float array."""
        return _as_float(z).copy()

    def deriv(self, z: np.ndarray) -> np.ndarray:
        """Return ones shaped like z."""
        return np.ones_like(_as_float(z))

    def deriv2(self, z: np.ndarray) -> np.ndarray:
        """Return zeros shaped like z."""
        return np.zeros_like(_as_float(z))

    def nll(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Return (z - y)^2 / 2."""
        r = _as_float(z) - _as_float(y)
        return 0.5 * r * r

    def nll_grad(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Return z - y."""
        return _as_float(z) - _as_float(y)

    def nll_hess(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Return ones in the broadcast shape of z and y."""
        return np.ones(np.broadcast_shapes(np.shape(z), np.shape(y)))


class LogisticLink(Link):
    """Logistic (sigmoid) link with Bernoulli log-loss, the canonical binary GLM.

        mu(z) = 1 / (1 + exp(-z)),    mu' = mu (1 - mu),    mu'' = mu' (1 - 2 mu),
        nll(z, y) = log(1 + exp(z)) - y z,    d nll / dz = mu(z) - y,
        d^2 nll / dz^2 = mu'(z).

    log(1 + exp(z)) is computed as ``logaddexp(0, z)`` and mu as ``expit``, so no
    intermediate overflows. nll is convex in z for every real y (it is the
    log-partition b(z) minus y z), so targets are not restricted to [0, 1]; this
    admits noisy or perturbed rewards such as those of ensemble sampling.

    Example:
        >>> LogisticLink().mean(np.array([0.0, 1000.0]))
        array([0.5, 1. ])
    """

    name = "logistic"

    def mean(self, z: np.ndarray) -> np.ndarray:
        """Return 1 / (1 + exp(-z))."""
        return np.asarray(special.expit(_as_float(z)))

    def deriv(self, z: np.ndarray) -> np.ndarray:
        """Return mu(z) (1 - mu(z)), as expit(z) expit(-z) to keep the tails exact."""
        z = _as_float(z)
        return np.asarray(special.expit(z) * special.expit(-z))

    def deriv2(self, z: np.ndarray) -> np.ndarray:
        """Return mu'(z) (1 - 2 mu(z)), using 1 - 2 mu(z) = -tanh(z / 2)."""
        z = _as_float(z)
        return self.deriv(z) * -np.tanh(0.5 * z)

    def nll(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Return log(1 + exp(z)) - y z."""
        z = _as_float(z)
        return np.logaddexp(0.0, z) - _as_float(y) * z

    def nll_grad(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Return mu(z) - y."""
        return self.mean(z) - _as_float(y)

    def nll_hess(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Return mu'(z), broadcast against y."""
        h = self.deriv(z)
        return np.broadcast_to(h, np.broadcast_shapes(h.shape, np.shape(y))).copy()


def _mills_shift_cf(x: np.ndarray) -> np.ndarray:
    """Return r(-x) - x for x >= 5 by its continued fraction, r = phi / Phi.

    r(-x) - x = 1 / (x + 2 / (x + 3 / (x + 4 / (x + ...)))), the continued fraction of
    the Mills ratio (1 - Phi(x)) / phi(x) = 1 / (x + 1 / (x + 2 / (x + ...))).
    """
    t = x.copy()
    for k in range(_MILLS_TERMS, 1, -1):
        t = x + k / t
    return 1.0 / t


def _inverse_mills(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return r(z) = phi(z) / Phi(z) and s(z) = z + r(z), both stable for any z.

    r(z) = -d log Phi(z) / dz and r'(z) = -r(z) s(z); s(z) > 0 for every z. For z >= -5
    r comes from exp(log phi(z) - log Phi(z)) (log Phi by ``log_ndtr``), where z + r
    loses nothing; for z < -5 s comes from a continued fraction and r = s - z, which
    avoids the cancellation of z + r(z) as r(z) -> -z.
    """
    r = np.empty_like(z)
    s = np.empty_like(z)
    far = z < _MILLS_SWITCH
    near = ~far
    zn = z[near]
    with np.errstate(under="ignore"):
        r[near] = np.exp(-0.5 * zn * zn - _LOG_SQRT_2PI - special.log_ndtr(zn))
    s[near] = zn + r[near]
    s[far] = _mills_shift_cf(-z[far])
    r[far] = s[far] - z[far]
    return r, s


class ProbitLink(Link):
    """Probit link (standard normal CDF) with Bernoulli log-loss.

        mu(z) = Phi(z),    mu'(z) = phi(z),    mu''(z) = -z phi(z),
        nll(z, y) = -[y log Phi(z) + (1 - y) log Phi(-z)].

    With the inverse Mills ratio r(z) = phi(z) / Phi(z) and s(z) = z + r(z):

        d nll / dz     = -y r(z) + (1 - y) r(-z),
        d^2 nll / dz^2 = y r(z) s(z) + (1 - y) r(-z) s(-z)   (>= 0 for y in [0, 1]).

    log Phi uses ``scipy.special.log_ndtr``; r and s are computed without dividing
    underflowed quantities (see ``_inverse_mills``), so |z| = 1e3 is exact.
    nll is convex in z only for y in [0, 1], hence ``y_bounds = (0, 1)``.

    Example:
        >>> ProbitLink().mean(np.array([0.0]))
        array([0.5])
    """

    name = "probit"
    y_bounds = (0.0, 1.0)

    def mean(self, z: np.ndarray) -> np.ndarray:
        """Return Phi(z)."""
        return np.asarray(special.ndtr(_as_float(z)))

    def deriv(self, z: np.ndarray) -> np.ndarray:
        """Return phi(z) = exp(-z^2 / 2) / sqrt(2 pi)."""
        z = _as_float(z)
        with np.errstate(under="ignore"):
            return _INV_SQRT_2PI * np.exp(-0.5 * z * z)

    def deriv2(self, z: np.ndarray) -> np.ndarray:
        """Return -z phi(z)."""
        z = _as_float(z)
        return -z * self.deriv(z)

    def nll(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Return -[y log Phi(z) + (1 - y) log Phi(-z)]."""
        z = _as_float(z)
        y = _as_float(y)
        return -(y * special.log_ndtr(z) + (1.0 - y) * special.log_ndtr(-z))

    def nll_grad(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Return -y r(z) + (1 - y) r(-z)."""
        z, y = np.broadcast_arrays(_as_float(z), _as_float(y))
        r_pos, _ = _inverse_mills(z)
        r_neg, _ = _inverse_mills(-z)
        return -y * r_pos + (1.0 - y) * r_neg

    def nll_hess(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Return y r(z) s(z) + (1 - y) r(-z) s(-z)."""
        z, y = np.broadcast_arrays(_as_float(z), _as_float(y))
        r_pos, s_pos = _inverse_mills(z)
        r_neg, s_neg = _inverse_mills(-z)
        return y * r_pos * s_pos + (1.0 - y) * r_neg * s_neg


LINKS: dict[str, Link] = {
    link.name: link for link in (IdentityLink(), LogisticLink(), ProbitLink())
}


def get_link(name: str | Link) -> Link:
    """Return the link registered under ``name``, or ``name`` itself if it is a Link.

    Args:
        name: One of ``"identity"``, ``"logistic"``, ``"probit"``, or a Link instance
            (returned unchanged, so custom links can be passed to the solvers).

    Returns:
        The Link.

    Raises:
        ValueError: If ``name`` is a string that names no link; the message lists the
            known names and suggests the closest.
        TypeError: If ``name`` is neither a string nor a Link.

    Example:
        >>> get_link("probit").name
        'probit'
    """
    if isinstance(name, Link):
        return name
    if not isinstance(name, str):
        raise TypeError(
            f"link must be a str or a Link; got {type(name).__name__} {name!r}."
        )
    return LINKS[check_choice("link", name, list(LINKS))]
