"""Lin-ES, GLM-ES and GLM-FPL: ensemble sampling with linear and GLM members.

    lin-es      ridge members, shared Gram, stacked right-hand sides     [Sun2025, Sec. 7.2]
    glm-es      GLM members, GD (or Newton) on the (d, m) stack          [Sun2025, Eq. 4.3]
    glm-fpl     one GLM member, perturbations redrawn every round (baseline)

Neural-ES and Neural-PHE are in ``policies.ensemble.neural``.

Every policy takes ``anytime = {t0, base}`` (all but Neural-PHE) for the doubling-trick
variant of [Sun2025, Sec. 6] (``policies.ensemble.base``).

References:
    In the package's docstring (``banditkit.policies.ensemble``): [Sun2025], [Jia2022].
"""

from __future__ import annotations

from typing import Any

import numpy as np

from banditkit.core import POLICIES
from banditkit.core.params import (
    POSITIVE,
    Choice,
    Flag,
    Int,
    Maybe,
    Real,
    param,
    pin,
)
from banditkit.glm import LINKS
from banditkit.glm.stacked import STACKED_SOLVERS
from banditkit.policies.ensemble.base import (
    EnsemblePolicy,
    FreshPerturbations,
    Perturbations,
)
from banditkit.policies.ensemble.members import (
    GLMEnsemble,
    RidgeEnsemble,
)
from banditkit.policies.parts.warmup import ROUNDINGS, WARMUPS

__all__ = ["GLMES", "GLMFPL", "LIN_ES_PRESETS", "ONE_MODEL", "REDUCTIONS", "LinES"]

REDUCTIONS = ("mean", "sum")

LIN_ES_PRESETS: dict[str, dict[str, Any]] = {
    "paper": {"sigma_r": 0.1, "prior_perturbation": False},
    "robust": {"sigma_r": 0.5, "prior_perturbation": True},
}
"""Lin-ES's (sigma_R, prior perturbation) by name: "paper" is Alg. 1 with the constants of
[Sun2025, Sec. 7.2]; "robust" perturbs at the scale of the reward noise of Sec. 7 (0.5) and
regularises each member towards its own prior draw (docs/ensemble.md, "Lin-ES constants")."""


def _prior_draws(policy: Any, members: int) -> np.ndarray:
    """theta_0^j ~ N(0, sigma_R^2 / lam I), (d, M), for the current phase's sigma_R."""
    scale = policy.sigma / np.sqrt(policy.lam)
    return np.asarray(policy.rng.normal(0.0, scale, (policy.d, members)))


@POLICIES.register("lin-es")
class LinES(EnsemblePolicy):
    """Linear ensemble sampling (Lin-ES) [Sun2025, Sec. 7.2; Alg. 1 with mu(s) = s].

        theta^j = V^-1 sum_l x_l (y_l + Z_l^j),  V = lam I + sum_l x_l x_l^T,
        Z_l^j ~ N(0, sigma_r^2) stored;  a_t = argmax_k x_k^T theta^{j_t},  j_t ~ U{1..m}

    Symbols: m = m, lam = lambda, sigma_r = sigma_R.

    Args:
        m: Ensemble size (paper: 25).
        lam: Ridge weight lambda, > 0.
        sigma_r: Standard deviation sigma_R of the reward perturbations, >= 0 (None: the
            preset's, 0.1 for "paper", 0.5 for "robust").
        warmup: Warm-up rounds before the first fit (paper: none).
        warmup_strategy: "round-robin", "random" or "design".
        anytime: None, or {t0, base[, m_scale, sigma_scale]}: the doubling trick.
        perturb_warmup: Also perturb the warm-up rewards (True, as in the analysis).
        update_every: Refit every this many rounds (1: the paper).
        prior_perturbation: False (the paper's Alg. 1: regulariser lam ||theta||^2) or
            True: member j is regularised towards its own prior draw
            theta_0^j ~ N(0, sigma_r^2 / lam I), theta^j = V^-1 (lam theta_0^j +
            sum_l x_l (y_l + Z_l^j)), so that Cov(theta^j) = sigma_r^2 V^-1 also in the
            directions no arm has explored (Lin-ES of Lu & Van Roy 2017 / Lee & Oh 2024);
            None: the preset's (False for "paper", True for "robust").
        preset: "paper" (default: sigma_R = 0.1, no prior perturbation, Alg. 1 as
            printed) or "robust" (sigma_R = 0.5, prior perturbation): ``LIN_ES_PRESETS``.
            ``sigma_r`` and ``prior_perturbation``, when given, override it.
        seed: Seed of the policy's own stream (members, perturbations, ties).

    Notes:
        Assumption: no prior perturbation of the regulariser by default (Alg. 1 describes
        none); without it the members agree exactly on every direction that no pulled arm
        spans, and with sigma_R = 0.1 against reward noise 0.5 the ensemble can lock onto a
        suboptimal arm: see docs/ensemble.md ("Lin-ES constants") for what each preset
        costs.

    Example:
        >>> from banditkit.core import Context
        >>> LinES(m=3).act(Context(arms=np.eye(3))) in range(3)
        True
    """

    m: int = param(Int(low=1), default=25)
    sigma_r: float = param(Maybe(Real(low=0.0)), default=None)
    prior_perturbation: bool = param(Maybe(Flag()), default=None)
    preset: str = param(Choice(LIN_ES_PRESETS), default="paper")

    def _resolve(self) -> None:
        """``sigma_r`` and ``prior_perturbation`` not given take the preset's values."""
        super()._resolve()
        chosen = LIN_ES_PRESETS[self.preset]
        if self.sigma_r is None:
            self.sigma_r = chosen["sigma_r"]
        if self.prior_perturbation is None:
            self.prior_perturbation = chosen["prior_perturbation"]

    def get_params(self) -> dict[str, Any]:
        """The hyper-parameters in force; ``preset`` only when not "paper".

        ``sigma_r`` and ``prior_perturbation`` are the values in force, so the default
        policy reports what it did before presets existed and its runs keep their ids.
        """
        params = super().get_params()
        if self.preset == "paper":
            params.pop("preset")
        return params

    def _make_model(self, members: int, *, restoring: bool = False) -> RidgeEnsemble:
        assert self.d is not None
        prior = None  # restoring: B (which holds lam theta_0) comes from the state
        if self.prior_perturbation and not restoring:
            prior = _prior_draws(self, members)
        return RidgeEnsemble(self.d, self.lam, members, prior=prior)


@POLICIES.register("glm-es")
class GLMES(EnsemblePolicy):
    """GLM ensemble sampling (GLM-ES) [Sun2025, Sec. 4.2, Eq. 4.3, Algs. 1-3].

        theta^j = argmin_theta (lam/2)||theta||^2 + sum_l [ b(x_l^T theta) - (y_l + Z_l^j) x_l^T theta ]
        a_t = argmax_k x_k^T theta^{j_t}   (mu increasing)

    after a warm-up of ``warmup`` pulls from a G-optimal design (Algorithm 2) rounded by
    Algorithm 3 (``policies.ensemble.warmup``). Practical solver [Sun2025, Sec. 7.2]:
    ``steps`` GD steps of size ``lr``, warm-started, every round, all members at once.

    Symbols: m = m, lam = lambda, sigma_r = sigma_R, warmup = tau, steps = J, lr = eta.

    Args:
        m: Ensemble size (paper: 10).
        lam: Ridge weight lambda, > 0.
        sigma_r: Perturbation standard deviation sigma_R, >= 0.
        warmup: tau, warm-up pulls (paper: 500).
        warmup_strategy: "design" (Algorithm 2; falls back to uniform pulls when the arm
            set changes between rounds), "round-robin" or "random".
        link: The known link: "logistic" (default), "probit" or "identity".
        solver: "gd" (the paper's practical solver) or "newton" (exact minimiser).
        steps: GD steps per refit.
        lr: GD step size.
        reduction: "mean" (GD on the objective / n; default) or "sum" (the paper's sum,
            unstable with lr = 0.01 once t is in the hundreds).
        anytime: None, or {t0, base[, m_scale, sigma_scale]}.
        perturb_warmup: Perturb the warm-up rewards too (True).
        update_every: Refit every this many rounds.
        design_a: The a of Algorithm 3's r(a), in (0, 1).
        rounding: "paper" (Algorithm 3 on the design's support) or "pukelsheim".
        enforce_min_pulls: Apply Algorithm 3's line 13 (may lengthen the warm-up).
        prior_perturbation: False (Eq. 4.2's regulariser (lam/2)||theta||^2) or True:
            member j uses (lam/2)||theta - theta_0^j||^2, theta_0^j ~ N(0, sigma_r^2/lam I)
            (as ``LinES``).
        seed: Seed of the policy's own stream.

    Notes:
        Deviation: the rewards are real (the loss is defined for any real target), so
        Gaussian-noise rewards and perturbed targets outside [0, 1] are accepted.

    Example:
        >>> from banditkit.core import Context
        >>> GLMES(m=2, warmup=2, steps=5).act(Context(arms=np.eye(3))) in range(3)
        True
    """

    contract_params = {"m": 3, "warmup": 4, "steps": 5}  # noqa: RUF012

    warmup: int = param(Int(low=0), default=500)
    warmup_strategy: str = param(Choice(WARMUPS), default="design")
    link: str = param(Choice(LINKS), default="logistic")
    solver: str = param(Choice(STACKED_SOLVERS), default="gd")
    steps: int = param(Int(low=1), default=100)
    lr: float = param(POSITIVE, default=0.01)
    reduction: str = param(Choice(REDUCTIONS), default="mean")
    design_a: float = param(
        Real(low=0.0, high=1.0, low_open=True, high_open=True), default=0.5
    )
    rounding: str = param(Choice(ROUNDINGS), default="paper")
    enforce_min_pulls: bool = param(Flag(), default=False)
    prior_perturbation: bool = param(Flag(), default=False)

    def _make_model(self, members: int, *, restoring: bool = False) -> GLMEnsemble:
        assert self.d is not None
        prior = None
        if self.prior_perturbation:  # restoring: a placeholder, the state holds theta_0
            prior = (
                np.zeros((self.d, members))
                if restoring
                else _prior_draws(self, members)
            )
        return GLMEnsemble(
            self.d,
            self.lam,
            members,
            link=self.link,
            solver=self.solver,
            steps=self.steps,
            lr=self.lr,
            reduction=self.reduction,
            prior=prior,
        )


#: GLM-ES's options that GLM-FPL and EVILL fix: one model perturbed at each refit, no
#: anytime restarts, the warm-up's design options at their defaults.
ONE_MODEL: dict[str, Any] = {
    "m": 1,
    "anytime": None,
    "perturb_warmup": True,
    "design_a": 0.5,
    "rounding": "paper",
    "enforce_min_pulls": False,
    "prior_perturbation": False,
}


@POLICIES.register("glm-fpl")
@pin(**ONE_MODEL)
class GLMFPL(GLMES):
    """GLM-FPL (GLM perturbed-history exploration) [Kveton2020, Alg. 2].

    Every round redraw Z_l ~ N(0, sigma_r^2) for **all** l < t (never stored), fit one
    GLM on {(x_l, y_l + Z_l)} with the GLM-ES solver, and play argmax_k x_k^T theta:
    ensemble sampling with fresh perturbations, Theta(t) draws per round. Same warm-up,
    solver and arguments as ``glm-es`` except ``m`` and ``anytime`` (one model).

    Symbols: sigma_r = a (the perturbation scale of [Kveton2020]).

    References:
        [Kveton2020] B. Kveton, M. Zaheer, C. Szepesvari, L. Li, M. Ghavamzadeh,
            C. Boutilier. Randomized exploration in generalized linear bandits.
            AISTATS 2020.

    Example:
        >>> from banditkit.core import Context
        >>> GLMFPL(warmup=2, steps=5).act(Context(arms=np.eye(3))) in range(3)
        True
    """

    contract_params = {"warmup": 4, "steps": 5}  # noqa: RUF012

    def _perturbations(self) -> Perturbations:
        return FreshPerturbations()
