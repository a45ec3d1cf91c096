"""The NeuralLog family's options and parts [Bae2025]: ``NeuralLogPolicy``.

NeuralLog-UCB-1/2, NeuralLog-TS-1/2 and NCBF-UCB (``policies.logistic.neurallog``) share
their hyper-parameters, declared here once, and the assembly of their parts: the network
and its trainer, the gradient design A, the effective dimension d_eff, the regulariser
lam_t and the radius B(d_eff). Each algorithm hands in what is its own: the rule (UCB or
TS), the mean, the ridge factor of A, the weights of A and its radius formula. The
practical and theory modes are two resolved option sets with their formulas
(``policies.logistic.modes``).

References:
    [Bae2025] S. Bae, D. Lee. Neural logistic bandits. arXiv:2505.02069.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from banditkit.core.params import POSITIVE, Choice, Flag, Int, Maybe, Real, param
from banditkit.glm import LogisticLink
from banditkit.linalg import (
    EFFDIMS,
    GRAMS,
    EffectiveDimension,
    GramLike,
    ShiftedGram,
    make_gram,
)
from banditkit.policies.logistic.modes import (
    LOSS_REDUCTIONS,
    MODES,
    Mode,
    iota_t,
    resolve,
)
from banditkit.policies.logistic.regularisation import AdaptiveLambda
from banditkit.policies.parts.history import History
from banditkit.policies.parts.models.compute import DEVICE, DTYPES, compute_options
from banditkit.policies.parts.schedules import Periodic
from banditkit.policies.parts.scored import R_LOGISTIC, ScoredParts, ScoredPolicy
from banditkit.policies.parts.scorer import Scorer
from banditkit.policies.parts.selection import ArmRule
from banditkit.policies.parts.weights import (
    FixedLambda,
    Lambda,
    SlopeWeights,
    UnitWeights,
    Weights,
)

if TYPE_CHECKING:
    import torch

__all__ = [
    "BONUSES",
    "INITS",
    "LAMBDA_SCHEDULES",
    "MEAN_SCALES",
    "MODES",
    "REG_CENTERS",
    "NeuralLogPolicy",
    "Radius",
]

REG_CENTERS = ("zero", "init")
MEAN_SCALES = ("probability", "latent")
LAMBDA_SCHEDULES = ("fixed", "adaptive")
BONUSES = ("orders", "table")
INITS = ("mirrored", "standard")
_LINK = LogisticLink()

#: A radius formula B(d_eff, n, lam_t): d_eff, the observations so far and lam_t.
Radius = Callable[[float, int, float], float]


def _latent(latent: np.ndarray) -> np.ndarray:
    return latent


class NeuralLogPolicy(ScoredPolicy):
    """Shared hyper-parameters and modes of the NeuralLog policies [Bae2025].

    Practical mode (default; [Bae2025, Sec. 7, App. A]): theta minimises

        J(theta) = sum_i BCE(r_i, f(x_i; theta)) + lam * ||theta - c||^2,

    c = 0 (``reg_center="zero"``) or theta_0 ("init"), by ``steps`` full-batch GD steps
    at ``lr`` after every ``update_every`` rounds, warm-started; A, B and the mean are
    set per algorithm (module docstring), with the optional log factors and lam_t below.

    Theory mode (``mode="theory"``; [Bae2025, Algs. 1-2, App. I];
    docs/logistic.md, section "Theory mode"):
    features phi(x) = g(x; theta_0) / sqrt(m) at the initial network, the full Gram by
    default, D_t = logdet(G_t / (4 lam_0) + I) of the unweighted G_t = sum phi phi^T,
    lam_0, lam_t (Eq. (3)), iota_t (Eq. (2)) and nu_t (Eqs. (1), (4), constant ``C``)
    from ``policies.theory``, and TrainNN: GD restarted at theta_0 on

        L_t(theta) = sum_i BCE(r_i, f(x_i; theta)) + (m lam_t / 2) ||theta - theta_0||^2.

    The bonus is still multiplied by ``nu`` (1 gives the algorithm literally).

    Args:
        nu: Exploration scale, >= 0 (grid-searched in the paper). Zero is greedy.
            None (default): 1 in theory mode (the literal radius); in practical mode
            the algorithm's tuned default, 0.1 for NeuralLog-UCB-1/2 and 0.01 for
            NeuralLog-TS-1/2 and NCBF-UCB (docs/logistic.md, section "Fidelity").
        lam: Practical mode: the fixed regulariser lam > 0 (grid-searched in the
            paper), or lam_0 of the adaptive schedule. Unused in theory mode, where
            lam_0 comes from delta, C1, depth and S.
        kappa: Inverse of the smallest link slope, >= 1, fed to the algorithm
            (10 in the paper's synthetic and classification runs, 50 for OBD).
        S: Norm bound on the parameter, > 0 (1 in the paper).
        width: Hidden units per layer m; even (20 in the paper).
        depth: Number of linear layers L, >= 2 (2 in the paper).
        lr: GD step size eta, > 0. None (default): 0.01 in practical mode (the paper's
            value); in theory mode the step of Condition 4.4 with C5 = 1 and the
            horizon T replaced by the current n, eta_t = 1 / (m (n L + lam_t)).
        steps: GD steps J per refit, >= 1 (100).
        update_every: Refit after every this many rounds, >= 1. None (default): 50 in
            practical mode (the paper's value), 1 in theory mode (Algs. 1-2).
        gram: "diagonal" (the paper's approximation of A and of d_eff) or "full"
            (exact p x p matrices). None (default): "diagonal" in practical mode,
            "full" in theory mode.
        mode: "practical" (default) or "theory".
        loss_reduction: "mean_scaled" (GD on the objective / n, same minimiser, stable
            at lr 0.01) or "sum" (the objective itself). None (default): "mean_scaled"
            in practical mode, "sum" (TrainNN literally) in theory mode.
        reg_center: Centre c of the L2 term: "zero" (the paper's practical lam ||theta||^2)
            or "init" (lam ||theta - theta_0||^2). None (default): "zero" in practical
            mode, "init" in theory mode (where "zero" is rejected).
        mean_scale: "probability" (mu(f) + bonus) or "latent" (f + bonus). None
            (default): the algorithm's own (docs/logistic.md, section "Reconstructed
            bonuses"): probability for UCB-1, latent for UCB-2 and NCBF-UCB. TS policies
            sample on the latent scale and reject any other value than None.
        keep_log_factors: Practical mode only. False (default) drops the
            log(4t^2/delta) factors; True keeps them as in Eq. (2):
            S^2 (sqrt(l_t) sqrt(d_eff) + l_t / sqrt(lam)) (``bonus="orders"``; "table":
            c_S (sqrt(l_t) sqrt(d_eff) + l_t sqrt(L/lam)) + 1) with l_t = log(4 n^2/delta)
            (n observations so far, l_0 = log(4/delta)). Theory mode always keeps them.
        lambda_schedule: "fixed" (lam every round) or "adaptive" (lam_t of Eq. (3) in
            the ridge of A, in B and in the L2 term of training, with D_t = the
            policy's d_eff, lam_0 = lam and the floor lam_t >= lam). None (default):
            "fixed" in practical mode, "adaptive" in theory mode (where "fixed" is
            rejected).
        delta: Confidence level delta in (0, 1) of l_t (0.05).
        C1: Absolute constant C1 > 0 of lam_0, lam_t and iota_t (1.0).
        C: Absolute constant of the radius, C6 for UCB-1 / TS-1 and C7 for UCB-2 /
            TS-2, > 0 (1.0); theory mode only.
        effdim_kind: How d_eff is computed: "exact" ("full" for p <= 512, else
            "kernel"), "kernel" (exact, through the n x n Gram of the played features),
            "full" (exact, the p x p Gram) or "diagonal" (the log-determinant of the
            diagonal only, which overstates d_eff: 1,004 against the exact 452 on h1
            after 300 rounds). None (default): "exact" in practical mode, the ``gram``
            in theory mode.
        scale_features: Divide the gradients by sqrt(m) before they enter A, the
            norms and d_eff (default True): the network keeps its NTK output factor
            sqrt(m), so its raw gradients are sqrt(m) times those of the network the
            paper's practical mode differentiates. Theory mode always divides
            (phi = g / sqrt(m), Algs. 1-2).
        bonus: Practical form of B: "orders" (default; the orders of nu_t in S, kappa,
            lam and d_eff: S^2 (sqrt(d_eff) + 1 / sqrt(lam)) times R sqrt(kappa) for
            UCB-1) or "table" (with the absolute constants, c_S (sqrt(d_eff) +
            sqrt(L / lam)) + 1). NCBF-UCB keeps its own B either way. Theory mode only
            takes None.
        init: Initialisation of the network in practical mode: "mirrored" (default;
            the NTK initialisation of [Zhou2020] and [Bae2025, Sec. 4], first-layer
            weights N(0, 4/m) whatever the input dimension, f(x; theta_0) = 0) or
            "standard" (hidden weights N(0, 2/fan_in), output weights N(0, 1/m), as
            the practical code of the neural-bandit lineage initialises its layers).
            The mirrored first layer assumes inputs of norm about 1: on mnist's block
            inputs (||x||^2 = 168) its pre-activations have variance 34 and every
            bonus explores too much (docs/logistic.md, section "Fidelity", mnist).
            Theory mode takes "mirrored" only.
        dtype: "float32" or "float64": the dtype of the network, its training and its
            gradients in practical mode; the Grams and d_eff stay float64
            (docs/performance.md, "Neural training speed"). None (default): the mode's,
            float32 in practical mode (since 2026-12-06; float64 before: it is in every
            run id, docs/performance.md "The default dtype"), float64 in theory mode,
            which takes float64 only.
        device: "cpu" (default), "cuda", "cuda:N" or "auto": where the network, its
            training, its history and the Gram live (``policies.parts.models.compute``;
            a device that is not there is a ``ValueError`` naming it).
        seed: Seed of the policy's own stream (initialisation, tie-breaks, samples).

    Raises:
        ValueError: On values out of range and on combinations that make no sense:
            mode="theory" with reg_center="zero", lambda_schedule="fixed" or
            keep_log_factors=True; mode="theory" for NCBF-UCB; mean_scale for TS.

    Notes:
        Assumption: in theory mode the current D_{t-1} and n replace the horizon values
        of the TS variants ([Bae2025, App. I]; docs/logistic.md, section "Theory mode"),
        and nu_{t-1} is used with V_{t-1} ([Bae2025, Alg. 1]).
        Reconstruction: the practical B keeps only the orders of nu_t
        (docs/logistic.md, section "Fidelity").
        Reconstruction: lambda_schedule="adaptive" in practical mode reuses Eq. (3)
        with the practical d_eff (a = R, or 1/kappa for NCBF-UCB) as D_t and lam as lam_0.
        Deviation: GD on J / n by default in practical mode (``loss_reduction``).
    """

    #: nu=None resolves to this in practical mode: the value that worked across the
    #: paper's synthetic and classification settings on tuning seeds
    #: (docs/logistic.md, section "Fidelity", "Defaults").
    default_nu: ClassVar[float] = 0.1

    reward_kind = "binary"  # Bernoulli likelihood: BCE on rewards in [0, 1]
    contract_params = {"width": 8, "update_every": 3, "steps": 10, "lr": 0.1}  # noqa: RUF012

    nu: float | None = param(Maybe(Real(low=0.0)), default=None)
    lam: float = param(POSITIVE, default=1.0)
    kappa: float = param(Real(low=1.0), default=10.0)
    S: float = param(POSITIVE, default=1.0)
    width: int = param(Int(low=2, even=True), default=20)
    depth: int = param(Int(low=2), default=2)
    lr: float | None = param(Maybe(POSITIVE), default=None)
    steps: int = param(Int(low=1), default=100)
    update_every: int | None = param(Maybe(Int(low=1)), default=None)
    gram: str | None = param(Maybe(Choice(GRAMS)), default=None)
    mode: str = param(Choice(MODES), default="practical")
    loss_reduction: str | None = param(Maybe(Choice(LOSS_REDUCTIONS)), default=None)
    reg_center: str | None = param(Maybe(Choice(REG_CENTERS)), default=None)
    mean_scale: str | None = param(Maybe(Choice(MEAN_SCALES)), default=None)
    keep_log_factors: bool = param(Flag(), default=False)
    lambda_schedule: str | None = param(Maybe(Choice(LAMBDA_SCHEDULES)), default=None)
    delta: float = param(
        Real(low=0.0, high=1.0, low_open=True, high_open=True), default=0.05
    )
    C1: float = param(POSITIVE, default=1.0)
    C: float = param(POSITIVE, default=1.0)
    effdim_kind: str | None = param(Maybe(Choice(EFFDIMS)), default=None)
    scale_features: bool | None = param(Maybe(Flag()), default=None)
    bonus: str | None = param(Maybe(Choice(BONUSES)), default=None)
    init: str = param(Choice(INITS), default="mirrored")
    dtype: str | None = param(Maybe(Choice(DTYPES)), default=None)
    device: str = DEVICE

    def _resolve(self) -> None:
        # The mode's option set: the values of the options left at None (stored, so
        # get_params reports them), and the options it pins.
        self.formulas: Mode = MODES[self.mode]
        resolve(self, self.formulas)
        #: lam_0: the start and floor of lam_t ([Bae2025, Sec. 4] in theory mode).
        self.lam0 = self.formulas.lam0(self)

    # ---------------------------------------------------------------- parts
    @property
    def feature_scale(self) -> float:
        """1 / sqrt(m), or 1 with ``scale_features=False`` (practical mode only).

        [Bae2025, Alg. 1]: phi(x) = g(x; theta_0) / sqrt(m); practical mode: the
        gradient of the network without its sqrt(m) output factor, g / sqrt(m)
        (docs/logistic.md, section "Fidelity").
        """
        return 1.0 / math.sqrt(self.width) if self.scale_features else 1.0

    def _mean(self, default: str) -> Callable[[np.ndarray], np.ndarray]:
        """mu(f) or f: ``mean_scale``, else the algorithm's ``default``."""
        scale = self.mean_scale or default
        return _LINK.mean if scale == "probability" else _latent

    def _nu(self, d_eff: float, n: int, lam: float) -> float:
        """nu_{t-1} of the mode (``modes.Mode.nu``), the radius without its factor."""
        return self.formulas.nu(self, d_eff, n, lam)

    def _parts(
        self,
        d: int,
        generator: torch.Generator,
        *,
        rule: ArmRule,
        mean: Callable[[np.ndarray], np.ndarray],
        radius: Radius,
        ridge: float = 1.0,
        weights: Weights | None = None,
        linear: bool = False,
        effdim_scale: float | None = None,
    ) -> ScoredParts:
        """The parts around what the algorithm hands in.

        Args:
            d: Feature dimension.
            generator: Draws theta_0.
            rule: ``Optimistic()`` (UCB) or ``Sampled()`` (TS).
            mean: The mean the bonus is added to (mu or the identity).
            radius: B(d_eff, n, lam_t).
            ridge: A_0 = ridge * lam_t I (kappa for Alg. 1).
            weights: w_t of A (``UnitWeights`` by default).
            linear: The theory mode's mean is g(x; theta_0)^T (theta - theta_0) (Alg. 2).
            effdim_scale: a of the practical d_eff on the scaled features z (None:
                R = 1/4, [Bae2025, App. A]).
        """
        mode, gram, nu, every = self.formulas, self.gram, self.nu, self.update_every
        assert gram is not None and nu is not None and every is not None  # resolved
        history = History(d)
        trainer = mode.trainer(self, self.lam0, 0)
        net = {"width": self.width, "depth": self.depth}
        model = mode.model(
            self, d, {**net, "trainer": trainer, "generator": generator}, linear
        )
        p = model.n_params
        scale = self.feature_scale
        practical = R_LOGISTIC * scale**2 if effdim_scale is None else effdim_scale
        effdim = EffectiveDimension(
            p,
            mode.effdim_scale(self, practical),
            str(self.effdim_kind),
            block=mode.effdim_block(self),
        )
        design: GramLike
        regulariser: Lambda
        if self.lambda_schedule == "fixed":
            design = make_gram(gram, p, ridge * self.lam0)
            regulariser = FixedLambda(self.lam0)
        else:
            design = shifted = ShiftedGram(gram, p, ridge * self.lam0)
            trainers = partial(mode.trainer, self)
            regulariser = AdaptiveLambda(self, effdim, shifted, model, trainers, ridge)
        scorer = Scorer(
            model,
            design,
            nu=nu,
            radius=lambda d_eff: radius(d_eff, regulariser.n, regulariser.lam),
            feature_scale=scale,
            mean=mean,
            effdim=effdim,
        )
        schedule = Periodic(every)
        return ScoredParts(
            history, scorer, rule, schedule, weights or UnitWeights(), regulariser
        )

    def _algorithm_1(
        self,
        d: int,
        generator: torch.Generator,
        rule: ArmRule,
        factor: float,
        mean: str,
    ) -> ScoredParts:
        """[Bae2025, Alg. 1]: V_t = kappa lam_t I + sum phi phi^T, B = factor * nu^(1)_{t-1}.

        NeuralLog-UCB-1 and -TS-1 differ by the rule, the factor and the mean they hand
        in (``policies.logistic.neurallog``).
        """
        return self._parts(
            d,
            generator,
            rule=rule,
            mean=self._mean(mean),
            radius=lambda d_eff, n, lam: factor * self._nu(d_eff, n, lam),
            ridge=self.kappa,
        )

    def _algorithm_2(
        self, d: int, generator: torch.Generator, rule: ArmRule
    ) -> ScoredParts:
        """[Bae2025, Alg. 2]: W_t = sum mu'(f(x_i; theta_i)) phi phi^T + lam_t I, B = nu^(2)_{t-1}.

        The mean is f (in theory mode g(x; theta_0)^T (theta - theta_0), Eq. (5));
        NeuralLog-UCB-2 and -TS-2 differ by the rule they hand in.
        """
        return self._parts(
            d,
            generator,
            rule=rule,
            mean=self._mean("latent"),
            radius=self._nu,
            weights=SlopeWeights(_LINK),
            linear=True,
        )

    def theory_constants(self) -> dict[str, float]:
        """The round's constants: n, D (d_eff), lam0, lam_t, iota_t and nu_t.

        In theory mode these are D_n, lam_n, iota_n and nu_n of Eqs. (1)-(4) with n
        observations so far (the values used to score round n + 1).
        """
        started = self.d is not None
        n = self.history.n if started else 0
        d_eff = self.effdim.value if started and self.effdim is not None else 0.0
        lam = self.regulariser.lam if started else self.lam0
        return {
            "n": float(n),
            "D": d_eff,
            "lam0": self.lam0,
            "lam_t": lam,
            "iota_t": iota_t(self, d_eff, n),
            "nu_t": self._nu(d_eff, n, lam),
        }

    # ---------------------------------------------------------------- seeds
    def _stackable(self) -> bool:
        """Seeds batch in practical mode: diagonal A, depth 2, fixed lam, c = 0, the CPU.

        The parts then have stacked forms (``parts.stacked``: the networks train as one
        stacked computation); other configurations run seed by seed.
        """
        return (
            self.mode == "practical"
            and self.gram == "diagonal"
            and self.depth == 2
            and self.lambda_schedule == "fixed"
            and self.reg_center == "zero"
            and compute_options(self)["device"] == "cpu"
        )
