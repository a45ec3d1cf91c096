"""Preference links g of a duel: P(first beats second) = g(u_first - u_second) [Oh2025, Sec. 3].

A duel link is a binary GLM link of ``banditkit.glm`` read on the utility difference z of a
pair: ``DuelLink`` wraps a ``glm.Link`` and gives g(z) = mu(z), its slope g'(z) = mu'(z),
the Bernoulli variance g(z) (1 - g(z)) of the outcome (the sigma^2 of Eq. 5, which the
variance-aware weights zeta and the oracle variances read) and the per-duel negative
log-likelihood nll(z, o) = -[o log g(z) + (1 - o) log(1 - g(z))] with its derivative in z,
the data term of the weighted MLE of Eq. 4 (for a symmetric link, g(-z) = 1 - g(z), this is
Eq. 4's -log g((-1)^(1 - o) z)). No formula is written twice: all of them are the glm link's.

    name        alias      g(z)                       glm link
    btl         logistic   1 / (1 + exp(-z))          LogisticLink   (the paper's experiments)
    thurstone   probit     Phi(z)                     ProbitLink     (Thurstone-Mosteller)

``get_duel_link`` accepts either name, a ``glm.Link`` (a custom link: its ``mean`` must map
into [0, 1]) or a ``DuelLink``. The dueling environments (``envs.dueling``), the loss of the
neural dueling policies (``nn.PairwiseGLM``; ``nn.BradleyTerry`` for BTL), their weights
zeta, and the MLE of the linear baselines (``GLMModel``) all take the link from here.

For BTL the variance equals the slope, g (1 - g) = g'; for Thurstone it does not
(Phi (1 - Phi) against phi): Eq. 5 names the Bernoulli variance g (1 - g), which is what
``variance`` returns for every link.

References:
    [Oh2025] Y. Oh, J. Park, T. Paik. Neural variance-aware dueling bandits with deep
        representation and shallow exploration. arXiv:2506.01250 (AISTATS 2026).
"""

from __future__ import annotations

import numpy as np

from banditkit.core.validation import check_choice
from banditkit.glm.links import LINKS as GLM_LINKS
from banditkit.glm.links import Link

__all__ = ["LINKS", "LINK_NAMES", "DuelLink", "get_duel_link"]

#: Accepted names of the duel links and the glm link each means.
LINK_NAMES: dict[str, str] = {
    "btl": "logistic",
    "logistic": "logistic",
    "thurstone": "probit",
    "probit": "probit",
}


class DuelLink:
    """A binary GLM link read as a preference link of duels (module docstring).

    Args:
        link: A ``glm.Link`` whose mean maps the reals into [0, 1] (logistic, probit or a
            custom one).
        name: Its name in messages and labels (default: the glm link's name).

    Raises:
        ValueError: If ``link`` is not a ``glm.Link`` or its mean leaves [0, 1].

    Example:
        >>> float(LINKS["btl"].variance(np.array(0.0)))
        0.25
        >>> LINKS["thurstone"].glm.name
        'probit'
    """

    def __init__(self, link: Link, name: str | None = None) -> None:
        if not isinstance(link, Link):
            raise ValueError(f"link must be a glm.Link; got {type(link).__name__}.")
        probe = np.asarray(link.mean(np.array([-30.0, -1.0, 0.0, 1.0, 30.0])))
        if not (np.all(np.isfinite(probe)) and probe.min() >= 0 and probe.max() <= 1):
            raise ValueError(
                f"link {link.name!r} is no preference link: its mean must lie in "
                f"[0, 1]; got {probe.tolist()} at z = -30, -1, 0, 1, 30."
            )
        self.glm = link
        self.name = link.name if name is None else name

    def g(self, z: np.ndarray) -> np.ndarray:
        """P(first beats second) at utility difference z."""
        return np.asarray(self.glm.mean(np.asarray(z, dtype=float)))

    def slope(self, z: np.ndarray) -> np.ndarray:
        """g'(z) (the glm link's mu')."""
        return np.asarray(self.glm.deriv(np.asarray(z, dtype=float)))

    def variance(self, z: np.ndarray) -> np.ndarray:
        """Bernoulli variance g(z) (1 - g(z)) of the duel's outcome (Eq. 5's sigma^2)."""
        p = self.g(z)
        return p * (1.0 - p)

    def nll(self, z: np.ndarray, o: np.ndarray) -> np.ndarray:
        """-[o log g(z) + (1 - o) log(1 - g(z))]: one duel's term of Eq. 4 (unweighted)."""
        return np.asarray(self.glm.nll(np.asarray(z, dtype=float), o))

    def nll_grad(self, z: np.ndarray, o: np.ndarray) -> np.ndarray:
        """Return d nll(z, o) / dz."""
        return np.asarray(self.glm.nll_grad(np.asarray(z, dtype=float), o))

    def __repr__(self) -> str:
        return f"DuelLink({self.name!r})"


LINKS: dict[str, DuelLink] = {
    name: DuelLink(GLM_LINKS[glm_name], name) for name, glm_name in LINK_NAMES.items()
}


def get_duel_link(link: str | Link | DuelLink) -> DuelLink:
    """The duel link named ``link`` ("btl", "logistic", "thurstone", "probit"), or wrapped.

    Args:
        link: A name, a ``glm.Link`` (wrapped) or a ``DuelLink`` (returned as is).

    Raises:
        ValueError: For an unknown name, another type, or a glm link that is no
            preference link.

    Example:
        >>> get_duel_link("probit") is LINKS["probit"], get_duel_link("btl").glm.name
        (True, 'logistic')
    """
    if isinstance(link, DuelLink):
        return link
    if isinstance(link, Link):
        return DuelLink(link)
    if not isinstance(link, str):
        raise ValueError(
            "link must be a link name, a glm.Link or a DuelLink; "
            f"got {type(link).__name__} {link!r}."
        )
    return LINKS[check_choice("link", link, tuple(LINK_NAMES))]
