"""S seeds of one NVLDB / NLDB configuration trained as one stacked computation.

Training is almost all of an NVLDB round (``steps`` Adam steps on every duel so far, each
step's cost mostly fixed overhead at m = 32). ``StackedDuels`` plays S fresh members of one
configuration in lockstep (``core.members``): each member keeps every part of its own
separate run (history, Gram, pair rule, random stream, weights), and only their networks
are trained together, as the members of one ``nn.fit`` stack:

    parameters   the S networks' tensors concatenated on the member axis (S, ...); each
                 member's model reads its own slice (a view), so the stacked fit updates
                 the separate models in place
    data         each member's duels in preallocated device buffers (S, capacity, d),
                 doubled when full; every round appends the S new duels, and the
                 weights 1 / zeta_i^2 (rewritten by the members) are copied whole
    loss         ``nn.Pairs`` over the per-member tables [X1; X2] (S, 2n, d), targets and
                 weights (S, n), the penalty towards each member's own initial draw

The round of each member is its separate run's round split at the fit
(``NeuralLinearDuelingPolicy._record`` and ``_after_fit``), so the actions equal the
separate runs' up to the order of floating-point operations in the batched products.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from banditkit.core.environment import Environment
from banditkit.core.policy import Actions, Contexts, Feedbacks
from banditkit.core.types import Action, Context

if TYPE_CHECKING:
    import torch

    from banditkit import nn
    from banditkit.policies.dueling.nvldb import NeuralLinearDuelingPolicy
    from banditkit.policies.parts.models import NeuralLinearModel
else:
    from banditkit.core.lazy import lazy_import

    torch = lazy_import("torch")  # imported at first use (banditkit.core.lazy)
    nn = lazy_import("banditkit.nn")

__all__ = ["StackedDuels", "StackedNeuralLinear"]


class StackedNeuralLinear:
    """The S members' ``NeuralLinearModel``s trained as one stack (module docstring).

    Args:
        models: The members' models, freshly built (one configuration).
        capacity: Duels to allocate (the horizon, when known; doubled when exceeded).
    """

    def __init__(self, models: Sequence[NeuralLinearModel], capacity: int) -> None:
        first = models[0]
        self.models = list(models)
        self.net, self.device, self.dtype = first.net, first.device, first.dtype
        names = list(first.params)
        self.params = {k: torch.cat([m.params[k] for m in models]) for k in names}
        self.params0 = {k: torch.cat([m.params0[k] for m in models]) for k in names}
        for s, model in enumerate(self.models):  # each model reads its slice (a view)
            model.params = {k: v[s : s + 1] for k, v in self.params.items()}
            model.params0 = {k: v[s : s + 1] for k, v in self.params0.items()}
        S, d = len(models), self.net.d
        cap = max(int(capacity), 1)
        self._X1 = torch.empty((S, cap, d), dtype=self.dtype, device=self.device)
        self._X2 = torch.empty_like(self._X1)
        self._y = torch.empty((S, cap), dtype=self.dtype, device=self.device)
        self.n = 0

    def append(self, x1: np.ndarray, x2: np.ndarray, outcome: np.ndarray) -> None:
        """The S new duels: rows (S, d) and outcomes (S,), one copy to the device."""
        n = self.n
        if n == self._X1.shape[1]:  # grow geometrically
            self._X1 = torch.cat([self._X1, torch.empty_like(self._X1)], dim=1)
            self._X2 = torch.cat([self._X2, torch.empty_like(self._X2)], dim=1)
            self._y = torch.cat([self._y, torch.empty_like(self._y)], dim=1)
        for buffer, value in ((self._X1, x1), (self._X2, x2), (self._y, outcome)):
            buffer[:, n] = torch.as_tensor(value, dtype=self.dtype, device=self.device)
        self.n = n + 1

    def fit(self, weights: np.ndarray) -> None:
        """Train the S networks on their duels, weights (S, n), warm-started, in place.

        Raises:
            FloatingPointError: If a member's training diverged (as a separate run's).
        """
        first, n = self.models[0], self.n
        table = torch.cat([self._X1[:, :n], self._X2[:, :n]], dim=1)
        rows = torch.arange(n, device=self.device)
        w = torch.as_tensor(weights, dtype=self.dtype, device=self.device)
        y = self._y[:, :n].contiguous()
        pairs = nn.Pairs(table, rows, rows + n, y, w, validate=False)
        penalties = []
        if first.lam != 0.0:
            names = first.net.head_names if first.penalised == "head" else None
            center = self.params0 if first.center == "init" else None
            penalties = [nn.L2Penalty(first.lam, center, names)]
        result = nn.fit(
            self.net,
            self.params,
            pairs,
            first._loss_object("BradleyTerry"),
            penalties=penalties,
            optimizer=first.optimizer,
            lr=first.lr,
            steps=first.steps,
            reduction=first.reduction,
            inplace=True,
            record="ends",
            separate_members=True,  # each member's fit is its separate run's, bitwise
        )
        last = result.history[-1]
        finite = (
            torch.stack(
                [p.flatten(1).isfinite().all(1) for p in self.params.values()]
            ).all(0)
            & last.isfinite()
        )
        if not bool(finite.all()):
            bad = torch.nonzero(~finite).flatten().tolist()
            raise FloatingPointError(
                f"training diverged for members {bad} on {n} duels at lr={first.lr}; "
                "use a smaller lr."
            )


def _duels(policy: NeuralLinearDuelingPolicy) -> tuple[np.ndarray, np.ndarray]:
    """The rows of a member's last duel (x1, x2)."""
    return policy.history.X1[-1], policy.history.X2[-1]


class StackedDuels:
    """S fresh NVLDB / NLDB members of one configuration in lockstep (module docstring).

    Args:
        members: The members (``core.members.stack`` checked them: fresh, one
            configuration); they play and learn as their separate runs would.
    """

    def __init__(self, members: Sequence[NeuralLinearDuelingPolicy]) -> None:
        self.members = list(members)
        self.stack: StackedNeuralLinear | None = None
        self._capacity = 1024

    def start(self, horizon: int, envs: Sequence[Environment]) -> None:
        """``begin(horizon)`` and ``attach(env)`` for each member."""
        self._capacity = horizon
        for member, env in zip(self.members, envs, strict=True):
            member.begin(horizon)
            member.attach(env)

    def act_all(self, ctxs: Sequence[Context]) -> list[Action]:
        """Each member's pair (its own model, Gram, rule and stream)."""
        actions = [m.act(c) for m, c in zip(self.members, ctxs, strict=True)]
        if self.stack is None:  # the members built their models at this first round
            self.stack = StackedNeuralLinear(
                [m.model for m in self.members], self._capacity
            )
        return actions

    def update_all(
        self, ctxs: Contexts, actions: Actions, feedbacks: Feedbacks
    ) -> None:
        """Each member's round up to its fit, one stacked fit, then the rest of it."""
        assert self.stack is not None, "act_all comes before update_all"
        kept = []
        for member, ctx, action, feedback in zip(
            self.members, ctxs, actions, feedbacks, strict=True
        ):
            member._check_context(ctx)
            checked = member._check_action(action, ctx)
            kept.append(
                member._record(ctx, checked, member._check_feedback(feedback, checked))
            )
        rows = [_duels(m) for m in self.members]
        outcomes = np.array([m.history.outcome[-1] for m in self.members])
        self.stack.append(
            np.stack([r[0] for r in rows]), np.stack([r[1] for r in rows]), outcomes
        )
        # one schedule on the same n: the members refit in the same rounds
        due = [m.schedule.due(m.history.n, m.design) for m in self.members]
        if any(due):
            self.stack.fit(np.stack([m.history.w for m in self.members]))
        for member, phi_sel, refitted in zip(self.members, kept, due, strict=True):
            member._n_updates += int(refitted)
            member._after_fit(phi_sel)
            member.t += 1

    def n_updates_all(self) -> list[int]:
        """Each member's refits."""
        return [m.n_updates for m in self.members]

    def propensities_all(self) -> list[float | None]:
        """Each member's ``last_propensity``."""
        return [m.last_propensity for m in self.members]
