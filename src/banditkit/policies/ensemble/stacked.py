"""S seeds of one Neural-ES / Neural-PHE configuration, their ensembles trained as one stack.

Training is almost all of a Neural-ES round (``steps`` GD steps of the m members on every
distinct row, every round), and at the papers' sizes (width 20, depth 3) a step costs its
dispatch more than its arithmetic. ``StackedEnsembles`` plays S fresh members of one
configuration in lockstep (``core.members``): each keeps every part of its separate run
(history, perturbations, warm-up, model, random stream) and plays its own round, except
that its ensemble's fit is deferred; the fits of the round then run as the members of one
``nn.fit`` stack (``fit_together``):

    parameters   the S ensembles' (m, ...) stacks concatenated on the member axis (S m, ...)
    rows         each seed's distinct rows (U_s, d), padded with rows of count 0 to the
                 longest (U, d) and repeated for its m members: X (S m, U, d), targets
                 and counts (S m, U) (a count of 0 adds exactly 0 to the loss and to its
                 gradient)
    penalty      lam N ||theta - theta_0||^2 towards each seed's own theta_0
    step         lr / n of each seed (the same n in lockstep); seeds of other step sizes
                 (a rescued fit lowered one) train in their own stack

A seed whose stacked fit did not settle is fitted again on its own by its model
(``NeuralEnsemble.fit_grouped``: the retries at lr / 10 of ``parts.models.rescue``). The
actions equal the separate runs' up to the order of floating-point operations in the
batched products.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from banditkit.core.lazy import torch  # imported at first use
from banditkit.core.members import Separate
from banditkit.core.policy import Actions, Contexts, Feedbacks
from banditkit.policies.parts.models.compute import compute_options
from banditkit.policies.parts.models.rescue import settled

if TYPE_CHECKING:
    from banditkit import nn
    from banditkit.policies.ensemble.base import EnsemblePolicy
    from banditkit.policies.ensemble.history import GroupedRows
    from banditkit.policies.ensemble.members import NeuralEnsemble
else:
    from banditkit.core.lazy import lazy_import

    nn = lazy_import("banditkit.nn")

__all__ = ["FitRequest", "StackedEnsembles", "fit_together", "stackable"]

#: One seed's deferred fit: its model, ``fit_grouped``'s distinct rows and steps (None:
#: the model's).
FitRequest = tuple["NeuralEnsemble", "GroupedRows", "int | None"]


def fit_together(requests: Sequence[FitRequest]) -> None:
    """The requested fits as one ``nn.fit`` per step size (module docstring).

    Each model ends as its own ``fit_grouped`` would leave it, up to rounding; a seed
    whose stacked fit did not settle is refitted by its model alone (with its rescue).
    """
    groups: dict[tuple[float, int], list[FitRequest]] = {}
    for request in requests:
        model, grouped, steps = request
        key = (
            model.step_size(float(grouped.counts.sum())),
            model.steps if steps is None else steps,
        )
        groups.setdefault(key, []).append(request)
    for (step, steps), group in groups.items():
        _fit_group(group, step, steps)


def _fit_group(group: list[FitRequest], step: float, steps: int) -> None:
    """One stacked fit of seeds with the same step size and steps."""
    first = group[0][0]
    M = first.members
    U = max(len(grouped.counts) for _, grouped, _ in group)
    d = group[0][1].X.shape[1]
    X = np.zeros((len(group), U, d))
    y = np.zeros((len(group), M, U))
    w = np.zeros((len(group), U))
    for i, (_, (rows, counts, sums), _) in enumerate(group):
        u = len(counts)
        X[i, :u], w[i, :u] = rows, counts
        y[i, :, :u] = (sums / counts[:, None]).T
    S = len(group)
    obs = nn.Rows(
        np.repeat(X, M, axis=0),
        y.reshape(S * M, U),
        np.repeat(w, M, axis=0),
        dtype=first.dtype,
        device=first.device,
    )
    names = list(first.params)
    params = {k: torch.cat([m.params[k] for m, *_ in group]) for k in names}
    center = {
        k: torch.cat([m.params0[k].expand_as(m.params[k]) for m, *_ in group])
        for k in names
    }
    result = nn.fit(
        first.net,
        params,
        obs,
        nn.MSE(),
        penalties=[nn.L2Penalty(first.penalty.lam, center)],
        lr=step,
        steps=steps,
        reduction="sum",
        record="ends",
    )
    for i, (model, grouped, own_steps) in enumerate(group):
        members = slice(i * M, (i + 1) * M)
        mine = {k: v[members] for k, v in result.params.items()}
        history = result.history[:, members]
        if settled(history[0], history[-1]) and all(
            bool(torch.isfinite(v).all()) for v in mine.values()
        ):
            model.params = mine
        else:  # as its separate run would: the fit again, then its rescue
            model.fit_grouped(grouped, steps=own_steps)


class StackedEnsembles(Separate):
    """S fresh Neural-ES / Neural-PHE members of one configuration in lockstep.

    Each member starts, acts and reports as on its own (``core.members.Separate``); only
    its round's fit is deferred and run with the others' (module docstring).

    Args:
        policies: The members (``core.members.stack`` checked them: fresh, one
            configuration); they play and learn as their separate runs would.
    """

    def update_all(
        self, ctxs: Contexts, actions: Actions, feedbacks: Feedbacks
    ) -> None:
        """Each member's round with its fit deferred, then the round's fits as one stack."""
        requests: list[FitRequest] = []
        for member, ctx, action, feedback in zip(
            self.policies, ctxs, actions, feedbacks, strict=True
        ):
            model = cast("EnsemblePolicy", member).model

            def defer(
                grouped: GroupedRows,
                *,
                steps: int | None = None,
                model: NeuralEnsemble = model,
            ) -> None:
                requests.append((model, grouped, steps))

            model.fit_grouped = defer
            try:
                member.update(ctx, action, feedback)
            finally:
                del model.fit_grouped  # the class's method again
        if requests:
            fit_together(requests)


def stackable(policy: Any) -> bool:
    """Whether a Neural-ES / Neural-PHE configuration stacks: on the CPU.

    Anytime restarts stack too: every member of one configuration restarts at the same
    rounds (the doubling grid is a function of the configuration) with as many ensemble
    members, and a restart round's deferred fit trains the ensemble the restart then
    discards, as the separate run's fit does.
    """
    return compute_options(policy)["device"] == "cpu"
