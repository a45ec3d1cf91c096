"""S seeds of one neural dueling configuration (NVLDB / NLDB / NDB) trained as one stack.

Training is almost all of a neural dueling round (``steps`` Adam steps on every duel so
far, each step's cost mostly fixed overhead at m = 32). ``StackedDuels`` plays S fresh
members of one configuration in lockstep (``core.members``): each member keeps every part
of its own separate run (history, Gram, pair rule, random stream, weights, network), and
only their fits run together, as the members of one ``nn.fit`` stack
(``parts.models.stacking.fit_stack``):

    data         each member's duels in preallocated device buffers (S, capacity, d),
                 doubled when full (``DuelBuffers``); every round copies the S new duels,
                 and NVLDB's weights 1 / zeta_i^2 (rewritten by the members) are copied
                 whole at each fit
    loss         ``nn.Pairs`` over the per-member tables [X1; X2] (S, 2n, d), targets and
                 weights (S, n), the penalty towards each member's own initial draw
    parameters   concatenated on the member axis for the fit; each member's result is
                 copied into its own network when its own fit would keep it, and a member
                 whose fit diverged runs its own fit (backtracking, step-size rescue)

The round of each member is its separate run's round split at the fit (``_record`` and
``_after_fit`` of ``NeuralDuelingBase``), so in float64 on the CPU the actions equal the
separate runs' bitwise; in float32 or on a GPU (batched kernels) up to rounding.

In float32 on the CPU the passes of NVLDB / NLDB members outside the fit are batched too
(``StackedDuels._batched``): the arms' f and phi at each act (``given_arm_outputs``) and
every duel's margin and feature difference after each fit (``DuelOutputs``, read by the
weights of Eq. 5 and V of Eq. 6), one forward of the S networks each
(``NeuralLinearModel.evaluate_members``) instead of several per member.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from banditkit.core.environment import Environment
from banditkit.core.members import Separate
from banditkit.core.policy import Actions, Contexts, Feedbacks
from banditkit.core.types import Action, Context
from banditkit.policies.parts.models import NeuralLinearModel
from banditkit.policies.parts.models.device_history import distinct_duels
from banditkit.policies.parts.models.stacking import fit_stack

if TYPE_CHECKING:
    import torch

    from banditkit import nn
    from banditkit.policies.dueling.network import NeuralDuelingBase
    from banditkit.policies.parts.history import PairHistory
else:
    from banditkit.core.lazy import lazy_import

    torch = lazy_import("torch")  # imported at first use (banditkit.core.lazy)
    nn = lazy_import("banditkit.nn")

__all__ = ["DuelBuffers", "DuelOutputs", "StackedDuels"]


class DuelOutputs(NamedTuple):
    """Every duel's margin df (n,) and feature difference dphi (n, D) at one network.

    What NVLDB's weights (Eq. 5, df) and V (Eq. 6, dphi) read after a fit; dphi is None
    where V is built on the device from the duels' mirror.
    """

    df: np.ndarray
    dphi: np.ndarray | None


class DuelBuffers:
    """The S members' duels in preallocated device buffers, doubled when full.

    Args:
        members: S.
        d: The arms' dimension.
        capacity: Duels to allocate (the horizon, when known).
        like: A tensor of the networks' dtype and device.
    """

    def __init__(self, members: int, d: int, capacity: int, like: torch.Tensor) -> None:
        self.dtype, self.device = like.dtype, like.device
        cap = max(int(capacity), 1)
        self._X1 = torch.empty((members, cap, d), dtype=self.dtype, device=self.device)
        self._X2 = torch.empty_like(self._X1)
        self._y = torch.empty((members, cap), dtype=self.dtype, device=self.device)
        self.n = 0

    def sync(self, histories: Sequence[PairHistory]) -> None:
        """Copy the duels the S histories gained since the last call (one block each).

        Every round adds one duel per member; a resumed stack copies all of them.
        """
        n, total = self.n, histories[0].n
        if total == n:
            return
        capacity = self._X1.shape[1]
        if total > capacity:  # grow geometrically
            grown = max(2 * capacity, total)
            self._X1, self._X2, self._y = (
                torch.cat(
                    [b, b.new_empty((b.shape[0], grown - capacity, *b.shape[2:]))], 1
                )
                for b in (self._X1, self._X2, self._y)
            )
        for buffer, name in ((self._X1, "X1"), (self._X2, "X2"), (self._y, "outcome")):
            rows = np.stack([getattr(h, name)[n:total] for h in histories])
            buffer[:, n:total] = torch.as_tensor(
                rows, dtype=self.dtype, device=self.device
            )
        self.n = total

    def table(self) -> torch.Tensor:
        """The members' duel rows [X1; X2] (S, 2n, d)."""
        n = self.n
        return torch.cat([self._X1[:, :n], self._X2[:, :n]], dim=1)

    def pairs(
        self,
        members: list[int],
        weights: np.ndarray | None,
        kept: Sequence[np.ndarray | None] | None = None,
    ) -> nn.Pairs:
        """``nn.Pairs`` of the chosen members over their tables [X1; X2] (G, 2n, d).

        The layout of each member's own fit (``DeviceObservations``): first = i,
        second = n + i, y = the outcome; ``weights`` (G, n) or None. ``kept``: each
        member's duels to train on (``device_history.distinct_duels``; None: all of
        them), first and in their order, then the member's other duels up to the
        longest member's count k (G, 2k, d). Those are duels of an arm with itself,
        which add a constant to the member's loss and nothing to its gradient, so each
        member's fit is its own fit on its kept duels up to rounding.
        """
        n = self.n
        chosen = slice(None) if len(members) == self._X1.shape[0] else members
        X1, X2, y = self._X1[chosen, :n], self._X2[chosen, :n], self._y[chosen, :n]
        w = (
            None
            if weights is None
            else torch.as_tensor(weights, dtype=self.dtype, device=self.device)
        )
        if kept is not None:
            k = max(n if keep is None else len(keep) for keep in kept)
            order = torch.as_tensor(
                np.stack([_kept_first(keep, n)[:k] for keep in kept]),
                device=self.device,
            )
            rows3 = order.unsqueeze(-1).expand(-1, -1, X1.shape[-1])
            X1, X2 = X1.gather(1, rows3), X2.gather(1, rows3)
            y = y.gather(1, order)
            w = None if w is None else w.gather(1, order)
            n = k
        table = torch.cat([X1, X2], dim=1)
        rows = torch.arange(n, device=self.device)
        return nn.Pairs(table, rows, rows + n, y.contiguous(), w, validate=False)


def _kept_first(keep: np.ndarray | None, n: int) -> np.ndarray:
    """The indices 0..n-1 with those of ``keep`` first, in order (None: 0..n-1)."""
    if keep is None:
        return np.arange(n)
    rest = np.setdiff1d(np.arange(n), keep, assume_unique=True)
    return np.concatenate([keep, rest])


class StackedDuels(Separate):
    """S fresh neural dueling members of one configuration in lockstep (module docstring).

    Each member acts, saves and counts on its own (``Separate``); the duel buffers and
    :meth:`update_all`, whose fits run as one stack, are the stack's.

    Args:
        members: The members (``core.members.stack`` checked them: fresh, one
            configuration); they play and learn as their separate runs would.
    """

    def __init__(self, members: Sequence[NeuralDuelingBase]) -> None:
        super().__init__(members)
        self.members = list(members)
        self.buffers: DuelBuffers | None = None
        self._capacity = 1024
        #: Fits in which members ran their own fit (a diverged or rescued member).
        self.alone: list[tuple[int, list[int]]] = []

    def start(self, horizon: int, envs: Sequence[Environment]) -> None:
        """``begin(horizon)`` and ``attach(env)`` for each member."""
        self._capacity = horizon
        super().start(horizon, envs)

    def resume(
        self,
        horizon: int,
        envs: Sequence[Environment],
        states: Sequence[dict[str, Any]],
    ) -> None:
        """Instead of :meth:`start`: each member takes its state; the buffers are refilled.

        Raises:
            ValueError: If a state is invalid, or was saved under another horizon.
        """
        super().resume(horizon, envs, states)
        self._capacity = horizon
        self.buffers = None
        if self.members[0].d is not None:  # past the first round: the duels so far
            self._buffers()
            assert self.buffers is not None
            self.buffers.sync([m.history for m in self.members])

    def _buffers(self) -> None:
        """The members' duel buffers, once their models exist (after the first act)."""
        first = self.members[0]
        like = next(iter(first.model.fit_recipe(first.history).params.values()))
        assert first.d is not None
        self.buffers = DuelBuffers(len(self.members), first.d, self._capacity, like)

    def act_all(self, ctxs: Sequence[Context]) -> list[Action]:
        """Each member's pair (its own model, Gram, rule and stream).

        Where the members' post-fit passes are batched (:meth:`_batched`), their arms'
        f and phi come from one batched pass too (``given_arm_outputs``).
        """
        if self._batched():
            arms = [np.asarray(ctx.arms) for ctx in ctxs]
            d = self.members[0].d
            if all(a.ndim == 2 and a.shape == arms[0].shape for a in arms) and (
                arms[0].shape[1] == d
            ):  # otherwise each member's act reports what is wrong
                assert self.buffers is not None
                X = torch.as_tensor(
                    np.stack(arms), dtype=self.buffers.dtype, device=self.buffers.device
                )
                f, phi = NeuralLinearModel.evaluate_members(
                    [m.model for m in self.members], X
                )
                for s, member in enumerate(self.members):
                    member.given_arm_outputs(f[s], phi[s])
        actions = super().act_all(ctxs)
        if self.buffers is None:  # the members built their models at this first round
            self._buffers()
        return actions

    def update_all(
        self, ctxs: Contexts, actions: Actions, feedbacks: Feedbacks
    ) -> None:
        """Each member's round up to its fit, one stacked fit, then the rest of it."""
        assert self.buffers is not None, "act_all comes before update_all"
        kept = self._records(ctxs, actions, feedbacks)
        self.buffers.sync([m.history for m in self.members])
        # one schedule on the same n: the members refit in the same rounds
        due = [m.schedule.due(m.history.n, m.design) for m in self.members]
        if any(due):
            self._fit()
        duels = self._duel_outputs()
        for s, (member, recorded, refitted) in enumerate(
            zip(self.members, kept, due, strict=True)
        ):
            member._n_updates += int(refitted)
            member._after_fit(recorded, None if duels is None else duels[s])
            member.t += 1

    def _duel_outputs(self) -> list[DuelOutputs] | None:
        """Every member's duels at its network after the fit, in one stacked pass.

        For NVLDB / NLDB members in float32 on the CPU, whose weights (Eq. 5) and V
        (Eq. 6) read every duel's margin and feature difference: one batched forward of
        the S networks over their duel buffers instead of two per member (equal up to
        rounding, as the stack's batched fits). None where each member computes its
        own: in float64 on the CPU (the stack reproduces the separate runs bit for
        bit there), on a device (its V reads the duels' device mirror) and for NDB.
        """
        if not self._batched():
            return None
        assert self.buffers is not None
        members = self.members
        n = self.buffers.n
        f, phi = NeuralLinearModel.evaluate_members(
            [m.model for m in members], self.buffers.table()
        )
        return [
            DuelOutputs(f[s, :n] - f[s, n:], phi[s, :n] - phi[s, n:])
            for s in range(len(members))
        ]

    def _batched(self) -> bool:
        """Whether the members' forward passes outside the fit run as one batched pass.

        For NVLDB / NLDB members (whose weights and V read every duel) in float32 on
        the CPU, once the buffers exist: there the stack's fits are batched already.
        Not in float64 on the CPU, where the stack reproduces the separate runs bit
        for bit; not on a device, where V reads the duels' device mirror.
        """
        buffers = self.buffers
        return (
            buffers is not None
            and buffers.dtype == torch.float32
            and buffers.device.type == "cpu"
            and all(m._reads_duels() for m in self.members)
        )

    def _fit(self) -> None:
        """Every member's fit on its duels: one stack (``parts.models.stacking``)."""
        assert self.buffers is not None
        histories = [m.history for m in self.members]
        buffers = self.buffers

        distinct = self.members[0].distinct_duels

        def observations(chosen: list[int], weighted: bool) -> nn.Pairs:
            weights = np.stack([histories[s].w for s in chosen]) if weighted else None
            kept = [distinct_duels(histories[s]) for s in chosen] if distinct else None
            return buffers.pairs(chosen, weights, kept)

        alone = fit_stack([m.model for m in self.members], histories, observations)
        if alone:
            self.alone.append((histories[0].n, alone))
