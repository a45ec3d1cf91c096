"""The adaptive regulariser lam_t of the NeuralLog policies [Bae2025, Eq. (3)].

``lambda_schedule="adaptive"`` (theory mode's, and an option in practical mode) moves the
regulariser every round:

    lam_t = max((64 / S^2) D_t l_t + 16 C1^2 L l_t^2 / (S^2 lam_0), lam_0)

with D_t the policy's d_eff after the round's features (``theory.lam_t``). lam_t enters
the ridge of A (ridge factor * lam_t: kappa for Alg. 1, 1 for Alg. 2), the trainer's L2
term and the radius. The fixed schedule is ``parts.scored.FixedLambda``.

References:
    [Bae2025] S. Bae, D. Lee. Neural logistic bandits. arXiv:2505.02069.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from banditkit.policies.logistic import theory

if TYPE_CHECKING:
    from banditkit.linalg import EffectiveDimension, ShiftedGram
    from banditkit.nn import Trainer
    from banditkit.policies.parts.models import NeuralModel

__all__ = ["AdaptiveLambda"]


@dataclass
class AdaptiveLambda:
    """lam_t of [Bae2025, Eq. (3)], moved into A's ridge and the trainer each round.

    Args:
        options: The policy's resolved options (delta, C1, depth, S, lam0).
        effdim: The d_eff tracker whose value is D_t.
        design: A, whose ridge becomes ``ridge * lam_t``.
        model: The network, whose trainer becomes ``trainer(lam_t, n)``.
        trainer: The mode's trainer for a lam_t after n observations.
        ridge: The factor of lam_t in A's ridge.
    """

    options: Any
    effdim: EffectiveDimension
    design: ShiftedGram
    model: NeuralModel
    trainer: Callable[[float, int], Trainer]
    ridge: float

    def __post_init__(self) -> None:
        self.lam: float = self.options.lam0
        self.n = 0

    def advance(self, n: int) -> None:
        """lam_n after the n-th observation (lam_0 before any), into A and the trainer."""
        options = self.options
        self.n = n
        self.lam = (
            options.lam0
            if n == 0
            else theory.lam_t(
                self.effdim.value,
                n,
                delta=options.delta,
                C1=options.C1,
                depth=options.depth,
                S=options.S,
                lam_0=options.lam0,
            )
        )
        self.design.set_ridge(self.ridge * self.lam)
        self.model.trainer = self.trainer(self.lam, n)
