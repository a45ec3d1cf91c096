"""The terms of a scored policy's design A = ridge * lam_t I + sum_t w_t z_t z_t^T.

    weights      w_t of the new term: 1 (UnitWeights), or the link's slope after the
                 round's refit (SlopeWeights: variance-weighted designs)
    regulariser  the round's constants: n observations so far and lam_t, fixed
                 (FixedLambda) or moved every round (``policies.logistic.regularisation``)

References:
    [Bae2025] S. Bae, D. Lee. Neural logistic bandits. arXiv:2505.02069.
    [Faury2022] L. Faury, M. Abeille, K.-S. Jun, C. Calauzènes. Jointly efficient and
        optimal algorithms for logistic bandits. AISTATS 2022.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from banditkit.glm import Link
from banditkit.policies.parts.models import Model

__all__ = ["FixedLambda", "Lambda", "SlopeWeights", "UnitWeights", "Weights"]

_TINY = float(np.finfo(np.float64).tiny)


class Weights(Protocol):
    """w_t of the new term w_t z_t z_t^T of A, after the round's refit (if any)."""

    def __call__(self, model: Model, x: Any, latent: Any, refitted: bool) -> Any:
        """The weight of the played row ``x`` scored at ``latent`` (before the refit)."""
        ...


class UnitWeights:
    """w_t = 1: A = ridge * I + sum z z^T."""

    def __call__(self, model: Model, x: Any, latent: Any, refitted: bool) -> float:
        """1."""
        return 1.0


@dataclass(frozen=True)
class SlopeWeights:
    """w_t = mu'(f(x_t; theta_t)), the link's slope after this round's refit.

    theta_t is the parameter after round t's refit (theta_{t-1} without one); the weight
    is frozen once added ([Bae2025, Alg. 2]; [Faury2022, Alg. 2]). A linearised model's
    own output is read afresh every round.
    """

    link: Link

    def __call__(self, model: Model, x: Any, latent: Any, refitted: bool) -> Any:
        """max(mu'(latent), tiny), the latent read after the refit."""
        if refitted or model.linearised:
            latent = model.latent(x)  # f(x_t; theta_t), after this round's refit
        return np.maximum(self.link.deriv(np.asarray(latent)), _TINY)


class Lambda(Protocol):
    """The round's constants: n observations so far and the regulariser lam_t.

    lam_t enters A's ridge and the training; a radius may read both.
    """

    lam: float
    n: int

    def advance(self, n: int) -> None:
        """Move to lam_n after the n-th observation (d_eff has seen it)."""
        ...


@dataclass
class FixedLambda:
    """lam_t = lam every round."""

    lam: float = 1.0
    n: int = 0

    def advance(self, n: int) -> None:
        """Only n moves."""
        self.n = n
