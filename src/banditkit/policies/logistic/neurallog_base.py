"""The shared machinery of the NeuralLog family [Bae2025]: ``NeuralLogPolicy``.

One base holds what NeuralLog-UCB-1/2, NeuralLog-TS-1/2 and NCBF-UCB
(``policies.neurallog``) share: the options and their validation, the network and its
trainer schedule, the gradient design A, the effective dimension d_eff and the
theory-mode constants (the radius's constants in ``policies.neurallog_radius``). A subclass chooses its ridge (``_ridge``) and its radius
B(d_eff) (``_radius``); the formulas are in ``policies.neurallog``'s docstring.

References:
    [Bae2025] S. Bae, D. Lee. Neural logistic bandits. arXiv:2505.02069.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from banditkit.core.validation import check_choice, check_scalar
from banditkit.glm import LogisticLink
from banditkit.linalg import EFFDIMS, GramLike, ShiftedGram, make_gram
from banditkit.policies.baselines.neural import LOSS_REDUCTIONS, NeuralScoredPolicy
from banditkit.policies.logistic import theory
from banditkit.policies.logistic.neurallog_radius import NeuralLogRadius
from banditkit.policies.parts.models import NeuralModel, TangentModel
from banditkit.policies.parts.models.neural import DTYPES
from banditkit.policies.parts.scored import R_LOGISTIC

if TYPE_CHECKING:
    import torch

    from banditkit.core import Policy
    from banditkit.core.batched import BatchedPolicy
    from banditkit.nn import Trainer

__all__ = [
    "BONUSES",
    "INITS",
    "LAMBDA_SCHEDULES",
    "MEAN_SCALES",
    "MODES",
    "REG_CENTERS",
    "NeuralLogPolicy",
]

MODES = ("practical", "theory")
REG_CENTERS = ("zero", "init")
MEAN_SCALES = ("probability", "latent")
LAMBDA_SCHEDULES = ("fixed", "adaptive")
BONUSES = ("orders", "table")
INITS = ("mirrored", "standard")
_LINK = LogisticLink()
#: Rows per BLAS-3 fold of the exact d_eff in practical mode (``linalg.BlockedLogdet``).
EFFDIM_BLOCK = 32


class NeuralLogPolicy(NeuralLogRadius, NeuralScoredPolicy):
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
        dtype: "float64" (default) or "float32": the dtype of the network, its
            training and its gradients in practical mode; the Grams and d_eff stay
            float64 (docs/performance.md, "Neural training speed"). Theory mode takes
            float64 only.
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
    default_nu: float = 0.1
    #: Whether this algorithm has a theory mode ([Bae2025, Algs. 1-2, App. I]).
    has_theory: bool = True
    #: mean_scale=None resolves to this (docs/logistic.md, "Reconstructed bonuses").
    default_mean_scale: str = "latent"
    #: Theory mode: the mean is g(x; theta_0)^T (theta - theta_0) (Alg. 2, Eq. (5)).
    linearised_mean: bool = False

    reward_kind = "binary"  # Bernoulli likelihood: BCE on rewards in [0, 1]
    contract_params = {"width": 8, "update_every": 3, "steps": 10, "lr": 0.1}  # noqa: RUF012

    def __init__(
        self,
        *,
        nu: float | None = None,
        lam: float = 1.0,
        kappa: float = 10.0,
        S: float = 1.0,
        width: int = 20,
        depth: int = 2,
        lr: float | None = None,
        steps: int = 100,
        update_every: int | None = None,
        gram: str | None = None,
        mode: str = "practical",
        loss_reduction: str | None = None,
        reg_center: str | None = None,
        mean_scale: str | None = None,
        keep_log_factors: bool = False,
        lambda_schedule: str | None = None,
        delta: float = 0.05,
        C1: float = 1.0,
        C: float = 1.0,
        effdim_kind: str | None = None,
        scale_features: bool | None = None,
        bonus: str | None = None,
        init: str = "mirrored",
        dtype: str = "float64",
        seed: int = 0,
    ) -> None:
        super().__init__(seed=seed)
        self.dtype = check_choice("dtype", dtype, DTYPES)
        self.init = check_choice("init", init, INITS)
        self.lam = check_scalar("lam", lam, low=0.0, low_open=True)
        self.kappa = check_scalar("kappa", kappa, low=1.0)
        self.S = check_scalar("S", S, low=0.0, low_open=True)
        self.mode = check_choice("mode", mode, MODES)
        theory_mode = self.mode == "theory"
        if nu is None:  # theory: the literal radius; practical: tuned (docs)
            nu = 1.0 if theory_mode else self.default_nu
        self.nu = check_scalar("nu", nu, low=0.0)
        if theory_mode and self.init != "mirrored":
            raise ValueError(
                f"init must be 'mirrored' in theory mode (Algs. 1-2 start from the "
                f"NTK initialisation); got {self.init!r}."
            )
        if theory_mode and self.dtype != "float64":
            raise ValueError(
                f"dtype must be 'float64' in theory mode; got {self.dtype!r}."
            )
        if theory_mode and not self.has_theory:
            raise ValueError(
                f"mode must be 'practical' for {type(self).__name__}: it has no theory "
                "mode in [Bae2025]; got 'theory'."
            )
        # None resolves to the mode's own value; the resolved value is stored.
        self._set_network(
            width=width,
            depth=depth,
            lr=lr if lr is not None or theory_mode else 0.01,
            steps=steps,
            update_every=(1 if theory_mode else 50)
            if update_every is None
            else update_every,
            gram=("full" if theory_mode else "diagonal") if gram is None else gram,
            loss_reduction=(
                ("sum" if theory_mode else "mean_scaled")
                if loss_reduction is None
                else loss_reduction
            ),
        )
        self.reg_center = check_choice(
            "reg_center",
            ("init" if theory_mode else "zero") if reg_center is None else reg_center,
            REG_CENTERS,
        )
        self.lambda_schedule = check_choice(
            "lambda_schedule",
            ("adaptive" if theory_mode else "fixed")
            if lambda_schedule is None
            else lambda_schedule,
            LAMBDA_SCHEDULES,
        )
        if mean_scale is not None:
            mean_scale = check_choice("mean_scale", mean_scale, MEAN_SCALES)
            if self.sampling:
                raise ValueError(
                    f"mean_scale must be None for {type(self).__name__}: Thompson "
                    f"sampling draws on the latent scale; got {mean_scale!r}."
                )
        self.mean_scale = mean_scale
        if not isinstance(keep_log_factors, bool | np.bool_):
            raise TypeError(
                f"keep_log_factors must be a bool; got {keep_log_factors!r}."
            )
        self.keep_log_factors = bool(keep_log_factors)
        self.delta = check_scalar(
            "delta", delta, low=0.0, high=1.0, low_open=True, high_open=True
        )
        self.C1 = check_scalar("C1", C1, low=0.0, low_open=True)
        self.C = check_scalar("C", C, low=0.0, low_open=True)
        self.effdim_kind = check_choice(
            "effdim_kind",
            (self.gram if theory_mode else "exact")
            if effdim_kind is None
            else effdim_kind,
            EFFDIMS,
        )
        if scale_features is not None and not isinstance(
            scale_features, bool | np.bool_
        ):
            raise TypeError(f"scale_features must be a bool; got {scale_features!r}.")
        self.scale_features = True if scale_features is None else bool(scale_features)
        if theory_mode and not self.scale_features:
            raise ValueError(
                "scale_features=False contradicts mode='theory' (Algs. 1-2 use "
                "phi(x) = g(x; theta_0) / sqrt(m)); leave it at its default."
            )
        if theory_mode and bonus is not None:
            raise ValueError(
                f"bonus={bonus!r} is a practical-mode option; mode='theory' uses nu_t "
                "of Eqs. (1)-(4)."
            )
        self.bonus: str | None = (
            None
            if theory_mode
            else check_choice("bonus", "orders" if bonus is None else bonus, BONUSES)
        )
        if theory_mode:
            for name, bad in (
                ("reg_center", self.reg_center == "zero"),
                ("lambda_schedule", self.lambda_schedule == "fixed"),
                ("keep_log_factors", self.keep_log_factors),
            ):
                if bad:
                    raise ValueError(
                        f"{name}={getattr(self, name)!r} contradicts mode='theory' "
                        "(Algs. 1-2 use reg_center='init', lambda_schedule='adaptive' "
                        "and always keep the log factors); leave it at its default."
                    )
        # lam_0: the start and floor of lam_t ([Bae2025, Sec. 4] in theory mode).
        self._lam0 = (
            theory.lam0(delta=self.delta, C1=self.C1, depth=self.depth, S=self.S)
            if theory_mode
            else self.lam
        )
        self._lam_now = self._lam0

    # ---------------------------------------------------------------- seeds
    @classmethod
    def batched(cls, members: list[Policy]) -> BatchedPolicy | None:
        """S fresh members of one configuration as one batch, or None if unsupported.

        The ``core.batched`` protocol: practical mode with a diagonal A, depth 2 and a
        fixed lam (``policies.neurallog_batched``); None for other configurations.
        """
        from banditkit.policies.logistic.neurallog_batched import BatchedNeuralLog

        return BatchedNeuralLog.of(members)

    # ---------------------------------------------------------------- parts
    @property
    def _theory(self) -> bool:
        return self.mode == "theory"

    def _make_model(self, d: int, generator: torch.Generator) -> NeuralModel:
        self._lam_now = self._lam0
        trainer = self._trainer(n=0)
        if self._theory:
            return TangentModel(
                d,
                width=self.width,
                depth=self.depth,
                trainer=trainer,
                generator=generator,
                linearised=self.linearised_mean,
            )
        return NeuralModel(
            d,
            width=self.width,
            depth=self.depth,
            trainer=trainer,
            generator=generator,
            dtype=self.dtype,
            init=self.init,
        )

    def _trainer(self, n: int) -> Trainer:
        # PyTorch is imported here, not when the registry is built
        from banditkit.nn import Trainer

        if self._theory:
            # [Bae2025, Alg. 1, TrainNN]: (m lam_t / 2) ||theta - theta_0||^2
            lam = self.width * self._lam_now
            # [Bae2025, Condition 4.4]: eta = C5 / (m T L + m lam_t), C5 = 1, T -> n
            lr = self.lr or 1.0 / (
                self.width * (max(n, 1) * self.depth + self._lam_now)
            )
        else:
            # [Bae2025, Sec. 7]: lam ||theta - c||^2 (no 1/2); the trainer's term is
            # (lam' / 2) ||theta - c||^2, so lam' = 2 lam.
            lam = 2.0 * self._lam_now
            assert self.lr is not None
            lr = self.lr
        return Trainer(
            loss="bce",
            lam=lam,
            center=self.reg_center,
            lr=lr,
            steps=self.steps,
            reduction=LOSS_REDUCTIONS[self.loss_reduction],
        )

    def _make_design(self, p: int) -> GramLike:
        if self.lambda_schedule == "fixed":
            return make_gram(self.gram, p, self._ridge())
        return ShiftedGram(self.gram, p, self._ridge())

    def _feature_scale(self) -> float:
        # [Bae2025, Alg. 1]: phi(x) = g(x; theta_0) / sqrt(m); practical mode: the
        # gradient of the network without its sqrt(m) output factor, g / sqrt(m)
        # (``scale_features``; docs/logistic.md, section "Fidelity").
        return 1.0 / math.sqrt(self.width) if self.scale_features else 1.0

    def _effdim_scale(self) -> float | None:
        if self._theory:
            # D_t = logdet(sum g g^T / (4 m lam_0) + I) [Bae2025, Eq. (2)]
            return 1.0 / (4.0 * self.width * self._lam0)
        # [Bae2025, App. A]: logdet(sum R z z^T + I) of the scaled features z
        return R_LOGISTIC * self._feature_scale() ** 2

    def _effdim_kind(self) -> str:
        return self.effdim_kind

    def _effdim_block(self) -> int:
        # practical mode, fixed lam: the exact d_eff by blocks of 32 rows, computed when
        # read (linalg.blocked.BlockedLogdet; ScoredPolicy._act decides on its bounds,
        # as every B here increases with d_eff). Theory mode and the adaptive lam_t,
        # which read d_eff every round: rank-1 updates.
        if self._theory or self.lambda_schedule != "fixed":
            return 1
        return EFFDIM_BLOCK

    def _mean(self, latent: np.ndarray) -> np.ndarray:
        scale = self.mean_scale or self.default_mean_scale
        return _LINK.mean(latent) if scale == "probability" else latent

    def _advance(self) -> None:
        """lam_t of Eq. (3) into the ridge of A and the trainer (adaptive schedule)."""
        if self.lambda_schedule == "fixed":
            return
        assert self.effdim is not None
        n = self.history.n
        self._lam_now = (
            self._lam0
            if n == 0
            else theory.lam_t(
                self.effdim.value,
                n,
                delta=self.delta,
                C1=self.C1,
                depth=self.depth,
                S=self.S,
                lam_0=self._lam0,
            )
        )
        self.design.set_ridge(self._ridge())
        assert isinstance(self.model, NeuralModel)
        self.model.trainer = self._trainer(n)
