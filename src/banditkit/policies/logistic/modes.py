"""The two modes of the NeuralLog policies [Bae2025]: resolved option sets and their formulas.

A mode is an option set, the values that the options left at None take and the values
it pins (another one is an error), together with the formulas that differ between the
practical algorithm of the experiments ([Bae2025, Sec. 7, App. A]) and the algorithms
of the analysis ([Bae2025, Algs. 1-2, App. I]; docs/logistic.md, "Theory mode"):

                practical (default)                      theory
    network     NeuralModel: z = g(x; theta)             TangentModel: phi = g(x; theta_0)
    training    lam ||theta - c||^2, fixed lr            (m lam_t / 2) ||theta - theta_0||^2,
                                                         eta_t of Condition 4.4
    lam_0       lam                                      theory.lam0 [Bae2025, Sec. 4]
    d_eff       logdet(I + a sum z z^T), the             D_t = logdet(G_t / (4 lam_0) + I)
                algorithm's a, blocked when lam fixed
    nu_{t-1}    theory.practical_nu (orders or table)    nu_t of Eqs. (1)/(4)

``MODES`` maps the ``mode`` option to one of the two. A policy reads them through its
options (``NeuralLogPolicy``): the functions take the policy as the record of its
resolved options (``lam0`` among them, set from ``Mode.lam0``).

References:
    [Bae2025] S. Bae, D. Lee. Neural logistic bandits. arXiv:2505.02069.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from banditkit.policies.logistic import theory
from banditkit.policies.parts.models import NeuralModel, TangentModel

if TYPE_CHECKING:
    from banditkit import nn
    from banditkit.nn import Trainer
else:
    from banditkit.core.lazy import lazy_import

    nn = lazy_import(
        "banditkit.nn"
    )  # PyTorch: imported at first use, not by the registry

__all__ = [
    "EFFDIM_BLOCK",
    "LOSS_REDUCTIONS",
    "MODES",
    "Mode",
    "Practical",
    "Theory",
    "iota_t",
    "resolve",
]

#: Rows per BLAS-3 fold of the exact d_eff in practical mode (``linalg.BlockedLogdet``).
EFFDIM_BLOCK = 32
#: The network's width, depth, trainer and generator (``Mode.model``).
Net = dict[str, Any]
#: ``loss_reduction`` -> the trainer's reduction.
LOSS_REDUCTIONS = {"mean_scaled": "mean", "sum": "sum"}


class Mode(Protocol):
    """An option set of the NeuralLog policies and the formulas that go with it."""

    #: Values of the options left at None (a callable reads the policy's options).
    defaults: dict[str, Any]
    #: Options the mode fixes: name -> (value, why).
    pinned: dict[str, tuple[Any, str]]

    def lam0(self, options: Any) -> float:
        """lam_0, the start and floor of lam_t."""
        ...

    def trainer(self, options: Any, lam: float, n: int) -> Trainer:
        """The trainer with the round's lam_t after n observations."""
        ...

    def model(self, options: Any, d: int, net: Net, linear: bool) -> NeuralModel:
        """The network of ``net``: width, depth, trainer, generator.

        ``linear``: its mean is the linearisation at theta_0 (Alg. 2).
        """
        ...

    def effdim_scale(self, options: Any, practical: float) -> float:
        """The scale a of d_eff = logdet(I + a sum z z^T) (``practical``: the algorithm's a)."""
        ...

    def effdim_block(self, options: Any) -> int:
        """Rows per fold of an exact d_eff (``linalg.EffectiveDimension(block=)``)."""
        ...

    def nu(self, options: Any, d_eff: float, n: int, lam: float) -> float:
        """nu_{t-1}, the radius before its algorithm's factor, after n observations."""
        ...


def _trainer(options: Any, *, lam: float, lr: float) -> Trainer:
    return nn.Trainer(
        loss="bce",
        lam=lam,
        center=options.reg_center,
        lr=lr,
        steps=options.steps,
        reduction=LOSS_REDUCTIONS[options.loss_reduction],
    )


class Practical:
    """[Bae2025, Sec. 7, App. A]: the algorithm of the experiments (the default)."""

    defaults: dict[str, Any] = {  # noqa: RUF012 - read-only
        "nu": lambda options: options.default_nu,
        "lr": 0.01,
        "update_every": 50,
        "gram": "diagonal",
        "loss_reduction": "mean_scaled",
        "reg_center": "zero",
        "lambda_schedule": "fixed",
        "effdim_kind": "exact",
        "scale_features": True,
        "bonus": "orders",
        "dtype": "float32",  # since 2026-12-06 (docs/performance.md, "The default dtype")
    }
    pinned: dict[str, tuple[Any, str]] = {}  # noqa: RUF012 - read-only

    def lam0(self, options: Any) -> float:
        """The fixed lam itself."""
        return float(options.lam)

    def trainer(self, options: Any, lam: float, n: int) -> Trainer:
        """[Bae2025, Sec. 7]: lam ||theta - c||^2 (no 1/2), GD at lr."""
        # the trainer's term is (lam' / 2) ||theta - c||^2, so lam' = 2 lam
        return _trainer(options, lam=2.0 * lam, lr=options.lr)

    def model(self, options: Any, d: int, net: Net, linear: bool) -> NeuralModel:
        """``NeuralModel`` (``nn`` chooses its per-round passes and training layout)."""
        return NeuralModel(
            d, **net, dtype=options.dtype, device=options.device, init=options.init
        )

    def effdim_scale(self, options: Any, practical: float) -> float:
        """[Bae2025, App. A]: the algorithm's a on the scaled features."""
        return practical

    def effdim_block(self, options: Any) -> int:
        """Fixed lam: the exact d_eff by blocks of 32 rows, computed when read.

        ``ScoredPolicy`` decides on its bounds (every B here increases with d_eff). The
        adaptive lam_t reads d_eff every round: rank-1 updates.
        """
        return EFFDIM_BLOCK if options.lambda_schedule == "fixed" else 1

    def nu(self, options: Any, d_eff: float, n: int, lam: float) -> float:
        """``theory.practical_nu``, with l_t when ``keep_log_factors``."""
        ell = theory.log_factor(n, options.delta) if options.keep_log_factors else 1.0
        return theory.practical_nu(
            d_eff,
            lam=lam,
            depth=options.depth,
            S=options.S,
            bonus=options.bonus,
            ell=ell,
        )


_WHY = "Algs. 1-2 use reg_center='init', lambda_schedule='adaptive' and always keep the log factors"


class Theory:
    """[Bae2025, Algs. 1-2, App. I]: the algorithms of the analysis (``mode="theory"``)."""

    defaults: dict[str, Any] = {  # noqa: RUF012 - read-only
        "nu": 1.0,  # the literal radius
        "update_every": 1,
        "gram": "full",
        "loss_reduction": "sum",
        "reg_center": "init",
        "lambda_schedule": "adaptive",
        "effdim_kind": lambda options: options.gram,
        "scale_features": True,
        "dtype": "float64",
    }
    pinned: dict[str, tuple[Any, str]] = {  # noqa: RUF012 - read-only
        "init": ("mirrored", "Algs. 1-2 start from the NTK initialisation"),
        "dtype": ("float64", "the theory runs in float64"),
        "reg_center": ("init", _WHY),
        "lambda_schedule": ("adaptive", _WHY),
        "keep_log_factors": (False, _WHY),
        "scale_features": (True, "Algs. 1-2 use phi(x) = g(x; theta_0) / sqrt(m)"),
        "bonus": (
            None,
            "it is a practical-mode option; theory uses nu_t of Eqs. (1)-(4)",
        ),
    }

    def lam0(self, options: Any) -> float:
        """lam_0 = 8 sqrt(2) C1 sqrt(L) log(4 / delta) / S [Bae2025, Sec. 4]."""
        return theory.lam0(
            delta=options.delta, C1=options.C1, depth=options.depth, S=options.S
        )

    def trainer(self, options: Any, lam: float, n: int) -> Trainer:
        """[Bae2025, Alg. 1, TrainNN]: (m lam_t / 2) ||theta - theta_0||^2, eta_t."""
        # [Bae2025, Condition 4.4]: eta = C5 / (m T L + m lam_t), C5 = 1, T -> n
        lr = options.lr or 1.0 / (options.width * (max(n, 1) * options.depth + lam))
        return _trainer(options, lam=options.width * lam, lr=lr)

    def model(self, options: Any, d: int, net: Net, linear: bool) -> NeuralModel:
        """``TangentModel``: features g(x; theta_0), linearised mean for Alg. 2."""
        return TangentModel(d, **net, linearised=linear, device=options.device)

    def effdim_scale(self, options: Any, practical: float) -> float:
        """D_t = logdet(sum g g^T / (4 m lam_0) + I) [Bae2025, Eq. (2)]."""
        return 1.0 / (4.0 * options.width * options.lam0)

    def effdim_block(self, options: Any) -> int:
        """Rank-1 updates: lam_t reads d_eff every round."""
        return 1

    def nu(self, options: Any, d_eff: float, n: int, lam: float) -> float:
        """nu_t of Eqs. (1)/(4) with iota_t of Eq. (2) (C = C6 or C7)."""
        iota = iota_t(options, d_eff, n)
        return theory.nu_t(iota, C=options.C, depth=options.depth, S=options.S)


def iota_t(options: Any, d_eff: float, n: int) -> float:
    """iota_t of [Bae2025, Eq. (2)] after n observations, with the options' lam_0."""
    return theory.iota_t(
        d_eff,
        n,
        delta=options.delta,
        C1=options.C1,
        depth=options.depth,
        lam_0=options.lam0,
    )


MODES: dict[str, Mode] = {"practical": Practical(), "theory": Theory()}


def resolve(options: Any, mode: Mode) -> None:
    """Give the options left at None the mode's values; reject those it pins otherwise.

    Raises:
        ValueError: For an option the mode pins to another value.
    """
    for name, value in mode.defaults.items():
        if getattr(options, name) is None:
            setattr(options, name, value(options) if callable(value) else value)
    for name, (value, why) in mode.pinned.items():
        given = getattr(options, name)
        if given != value:
            raise ValueError(
                f"{name}={given!r} contradicts mode='theory' ({why}); leave it at "
                "its default."
            )
