"""The :class:`Policy` base class, its three family bases, and validation at the boundary.

Concrete policies derive from :class:`ContextualPolicy`, :class:`DuelingPolicy` or
:class:`AssortmentPolicy` and implement ``_act`` and ``_update``; the public ``act`` /
``update`` validate inputs at the boundary so that subclasses can trust what they receive:

    ctx         a :class:`Context` whose feature dimension never changes after round 1
    action      the family's action, in range (``core.types.check_action``)
    feedback    what the policy's likelihood assumes (:func:`check_feedback`)

Every bad input raises a ``ValueError`` whose message names the argument (``ctx``/``arms``,
``action``, ``feedback``); a wrong type raises ``ArgumentTypeError``, a ``ValueError`` that is
also a ``TypeError``.

Hyper-parameters follow scikit-learn's convention: each is declared once on the class with its
default and its constraint (``core.params``), every keyword argument of the constructor is
stored, as checked, as an attribute of the same name, and :meth:`Policy.get_params` returns
them. Checks that involve several parameters run in ``_resolve``; checks that need the feature
dimension ``d`` or the number of arms run in ``_setup``, called once at the first ``act``.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import json
import math
from abc import abstractmethod
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import numpy as np

from banditkit.core.caller import HorizonWarning, warn
from banditkit.core.params import (
    UNIT,
    DeclaredMeta,
    Int,
    param,
    quiet_defaults,
    set_params,
    stored_params,
    takes_declared,
)
from banditkit.core.seeding import RoundStreams, make_rng
from banditkit.core.transaction import snapshot
from banditkit.core.types import FAMILIES, Action, Context, Feedback, check_action
from banditkit.core.validation import ArgumentTypeError, check_int

if TYPE_CHECKING:
    from banditkit.core.environment import Environment

__all__ = [
    "MAX_ABS_REWARD",
    "PROPENSITY_SAMPLES",
    "REWARD_KINDS",
    "Actions",
    "AssortmentPolicy",
    "Contexts",
    "ContextualPolicy",
    "DuelingPolicy",
    "Feedbacks",
    "Members",
    "Policy",
    "check_feedback",
]

#: The contexts, actions and feedbacks of S runs in lockstep (``Members``), in run order.
Contexts = Sequence[Context]
Actions = Sequence[Action]
Feedbacks = Sequence[Feedback]

#: Default bound on |reward| for real-valued rewards: larger values are refused because one
#: of them would swamp a learner's state for good (a squared loss of 1e300 overflows).
MAX_ABS_REWARD = 1e6

#: Default Monte Carlo draws of a sampler's propensity (``Policy.propensity_samples``).
PROPENSITY_SAMPLES = 128

#: The law of a round's action: the probability of each action (``policies.parts.propensity``).
_Law = Callable[[Any], float]

#: Reward kinds a contextual policy can declare, with the rewards they accept.
REWARD_KINDS: dict[str, str] = {
    "real": "a finite real reward with |r| <= max_abs_reward (Gaussian / squared loss)",
    "binary": "a reward in [0, 1] (Bernoulli likelihood, cross-entropy loss)",
}


def check_feedback(
    feedback: Any,
    action: Action,
    family: str,
    *,
    kind: str = "real",
    max_abs: float = MAX_ABS_REWARD,
) -> Feedback:
    """Validate the feedback of one round for ``family`` and return it normalised.

    contextual: a real number (not a bool), finite; ``kind="binary"`` (a Bernoulli
    likelihood) also requires 0 <= r <= 1, ``kind="real"`` requires |r| <= ``max_abs``.
    dueling: 1 (the first arm of the pair won) or 0. assortment: an offered item or -1 (no
    purchase).

    Args:
        feedback: What the environment returned for ``action``.
        action: The validated action of the round.
        family: "contextual", "dueling" or "assortment".
        kind: The reward kind of a contextual policy, a key of :data:`REWARD_KINDS`.
        max_abs: Largest |reward| accepted for ``kind="real"``.

    Raises:
        ValueError: Any bad feedback; the message names ``feedback``.

    Example:
        >>> check_feedback(1, 0, "contextual", kind="binary")
        1.0
        >>> check_feedback(2.5, 0, "contextual", kind="binary")
        Traceback (most recent call last):
        ...
        ValueError: feedback must be a reward in [0, 1] for a Bernoulli likelihood; got 2.5.
    """
    if family == "contextual":
        if isinstance(feedback, bool | np.bool_) or not isinstance(
            feedback, int | float | np.integer | np.floating
        ):
            raise ArgumentTypeError(
                f"feedback must be a real reward; got {feedback!r}."
            )
        value = float(feedback)
        if not math.isfinite(value):
            raise ValueError(f"feedback must be finite; got {feedback!r}.")
        if kind == "binary":
            if not 0.0 <= value <= 1.0:
                raise ValueError(
                    "feedback must be a reward in [0, 1] for a Bernoulli likelihood; "
                    f"got {feedback!r}."
                )
        elif kind == "real":
            if abs(value) > max_abs:
                raise ValueError(
                    f"feedback must satisfy |r| <= max_abs_reward = {max_abs:g}; got "
                    f"{feedback!r}. Rescale the rewards, or raise the policy's "
                    "max_abs_reward if they are meant to be this large."
                )
        else:
            raise ValueError(
                f"unknown reward kind {kind!r}; expected one of {list(REWARD_KINDS)}."
            )
        return value
    if family not in ("dueling", "assortment"):
        raise ValueError(f"unknown family {family!r}; expected one of {FAMILIES}.")
    if not isinstance(feedback, int | float | np.integer | np.floating | np.bool_):
        raise ArgumentTypeError(
            f"{family} feedback must be a single number; got {type(feedback).__name__} "
            f"{feedback!r}."
        )
    if family == "dueling":
        if feedback not in (0, 1):  # NaN is not in there either
            raise ValueError(
                f"dueling feedback must be 1 (first arm won) or 0; got {feedback!r}."
            )
        return int(feedback)
    assert isinstance(action, tuple)
    if isinstance(feedback, bool | np.bool_) or (
        feedback != -1 and feedback not in action
    ):
        raise ValueError(
            f"assortment feedback must be an offered item {action} or -1; got {feedback!r}."
        )
    return int(feedback)


class Members(Protocol):
    """S policies played in lockstep, one per seed (``core.members``, ``core.simulate``)."""

    def start(self, horizon: int, envs: Sequence[Environment]) -> None:
        """Before round 1: tell each member the horizon and its environment."""
        ...

    def act_all(self, ctxs: Sequence[Context]) -> list[Action]:
        """The S actions for the S contexts."""
        ...

    def update_all(
        self, ctxs: Contexts, actions: Actions, feedbacks: Feedbacks
    ) -> None:
        """Learn from the S feedbacks."""
        ...

    def n_updates_all(self) -> list[int]:
        """Each member's parameter re-estimations so far."""
        ...

    def propensities_all(self) -> list[float | None]:
        """Each member's probability of its last action, where it knows it."""
        ...


class _Floored:
    """The law of the explore floor: epsilon U(a) + (1 - epsilon) q(a)."""

    def __init__(self, epsilon: float, uniform: _Law, rule: _Law) -> None:
        self.epsilon, self.uniform, self.rule = epsilon, uniform, rule

    def __call__(self, action: Any) -> float:
        eps = self.epsilon
        return eps * self.uniform(action) + (1.0 - eps) * self.rule(action)


#: Base parameters left out of ``get_params`` at their defaults (run ids unchanged).
_QUIET_DEFAULTS: dict[str, Any] = {
    "explore_floor": 0.0,
    "propensity_samples": PROPENSITY_SAMPLES,
}

#: The entries of every state dict (:meth:`Policy.state_dict`).
_STATE_KEYS = ("policy", "params", "d", "t", "horizon", "n_updates", "rng", "state")


class Policy(metaclass=DeclaredMeta):
    """Base class of every bandit policy; concrete policies derive from a family base.

    A concrete policy class derives from :class:`ContextualPolicy`, :class:`DuelingPolicy`
    or :class:`AssortmentPolicy`, which set ``family`` and validate the family's actions and
    feedback (the contract suite of ``banditkit.testing`` requires it). ``Policy`` has no
    default family: building an instance of a class without one raises a ``TypeError``.

    Args:
        seed: Seed of the policy's own random stream (``core.seeding`` stream "policy").
        explore_floor: Probability epsilon in [0, 1] of playing a uniform action instead of
            the policy's own choice, drawn after it (default 0: never). Every action then
            has a propensity of at least epsilon over the number of actions, which off-policy
            evaluation of other policies on the log needs; it changes the actions, so it
            enters ``get_params`` (and run ids) when > 0.
        propensity_samples: Monte Carlo draws N >= 0 of a sampling rule's propensity
            (Thompson sampling, perturbed scores), from a generator of the round apart from
            the policy's stream (so it changes no action); 0: samplers report none. In
            ``get_params`` only when not the default.

    Attributes:
        family: "contextual", "dueling" or "assortment" (class attribute, required).
        requires_horizon: True for policies whose constants need the horizon T (class
            attribute); they refuse to play before :meth:`begin` gave one.
        design_horizon: The horizon T the defaults are made for (class attribute; None:
            any). :meth:`begin` warns (``HorizonWarning``) when T is below a quarter of it
            and none of ``horizon_params`` was changed from its default.
        horizon_params: The hyper-parameters that adapt the policy to a shorter run
            (class attribute), named in the warning.
        counts_updates: True when the class counts its parameter re-estimations itself
            (``self._n_updates += 1`` where it refits, as banditkit's own policies do);
            False (a user's class that does not say): every ``update`` counts one.
        contract_params: Keyword arguments under which ``banditkit.testing`` runs the
            contract suite on this class (class attribute; empty: the defaults).
        d: Feature dimension, inferred at the first ``act`` (None before).
        t: Number of updates received so far.
        horizon: T given to :meth:`begin` (None: unknown).
        last_propensity: Probability with which the last ``act`` chose its action, over
            that act's random draws given the policy's state (docs/ope.md, "Propensities
            of banditkit's policies"): exact for deterministic and explicitly randomised
            rules, a Monte Carlo estimate from ``propensity_samples`` draws for samplers;
            None where unknown. Stored with each round so logged runs can be evaluated
            off-policy.
    """

    family: ClassVar[str]
    registry_name: ClassVar[str] = ""
    #: True for policies that cannot run without ``begin(horizon)`` (grids, lambda_T).
    requires_horizon: ClassVar[bool] = False
    #: The horizon T the defaults are made for; a far shorter ``begin(T)`` warns.
    design_horizon: ClassVar[int | None] = None
    #: Hyper-parameters that adapt the policy to a shorter horizon (for the warning).
    horizon_params: ClassVar[tuple[str, ...]] = ()
    #: True when the class counts its own re-estimations (``self._n_updates``); False:
    #: every update counts one. Set for banditkit's classes (``__init_subclass__``).
    counts_updates: ClassVar[bool] = False
    #: True for policies that compute with PyTorch. ``import banditkit`` leaves PyTorch
    #: out (it is imported at first use); the experiment runner imports it before a run's
    #: clock starts, so the one-time import is not counted in the first round's act time.
    needs_torch: ClassVar[bool] = False
    #: Hyper-parameters that make the policy fast on tiny problems (narrow networks, few
    #: steps), used by the contract suites of ``banditkit.testing``; never a default.
    contract_params: ClassVar[dict[str, Any]] = {}
    #: False for policies whose set-up allocates nothing that grows with d but empty
    #: buffers: ``load_policy`` then takes a file's d as it is; otherwise the state's
    #: arrays must account for d before the policy is set up (docs/reliability.md).
    setup_grows_with_d: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        family = cls.__dict__.get("family")
        if family is not None and family not in FAMILIES:
            raise TypeError(
                f"{cls.__name__}.family must be one of {FAMILIES}; got {family!r}."
            )
        if "counts_updates" not in cls.__dict__ and cls.__module__.startswith(
            "banditkit."
        ):
            # banditkit's policies count their re-estimations where they refit (the
            # rare-update papers' count); a user's class inherits what its base says
            cls.counts_updates = True

    seed: int = param(Int(low=0), default=0)
    explore_floor: float = param(UNIT, default=0.0)
    propensity_samples: int = param(Int(low=0), default=PROPENSITY_SAMPLES)

    @takes_declared
    def __init__(self, **params: Any) -> None:
        """Check and store the declared hyper-parameters, then start the policy's stream.

        A concrete class's signature is that of its declarations (``core.params``);
        ``_resolve`` then runs the checks that involve several of them.
        """
        if getattr(type(self), "family", None) is None:
            raise TypeError(
                f"{type(self).__name__} has no family: derive it from ContextualPolicy, "
                "DuelingPolicy or AssortmentPolicy (banditkit.core), or set the class "
                "attribute family = 'contextual' | 'dueling' | 'assortment'."
            )
        set_params(self, params)
        self.rng: np.random.Generator = make_rng(self.seed, "policy")
        self.d: int | None = None
        self.t = 0
        self._n_updates = 0
        self.horizon: int | None = None
        self.last_propensity: float | None = None
        self._law: _Law | None = None  # set by ``_act`` for the round (``propose``)
        self._last_law: _Law | None = None
        self._rounds: RoundStreams | None = None  # the propensity estimates' generators
        self._resolve()

    def _resolve(self) -> None:
        """Check what involves several hyper-parameters and derive what the parts need.

        Called once by the constructor, after every declared parameter passed its own
        check (override; checks that need ``d`` or K belong in ``_setup``).
        """

    # ------------------------------------------------------------------ public loop
    def act(self, ctx: Context) -> Action:
        """Choose an action for the round described by ``ctx``.

        With ``explore_floor`` = epsilon > 0, the policy's choice is replaced, with
        probability epsilon, by a uniform action (one draw from the policy's stream after
        its choice). ``last_propensity`` is then the probability of the action played:
        epsilon U(a) + (1 - epsilon) q(a), q the law the policy proposed for its choice.
        """
        self._check_context(ctx)
        self.last_propensity = None
        self._law = None
        action = self._check_action(self._act(ctx), ctx)
        law, self._law = self._law, None
        if self.explore_floor > 0.0:
            action, law = self._explore(ctx, action, law)
        self._last_law = law
        if law is not None:
            self.last_propensity = float(law(action))
        return action

    def propose(self, law: _Law | None) -> None:
        """Called by ``_act``: the law of this round's choice (None: unknown).

        ``law(action)`` is the probability with which this ``_act`` would choose
        ``action``, over its own random draws, given the policy's state
        (``policies.parts.propensity``); ``act`` reads it at the action played.
        """
        self._law = law

    def propensity_of(self, action: Action) -> float | None:
        """The probability with which the last ``act`` would have played ``action``.

        The law behind ``last_propensity``, at any action of that round (a target's
        probabilities for off-policy evaluation); None where unknown or before any act.

        Example:
            >>> import banditkit as bk
            >>> from banditkit.core import Context
            >>> policy = bk.make_policy("linucb", explore_floor=0.2)
            >>> arm = policy.act(Context(arms=np.eye(4)))
            >>> [policy.propensity_of(k) for k in range(4)]  # four tied arms
            [0.25, 0.25, 0.25, 0.25]
        """
        law = self._last_law
        return None if law is None else float(law(action))

    def propensity_rng(self) -> np.random.Generator:
        """The generator of this round's propensity estimate, apart from ``self.rng``.

        Derived from the seed and the round ``t`` (``core.seeding.RoundStreams``, stream
        "propensity"): drawing from it changes no action of the policy.
        """
        if self._rounds is None:
            self._rounds = RoundStreams(self.seed, "propensity")
        return self._rounds(self.t)

    def _explore(
        self, ctx: Context, chosen: Action, law: _Law | None
    ) -> tuple[Action, _Law | None]:
        """The explore floor: a uniform action with probability epsilon, and its law."""
        epsilon = self.explore_floor
        action = self._uniform_action(ctx) if self.rng.random() < epsilon else chosen
        if law is None:
            return action, None
        uniform = functools.partial(self._uniform_probability, ctx)
        return action, _Floored(epsilon, uniform, law)

    def _uniform_action(self, ctx: Context) -> Action:
        """A uniform action of the family (the explore floor's), from ``self.rng``."""
        raise NotImplementedError

    def _uniform_probability(self, ctx: Context, action: Action) -> float:
        """The probability of ``action`` under ``_uniform_action``."""
        raise NotImplementedError

    def update(self, ctx: Context, action: Action, feedback: Feedback) -> None:
        """Learn from the feedback to ``action`` in the round described by ``ctx``.

        Raises:
            ValueError: A bad ``ctx``, an ``action`` out of range for the family, or
                ``feedback`` the policy's likelihood does not allow; the message names it.
                The policy is left exactly as it was, as it is after any exception
                raised while it learns (a failed solve or refit): ``core.transaction``.
        """
        if self.d is None and isinstance(ctx, Context):
            # the first round sets the policy up: check the rest before it does
            self._check_feedback(feedback, self._check_action(action, ctx))
        before = snapshot(self)
        try:
            self._check_context(ctx)
            action = self._check_action(action, ctx)
            feedback = self._check_feedback(feedback, action)
            self._update(ctx, action, feedback)
        except BaseException:  # a failed update leaves no trace (core.transaction)
            before.restore()
            raise
        before.commit()
        self.t += 1
        if not self.counts_updates:
            self._n_updates += 1

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
        self._warn_short_horizon()
        self._begin()

    def _warn_short_horizon(self) -> None:
        """Warn when T is far below ``design_horizon`` and the defaults are kept."""
        design = self.design_horizon
        if design is None or self.horizon is None or 4 * self.horizon >= design:
            return
        signature = inspect.signature(type(self)).parameters
        if any(
            name in signature and getattr(self, name) != signature[name].default
            for name in self.horizon_params
        ):
            return
        name = self.registry_name or type(self).__name__
        adapt = " or ".join(n for n in self.horizon_params if n in signature)
        warn(
            f"{name}: its defaults are made for a horizon of about T = {design:,}; at "
            f"T = {self.horizon:,} they leave it few updates and mostly exploration. "
            f"Set {adapt or 'its parameters'} for a short run (`banditkit describe "
            f"{name}`).",
            HorizonWarning,
        )

    def _begin(self) -> None:
        """React to a new ``self.horizon`` (override); called by :meth:`begin`."""

    def attach(self, env: Environment) -> None:
        """Called by ``simulate`` before the first round; only privileged policies use it."""

    @classmethod
    def stack(cls, members: Sequence[Policy]) -> Members | None:
        """S fresh members of one configuration played as one stacked computation.

        A class that can (the practical NeuralLog policies: ``policies.parts.stacked``)
        returns a ``core.members.Members`` that plays them in lockstep, each member's
        random stream used as in its separate run; None (the default) runs them one by
        one. ``core.members.stack`` checks that they are fresh and share a
        :meth:`stack_key`.
        """
        return None

    #: The hyper-parameters, besides the seed, in which the members of one stack may
    #: differ: what the stacked play keeps per member (e.g. NVLDB's pair rule).
    stack_free: ClassVar[frozenset[str]] = frozenset()
    #: The name under which classes stack together (None: each class on its own), e.g.
    #: the UCB and TS variants of one neural dueling model.
    stack_family: ClassVar[str | None] = None

    def stack_key(self) -> str:
        """What the members of one stack share (``core.members.stack``), as JSON.

        The class (or its ``stack_family``) and every hyper-parameter but the seed and
        those of ``stack_free``: policies with equal keys are played by one ``stack``.

        Example:
            >>> from banditkit.core import make_policy
            >>> keys = {make_policy(n, rule=r, seed=s).stack_key()
            ...         for n in ("nvldb-ucb", "nvldb-ts") for r in ("asym", "osym")
            ...         for s in (0, 1)}
            >>> len(keys), make_policy("nvldb-ucb").stack_key() == make_policy(
            ...     "nvldb-ucb", width=64).stack_key()
            (1, False)
        """
        family = (
            self.stack_family or f"{type(self).__module__}.{type(self).__qualname__}"
        )
        params = {
            name: value
            for name, value in self.get_params().items()
            if name != "seed" and name not in self.stack_free
        }
        return json.dumps([family, params], sort_keys=True, default=repr)

    def warmup_rounds(self, horizon: int) -> int:
        """How many of the first ``horizon`` rounds this policy plays in a warm-up (0: none).

        A warm-up is play its estimates do not choose: design or round-robin pulls before
        the first fit (GLM-ES's tau), a phase of random offers (ONL-MNL's t0), the warm-up
        of every restart of an anytime schedule. Claims decided on runs spent mostly in
        warm-up are reported not decided (``experiments.summarise.claims.standing``).
        Declared from the hyper-parameters alone, before any round (override).
        """
        return 0

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

    def _setup(self, ctx: Context) -> None:
        """Allocate dimension-dependent state; called once, at the first round."""

    def _check_action(self, action: Any, ctx: Context) -> Action:
        """Validate an action of this policy's family (``core.types.check_action``)."""
        return check_action(action, ctx, self.family)

    def _check_feedback(self, feedback: Any, action: Action) -> Feedback:
        """Validate feedback; family bases narrow it (override to accept less, never more)."""
        return check_feedback(feedback, action, self.family)

    def _check_context(self, ctx: Context) -> None:
        if not isinstance(ctx, Context):
            raise ArgumentTypeError(
                f"ctx must be a banditkit Context; got {type(ctx).__name__}."
            )
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
                f"ctx.arms has dimension {ctx.d} but this policy was built for d={self.d} "
                "at its first round; the feature dimension cannot change between rounds."
            )

    # ------------------------------------------------------------------ parameters and state
    @classmethod
    def param_names(cls) -> list[str]:
        """Names of the keyword hyper-parameters of the constructor (``seed`` included)."""
        sig = inspect.signature(cls)
        return [
            n
            for n, p in sig.parameters.items()
            if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]

    def get_params(self) -> dict[str, Any]:
        """The hyper-parameters this policy was built with (JSON-able).

        ``explore_floor`` and ``propensity_samples``, and a parameter declared ``quiet``
        (``core.params.param``), are left out at their defaults, so that the runs stored
        before they existed keep their ids.
        """
        quiet = {**_QUIET_DEFAULTS, **quiet_defaults(type(self))}
        params = {name: getattr(self, name) for name in self.param_names()}
        return {
            name: value
            for name, value in params.items()
            if name not in quiet or value != quiet[name]
        }

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
        """Restore what :meth:`state_dict` returned (hyper-parameters must match).

        The base checks its own entries before taking any: the policy name and
        hyper-parameters, d (an int >= 1, or None before round 1), the counters t and
        n_updates (ints >= 0), the horizon (an int >= 1 or None) and the random stream's
        state; the learned state is then checked by ``_load_state`` (the parts'
        ``load_state_dict``).

        Raises:
            ValueError: If an entry is missing or invalid; the message names it.
        """
        if not isinstance(state, dict):
            raise ArgumentTypeError(
                f"state must be a dict; got {type(state).__name__}."
            )
        missing = sorted(set(_STATE_KEYS) - set(state))
        if missing:
            raise ValueError(f"state is missing the entries {missing}.")
        expected = state.get("policy")
        name = self.registry_name or type(self).__name__
        if expected != name:
            raise ValueError(f"state belongs to policy {expected!r}, not {name!r}.")
        saved = stored_params(type(self), state["params"])
        if saved != self.get_params():
            raise ValueError(
                "state was saved with other hyper-parameters: "
                f"{saved} != {self.get_params()}."
            )
        d = None if state["d"] is None else check_int("state['d']", state["d"], low=1)
        t = check_int("state['t']", state["t"], low=0)
        n_updates = check_int("state['n_updates']", state["n_updates"], low=0)
        horizon = state["horizon"]
        if horizon is not None:
            horizon = check_int("state['horizon']", horizon, low=1)
        learned = state["state"]
        if not isinstance(learned, dict) or (d is None and learned):
            raise ValueError(
                "state['state'] must be a dict, empty before the first round; got "
                f"{type(learned).__name__}."
            )
        rng = make_rng(0, "policy")
        try:
            rng.bit_generator.state = state["rng"]
        except (TypeError, ValueError, KeyError, OverflowError) as exc:
            raise ValueError(
                f"state['rng'] is not a state of this policy's random stream ({exc})."
            ) from None
        self.d, self.t, self.horizon, self._n_updates = d, t, horizon, n_updates
        self.rng.bit_generator.state = rng.bit_generator.state
        if self.d is not None:
            self._load_state(learned)

    def _state(self) -> dict[str, Any]:
        """Learned state after the first round (override)."""
        return {}

    def _load_state(self, state: dict[str, Any]) -> None:
        """Restore learned state (override); ``self.d`` is already set."""

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"


class ContextualPolicy(Policy):
    """Base of contextual policies: the action is an arm index, the feedback a reward.

    Rewards are checked against the likelihood the policy assumes, declared by
    ``reward_kind`` (see :data:`REWARD_KINDS`): "real" (squared loss, Gaussian noise)
    accepts finite rewards with |r| <= ``max_abs_reward``; "binary" (a Bernoulli
    likelihood, trained with cross-entropy) accepts rewards in [0, 1].

    Attributes:
        reward_kind: "real" (default) or "binary"; a class attribute, which an instance may
            override when a hyper-parameter decides it (a GLM with the identity link).
        max_abs_reward: Bound on |r| for real rewards, :data:`MAX_ABS_REWARD` by default;
            override it in a subclass whose rewards are legitimately larger.

    Example:
        >>> from banditkit.core import Context
        >>> class First(ContextualPolicy):
        ...     def _act(self, ctx): return 0
        ...     def _update(self, ctx, action, feedback): pass
        >>> policy = First()
        >>> policy.update(Context(arms=np.eye(2)), 0, 1e300)
        Traceback (most recent call last):
        ...
        ValueError: feedback must satisfy |r| <= max_abs_reward = 1e+06; got 1e+300. Rescale the rewards, or raise the policy's max_abs_reward if they are meant to be this large.
    """

    family: ClassVar[str] = "contextual"
    counts_updates: ClassVar[bool] = False  # a user's subclass: every update
    reward_kind = "real"
    max_abs_reward = MAX_ABS_REWARD

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        kind = cls.__dict__.get("reward_kind")
        if kind is not None and kind not in REWARD_KINDS:
            raise TypeError(
                f"{cls.__name__}.reward_kind must be one of {list(REWARD_KINDS)}; got {kind!r}."
            )

    def _check_feedback(self, feedback: Any, action: Action) -> Feedback:
        return check_feedback(
            feedback,
            action,
            "contextual",
            kind=self.reward_kind,
            max_abs=self.max_abs_reward,
        )

    def _uniform_action(self, ctx: Context) -> Action:
        """A uniform arm (``random``'s draw)."""
        return int(self.rng.integers(ctx.n_arms))

    def _uniform_probability(self, ctx: Context, action: Action) -> float:
        """1 / K."""
        return 1.0 / ctx.n_arms


class DuelingPolicy(Policy):
    """Base of dueling policies: the action is an ordered pair (i, j), the feedback 1 or 0.

    A pair is in range when 0 <= i, j < K; i == j is allowed (the best arm duelling itself
    has zero average regret). The feedback is 1 when the first arm won the duel.
    """

    family: ClassVar[str] = "dueling"
    counts_updates: ClassVar[bool] = False  # a user's subclass: every update

    def _uniform_action(self, ctx: Context) -> Action:
        """A uniform ordered pair of the K^2, (k, k) included."""
        first, second = self.rng.integers(ctx.n_arms, size=2)
        return (int(first), int(second))

    def _uniform_probability(self, ctx: Context, action: Action) -> float:
        """1 / K^2."""
        return 1.0 / ctx.n_arms**2


class AssortmentPolicy(Policy):
    """Base of assortment policies: the action is a set of items, the feedback the choice.

    An assortment is a non-empty set of distinct items in [0, K) of at most
    ``ctx.max_size`` items (returned sorted); the feedback is the chosen item, which must be
    one of those offered, or -1 for no purchase.
    """

    family: ClassVar[str] = "assortment"
    counts_updates: ClassVar[bool] = False  # a user's subclass: every update

    def _uniform_action(self, ctx: Context) -> Action:
        """A uniform non-empty set of at most ``ctx.max_size`` items (``random-assortment``'s).

        The size s with probability C(K, s) / N, then s distinct items: every one of the N
        sets has probability 1 / N.
        """
        k = ctx.n_arms
        m = k if ctx.max_size is None else min(ctx.max_size, k)
        counts = [math.comb(k, s) for s in range(1, m + 1)]
        total = sum(counts)
        size = 1 + int(self.rng.choice(m, p=[c / total for c in counts]))
        items = self.rng.choice(k, size=size, replace=False)
        return tuple(sorted(int(i) for i in items))

    def _uniform_probability(self, ctx: Context, action: Action) -> float:
        """1 / N, N the number of non-empty sets of at most ``ctx.max_size`` items."""
        k = ctx.n_arms
        m = k if ctx.max_size is None else min(ctx.max_size, k)
        return 1.0 / sum(math.comb(k, s) for s in range(1, m + 1))

    def _check_action(self, action: Any, ctx: Context) -> Action:
        """``check_action``, with a fast accept for an already normalised assortment.

        A tuple of Python ints, strictly increasing (hence sorted and distinct), in
        [0, K) and within the capacity is returned as it is (what ``check_action``
        returns for it); anything else goes through ``check_action``.
        """
        if (
            type(action) is tuple
            and 0 < len(action) <= (ctx.max_size or len(action))
            and all(type(a) is int for a in action)
            and action[0] >= 0
            and action[-1] < ctx.n_arms
            and all(a < b for a, b in itertools.pairwise(action))
        ):
            return action
        return super()._check_action(action, ctx)
