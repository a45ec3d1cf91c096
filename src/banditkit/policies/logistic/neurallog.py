"""Neural logistic bandits [Bae2025]: NeuralLog-UCB-1/2, NeuralLog-TS-1/2 and NCBF-UCB.

Each policy here is a choice of the same four parts (``policies.parts.scored``):

    model        nn.MLP fitted by nn.Trainer (NeuralModel)     f(x; theta)
    uncertainty  linalg (Diagonal)Gram of nn.forward_and_grads  ||g||_{A^-1}, radius B(d_eff)
    selection    Optimistic() or Sampled() (policies.parts.selection)
    schedule     Periodic(update_every)

Theory mode (``mode="theory"``, NeuralLog-UCB-1/2 and TS-1/2; [Bae2025, Algs. 1-2,
App. I]) is described in ``NeuralLogPolicy`` (``policies.logistic.neurallog_base``, the
family's shared machinery); its constants are in ``policies.logistic.theory``.

Practical mode ([Bae2025, Sec. 7, App. A]; docs/logistic.md, section "Shared loop"), the
default: gradients at the current network, a fixed lam, training every ``update_every``
rounds with ``steps`` full-batch GD steps at ``lr`` on all data (warm start), and a
diagonal A. The features are z = g(x; theta_{t-1}) / sqrt(m), the gradient of the
network without its NTK output factor sqrt(m) (the network the practical code of
[Zhou2020] and [Bae2025] differentiates when it "drops the 1/sqrt(m)"). With R = 1/4
(docs/logistic.md, sections "Reconstructed bonuses" and "Fidelity"; Reconstruction):

    policy           mean       A                                   B (times nu)
    NCBF-UCB         f          kappa lam + sum z^2                 kappa sqrt(d_eff) + S sqrt(kappa lam) + 1
    NeuralLog-UCB-1  mu(f)      kappa lam + sum z^2                 R sqrt(kappa) S^2 (sqrt(d_eff) + 1 / sqrt(lam))
    NeuralLog-UCB-2  f          lam + sum mu'(f(x_i; theta_i)) z^2  S^2 (sqrt(d_eff) + 1 / sqrt(lam))
    NeuralLog-TS-1   N(f, s^2)  as UCB-1                            s = sqrt(kappa) S^2 (...) ||z||_{A^-1}
    NeuralLog-TS-2   N(f, s^2)  as UCB-2                            s = S^2 (...) ||z||_{A^-1}

with d_eff = logdet(I + a sum_i z_i z_i^T) exact (the p x p Gram for p <= 512, else
through the n x n Gram, ``linalg.KernelLogdet``), a = 1/kappa for NCBF-UCB and R otherwise [Bae2025, App. A].
B keeps the orders of nu_t in S, kappa, lam and d_eff and drops absolute constants,
as [Bae2025, App. A] prescribes (``bonus="orders"``). ``effdim_kind="diagonal"``,
``scale_features=False`` and ``bonus="table"`` give the earlier widths (diagonal
d_eff of raw NTK gradients, B with c_S = 1 + sqrt(L) S + L S^2 and sqrt(L / lam)).

References:
    [Zhou2020] D. Zhou, L. Li, Q. Gu. Neural contextual bandits with UCB-based
        exploration. ICML 2020.
    [Zhang2021] W. Zhang, D. Zhou, L. Li, Q. Gu. Neural Thompson sampling. ICLR 2021.
    [Bae2025] S. Bae, D. Lee. Neural logistic bandits. arXiv:2505.02069.
    [Verma2025] A. Verma, Z. Dai, X. Lin, P. Jaillet, B. K. H. Low. Neural dueling
        bandits: preference-based optimization with human feedback. ICLR 2025.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, ClassVar

from banditkit.core import POLICIES
from banditkit.core.params import Choice, NoneOnly, param
from banditkit.policies.logistic.neurallog_base import NeuralLogPolicy
from banditkit.policies.parts.scored import LEARNING_PARTS, R_LOGISTIC, ScoredParts
from banditkit.policies.parts.selection import Optimistic, Sampled

if TYPE_CHECKING:
    import torch

__all__ = [
    "NCBFUCB",
    "NeuralLogTS1",
    "NeuralLogTS2",
    "NeuralLogUCB1",
    "NeuralLogUCB2",
]


class _LatentSample:
    """The Thompson variants: the sample is on the latent scale (no ``mean_scale``)."""

    default_nu = 0.01
    mean_scale: str | None = param(
        NoneOnly("Thompson sampling draws on the latent scale"), default=None
    )


@POLICIES.register("neurallog-ucb1")
class NeuralLogUCB1(NeuralLogPolicy):
    """NeuralLog-UCB-1 [Bae2025, Alg. 1; practical mode of Sec. 7, App. A].

        score(k) = mu(f(x_k; theta)) + nu * B * ||z_k||_{V^-1},   z = g(x; theta) / sqrt(m),
        V = kappa lam I + sum_i z(x_i; theta_{i-1})^2            (diagonal),
        B = R sqrt(kappa) S^2 (sqrt(d_eff) + 1 / sqrt(lam)),
        d_eff = logdet(I + R sum_i z_i z_i^T),  R = 1/4.

    Symbols: nu = ν, lam = λ, kappa = κ, S = S, width = m, depth = L, lr = η, steps = J.
    Args: see ``NeuralLogPolicy``.

    Notes:
        Reconstruction: B keeps the orders in kappa, S, lam and d_eff of R sqrt(kappa)
        nu_t^(1) (Eq. (1)) with iota_t ~ sqrt(d_eff) + 1 / sqrt(lam); absolute
        constants and the log(4t^2/delta) factors are dropped (docs/logistic.md,
        sections "Reconstructed bonuses" and "Fidelity").
        Deviation: GD on J / n by default (``loss_reduction``).
        Theory mode [Bae2025, Alg. 1]: mu(f(x; theta_{t-1})) + nu R sqrt(kappa)
        nu^(1)_{t-1} ||phi(x)||_{V_{t-1}^-1}, V_t = G_t + kappa lam_t I, Eqs. (1)-(3).

    Example:
        >>> from banditkit.core import Context
        >>> policy = NeuralLogUCB1(width=4, steps=5)
        >>> policy.act(Context(arms=np.eye(3))) in range(3)
        True
    """

    #: What an update changes inside (``core.transaction``): ``ScoredPolicy._learn``'s.
    _undo_parts: ClassVar[tuple[str, ...]] = LEARNING_PARTS

    def _compose(self, d: int, generator: torch.Generator) -> ScoredParts:
        factor = R_LOGISTIC * math.sqrt(self.kappa)  # [Bae2025, Alg. 1]: R sqrt(kappa)
        return self._algorithm_1(d, generator, Optimistic(), factor, "probability")


@POLICIES.register("neurallog-ucb2")
class NeuralLogUCB2(NeuralLogPolicy):
    """NeuralLog-UCB-2 [Bae2025, Alg. 2; practical mode of Sec. 7, App. A].

        score(k) = f(x_k; theta) + nu * B * ||z_k||_{W^-1},   z = g(x; theta) / sqrt(m),
        W = lam I + sum_i mu'(f(x_i; theta_i)) z(x_i; theta_{i-1})^2   (diagonal),
        B = S^2 (sqrt(d_eff) + 1 / sqrt(lam)),
        d_eff = logdet(I + R sum_i z_i z_i^T),

    where theta_i is the parameter after round i's refit (theta_{i-1} when round i did
    not refit); each weight is frozen once added. No kappa (and no R) enters the rule,
    so the selections do not depend on ``kappa``.

    Symbols: nu = ν^(2), lam = λ, S = S, width = m, depth = L, lr = η, steps = J.
    Args: see ``NeuralLogPolicy`` (``kappa`` is accepted and unused).

    Notes:
        Reconstruction: B mirrors nu_t^(2) of Eq. (4) (docs/logistic.md,
        section "Reconstructed bonuses").
        Deviation: GD on J / n by default (``loss_reduction``).
        Theory mode [Bae2025, Alg. 2, Eq. (5)]: g(x; theta_0)^T (theta_{t-1} - theta_0)
        + nu nu^(2)_{t-1} ||phi(x)||_{W_{t-1}^-1}, W_t = sum w_i phi phi^T + lam_t I.

    Example:
        >>> from banditkit.core import Context
        >>> policy = NeuralLogUCB2(width=4, steps=5)
        >>> policy.act(Context(arms=np.eye(3))) in range(3)
        True
    """

    #: What an update changes inside (``core.transaction``): ``ScoredPolicy._learn``'s.
    _undo_parts: ClassVar[tuple[str, ...]] = LEARNING_PARTS

    def _compose(self, d: int, generator: torch.Generator) -> ScoredParts:
        return self._algorithm_2(d, generator, Optimistic())


@POLICIES.register("neurallog-ts1")
class NeuralLogTS1(_LatentSample, NeuralLogPolicy):
    """NeuralLog-TS-1 [Bae2025, App. I; practical mode]: Gaussian sample per arm.

        r_k ~ N(f(x_k; theta), s_k^2),
        s_k = nu * sqrt(kappa) S^2 (sqrt(d_eff) + 1 / sqrt(lam)) * ||z_k||_{V^-1},

    with V and d_eff as in ``NeuralLogUCB1``; play argmax_k r_k.

    Symbols: nu = ν̃, lam = λ, kappa = κ, S = S, width = m, depth = L.
    Args: see ``NeuralLogPolicy``.

    Notes:
        Reconstruction: s as in docs/logistic.md, section "Reconstructed bonuses"
        (sqrt(kappa lam_t) ||g||_{V^-1} times nu_t^(1) / sqrt(lam_t)); the sample is on
        the latent scale.
        Assumption: anytime, the current d_eff replaces the horizon value nu_T.

    Example:
        >>> from banditkit.core import Context
        >>> policy = NeuralLogTS1(width=4, steps=5)
        >>> policy.act(Context(arms=np.eye(3))) in range(3)
        True
    """

    #: What an update changes inside (``core.transaction``): ``ScoredPolicy._learn``'s.
    _undo_parts: ClassVar[tuple[str, ...]] = LEARNING_PARTS

    def _compose(self, d: int, generator: torch.Generator) -> ScoredParts:
        factor = math.sqrt(self.kappa)  # s = sqrt(kappa) nu_t ||phi||_{V^-1}
        return self._algorithm_1(d, generator, Sampled(), factor, "latent")


@POLICIES.register("neurallog-ts2")
class NeuralLogTS2(_LatentSample, NeuralLogPolicy):
    """NeuralLog-TS-2 [Bae2025, Remark I.2; practical mode]: Gaussian sample per arm.

        r_k ~ N(f(x_k; theta), s_k^2),
        s_k = nu * S^2 (sqrt(d_eff) + 1 / sqrt(lam)) * ||z_k||_{W^-1},

    with the variance-weighted W and d_eff of ``NeuralLogUCB2``; no kappa enters.

    Symbols: nu = ν', lam = λ, S = S, width = m, depth = L.
    Args: see ``NeuralLogPolicy`` (``kappa`` is accepted and unused).

    Notes:
        Reconstruction: docs/logistic.md, section "Reconstructed bonuses" (the square on
        sigma' restored).
        Assumption: anytime, the current d_eff replaces the horizon value.

    Example:
        >>> from banditkit.core import Context
        >>> policy = NeuralLogTS2(width=4, steps=5)
        >>> policy.act(Context(arms=np.eye(3))) in range(3)
        True
    """

    #: What an update changes inside (``core.transaction``): ``ScoredPolicy._learn``'s.
    _undo_parts: ClassVar[tuple[str, ...]] = LEARNING_PARTS

    def _compose(self, d: int, generator: torch.Generator) -> ScoredParts:
        return self._algorithm_2(d, generator, Sampled())  # s = nu_t ||phi||_{W^-1}


@POLICIES.register("ncbf-ucb")
class NCBFUCB(NeuralLogPolicy):
    """NCBF-UCB [Verma2025] as run in [Bae2025, Sec. 7] (binary-feedback variant).

        score(k) = f(x_k; theta) + nu * B * ||z_k||_{V^-1},   z = g(x; theta) / sqrt(m),
        V = kappa lam I + sum_i z(x_i; theta_{i-1})^2            (diagonal),
        B = kappa sqrt(d_eff) + S sqrt(kappa lam) + 1,
        d_eff = logdet(I + sum_i z_i z_i^T / kappa).

    Symbols: nu = ν, lam = λ, kappa = κ, S = S, width = m, depth = L.
    Args: see ``NeuralLogPolicy``.

    Notes:
        Reconstruction: B keeps the kappa-linear width of [Verma2025]
        (beta_T = kappa sqrt(d_eff + 2 log(1/delta)), log factor dropped) and the d_eff
        of [Bae2025, App. A] (docs/logistic.md, section "Reconstructed bonuses").

    Example:
        >>> from banditkit.core import Context
        >>> policy = NCBFUCB(width=4, steps=5)
        >>> policy.act(Context(arms=np.eye(3))) in range(3)
        True
    """

    #: What an update changes inside (``core.transaction``): ``ScoredPolicy._learn``'s.
    _undo_parts: ClassVar[tuple[str, ...]] = LEARNING_PARTS

    default_nu = 0.01

    #: NCBF-UCB has no theory mode in [Bae2025].
    mode: str = param(Choice("practical"), default="practical")

    def _compose(self, d: int, generator: torch.Generator) -> ScoredParts:
        return self._parts(
            d,
            generator,
            rule=Optimistic(),
            mean=self._mean("latent"),
            radius=self._radius,
            ridge=self.kappa,  # V = kappa lam I + sum z^2
            # [Bae2025, App. A]: logdet(sum g g^T / kappa + I) of the scaled features
            effdim_scale=self.feature_scale**2 / self.kappa,
        )

    def _radius(self, d_eff: float, n: int, lam: float) -> float:
        """B = kappa sqrt(d_eff) + S sqrt(kappa lam) + 1 [Verma2025]."""
        if self.keep_log_factors:  # [Verma2025]: kappa sqrt(d_eff + 2 log(1/delta))
            d_eff = d_eff + 2.0 * math.log(1.0 / self.delta)
        return self.kappa * math.sqrt(d_eff) + self.S * math.sqrt(self.kappa * lam) + 1
