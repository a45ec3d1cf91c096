"""Preference links g of a duel: P(first beats second) = g(u_first - u_second) [Oh2025, Sec. 3].

A link gives g(z), its slope g'(z) and the Bernoulli variance of the duel's outcome
g(z) (1 - g(z)), which the variance-aware weights zeta (Eq. 5) and the oracle variances read.

    btl        g(z) = 1 / (1 + exp(-z))      Bradley-Terry-Luce (the paper's experiments)
    thurstone  g(z) = Phi(z)                  Thurstone-Mosteller (standard normal CDF)

The policies' loss is the BTL likelihood (``nn.BradleyTerry``), so they take ``link="btl"``;
the environments take either link.

References:
    [Oh2025] Y. Oh, J. Park, T. Paik. Neural variance-aware dueling bandits with deep
        representation and shallow exploration. arXiv:2506.01250 (AISTATS 2026).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.special import expit, ndtr

__all__ = ["LINKS", "POLICY_LINKS", "DuelLink"]


class DuelLink:
    """A link g with its variance g (1 - g).

    Example:
        >>> float(LINKS["btl"].variance(np.array(0.0)))
        0.25
    """

    def __init__(
        self,
        name: str,
        g: Callable[[np.ndarray], np.ndarray],
        slope: Callable[[np.ndarray], np.ndarray],
    ) -> None:
        self.name = name
        self._g = g
        self._slope = slope

    def g(self, z: np.ndarray) -> np.ndarray:
        """P(first beats second) at utility difference z."""
        return np.asarray(self._g(np.asarray(z, dtype=float)))

    def slope(self, z: np.ndarray) -> np.ndarray:
        """g'(z)."""
        return np.asarray(self._slope(np.asarray(z, dtype=float)))

    def variance(self, z: np.ndarray) -> np.ndarray:
        """Bernoulli variance g(z) (1 - g(z)) of the duel's outcome."""
        p = self.g(z)
        return p * (1.0 - p)

    def __repr__(self) -> str:
        return f"DuelLink({self.name!r})"


def _btl_slope(z: np.ndarray) -> np.ndarray:
    p = expit(z)
    return p * (1.0 - p)


def _thurstone_slope(z: np.ndarray) -> np.ndarray:
    return np.exp(-0.5 * z * z) / np.sqrt(2.0 * np.pi)


LINKS: dict[str, DuelLink] = {
    "btl": DuelLink("btl", expit, _btl_slope),
    "thurstone": DuelLink("thurstone", ndtr, _thurstone_slope),
}
#: The links a policy's loss supports.
POLICY_LINKS = ("btl",)
