"""Members of one configuration trained as one ``nn.fit`` stack, each as its own fit would be.

A policy that plays S members in lockstep (``core.members``: seeds of one configuration)
spends most of a neural round in training. ``fit_stack`` trains the members' networks as
one stack, each on its own observations, and keeps every member's result equal to the
result of its own ``fit``:

    recipe     each model describes its fit (``fit_recipe``, a ``FitRecipe``): the network,
               the parameters it trains (a stack of one: its own tensors), the L2 penalty
               and its centre, the loss and the optimiser's settings
    the stack  the members whose settings agree (all of them, unless a rescue lowered
               one member's step size) are trained by one ``nn.fit`` with
               ``separate_members=True``: on the CPU in float64 each member's arithmetic
               is that of its fit alone, bitwise (``nn._kernels.member_by_member``);
               elsewhere (float32, a GPU) the batched kernels agree with it to rounding
    keep       a member's result is written into its own tensors when its own ``fit``
               would keep that first attempt as it ends (``keeps``: finite, settled and,
               where the model backtracks, not above its start)
    alone      every other member (one whose fit diverged, or whose step size a rescue
               lowered earlier) runs its own ``fit`` from where it started: its
               backtracking and its step-size rescue (``parts.models.rescue``), exactly as
               its separate run does

The members' tensors are only written once a result is kept, so a member that fits alone
starts from its parameters before the fit without any copy.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from banditkit.core.lazy import torch  # imported at first use

if TYPE_CHECKING:
    from banditkit import nn
    from banditkit.nn import Params
else:
    from banditkit.core.lazy import lazy_import

    nn = lazy_import("banditkit.nn")

__all__ = ["FitRecipe", "StackMember", "fit_stack"]


@dataclass(frozen=True)
class FitRecipe:
    """One model's ``nn.fit``, as a member of a stack reads it (module docstring).

    Attributes:
        net: The network (``nn.StackedMLP`` or ``nn.NeuralLinear``).
        params: The parameters the fit trains: a stack of one, the model's own tensors
            (a kept stacked result is copied into them).
        center: The L2 penalty's centre (a stack of one), or None for 0.
        loss: The ``nn`` loss.
        lam: The penalty's weight (0: no penalty).
        names: The penalised parameters (None: all of them).
        optimizer, lr, steps, reduction: ``nn.fit``'s settings.
        weighted: Whether the observations carry the history's weights.
    """

    net: Any
    params: Params
    center: Params | None
    loss: nn.Loss
    lam: float
    names: tuple[str, ...] | None
    optimizer: str
    lr: float
    steps: int
    reduction: str
    weighted: bool

    @property
    def settings(self) -> tuple[Any, ...]:
        """What the members of one stack share (the network's shape is checked by ``nn.fit``)."""
        link = getattr(self.loss, "link", None)
        return (
            type(self.net).__name__,
            type(self.loss).__name__,
            getattr(link, "name", None),
            self.center is None,
            self.lam,
            self.names,
            self.optimizer,
            self.lr,
            self.steps,
            self.reduction,
            self.weighted,
        )


class StackMember(Protocol):
    """A model that can be a member of ``fit_stack``."""

    def fit_recipe(self, history: Any) -> FitRecipe:
        """Its next ``fit`` on ``history``, described (``FitRecipe``)."""
        ...

    def keeps(self, first: float, last: float, params: Params) -> bool:
        """Whether its ``fit`` keeps a first attempt from J = ``first`` to ``last``."""
        ...

    def fit(self, history: Any) -> Any:
        """Its own fit (with its backtracking and rescue)."""
        ...


#: The members' observations for the chosen members (positions) and ``weighted``.
Observations = Callable[[list[int], bool], Any]


def fit_stack(
    models: Sequence[StackMember],
    histories: Sequence[Any],
    observations: Observations,
) -> list[int]:
    """Fit each model on its history, as its own ``fit`` would (module docstring).

    Args:
        models: The members' models.
        histories: Each member's history (what its own ``fit`` reads).
        observations: The stacked observations of the given members (``nn.Pairs`` or
            ``nn.Rows`` with a member axis, in that order), with the histories'
            weights when asked.

    Returns:
        The members that ran their own ``fit`` (empty when the stack took them all).

    Raises:
        FloatingPointError: If a member's own fit diverged at every step size (as its
            separate run would raise).
    """
    recipes = [m.fit_recipe(h) for m, h in zip(models, histories, strict=True)]
    common = Counter(r.settings for r in recipes).most_common(1)[0][0]
    stacked = [s for s, r in enumerate(recipes) if r.settings == common]
    alone = [s for s in range(len(models)) if s not in stacked]
    lead = recipes[stacked[0]]
    params = {
        k: torch.cat([recipes[s].params[k] for s in stacked]) for k in lead.params
    }
    penalties = []
    if lead.lam != 0.0:
        center = None
        if lead.center is not None:
            center = {
                k: torch.cat([recipes[s].center[k] for s in stacked])  # type: ignore[index]
                for k in lead.center
            }
        penalties = [nn.L2Penalty(lead.lam, center, lead.names)]
    result = nn.fit(
        lead.net,
        params,
        observations(stacked, lead.weighted),
        lead.loss,
        penalties=penalties,
        optimizer=lead.optimizer,
        lr=lead.lr,
        steps=lead.steps,
        reduction=lead.reduction,
        inplace=True,
        record="ends",  # what ``keeps`` reads
        separate_members=True,  # each member's arithmetic is its own fit's
    )
    first, last = result.history[0].tolist(), result.history[-1].tolist()
    for g, s in enumerate(stacked):
        member = {k: v[g : g + 1] for k, v in params.items()}
        if models[s].keeps(first[g], last[g], member):
            for k, tensor in recipes[s].params.items():
                tensor.copy_(member[k])
        else:
            alone.append(s)
    for s in sorted(alone):
        models[s].fit(histories[s])
    return sorted(alone)
