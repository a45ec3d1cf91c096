"""Linear logistic bandits as run in [Bae2025, Sec. 7]: Logistic-UCB-1 and ada-OFU-ECOLog.

Both compose (``policies.parts.scored``) a ``GLMModel`` (regularised logistic MLE
of ``glm.fit_glm``, or with ``fit="gd"`` [Bae2025, App. A]'s gradient steps, refitted every
``update_every`` rounds), a Gram of the raw features
x (full by default), the effective dimension d_eff = logdet(I + R sum_i x_i x_i^T)
([Bae2025, App. A], R = 1/4) and ``optimistic_argmax``:

    policy           mean          A                               B (times nu)
    Logistic-UCB-1   mu(x^T theta) kappa lam + sum x x^T           R sqrt(4+8S) sqrt(kappa) [sqrt(lam)(S+1/2) + 2 d_eff / sqrt(lam)]
    ada-OFU-ECOLog   x^T theta     lam + sum mu'(x_i^T theta_i) x x^T   sqrt(lam) S + (1+S) sqrt(d_eff)

References:
    [Faury2020] L. Faury, M. Abeille, C. Calauzènes, O. Fercoq. Improved optimistic
        algorithms for logistic bandits. ICML 2020.
    [Faury2022] L. Faury, M. Abeille, K.-S. Jun, C. Calauzènes. Jointly efficient and
        optimal algorithms for logistic bandits. AISTATS 2022.
    [Bae2025] S. Bae, D. Lee. Neural logistic bandits. arXiv:2505.02069.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from banditkit.core import POLICIES
from banditkit.core.params import POSITIVE, Choice, Int, Real, param
from banditkit.glm import LogisticLink
from banditkit.linalg import GRAMS, EffectiveDimension, make_gram
from banditkit.policies.parts.history import History
from banditkit.policies.parts.models import GLMModel
from banditkit.policies.parts.models.linear import GLM_GD_REDUCTIONS
from banditkit.policies.parts.schedules import Periodic
from banditkit.policies.parts.scored import R_LOGISTIC, ScoredParts, ScoredPolicy
from banditkit.policies.parts.scorer import Scorer
from banditkit.policies.parts.selection import Optimistic
from banditkit.policies.parts.weights import SlopeWeights, UnitWeights, Weights

if TYPE_CHECKING:
    import torch

__all__ = ["FITS", "AdaOFUECOLog", "LinearLogisticPolicy", "LogisticUCB1"]

_LINK = LogisticLink()

FITS = ("exact", "gd")
"""How a refit estimates theta: the exact regularised MLE, or GD steps ([Bae2025, App. A])."""
_GD_PARAMS = ("fit_steps", "fit_lr", "fit_loss")


class LinearLogisticPolicy(ScoredPolicy):
    """Shared hyper-parameters of the linear logistic baselines of [Bae2025, Sec. 7].

    theta = argmin L(theta),  L(theta) = sum_i BCE(r_i, x_i^T theta) + lam ||theta||^2,
    refitted after every ``update_every`` rounds; theta = 0 before the first refit.

    ``fit`` says how a refit estimates theta:

    * ``"exact"`` (default): the minimiser of L (Newton's method of ``glm.fit_glm``,
      warm-started).
    * ``"gd"``: [Bae2025, App. A]'s streamlined loop, in which every baseline "(ii)
      update[s] the parameters via gradient descent" at each refit: ``fit_steps``
      full-batch gradient steps from the previous estimate (the first from 0), on L / n
      (``fit_loss="mean"``, n the number of rows) or on L (``"sum"``):

          theta <- theta - fit_lr * c * grad L(theta),   c = 1 / n ("mean") or 1 ("sum"),
          grad L(theta) = sum_i (mu(x_i^T theta) - r_i) x_i + 2 lam theta.

      The defaults 100 steps at lr 0.01 are [Bae2025, Sec. 7]'s for the networks; the
      paper states neither the step count of the linear baselines nor the loss's scale.

    Neither fit projects theta onto ||theta|| <= S: as in [Bae2025, App. A], S enters
    only the confidence radius B (and kappa only Logistic-UCB-1's A and B).

    Args:
        nu: Exploration scale, >= 0 (grid-searched in the paper). Zero is greedy.
        lam: Fixed regulariser lam > 0 of the MLE and of A.
        kappa: Inverse of the smallest link slope, >= 1, fed to the algorithm.
        S: Norm bound on theta, > 0.
        update_every: Refit after every this many rounds, >= 1 (50 in the paper).
        gram: "full" (default: d x d is cheap here) or "diagonal".
        fit: "exact" (default) or "gd", as above.
        fit_steps: GD steps per refit, >= 1 (``fit="gd"``).
        fit_lr: GD step size, > 0 (``fit="gd"``).
        fit_loss: "mean" (GD on L / n, default) or "sum" (GD on L) (``fit="gd"``).
        seed: Seed of the policy's own stream (tie-breaks).

    Notes:
        Deviation (default ``fit="exact"``): the estimate is the exact minimiser instead
        of [Bae2025, App. A]'s gradient descent; ``fit="gd"`` follows the paper.
        ``fit_steps``, ``fit_lr`` and ``fit_loss`` are validated always but used, and
        reported by ``get_params`` (hence run ids), only with ``fit="gd"``: the default
        policy keeps its parameters and run ids.
    """

    reward_kind = "binary"  # Bernoulli likelihood: BCE on rewards in [0, 1]
    needs_torch = False  # a GLM: no network, so no torch generator
    contract_params = {"update_every": 3}  # noqa: RUF012 - read-only (banditkit.testing)

    nu: float = param(Real(low=0.0), default=1.0)
    lam: float = param(POSITIVE, default=1.0)
    kappa: float = param(Real(low=1.0), default=10.0)
    S: float = param(POSITIVE, default=1.0)
    update_every: int = param(Int(low=1), default=50)
    gram: str = param(Choice(GRAMS), default="full")
    fit: str = param(Choice(FITS), default="exact")
    fit_steps: int = param(Int(low=1), default=100)
    fit_lr: float = param(POSITIVE, default=0.01)
    fit_loss: str = param(Choice(GLM_GD_REDUCTIONS), default="mean")

    def get_params(self) -> dict[str, Any]:
        """The hyper-parameters; the GD ones (``fit_steps``, ...) only with ``fit="gd"``."""
        params = super().get_params()
        if self.fit == "exact":  # the exact fit ignores them: default run ids unchanged
            for name in ("fit", *_GD_PARAMS):
                params.pop(name)
        return params

    def _parts(
        self,
        d: int,
        *,
        ridge: float,
        mean: Callable[[np.ndarray], np.ndarray],
        radius: Callable[[float], float],
        weights: Weights,
    ) -> ScoredParts:
        """The GLM, its Gram A = ridge I + sum w x x^T, d_eff and B (the class's choices)."""
        scorer = Scorer(
            self._model(d),
            make_gram(self.gram, d, ridge),
            nu=self.nu,
            radius=radius,
            mean=mean,
            # [Bae2025, App. A]: d_eff = logdet(I + R sum x x^T)
            effdim=EffectiveDimension(d, R_LOGISTIC, self.gram),
        )
        return ScoredParts(
            History(d), scorer, Optimistic(), Periodic(self.update_every), weights
        )

    def _model(self, d: int) -> GLMModel:
        # lam ||theta||^2 = (lam' / 2) ||theta||^2 with lam' = 2 lam
        if self.fit == "exact":
            return GLMModel(d, lam=2.0 * self.lam, link="logistic")
        return GLMModel(
            d,
            lam=2.0 * self.lam,
            link="logistic",
            solver="gd",
            steps=self.fit_steps,
            lr=self.fit_lr,
            reduction=self.fit_loss,
        )


@POLICIES.register("logistic-ucb1")
class LogisticUCB1(LinearLogisticPolicy):
    """Logistic-UCB-1 [Faury2020, Alg. 1] in the practical form of [Bae2025, App. A].

        score(k) = mu(x_k^T theta) + nu * B * ||x_k||_{V^-1},   V = kappa lam I + sum x x^T,
        B = R sqrt(4 + 8 S) sqrt(kappa) [sqrt(lam) (S + 1/2) + (2 / sqrt(lam)) d_eff],
        d_eff = logdet(I + R sum_i x_i x_i^T),  R = 1/4.

    Symbols: nu = ν, lam = λ, kappa = κ, S = S; R = L_mu.
    Args: see ``LinearLogisticPolicy``.

    Notes:
        Reconstruction: B is the bonus eps_{t,1} of [Faury2020] with gamma_t(delta)'s
        dimension term replaced by d_eff and log(1/delta) dropped (docs/logistic.md,
        section "Reconstructed bonuses").

    Example:
        >>> from banditkit.core import Context
        >>> LogisticUCB1().act(Context(arms=np.eye(3))) in range(3)
        True
    """

    def _compose(self, d: int, generator: torch.Generator) -> ScoredParts:
        return self._parts(
            d,
            ridge=self.kappa * self.lam,
            mean=_LINK.mean,
            radius=self._radius,
            weights=UnitWeights(),
        )

    def _radius(self, d_eff: float) -> float:
        root_lam = math.sqrt(self.lam)
        return (
            R_LOGISTIC
            * math.sqrt(4.0 + 8.0 * self.S)
            * math.sqrt(self.kappa)
            * (root_lam * (self.S + 0.5) + 2.0 * d_eff / root_lam)
        )


@POLICIES.register("ada-ofu-ecolog")
class AdaOFUECOLog(LinearLogisticPolicy):
    """ada-OFU-ECOLog [Faury2022, Alg. 2] in the practical form of [Bae2025, App. A].

        score(k) = x_k^T theta + nu * B * ||x_k||_{W^-1},
        W = lam I + sum_i mu'(x_i^T theta_i) x_i x_i^T,
        B = sqrt(lam) S + (1 + S) sqrt(d_eff),   d_eff = logdet(I + R sum_i x_i x_i^T),

    theta_i being the estimate after round i's refit; weights are frozen once added.
    No kappa enters, so the selections do not depend on ``kappa``.

    Symbols: nu = ν, lam = λ, S = S.
    Args: see ``LinearLogisticPolicy`` (``kappa`` is accepted and unused).

    Notes:
        Deviation: the online one-step ECOLog update is replaced by the common refit
        ([Bae2025, App. A]); the bonus is added to the latent x^T theta
        (docs/logistic.md, section "Reconstructed bonuses").
        Reconstruction: B as in docs/logistic.md, section "Reconstructed bonuses".

    Example:
        >>> from banditkit.core import Context
        >>> AdaOFUECOLog().act(Context(arms=np.eye(3))) in range(3)
        True
    """

    def _compose(self, d: int, generator: torch.Generator) -> ScoredParts:
        return self._parts(
            d,
            ridge=self.lam,
            mean=_latent,
            radius=self._radius,
            weights=SlopeWeights(_LINK),  # W = lam I + sum mu'(x^T theta_i) x x^T
        )

    def _radius(self, d_eff: float) -> float:
        return math.sqrt(self.lam) * self.S + (1.0 + self.S) * math.sqrt(d_eff)


def _latent(latent: np.ndarray) -> np.ndarray:
    return latent
