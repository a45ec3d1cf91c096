"""Checkpoints of a run: the simulation loop between two rounds, to go on from there.

``simulate`` (and ``simulate_seeds``) take a :class:`Checkpoints`: every ``every`` rounds
they hand ``save`` a :class:`Snapshot` of the loop (the rounds recorded so far, each
policy's ``state_dict``, each environment's ``state_dict``), and given ``resume`` they
start from one instead of round 1. A run resumed from its snapshot after round r is the
uninterrupted run: the same actions, rewards and records, bit for bit (the per-round wall
times aside), because the policies' random streams, the environments' context and noise
streams and what either carries between rounds are all in the snapshot.

:meth:`Snapshot.to_state` gives a tree of NumPy arrays and JSON values that a state file
holds (``core.statefile``; the result store's checkpoints, ``experiments.store``), and
:meth:`Snapshot.from_state` checks one read back before anything uses it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from banditkit.core.environment import Environment
from banditkit.core.validation import check_int, check_state_array

__all__ = ["Checkpoints", "Resumable", "Snapshot"]


@dataclass
class Snapshot:
    """S runs in lockstep after ``rounds`` recorded rounds (S = 1: one run).

    Attributes:
        rounds: Rounds recorded (accepted) so far.
        events: Environment rounds read so far (accepted or not).
        rows: Per run, the (rounds, width) float64 records of the loop (``core.simulate``).
        actions: Per run, the actions played so far.
        policies: Per run, the policy's ``state_dict()``.
        envs: Per run, the environment's ``state_dict()``.
    """

    rounds: int
    events: int
    rows: list[np.ndarray]
    actions: list[list[Any]]
    policies: list[dict[str, Any]]
    envs: list[dict[str, Any]]

    def to_state(self, family: str) -> dict[str, Any]:
        """A tree of arrays and JSON values; NaN records (no propensity) as a mask."""
        runs = []
        for rows, actions, policy, env in zip(
            self.rows, self.actions, self.policies, self.envs, strict=True
        ):
            missing = np.isnan(rows)
            runs.append(
                {
                    "rows": np.where(missing, 0.0, rows),
                    "missing": missing,
                    "actions": _pack_actions(actions, family),
                    "policy": policy,
                    "env": env,
                }
            )
        return {"rounds": self.rounds, "events": self.events, "runs": runs}

    @classmethod
    def from_state(
        cls, state: Any, *, runs: int, width: int, horizon: int, family: str
    ) -> Snapshot:
        """Check a tree from :meth:`to_state` against the run it must continue.

        Args:
            state: The tree (read back from a file).
            runs: S, the runs in lockstep.
            width: Columns of the loop's records (``core.simulate``).
            horizon: The run's horizon (a snapshot is taken before the last round).
            family: The environments' family (how actions are stored).

        Raises:
            ValueError: If an entry is missing, of another shape or out of range.
        """
        if not isinstance(state, dict) or not isinstance(state.get("runs"), list):
            raise ValueError("the snapshot must be a mapping with a list of runs.")
        rounds = check_int("rounds", state.get("rounds"), low=1, high=horizon - 1)
        events = check_int("events", state.get("events"), low=rounds)
        if len(state["runs"]) != runs:
            raise ValueError(
                f"the snapshot holds {len(state['runs'])} runs; this task has {runs}."
            )
        rows, actions, policies, envs = [], [], [], []
        for run in state["runs"]:
            if not isinstance(run, dict) or not isinstance(run.get("policy"), dict):
                raise ValueError(
                    "each run of the snapshot needs rows, actions, policy."
                )
            table = check_state_array("rows", run.get("rows"), (rounds, width))
            missing = check_state_array(
                "missing", run.get("missing"), (rounds, width), dtype=bool
            )
            rows.append(np.where(missing, np.nan, table))
            actions.append(_unpack_actions(run.get("actions"), family, rounds))
            policies.append(run["policy"])
            envs.append(run["env"])
        return cls(rounds, events, rows, actions, policies, envs)


def _pack_actions(actions: list[Any], family: str) -> Any:
    if family == "assortment":
        return {
            "items": np.array([i for a in actions for i in a], dtype=np.int64),
            "sizes": np.array([len(a) for a in actions], dtype=np.int64),
        }
    width = (-1, 2) if family == "dueling" else (-1,)
    return np.asarray(actions, dtype=np.int64).reshape(width)


def _unpack_actions(packed: Any, family: str, rounds: int) -> list[Any]:
    """The actions as the loop keeps them: ints, pairs or tuples of items."""
    if family == "assortment":
        if not isinstance(packed, dict):
            raise ValueError(
                "actions must hold the items and sizes of the assortments."
            )
        sizes = check_state_array(
            "actions['sizes']", packed.get("sizes"), (rounds,), dtype=np.int64, low=0
        )
        items = check_state_array(
            "actions['items']", packed.get("items"), (int(sizes.sum()),), dtype=np.int64
        )
        ends = np.cumsum(sizes)
        return [
            tuple(int(i) for i in items[end - size : end])
            for end, size in zip(ends, sizes, strict=True)
        ]
    if family == "dueling":
        pairs = check_state_array("actions", packed, (rounds, 2), dtype=np.int64)
        return [(int(i), int(j)) for i, j in pairs]
    return [
        int(a) for a in check_state_array("actions", packed, (rounds,), dtype=np.int64)
    ]


@dataclass(frozen=True)
class Checkpoints:
    """Checkpointing of a run (``simulate``): every ``every`` rounds, ``save`` a snapshot.

    ``save`` must consume the snapshot before it returns (encode it, write it): its arrays
    may be the live arrays of the policies. ``resume`` starts the run from a snapshot
    (:meth:`Snapshot.from_state` checked it) instead of round 1.
    """

    every: int
    save: Callable[[Snapshot], None]
    resume: Snapshot | None = None

    def __post_init__(self) -> None:
        check_int("every", self.every, low=1)

    def due(self, rounds: int, horizon: int) -> bool:
        """Whether a snapshot is taken after ``rounds`` recorded rounds (not after the last)."""
        return rounds % self.every == 0 and rounds < horizon


@runtime_checkable
class Resumable(Protocol):
    """Members (``core.members``) whose play can be checkpointed and resumed."""

    def state_dicts(self) -> list[dict[str, Any]]:
        """Each member's ``state_dict()``."""
        ...

    def resume(
        self,
        horizon: int,
        envs: Sequence[Environment],
        states: Sequence[dict[str, Any]],
    ) -> None:
        """Instead of ``start``: take the states, then attach the (restored) environments."""
        ...
