"""The :class:`Environment` base class and its round protocol.

An environment owns three independent streams derived from the seed given to ``reset``
(``core.seeding``): ``instance_rng`` for its hidden parameters (a latent function, a data pool),
``context_rng`` for the arms shown each round, and ``noise_rng`` for the outcome noise. Noise is
drawn once per round *before* the action is known, so every policy run under the same seed sees
the same contexts and the same noise (common random numbers).

Each family has its base class (:class:`ContextualEnvironment`, :class:`DuelingEnvironment`,
:class:`AssortmentEnvironment`) that fixes ``family`` and declares the family's per-round
records (``core.records``); a concrete environment inherits them and declares its own in
``records``. ``simulate``, the result store, summaries, claims and figures all read
:meth:`Environment.declared_records`.

Between two rounds an environment is its seed, its round count, the states of its three
streams and whatever a class carries from one round to the next (a queue of rows not shown
yet, a position in a log): :meth:`Environment.state_dict` returns them and
:meth:`Environment.load_state_dict` puts them back, so that a run checkpointed after round r
continues with the same contexts and noise (``core.simulate``; docs/experiments.md,
"Checkpoints"). A class that carries such state overrides ``_state`` / ``_load_state``.

An environment declares its parameters once, as a policy does (``core.params``): annotated
class attributes ``name: type = param(check, default=...)``, inherited by subclasses, which add
their own or re-declare one in place (another default); the base constructor checks and
stores them and then calls ``_resolve``, which checks what involves several of them. The
registry's messages, ``banditkit describe`` and ``get_params`` read the signature the
declarations state. A class may still write its constructor by hand and call
``super().__init__()``.
"""

from __future__ import annotations

import dataclasses
import inspect
from abc import abstractmethod
from typing import Any, ClassVar

import numpy as np

from banditkit.core.params import DeclaredMeta, set_params, takes_declared
from banditkit.core.records import LOOP_RECORDS, Record, merge_records
from banditkit.core.seeding import make_rng
from banditkit.core.types import FAMILIES, Action, Context, Step, check_action
from banditkit.core.validation import ArgumentTypeError, check_int, check_state_array

#: The streams an environment's state dict holds, by their ``core.seeding`` names.
_STREAMS = {"instance": "instance_rng", "contexts": "context_rng", "noise": "noise_rng"}

__all__ = [
    "AssortmentEnvironment",
    "ContextualEnvironment",
    "DuelingEnvironment",
    "Environment",
    "saved_queue",
]


class Environment(metaclass=DeclaredMeta):
    """Base class of every environment (docs/architecture.md section 3).

    Subclasses implement ``_reset`` (draw the instance), ``_next_context`` (the next round's
    context, or None when a finite log is exhausted) and ``_step`` (outcome of a validated
    action), and may implement ``expected_rewards`` / ``best_action`` for the oracle.
    Derive from a family base, which sets ``family`` (there is no default).

    Attributes:
        family: "contextual", "dueling" or "assortment".
        records: The per-round values this class adds to its bases' declaration; those that
            ``simulate`` does not fill itself (``core.records.LOOP_RECORDS``) are returned by
            ``_step`` in ``Step.values``. Re-declaring a name replaces the inherited record.
    """

    family: ClassVar[str]
    registry_name: ClassVar[str] = ""
    records: ClassVar[tuple[Record, ...]] = ()

    @takes_declared
    def __init__(self, **params: Any) -> None:
        """Check and store the declared parameters (``core.params``), then ``_resolve``."""
        family = getattr(self, "family", None)
        if family not in FAMILIES:
            raise TypeError(
                f"{type(self).__name__} must set `family` to one of {FAMILIES} (derive "
                "from ContextualEnvironment, DuelingEnvironment or AssortmentEnvironment)."
            )
        self.seed: int | None = None
        self.instance_rng: np.random.Generator = make_rng(0, "instance")
        self.context_rng: np.random.Generator = make_rng(0, "contexts")
        self.noise_rng: np.random.Generator = make_rng(0, "noise")
        self.current: Context | None = None
        self.round = 0
        set_params(self, params)
        self._resolve()

    def _resolve(self) -> None:
        """Check what involves several declared parameters; set up the state (override).

        Called once by the constructor, after every declared parameter passed its own check.
        """

    def reset(self, seed: int) -> None:
        """Start a new run: draw the instance and rewind every stream for ``seed``."""
        self.instance_rng = make_rng(seed, "instance")
        self.context_rng = make_rng(seed, "contexts")
        self.noise_rng = make_rng(seed, "noise")
        self.seed = seed
        self.current = None
        self.round = 0
        self._reset()

    def context(self) -> Context | None:
        """The context of the next round (None: a finite log is exhausted)."""
        if self.seed is None:
            raise RuntimeError("call reset(seed) before the first context().")
        self.current = self._next_context()
        return self.current

    def step(self, action: Action) -> Step:
        """Play ``action`` in the current round and return its outcome."""
        if self.current is None:
            raise RuntimeError("call context() before step().")
        action = check_action(action, self.current, self.family)
        result = self._step(self.current, action)
        self.current = None
        self.round += 1
        return result

    def state_dict(self) -> dict[str, Any]:
        """The environment between two rounds: seed, round, streams and carried state.

        JSON-able values and NumPy arrays (``core.serialization`` writes them without
        pickle). The instance is not in it: :meth:`load_state_dict` draws it again from
        the seed.

        Raises:
            RuntimeError: Before :meth:`reset`, or in the middle of a round (after
                ``context()``, before ``step()``).
        """
        if self.seed is None or self.current is not None:
            raise RuntimeError(
                "state_dict() is taken between two rounds of a run: after reset(seed) "
                "or step(), not after context()."
            )
        return {
            "seed": self.seed,
            "round": self.round,
            "rng": {
                name: getattr(self, attr).bit_generator.state
                for name, attr in _STREAMS.items()
            },
            "state": self._state(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from :meth:`state_dict`: reset with its seed, then take its state.

        Raises:
            ValueError: If an entry is missing or invalid; the message names it.
        """
        if not isinstance(state, dict):
            raise ArgumentTypeError(
                f"state must be a dict; got {type(state).__name__}."
            )
        missing = sorted({"seed", "round", "rng", "state"} - set(state))
        if missing:
            raise ValueError(f"state is missing the entries {missing}.")
        seed = check_int("state['seed']", state["seed"], low=0)
        round_ = check_int("state['round']", state["round"], low=0)
        rngs = state["rng"]
        if not isinstance(rngs, dict) or set(rngs) != set(_STREAMS):
            raise ValueError(
                f"state['rng'] must hold the streams {sorted(_STREAMS)}; got "
                f"{sorted(rngs) if isinstance(rngs, dict) else type(rngs).__name__}."
            )
        carried = state["state"]
        if not isinstance(carried, dict):
            raise ValueError(
                f"state['state'] must be a dict; got {type(carried).__name__}."
            )
        streams = {}
        for name in _STREAMS:
            streams[name] = make_rng(0, name)
            try:
                streams[name].bit_generator.state = rngs[name]
            except (TypeError, ValueError, KeyError, OverflowError) as exc:
                raise ValueError(
                    f"state['rng'][{name!r}] is not a state of this stream ({exc})."
                ) from None
        self.reset(seed)
        for name, attr in _STREAMS.items():  # the same generators, moved on
            getattr(self, attr).bit_generator.state = streams[name].bit_generator.state
        self.round = round_
        self._load_state(carried)

    def _state(self) -> dict[str, Any]:
        """What this class carries from one round to the next, besides its streams (override)."""
        return {}

    def _load_state(self, state: dict[str, Any]) -> None:
        """Restore :meth:`_state` (override); the instance is drawn and the streams set."""
        del state  # nothing is carried by default

    def best_action(self) -> Action:
        """The action with the largest expected reward in the current round (for the oracle)."""
        raise NotImplementedError(
            f"{type(self).__name__} does not expose its optimal action."
        )

    @classmethod
    def declared_records(cls) -> tuple[Record, ...]:
        """Every record of a run on this environment, in column order.

        The loop records first, then the ``records`` of each class from the root of the
        hierarchy down; a later declaration of a name replaces the earlier one in place.

        Example:
            >>> from banditkit.envs import LinearEnv
            >>> [r.name for r in LinearEnv.declared_records()][:3]
            ['regret', 'reward', 'act_seconds']
        """
        own = [k.__dict__.get("records", ()) for k in reversed(cls.__mro__)]
        return merge_records([LOOP_RECORDS, *own])

    @classmethod
    def step_values(cls) -> tuple[str, ...]:
        """Names of the declared records ``_step`` returns in ``Step.values``."""
        loop = {r.name for r in LOOP_RECORDS} | {"action"}
        return tuple(r.name for r in cls.declared_records() if r.name not in loop)

    @abstractmethod
    def _reset(self) -> None: ...

    @abstractmethod
    def _next_context(self) -> Context | None: ...

    @abstractmethod
    def _step(self, ctx: Context, action: Action) -> Step: ...

    @property
    def label(self) -> str:
        """A short name for tables and figures (registry name plus the defining option)."""
        return self.registry_name or type(self).__name__

    @classmethod
    def param_names(cls) -> list[str]:
        """Keyword parameters of the constructor (declared, or written by hand)."""
        return list(inspect.signature(cls).parameters)

    def get_params(self) -> dict[str, Any]:
        """The parameters this environment was built with."""
        return {name: getattr(self, name) for name in self.param_names()}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"


class ContextualEnvironment(Environment):
    """Base of the contextual family: an int action, a real reward (docs/architecture.md section 3)."""

    family: ClassVar[str] = "contextual"
    records: ClassVar[tuple[Record, ...]] = (
        Record("action", dtype="int64", aggregation="none", description="arm played"),
    )


class DuelingEnvironment(Environment):
    """Base of the dueling family: an ordered pair (i, j), feedback 1 when i won.

    With utilities u and u* = max_k u_k, a pair's regrets are [Saha2021; Bengs2022]

        average  (2 u* - u_i - u_j) / 2   (``regret``)
        weak     u* - max(u_i, u_j)       (``weak_regret``)
        strong   u* - min(u_i, u_j)       (``strong_regret``)

    ``_step`` returns the weak and strong regret in ``Step.values``; ``step`` adds the
    duel's outcome ``won`` (the feedback), so a stored run is a log a policy can learn from
    (``banditkit.ope.log_from_runs``). The average regret R(t)/t
    (``average_regret``) is drawn with the cumulative regret, as the dueling papers report it.
    """

    family: ClassVar[str] = "dueling"
    records: ClassVar[tuple[Record, ...]] = (
        Record(
            "regret",
            description="average regret of the pair, (2 u* - u_i - u_j) / 2",
            running_mean=True,
            plot=("regret", "average_regret"),
        ),
        Record(
            "weak_regret",
            description="weak regret of the pair, u* - max(u_i, u_j)",
            running_mean=True,
        ),
        Record(
            "strong_regret",
            description="strong regret of the pair, u* - min(u_i, u_j)",
            running_mean=True,
        ),
        Record(
            "action", dtype="list<int64>", aggregation="none", description="pair (i, j)"
        ),
        Record(
            "won",
            dtype="int64",
            aggregation="none",
            description="the duel's outcome, the feedback: 1 when the first arm won, else 0",
        ),
    )

    def step(self, action: Action) -> Step:
        """Play the pair; ``values`` gain ``won``, the feedback (stored for off-policy logs)."""
        result = super().step(action)
        values = {**(result.values or {}), "won": int(result.feedback)}
        return dataclasses.replace(result, values=values)


class AssortmentEnvironment(Environment):
    """Base of the assortment family: a set of items offered, feedback the chosen item or -1.

    ``reward`` is the realised revenue (the chosen item's revenue, 0 for no purchase) and
    ``regret`` the expected revenue of the best assortment minus that of the offered one;
    ``_step`` returns ``revenue`` (the expected revenue of the offered assortment under the
    true choice model, R(S) = sum_i r_i p_i(S)) and ``chosen`` (the item bought, -1 for none)
    in ``Step.values``.
    """

    family: ClassVar[str] = "assortment"
    records: ClassVar[tuple[Record, ...]] = (
        Record(
            "reward",
            description="realised revenue (the chosen item's revenue, 0 for no purchase)",
            running_mean=True,
            higher_is_better=True,
        ),
        Record(
            "revenue",
            description="expected revenue of the offered assortment, sum_i r_i p_i(S)",
            running_mean=True,
            higher_is_better=True,
            plot=("revenue",),
        ),
        Record(
            "action",
            dtype="list<int64>",
            aggregation="none",
            description="items offered, sorted",
        ),
        Record(
            "chosen",
            dtype="int64",
            aggregation="none",
            description="item chosen by the customer, -1 for no purchase",
        ),
    )


def saved_queue(state: dict[str, Any], size: int) -> np.ndarray:
    """The queue of a saved environment state: indices of rows not shown yet, < ``size``.

    For the environments that walk through permutations of a pool (``_load_state``).

    Raises:
        ValueError: If ``state['queue']`` is not a 1-d integer array of such indices.
    """
    return check_state_array(
        "state['queue']",
        state.get("queue"),
        (None,),
        dtype=np.int64,
        low=0,
        below=size,
    )
