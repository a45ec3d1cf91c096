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

import copy
import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from banditkit.core import Context, ContextualPolicy, Policy
from banditkit.core.params import learned
from banditkit.core.policy import Actions, Contexts, Feedbacks
from banditkit.core.seeding import RoundStreams
from banditkit.core.types import Action, Feedback
from banditkit.linalg import EffectiveDimension, GramLike
from banditkit.policies.parts.models import Model
from banditkit.policies.parts.propensity import MonteCarlo, monte_carlo
from banditkit.policies.parts.schedules import Schedule
from banditkit.policies.parts.selection import ArmRule
from banditkit.policies.parts.stacked import (
    MemberLambdas,
    StackedHistory,
    StackedRule,
    StackedScorer,
    Streams,
)
from banditkit.policies.parts.stacked_network import StackedNetwork
from banditkit.policies.parts.weights import FixedLambda, Lambda, UnitWeights, Weights

if TYPE_CHECKING:
    import torch

    from banditkit.core import Environment

__all__ = ["LEARNING_PARTS", "R_LOGISTIC", "ScoredParts", "ScoredPolicy", "stack_parts"]

#: Upper bound R on the slope of the sigmoid, mu' <= 1/4 [Bae2025, Sec. 2].
R_LOGISTIC = 0.25

#: What ``ScoredPolicy._learn`` changes inside (``core.transaction``; the rest of a
#: policy it only rebinds): its random stream, the history, the scorer (model, Gram,
#: d_eff tracker), the regulariser, the weights and the schedule. A concrete class whose
#: update is ``_learn`` declares ``_undo_parts = LEARNING_PARTS`` (the declaration is
#: read from the exact class: a subclass that changes more is walked until it says so).
LEARNING_PARTS: tuple[str, ...] = (
    "rng",
    "history",
    "scorer",
    "regulariser",
    "weights",
    "schedule",
)


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
    #: A stack's members' propensity streams and last propensities (``stack``).
    _member_rounds: list[RoundStreams] = learned()
    _member_propensities: list[float | None] = learned()

    # ------------------------------------------------------------------ composition
    def _compose(self, d: int, generator: torch.Generator) -> ScoredParts:
        """The parts for features of dimension ``d``; ``generator`` draws a network's theta_0."""
        raise NotImplementedError

    def _setup(self, ctx: Context) -> None:
        assert self.d is not None
        # One integer from the policy's stream seeds the network (nn.make_generator's draw).
        if isinstance(self.rng, Streams):  # a stack: each member as in its separate run
            members = [
                self._compose(self.d, self._generator(_seed_draw(r))) for r in self.rng
            ]
            self._install(stack_parts(members, self.horizon or 1024))
        else:
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
        mean, norms, radius, action = self._choose(ctx.arms)
        mc = monte_carlo(self)
        self.propose(self.rule.law_bracketed(mean, norms, radius, int(action), mc))
        return int(action)

    def _choose(self, arms: np.ndarray) -> tuple[Any, Any, Any, Any]:
        """The rule's choice on the scorer's means and widths (one member or a stack).

        Returns:
            The means, the norms, the radius range and the action(s).
        """
        mean, norms = self.scorer.score_parts(arms)
        radius = self.scorer.radius_range()
        return (
            mean,
            norms,
            radius,
            self.rule.select_bracketed(mean, norms, radius, self.rng),
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

    # ------------------------------------------------------------------ seeds
    @classmethod
    def stack(cls, members: Sequence[Policy]) -> ScoredPolicy | None:
        """S fresh members of one configuration as one stack, or None (``Policy.stack``).

        The stack is a policy of this class with the members' hyper-parameters whose
        ``rng`` is the members' own streams (``parts.stacked.Streams``): at its first round
        it composes each member's parts as the separate run would (theta_0 from that
        member's stream) and stacks them (``stack_parts``), and the same round plays the
        S runs (``act_all``, ``update_all``; ``core.simulate.simulate_seeds``). The
        members themselves do not change. None unless ``_stackable`` accepts the
        configuration.
        """
        first = members[0]
        if not isinstance(first, cls) or not first._stackable() or first.explore_floor:
            return None
        stacked = copy.copy(first)
        stacked.rng = cast("np.random.Generator", Streams(m.rng for m in members))
        stacked._member_rounds = [RoundStreams(m.seed, "propensity") for m in members]
        stacked._member_propensities = [None] * len(members)
        return stacked

    def _stackable(self) -> bool:
        """Whether this configuration's parts have stacked forms (``parts.stacked``)."""
        return False

    def start(self, horizon: int, envs: Sequence[Environment]) -> None:
        """Begin a stack's S runs (``core.members.Members``)."""
        self.begin(horizon)

    def act_all(self, ctxs: Sequence[Context]) -> list[Action]:
        """A stack's actions for its members' contexts (``core.members.Members``)."""
        for ctx in ctxs:
            self._check_context(ctx)
        mean, norms, radius, actions = self._choose(
            np.stack([ctx.arms for ctx in ctxs])
        )
        checked = [
            self._check_action(int(a), ctx)
            for a, ctx in zip(actions, ctxs, strict=True)
        ]
        self._member_propensities = self._member_laws(mean, norms, radius, checked)
        return checked

    def _member_laws(
        self, mean: np.ndarray, norms: np.ndarray, radius: Any, actions: list[Action]
    ) -> list[float | None]:
        """Each member's propensity, as its separate run estimates it (its own seed)."""
        n, t = self.propensity_samples, self.t
        mcs = [
            MonteCarlo(n, functools.partial(streams, t)) if n > 0 else None
            for streams in self._member_rounds
        ]
        arms = cast("list[int]", actions)
        laws = cast("StackedRule", self.rule).laws(mean, norms, radius, arms, mcs)
        return [
            None if law is None else float(law(a))
            for law, a in zip(laws, actions, strict=True)
        ]

    def update_all(
        self, ctxs: Contexts, actions: Actions, feedbacks: Feedbacks
    ) -> None:
        """A stack's round of learning (``core.members.Members``)."""
        for ctx in ctxs:
            self._check_context(ctx)
        rewards = [
            self._check_feedback(f, self._check_action(a, ctx))
            for f, a, ctx in zip(feedbacks, actions, ctxs, strict=True)
        ]
        arms = np.stack([ctx.arms for ctx in ctxs])
        self._learn(arms, np.asarray(actions, dtype=np.int64), np.asarray(rewards))
        self.t += 1

    def n_updates_all(self) -> list[int]:
        """Each member's refits (one schedule: the same count)."""
        return [self._n_updates] * len(cast("Streams", self.rng))

    def propensities_all(self) -> list[float | None]:
        """Each member's propensity of its last action (``_member_laws``)."""
        return list(self._member_propensities)

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


def stack_parts(parts: Sequence[ScoredParts], capacity: int) -> ScoredParts:
    """S members' parts as parts with a member axis (``parts.stacked``).

    Args:
        parts: Each member's parts, composed as for its separate run.
        capacity: Rows to expect (the horizon, when known).

    Raises:
        ValueError: For a part that has no stacked form (a full Gram, a network
            ``StackedNetwork`` cannot hold, a regulariser that moves).
    """
    first = parts[0]
    model = StackedNetwork.of([p.scorer.model for p in parts])
    if model is None:
        raise ValueError("the members' models cannot be stacked.")
    regularisers = [p.regulariser for p in parts]
    if not all(isinstance(r, FixedLambda) for r in regularisers):
        raise ValueError("only a fixed regulariser can be stacked.")
    # the stacked parts answer the round's calls with a member axis (parts.stacked)
    return ScoredParts(
        StackedHistory(len(parts), model.d, model.dtype, capacity),
        StackedScorer([p.scorer for p in parts], model),
        cast(ArmRule, StackedRule(first.rule)),
        first.schedule,
        first.weights,
        cast(Lambda, MemberLambdas(cast("list[FixedLambda]", regularisers))),
    )


def _seed_draw(rng: np.random.Generator) -> int:
    """The one integer a scored policy draws from its stream to seed its network."""
    return int(rng.integers(0, 2**63 - 1))
