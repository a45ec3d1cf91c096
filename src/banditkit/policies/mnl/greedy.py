"""epsilon-greedy-MNL [Zhang2024, Sec. 3] as run in [Hwang2025, Sec. 4 and G].

The utility class is the two-layer sigmoid network of the truth (``UtilityNet``). Epochs
have lengths 1, 2, 4, ...: after rounds t = 2^k - 1 the network is refit on the
observations of the epoch that just ended only (the offline regression oracle: the MNL
NLL with the outside option, full-batch Adam, lr 1e-4, 2000 steps, warm-started from the
previous epoch's weights), and used for the whole next epoch. Each round, with
probability eps_t the policy offers a uniformly random assortment (the sampler of ONL-MNL's
Phase I), otherwise the exact optimum under the predicted utilities f^(x). The schedule is
eps_1 = ``eps``, eps_{t+1} = max(``eps_min``, ``decay`` eps_t) [Hwang2025, G].

References:
    [Zhang2024] M. Zhang, H. Luo. Contextual multinomial logit bandits with general value
        functions. NeurIPS 2024.
    [Hwang2025] see ``policies.mnl.common``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from banditkit.core import POLICIES
from banditkit.core.params import POSITIVE, UNIT, Choice, Int, param
from banditkit.core.policy import AssortmentPolicy, Policy
from banditkit.core.types import Action, Context, Feedback
from banditkit.policies.mnl.common import (
    PHASE1_SAMPLERS,
    UniformAssortmentLaw,
    UtilityNet,
    capacity_of,
    offered_set,
    slot_of,
)
from banditkit.policies.mnl.stacked import StackedEpsGreedy
from banditkit.policies.parts.history import SetHistory
from banditkit.policies.parts.models.compute import DEVICE, DTYPE
from banditkit.policies.parts.propensity import Mixture, PointLaw

__all__ = ["EpsGreedyMNL"]


@POLICIES.register("eps-greedy-mnl")
class EpsGreedyMNL(AssortmentPolicy):
    """epsilon-greedy-MNL with epoch-wise offline refits (module docstring).

    Args:
        width: Hidden units of the utility network.
        eps: eps_1, the first exploration probability (0.1 in the paper; 0.2 at N = 800).
        decay: eps_{t+1} = max(eps_min, decay eps_t).
        eps_min: The floor of eps_t.
        lr: Adam step size of each refit.
        steps: Adam steps of each refit.
        sampler: The exploration sampler, as ONL-MNL's ``phase1``.
        dtype: "float32" (default since 2026-12-06; docs/performance.md, "The default
            dtype") or "float64" (the default before): the utility network and its fits.
        device: "cpu" (default), "cuda", "cuda:N" or "auto": where the network and
            its fits run (``policies.parts.models.compute``).
        seed: Seed of the policy's stream.

    Example:
        >>> from banditkit.core import Context
        >>> policy = EpsGreedyMNL(steps=5, seed=0)
        >>> len(policy.act(Context(arms=np.eye(4)[:, :3], max_size=2))) <= 2
        True
    """

    needs_torch = True
    contract_params: ClassVar[dict[str, Any]] = {"width": 2, "steps": 5}

    width: int = param(Int(low=1), default=3)
    eps: float = param(UNIT, default=0.1)
    decay: float = param(UNIT, default=0.995)
    eps_min: float = param(UNIT, default=0.001)
    lr: float = param(POSITIVE, default=1e-4)
    steps: int = param(Int(low=1), default=2000)
    sampler: str = param(Choice(PHASE1_SAMPLERS), default="uniform")
    dtype: str = DTYPE
    device: str = DEVICE

    def _setup(self, ctx: Context) -> None:
        self.net = UtilityNet(
            int(self.d),  # type: ignore[arg-type]
            self.width,
            self.rng,
            dtype=self.dtype,
            device=self.device,
        )
        self.epoch = SetHistory(int(self.d))  # type: ignore[arg-type]
        self.nll = 0.0

    def epsilon(self, t: int) -> float:
        """eps_t for round t >= 1."""
        return max(self.eps_min, self.eps * self.decay ** (t - 1))

    def _act(self, ctx: Context) -> Action:
        eps = self.epsilon(self.t + 1)
        explore = self.rng.random() < eps
        # the greedy set enters the law of exploring rounds too
        greedy = offered_set(self.net.predict(ctx.arms), ctx)
        uniform = UniformAssortmentLaw(ctx.n_arms, capacity_of(ctx), self.sampler)
        self.propose(Mixture([(eps, uniform), (1.0 - eps, PointLaw(greedy))]))
        return uniform.draw(self.rng) if explore else greedy

    def _update(self, ctx: Context, action: Action, feedback: Feedback) -> None:
        if self._record(ctx, action, feedback):
            self._refitted(self.net.fit(self.epoch, lr=self.lr, steps=self.steps))

    def _record(self, ctx: Context, action: Action, feedback: Feedback) -> bool:
        """Add the round to the epoch; True when the epoch ends (a refit is due).

        The round of :meth:`_update` up to the refit: a seed stack
        (``policies.mnl.stacked``) refits its members together between the two halves.
        """
        assert isinstance(action, tuple) and isinstance(feedback, int)
        self.epoch.append(ctx.arms[list(action)], slot_of(action, feedback))
        t = self.t + 1
        return (t + 1) & t == 0  # t = 2^k - 1: the epoch of length 2^(k-1) ends

    def _refitted(self, nll: float) -> None:
        """After the epoch's refit (final mean NLL ``nll``): a new epoch begins."""
        self.nll = nll
        self.epoch = SetHistory(int(self.d))  # type: ignore[arg-type]
        self._n_updates += 1

    @classmethod
    def stack(cls, members: Sequence[Policy]) -> StackedEpsGreedy | None:
        """S fresh members whose refits train as one stack (``policies.mnl.stacked``)."""
        return StackedEpsGreedy(members)  # type: ignore[arg-type]

    def _state(self) -> dict[str, Any]:
        return {
            "net": self.net.state_dict(),
            "epoch": self.epoch.state_dict(),
            "nll": self.nll,
        }

    def _load_state(self, state: dict[str, Any]) -> None:
        rng_state = self.rng.bit_generator.state
        self._setup(None)  # type: ignore[arg-type]
        self.rng.bit_generator.state = rng_state
        self.net.load_state_dict(state["net"])
        self.epoch.load_state_dict(state["epoch"])
        self.nll = float(state["nll"])
