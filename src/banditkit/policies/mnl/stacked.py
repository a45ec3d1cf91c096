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
from typing import TYPE_CHECKING

from banditkit.core.members import Separate
from banditkit.core.policy import Actions, Contexts, Feedbacks
from banditkit.policies.mnl.common import UtilityNet

if TYPE_CHECKING:
    from banditkit.policies.mnl.greedy import EpsGreedyMNL

__all__ = ["StackedEpsGreedy"]


class StackedEpsGreedy(Separate):
    """S fresh epsilon-greedy-MNL members of one configuration in lockstep.

    Everything but the learning step is each member's own (``Separate``: start, act,
    state and resume, counts); :meth:`update_all` runs the members' rounds with their
    epoch refits as one stack (module docstring).

    Args:
        members: The members (``core.members.stack`` checked them: fresh, one
            configuration).
    """

    def __init__(self, members: Sequence[EpsGreedyMNL]) -> None:
        super().__init__(members)
        self.members = list(members)

    def update_all(
        self, ctxs: Contexts, actions: Actions, feedbacks: Feedbacks
    ) -> None:
        """Each member's round up to its refit, one stacked refit, then the rest."""
        due = self._records(ctxs, actions, feedbacks)  # True: the epoch ended
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
