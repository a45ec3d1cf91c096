"""Neural-ES and Neural-PHE: ensemble sampling and perturbed history with neural networks.

    neural-es   ReLU networks from one theta_0, fitted as a stack        [Sun2025, Eq. 4.4]
    neural-phe  one network, all perturbations redrawn every round       [Jia2022]

Neural-ES takes ``anytime = {t0, base}`` for the doubling-trick variant of [Sun2025, Sec. 6]
(``policies.ensemble.base``).

References:
    In the package's docstring (``banditkit.policies.ensemble``): [Sun2025], [Jia2022].
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from banditkit.core import POLICIES, Policy
from banditkit.core.params import POSITIVE, Choice, Flag, Int, fixed, param
from banditkit.policies.ensemble.base import (
    EnsemblePolicy,
    FreshPerturbations,
    Perturbations,
)
from banditkit.policies.ensemble.members import NeuralEnsemble
from banditkit.policies.ensemble.policies import REDUCTIONS
from banditkit.policies.ensemble.stacked import StackedEnsembles, stackable
from banditkit.policies.parts.models.compute import DEVICE, DTYPE

if TYPE_CHECKING:
    from banditkit import nn
else:
    from banditkit.core.lazy import lazy_import

    nn = lazy_import("banditkit.nn")  # PyTorch: imported at first use

__all__ = ["NeuralES", "NeuralPHE"]


class _NeuralEnsemblePolicy(EnsemblePolicy):
    """Network hyper-parameters shared by Neural-ES and Neural-PHE."""

    contract_params = {"m": 3, "width": 4, "steps": 3, "warmup": 3}  # noqa: RUF012
    needs_torch = True

    width: int = param(Int(low=2, even=True), default=20)
    depth: int = param(Int(low=2), default=3)
    steps: int = param(Int(low=1), default=100)
    lr: float = param(POSITIVE, default=0.01)
    reduction: str = param(Choice(REDUCTIONS), default="mean")
    warmup: int = param(Int(low=0), default=50)
    independent_init: bool = param(Flag(), default=False)
    dtype: str = DTYPE
    device: str = DEVICE

    @classmethod
    def stack(cls, members: Sequence[Policy]) -> StackedEnsembles | None:
        """S fresh members whose ensembles train as one stack (``ensemble.stacked``).

        None off the CPU (those run seed by seed); anytime restarts stack too.
        """
        return StackedEnsembles(members) if stackable(members[0]) else None

    def _make_model(self, members: int, *, restoring: bool = False) -> NeuralEnsemble:
        assert self.d is not None
        if restoring:  # theta_0 and theta come from the state: leave self.rng alone
            import torch

            generator = torch.Generator().manual_seed(0)
        else:
            generator = nn.make_generator(self.rng)
        return NeuralEnsemble(
            self.d,
            members,
            width=self.width,
            depth=self.depth,
            lam=self.lam,
            steps=self.steps,
            lr=self.lr,
            reduction=self.reduction,
            generator=generator,
            independent_init=self.independent_init,
            dtype=self.dtype,
            device=self.device,
        )


@POLICIES.register("neural-es")
class NeuralES(_NeuralEnsemblePolicy):
    """Neural ensemble sampling (Neural-ES) [Sun2025, Sec. 4.3, Eq. 4.4, Alg. 1].

        theta^j = J GD steps on (1/2) sum_l (f(x_l; theta) - y_l - Z_l^j)^2
                  + (lam N / 2) ||theta - theta_0||^2,   same theta_0 for every member
        a_t = argmax_k f(x_k; theta^{j_t})

    f(x; theta) = sqrt(N) W_L relu(... relu(W_1 x)), bias-free, mirrored initialisation
    (``nn.StackedMLP``); the m members are one stacked network trained by one ``nn.fit``.

    Symbols: m = m, N = width, L = depth, lam = lambda, sigma_r = sigma_R, steps = J,
    lr = eta.

    Args:
        m: Ensemble size (paper: 10).
        lam: lambda; the penalty weight is lam * width.
        sigma_r: Perturbation standard deviation sigma_R, >= 0.
        width: N, hidden units per layer, even (paper: 20).
        depth: L, linear layers (paper: 3).
        steps: GD steps J per refit (paper: 100).
        lr: GD step size eta (paper: 0.01).
        reduction: "mean" (GD on the objective / n; default) or "sum".
        warmup: Warm-up rounds (paper: 50, each of the K = 50 arms once).
        warmup_strategy: "round-robin" (default: each arm in turn), "random" or "design".
        anytime: None, or {t0, base[, m_scale, sigma_scale]}.
        perturb_warmup: Perturb the warm-up rewards too (True).
        update_every: Refit every this many rounds.
        independent_init: False (default; [Sun2025, Sec. 4.3, Alg. 1]: one theta_0 for
            every member, members differ only through their perturbations) or True: member
            j starts from and is regularised towards its own draw theta_0^j (the members'
            spread then also comes from the initialisation, as in the deep-ensemble
            practice of Osband et al.; not the paper's algorithm).
        dtype: "float32" (default since 2026-12-06; docs/performance.md, "The default
            dtype") or "float64" (the default before): the networks and their training.
        device: "cpu" (default), "cuda", "cuda:N" or "auto": where the networks, their
            training and the history's distinct rows live
            (``policies.parts.models.compute``).
        seed: Seed of the policy's own stream (theta_0, members, perturbations, ties).

    Example:
        >>> from banditkit.core import Context
        >>> NeuralES(m=2, width=4, steps=2, warmup=0).act(Context(arms=np.eye(3))) in range(3)
        True
    """


@POLICIES.register("neural-phe")
class NeuralPHE(_NeuralEnsemblePolicy):
    """Neural perturbed-history exploration (NPR / Neural-PHE) [Jia2022, Alg. 1].

    Every round redraw gamma_l ~ N(0, sigma_r^2) for **all** l <= t (never stored) and
    take J GD steps of one network on

        (1/2) sum_l (f(x_l; theta) - y_l - gamma_l)^2 + (lam N / 2) ||theta - theta_0||^2,

    then play a_t = argmax_k f(x_k; theta) (no sampling at decision time). Same network,
    optimiser and warm-up as ``neural-es`` [Sun2025, Sec. 7.2].

    Symbols: sigma_r = nu (the perturbation scale), N = width, L = depth, steps = J.

    Args:
        sigma_r: Perturbation standard deviation, >= 0 (0.1 as Neural-ES).
        lam: lambda; the penalty weight is lam * width.
        width: N, even.
        depth: L.
        steps: GD steps per refit.
        lr: GD step size.
        reduction: "mean" or "sum".
        warmup: Warm-up rounds.
        warmup_strategy: "round-robin", "random" or "design".
        update_every: Refit every this many rounds.
        dtype: "float32" (default) or "float64" (see ``neural-es``).
        device: "cpu" (default), "cuda", "cuda:N" or "auto" (see ``neural-es``).
        seed: Seed of the policy's own stream.

    Example:
        >>> from banditkit.core import Context
        >>> NeuralPHE(width=4, steps=2, warmup=0).act(Context(arms=np.eye(3))) in range(3)
        True
    """

    contract_params = {"width": 4, "steps": 3, "warmup": 3}  # noqa: RUF012

    # one network, all perturbations redrawn at each refit, no anytime restarts
    m = fixed(1)
    anytime = fixed(None)
    perturb_warmup = fixed(True)
    independent_init = fixed(False)

    def _perturbations(self) -> Perturbations:
        return FreshPerturbations()
