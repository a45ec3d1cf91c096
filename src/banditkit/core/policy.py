"""The :class:`Policy` base class: validation, dimension inference, parameters and state.

Concrete policies implement ``_act`` and ``_update``; the public ``act`` / ``update`` validate
inputs at the boundary (finite arms, a fixed dimension, actions in range, feedback of the right
kind) so that subclasses can trust what they receive.

Hyper-parameters follow scikit-learn's convention: every keyword argument of ``__init__`` is
stored verbatim as an attribute of the same name, validated in the constructor, and returned by
:meth:`Policy.get_params`. Checks that need the feature dimension ``d`` or the number of arms run
in ``_setup``, called once at the first ``act``.
"""

from __future__ import annotations

import inspect
import math
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from banditkit.core.seeding import make_rng
from banditkit.core.types import Action, Context, Feedback, check_action
from banditkit.core.validation import check_int

if TYPE_CHECKING:
    from banditkit.core.environment import Environment

__all__ = ["Policy", "check_feedback"]


def check_feedback(feedback: Any, action: Action, family: str) -> Feedback:
    """Validate the feedback of one round for ``family`` and return it normalised.

    Raises:
        ValueError: NaN or inf reward, a duel outcome other than 0/1, or a chosen item that was
            not offered.
    """
    if family == "contextual":
        if isinstance(feedback, bool) or not isinstance(
            feedback, int | float | np.number
        ):
            raise TypeError(f"feedback must be a real reward; got {feedback!r}.")
        value = float(feedback)
        if not math.isfinite(value):
            raise ValueError(f"feedback must be finite; got {feedback!r}.")
        return value
    if family == "dueling":
        if feedback not in (0, 1):
            raise ValueError(
                f"dueling feedback must be 1 (first arm won) or 0; got {feedback!r}."
            )
        return int(feedback)
    assert isinstance(action, tuple)
    if feedback != -1 and feedback not in action:
        raise ValueError(
            f"assortment feedback must be an offered item {action} or -1; got {feedback!r}."
        )
    return int(feedback)


class Policy(ABC):
    """Base class of every bandit policy (DESIGN.md section 3).

    Args:
        seed: Seed of the policy's own random stream (``core.seeding`` stream "policy").

    Attributes:
        family: "contextual", "dueling" or "assortment".
        d: Feature dimension, inferred at the first ``act`` (None before).
        t: Number of updates received so far.
        horizon: T given to :meth:`begin` (None: unknown).
        last_propensity: Probability with which the last ``act`` chose its action, for
            policies that know it (uniform play, epsilon-greedy); None otherwise. Stored with
            each round so logged runs can be evaluated off-policy.
    """

    family: ClassVar[str] = "contextual"
    registry_name: ClassVar[str] = ""
    #: True for policies that cannot run without ``begin(horizon)`` (grids, lambda_T).
    requires_horizon: ClassVar[bool] = False

    def __init__(self, *, seed: int = 0) -> None:
        self.seed = check_int("seed", seed, low=0)
        self.rng: np.random.Generator = make_rng(self.seed, "policy")
        self.d: int | None = None
        self.t = 0
        self._n_updates = 0
        self.horizon: int | None = None
        self.last_propensity: float | None = None

    # ------------------------------------------------------------------ public loop
    def act(self, ctx: Context) -> Action:
        """Choose an action for the round described by ``ctx``."""
        self._check_context(ctx)
        return check_action(self._act(ctx), ctx, self.family)

    def update(self, ctx: Context, action: Action, feedback: Feedback) -> None:
        """Learn from the feedback to ``action`` in the round described by ``ctx``."""
        self._check_context(ctx)
        action = check_action(action, ctx, self.family)
        feedback = check_feedback(feedback, action, self.family)
        self._update(ctx, action, feedback)
        self.t += 1

    def begin(self, horizon: int | None) -> None:
        """Tell the policy how many rounds it will play; ``simulate`` calls it before round 1.

        Policies whose constants depend on the horizon T (the MNL paper's lambda_t, the
        rare-update grids) read ``self.horizon`` and set ``requires_horizon = True``: using
        one without a horizon raises a ``ValueError`` at its first round. Other policies
        ignore it. The horizon is part of the saved state.

        Args:
            horizon: T >= 1, or None when the run length is unknown (an open-ended service).

        Raises:
            ValueError: If ``horizon`` is not None and not an int >= 1, or the policy has
                already played a round.
        """
        if self.t > 0:
            raise ValueError(
                f"begin() must come before the first round; this policy has had {self.t} updates."
            )
        self.horizon = None if horizon is None else check_int("horizon", horizon, low=1)
        self._begin()

    def _begin(self) -> None:  # noqa: B027 - optional hook
        """React to a new ``self.horizon`` (override); called by :meth:`begin`."""

    def attach(self, env: Environment) -> None:  # noqa: B027 - optional hook
        """Called by ``simulate`` before the first round; only privileged policies use it."""

    @property
    def n_updates(self) -> int:
        """Parameter re-estimations so far (the rare-update papers' count)."""
        return self._n_updates

    # ------------------------------------------------------------------ subclass API
    @abstractmethod
    def _act(self, ctx: Context) -> Action:
        """Choose an action; ``ctx`` is validated and ``self.d`` is set."""

    @abstractmethod
    def _update(self, ctx: Context, action: Action, feedback: Feedback) -> None:
        """Learn from validated feedback."""

    def _setup(self, ctx: Context) -> None:  # noqa: B027 - optional hook
        """Allocate dimension-dependent state; called once, at the first round."""

    def _check_context(self, ctx: Context) -> None:
        if not isinstance(ctx, Context):
            raise TypeError(f"expected a banditkit Context; got {type(ctx).__name__}.")
        if self.d is None:
            if self.requires_horizon and self.horizon is None:
                raise ValueError(
                    f"{self.registry_name or type(self).__name__} needs the horizon: call "
                    "policy.begin(horizon) before the first round (simulate and the runner do)."
                )
            self.d = ctx.d
            self._setup(ctx)
        elif ctx.d != self.d:
            raise ValueError(
                f"arms have dimension {ctx.d} but this policy was built for d={self.d} "
                "at its first round; the feature dimension cannot change between rounds."
            )

    # ------------------------------------------------------------------ parameters and state
    @classmethod
    def param_names(cls) -> list[str]:
        """Names of the keyword hyper-parameters of ``__init__`` (``seed`` included)."""
        sig = inspect.signature(cls.__init__)
        return [
            n
            for n, p in sig.parameters.items()
            if n != "self" and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]

    def get_params(self) -> dict[str, Any]:
        """The hyper-parameters this policy was built with (JSON-able)."""
        return {name: getattr(self, name) for name in self.param_names()}

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume: arrays and JSON-able scalars, no pickle.

        Subclasses add their learned state by overriding ``_state`` / ``_load_state``.
        """
        return {
            "policy": self.registry_name or type(self).__name__,
            "params": self.get_params(),
            "d": self.d,
            "t": self.t,
            "horizon": self.horizon,
            "n_updates": self._n_updates,
            "rng": self.rng.bit_generator.state,
            "state": self._state() if self.d is not None else {},
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned (hyper-parameters must match)."""
        expected = state.get("policy")
        name = self.registry_name or type(self).__name__
        if expected != name:
            raise ValueError(f"state belongs to policy {expected!r}, not {name!r}.")
        if state["params"] != self.get_params():
            raise ValueError(
                "state was saved with other hyper-parameters: "
                f"{state['params']} != {self.get_params()}."
            )
        self.d = None if state["d"] is None else int(state["d"])
        self.t = int(state["t"])
        horizon = state.get("horizon")
        self.horizon = None if horizon is None else int(horizon)
        self._n_updates = int(state["n_updates"])
        self.rng.bit_generator.state = state["rng"]
        if self.d is not None:
            self._load_state(state["state"])

    def _state(self) -> dict[str, Any]:
        """Learned state after the first round (override)."""
        return {}

    def _load_state(self, state: dict[str, Any]) -> None:  # noqa: B027 - optional hook
        """Restore learned state (override); ``self.d`` is already set."""

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"
