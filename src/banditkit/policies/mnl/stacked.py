"""S seeds of one epsilon-greedy-MNL configuration whose refits train as one stack.

epsilon-greedy-MNL refits its utility network after rounds t = 2^k - 1, by ``steps``
(2,000) full-batch Adam steps on the epoch that just ended: almost all of its run, and
almost all of each step fixed overhead (a width-3 network on at most a few hundred sets).
Every member of one configuration refits in the same rounds on as many sets, so
``StackedEpsGreedy`` plays S fresh members in lockstep (``core.members``): each keeps every
part of its own separate run (epoch, network, random stream, exploration schedule), and
only their refits run together, as the members of one ``nn.fit`` over per-member sets
(``UtilityNet.fit_stack``): one sequence of steps for the S networks instead of S.

The stacked fit uses the batched kernels, so a member's network equals its separate fit's
up to the order of floating-point operations; the greedy offer is an exact arg-max over
assortments, which such differences move only at a tie. (The dueling and NeuralUCB/TS
stacks compute each member on its own, bitwise: their members have equal row counts,
where the members' sets here differ in their sizes.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from banditkit.core.environment import Environment
from banditkit.core.members import Separate
from banditkit.core.policy import Actions, Contexts, Feedbacks
from banditkit.core.types import Action, Context
from banditkit.policies.mnl.common import UtilityNet

if TYPE_CHECKING:
    from banditkit.policies.mnl.greedy import EpsGreedyMNL

__all__ = ["StackedEpsGreedy"]


class StackedEpsGreedy:
    """S fresh epsilon-greedy-MNL members of one configuration in lockstep.

    Args:
        members: The members (``core.members.stack`` checked them: fresh, one
            configuration); each plays and learns as its separate run, and their epoch
            refits train as one stack (module docstring).
    """

    def __init__(self, members: Sequence[EpsGreedyMNL]) -> None:
        self.members = list(members)

    def start(self, horizon: int, envs: Sequence[Environment]) -> None:
        """``begin(horizon)`` and ``attach(env)`` for each member."""
        Separate(self.members).start(horizon, envs)

    def state_dicts(self) -> list[dict[str, Any]]:
        """Each member's ``state_dict()`` (a checkpoint: ``core.resume``)."""
        return [m.state_dict() for m in self.members]

    def resume(
        self,
        horizon: int,
        envs: Sequence[Environment],
        states: Sequence[dict[str, Any]],
    ) -> None:
        """Instead of :meth:`start`: each member takes its state (its epoch included).

        Raises:
            ValueError: If a state is invalid, or was saved under another horizon.
        """
        Separate(self.members).resume(horizon, envs, states)

    def act_all(self, ctxs: Sequence[Context]) -> list[Action]:
        """Each member's offer (its own network, stream and schedule)."""
        return [m.act(c) for m, c in zip(self.members, ctxs, strict=True)]

    def update_all(
        self, ctxs: Contexts, actions: Actions, feedbacks: Feedbacks
    ) -> None:
        """Each member's round up to its refit, one stacked refit, then the rest."""
        due = []
        for member, ctx, action, feedback in zip(
            self.members, ctxs, actions, feedbacks, strict=True
        ):
            member._check_context(ctx)
            checked = member._check_action(action, ctx)
            due.append(
                member._record(ctx, checked, member._check_feedback(feedback, checked))
            )
        if any(due):  # one schedule on the same t: every member's epoch ends together
            first = self.members[0]
            nll = UtilityNet.fit_stack(
                [m.net for m in self.members],
                [m.epoch for m in self.members],
                lr=first.lr,
                steps=first.steps,
            )
            for member, value in zip(self.members, nll, strict=True):
                member._refitted(value)
        for member in self.members:
            member.t += 1

    def n_updates_all(self) -> list[int]:
        """Each member's refits."""
        return [m.n_updates for m in self.members]

    def propensities_all(self) -> list[float | None]:
        """Each member's ``last_propensity``."""
        return [m.last_propensity for m in self.members]
