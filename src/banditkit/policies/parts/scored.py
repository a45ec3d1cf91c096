"""The composed base of the scored policies: mean + nu * B * ||z||_{A^-1}, or a sample of it.

A scored policy (NeuralUCB/TS, the NeuralLog family, Logistic-UCB-1, ada-OFU-ECOLog) is
built from parts that its class's ``_compose`` hands in, as a ``ScoredParts``:

    history      rows (x_i, r_i)                                   [parts.history]
    scorer       a Model (NeuralModel, TangentModel or GLMModel)   [parts.models]
                 and its uncertainty: A = ridge * I + sum_i w_i z_i z_i^T, a linalg
                 GramLike of the features z_i = g(x_i; theta_{i-1}) (or x_i) stored when
                 x_i was played, and a radius B(d_eff) read from an EffectiveDimension
                                                                   [parts.scorer]
    rule         Optimistic (UCB) or Sampled (TS)                  [parts.selection]
    schedule     Periodic(update_every)                            [parts.schedules]
    weights      w_t of the new term of A: 1, or the link's slope  (here)
    regulariser  the round's lam_t: fixed (here), or a schedule that moves the
                 ridge of A and the trainer's L2 term          [policies.logistic]

UCB and TS variants of an algorithm differ by the rule (and the radius) they hand in; the
round below is written once. It reads the parts only through their methods, so parts
with a member axis (``parts.stacked``: S seeds of one configuration) play S runs through
the same round (``ScoredPolicy.stack``).

References:
    [Bae2025] S. Bae, D. Lee. Neural logistic bandits. arXiv:2505.02069.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

import numpy as np

from banditkit.core import Context, ContextualPolicy
from banditkit.core.types import Action, Feedback
from banditkit.glm import Link
from banditkit.linalg import EffectiveDimension, GramLike
from banditkit.policies.parts.models import Model
from banditkit.policies.parts.schedules import Schedule
from banditkit.policies.parts.selection import ArmRule

if TYPE_CHECKING:
    import torch

__all__ = [
    "R_LOGISTIC",
    "FixedLambda",
    "Lambda",
    "ScoredParts",
    "ScoredPolicy",
    "SlopeWeights",
    "UnitWeights",
    "Weights",
]

#: Upper bound R on the slope of the sigmoid, mu' <= 1/4 [Bae2025, Sec. 2].
R_LOGISTIC = 0.25
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
    """The round's regulariser lam_t of A's ridge and of the training."""

    lam: float

    def advance(self, n: int) -> None:
        """Move to lam_n after the n-th observation (d_eff has seen it)."""
        ...


@dataclass
class FixedLambda:
    """lam_t = lam every round."""

    lam: float = 1.0

    def advance(self, n: int) -> None:
        """Nothing moves."""


@dataclass
class ScoredParts:
    """What a scored policy is built from (module docstring)."""

    history: Any
    scorer: Any
    rule: ArmRule
    schedule: Schedule
    weights: Weights = field(default_factory=UnitWeights)
    regulariser: Lambda = field(default_factory=FixedLambda)


class ScoredPolicy(ContextualPolicy):
    """The scored round, over the parts that ``_compose`` hands in.

    In round t, with theta = theta_{t-1} (the parameter in force):

        latent_k, z_k = model.evaluate(x_k)          f(x_k; theta), g(x_k; theta)
        norm_k        = ||feature_scale * z_k||_{A^-1}
        action        = rule(mean(latent), nu * B(d_eff) * norm)
                        UCB: argmax_k mean_k + width_k; TS: argmax_k N(mean_k, width_k^2)

    After observing r_t: record (x_t, r_t), d_eff += z_t, lam_t, refit when the schedule
    is due, then A += w_t * z_t z_t^T with z_t computed at selection time ([Bae2025,
    Algs. 1-2]; docs/logistic.md, section "Shared loop").

    A subclass (a named algorithm) declares its hyper-parameters and implements
    ``_compose(d, generator)``. The parts are ``self.history``, ``self.scorer``
    (``model``, ``design`` and ``effdim`` are its model, Gram and tracker), ``self.rule``,
    ``self.schedule``, ``self.weights`` and ``self.regulariser``.
    """

    #: False when ``_compose`` builds no network (a GLM): its ``generator`` is then None
    #: and PyTorch is never imported; the seed's one draw from ``rng`` is made either way.
    needs_torch = True

    # ------------------------------------------------------------------ composition
    def _compose(self, d: int, generator: torch.Generator) -> ScoredParts:
        """The parts for features of dimension ``d``; ``generator`` draws a network's theta_0."""
        raise NotImplementedError

    def _setup(self, ctx: Context) -> None:
        assert self.d is not None
        # One integer from the policy's stream seeds the network (nn.make_generator's draw).
        self._install(self._compose(self.d, self._generator(_seed_draw(self.rng))))

    def _generator(self, seed: int) -> torch.Generator:
        """A torch generator seeded with ``seed``; None when the class ``needs_torch`` not."""
        if not self.needs_torch:
            return cast("torch.Generator", None)
        import torch

        return torch.Generator().manual_seed(seed)

    def _install(self, parts: ScoredParts) -> None:
        self.parts = parts
        self.history = parts.history
        self.scorer = parts.scorer
        self.rule = parts.rule
        self.schedule = parts.schedule
        self.weights = parts.weights
        self.regulariser = parts.regulariser

    @property
    def model(self) -> Model:
        """The scorer's model."""
        return cast(Model, self.scorer.model)

    @property
    def design(self) -> GramLike:
        """The scorer's Gram A."""
        return cast(GramLike, self.scorer.design)

    @property
    def effdim(self) -> EffectiveDimension | None:
        """The scorer's d_eff tracker (None when B does not use it)."""
        return cast("EffectiveDimension | None", self.scorer.effdim)

    # ------------------------------------------------------------------ the round
    def scores(self, ctx: Context) -> tuple[np.ndarray, np.ndarray]:
        """Return the means and the widths nu * B * ||z_k||_{A^-1} of the K arms.

        For UCB policies the index is their sum; TS policies use the widths as the
        standard deviations. With a diagonal A the squared widths come straight from
        the model (no (K, p) block); with a full A the features are built and cached
        for the following ``update``.
        """
        self._check_context(ctx)
        return cast("tuple[np.ndarray, np.ndarray]", self.scorer.score(ctx.arms))

    def _act(self, ctx: Context) -> Action:
        return cast(int, self._choose(ctx.arms))

    def _choose(self, arms: np.ndarray) -> Any:
        """The rule's choice on the scorer's means and widths (one member or a stack)."""
        mean, norms = self.scorer.score_parts(arms)
        return self.rule.select_bracketed(
            mean, norms, self.scorer.radius_range(), self.rng
        )

    def _update(self, ctx: Context, action: Action, feedback: Feedback) -> None:
        assert isinstance(action, int)
        self._learn(ctx.arms, action, feedback)

    def _learn(self, arms: np.ndarray, action: Any, reward: Any) -> None:
        """Record the round and update the parts (one member or a stack)."""
        # z at the parameter in force at selection (before this round's refit)
        x, latent, z = self.scorer.played(arms, action)
        self.history.append(x, reward)
        self.scorer.track(z)
        self.regulariser.advance(self.history.n)
        refitted = self.schedule.due(self.history.n, self.design)
        if refitted:
            self.model.fit(self.history)
            self._n_updates += 1
        self.scorer.add(z, self.weights(self.model, x, latent, refitted))

    # ------------------------------------------------------------------ state
    def _state(self) -> dict[str, Any]:
        return {
            "history": self.history.state_dict(),
            "schedule": self.schedule.state_dict(),
            **self.scorer.state_dict(),
        }

    def _load_state(self, state: dict[str, Any]) -> None:
        assert self.d is not None
        # theta_0 and theta come from the state: leave self.rng (already restored) alone.
        self._install(self._compose(self.d, self._generator(0)))
        self.history.load_state_dict(state["history"])
        self.schedule.load_state_dict(state["schedule"])
        self.scorer.load_state_dict(state)
        self.regulariser.advance(self.history.n)


def _seed_draw(rng: np.random.Generator) -> int:
    """The one integer a scored policy draws from its stream to seed its network."""
    return int(rng.integers(0, 2**63 - 1))
