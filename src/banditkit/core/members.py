"""S policies played in lockstep, one per seed: the protocol ``simulate`` drives.

``core.simulate`` runs S runs of one configuration (S environments reset with their seeds,
S policies with their own seeds) through one loop; S = 1 is the ordinary run. The loop
talks to a ``Members`` object (``core.policy.Members``):

    start(horizon, envs)          before round 1 (``Policy.begin`` and ``attach``)
    act_all(ctxs)                 the S actions for the S contexts
    update_all(ctxs, actions, feedbacks)
    n_updates_all(), propensities_all()    what each run records

``Separate`` plays each policy on its own. A policy class may play S fresh members of one
configuration as one stacked computation instead: its ``stack(members)`` class method
returns such a ``Members`` or None (``Policy.stack``); :func:`stack` asks it. Members share
a ``Policy.stack_key``: one class (or ``stack_family``) and the same hyper-parameters, the
seed and the class's ``stack_free`` parameters aside (NVLDB's pair rules). Each
member's random stream is used as its separate run uses it, so the actions are those of
S separate runs up to the order of floating-point operations (docs/performance.md,
"Multi-seed batching").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from banditkit.core.environment import Environment
from banditkit.core.policy import Actions, Contexts, Feedbacks, Members, Policy
from banditkit.core.types import Action, Context

__all__ = ["Members", "Separate", "stack"]


class Separate:
    """Each policy plays on its own: S = 1 is the ordinary run.

    Example:
        >>> import banditkit as bk
        >>> members = Separate([bk.make_policy("random", seed=s) for s in (0, 1)])
        >>> members.propensities_all()
        [None, None]
    """

    def __init__(self, policies: Sequence[Policy]) -> None:
        self.policies = list(policies)

    def start(self, horizon: int, envs: Sequence[Environment]) -> None:
        """``begin(horizon)`` and ``attach(env)`` for each policy."""
        for policy, env in zip(self.policies, envs, strict=True):
            policy.begin(horizon)
            policy.attach(env)

    def act_all(self, ctxs: Sequence[Context]) -> list[Action]:
        """Each policy's ``act``."""
        return [p.act(c) for p, c in zip(self.policies, ctxs, strict=True)]

    def update_all(
        self, ctxs: Contexts, actions: Actions, feedbacks: Feedbacks
    ) -> None:
        """Each policy's ``update``."""
        for policy, ctx, action, feedback in zip(
            self.policies, ctxs, actions, feedbacks, strict=True
        ):
            policy.update(ctx, action, feedback)

    def _records(
        self, ctxs: Contexts, actions: Actions, feedbacks: Feedbacks
    ) -> list[Any]:
        """For a stack's ``update_all``: each member's checked round up to its learning step.

        Checks each round as ``Policy.update`` does, then calls the member's
        ``_record(ctx, action, feedback)`` (the first half of its ``_update``, which a
        stack splits at the step its members share) and returns what each returned.
        """
        out = []
        for policy, ctx, action, feedback in zip(
            self.policies, ctxs, actions, feedbacks, strict=True
        ):
            policy._check_context(ctx)
            checked = policy._check_action(action, ctx)
            feedback = policy._check_feedback(feedback, checked)
            out.append(policy._record(ctx, checked, feedback))  # type: ignore[attr-defined]
        return out

    def n_updates_all(self) -> list[int]:
        """Each policy's ``n_updates``."""
        return [p.n_updates for p in self.policies]

    def propensities_all(self) -> list[float | None]:
        """Each policy's ``last_propensity``."""
        return [p.last_propensity for p in self.policies]

    def state_dicts(self) -> list[dict[str, Any]]:
        """Each policy's ``state_dict()`` (``core.resume``)."""
        return [p.state_dict() for p in self.policies]

    def resume(
        self,
        horizon: int,
        envs: Sequence[Environment],
        states: Sequence[dict[str, Any]],
    ) -> None:
        """Instead of :meth:`start`: each policy begins, takes its state, then its environment.

        Raises:
            ValueError: If a state is invalid, or was saved under another horizon.
        """
        for policy, env, state in zip(self.policies, envs, states, strict=True):
            policy.begin(horizon)
            policy.load_state_dict(state)
            if policy.horizon != horizon:
                raise ValueError(
                    f"the saved policy state has horizon {policy.horizon!r}; this run "
                    f"has {horizon}."
                )
            policy.attach(env)


def stack(policies: Sequence[Policy]) -> Members | None:
    """The stacked play of ``policies`` that their class offers, or None.

    None for fewer than two policies or when the class declines the configuration
    (``Policy.stack``).

    Raises:
        ValueError: If the policies are not fresh policies of one configuration: one
            class with the same hyper-parameters, seeds aside, or the members a class
            stacks together (``Policy.stack_key``: e.g. NVLDB's UCB and TS variants
            under any pair rule, at one network).
    """
    policies = list(policies)
    if len(policies) < 2:
        return None
    key = policies[0].stack_key()
    for policy in policies:
        if policy.stack_key() != key:
            raise ValueError(
                "policies must be of one class with the same hyper-parameters "
                f"(seeds aside; Policy.stack_key); got {policy!r} besides "
                f"{policies[0]!r}."
            )
        if policy.t or policy.d is not None:
            raise ValueError(f"policies must be fresh; {policy!r} has played.")
    return type(policies[0]).stack(policies)
