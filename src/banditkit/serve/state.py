"""One served policy's state, advanced by logged events only: the same code live and in replay.

A :class:`PolicyState` holds the policy, its model version, the feedbacks waiting for the next
learning step (:mod:`banditkit.serve.schedule`), the decisions still inside their join window
and counters. The live path computes an event (a decision, a feedback, a default feedback when
a window closes), applies it here and hands its log record to the writer; the replay path
applies the logged records in log order through the same methods. So the state after a
restart (the last snapshot, then the log after it) is the state of a service that never
stopped.

Decision randomness. Before each ``act`` the policy's generator is re-seeded from the SHA-256
digest of ``"decide:{seed}:{event id}"``, and before each learning step from that of
``"learn:{seed}:{version}"`` (PCG64, the generator of every banditkit policy: its 128-bit
state is the digest's first 16 bytes, its increment the last 16 with the low bit set; other
bit generators are seeded through a ``SeedSequence`` of the digest). A decision therefore
depends only on the model and the event id: replaying the log reproduces it, and a client's
retry gets the logged one.
"""

from __future__ import annotations

import copy
import hashlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from banditkit.core import Context, Policy
from banditkit.core.serialization import PolicyFileError, policy_from_bytes
from banditkit.serve.config import PolicySpec, build_policy
from banditkit.serve.schedule import make_schedule
from banditkit.serve.store import Event, EventLog

__all__ = [
    "Decision",
    "PolicyState",
    "Record",
    "ServeError",
    "context_from",
    "copy_policy",
    "decode_context",
    "encode_context",
    "reseed",
]

logger = logging.getLogger("banditkit.serve")

Record = dict[str, Any]
"""An event for the log: seq, policy, kind, event_id, ts, payload, data."""

COUNTS = ("decisions", "feedbacks", "defaults", "updates", "late", "duplicates")


class ServeError(Exception):
    """A request the service refuses, with its HTTP status and a message naming the field.

    Attributes:
        status: 401, 404, 405, 409, 413, 422 or 503.
        tainted: True when the refused request may have changed the policy's memory (the
            writer then rebuilds the state from the log).
        errors: For a body failing validation, each error (loc, msg, type).
    """

    def __init__(
        self,
        status: int,
        message: str,
        *,
        tainted: bool = False,
        errors: list[dict[str, Any]] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.tainted = tainted
        self.errors = errors


@dataclass
class Decision:
    """A logged decision, as the state keeps it."""

    seq: int
    event_id: str
    ctx: Context
    action: Any
    propensity: float | None
    version: int
    status: str = (
        "open"  # "open", "fed" (feedback learned) or "expired" (window closed)
    )

    def reply(self) -> dict[str, Any]:
        """The body of the decide response."""
        action = list(self.action) if isinstance(self.action, tuple) else self.action
        return {
            "event_id": self.event_id,
            "action": action,
            "propensity": self.propensity,
            "model_version": self.version,
        }


def reseed(policy: Policy, key: str) -> None:
    """Set the policy's generator, in place (every holder sees it), to the stream of ``key``.

    Example:
        >>> import banditkit as bk
        >>> p = bk.make_policy("random", seed=1)
        >>> reseed(p, "decide:1:a"); x = p.rng.random()
        >>> reseed(p, "decide:1:a"); x == p.rng.random()
        True
    """
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    bits = policy.rng.bit_generator
    if isinstance(bits, np.random.PCG64):
        bits.state = {
            "bit_generator": "PCG64",
            "state": {
                "state": int.from_bytes(digest[:16], "little"),
                "inc": int.from_bytes(digest[16:], "little") | 1,
            },
            "has_uint32": 0,
            "uinteger": 0,
        }
    else:
        entropy = int.from_bytes(digest, "little")
        bits.state = type(bits)(np.random.SeedSequence(entropy)).state


def context_from(payload: dict[str, Any]) -> Context:
    """The :class:`Context` of a requested context (``arms``, ``revenues``, ``max_size``).

    Raises:
        ValueError: Bad arms, revenues or capacity (the message names the field).
    """
    revenues = payload.get("revenues")
    return Context(
        arms=np.asarray(payload["arms"], dtype=np.float64),
        revenues=None if revenues is None else np.asarray(revenues, dtype=np.float64),
        max_size=payload.get("max_size"),
    )


def encode_context(ctx: Context) -> tuple[dict[str, Any], bytes]:
    """(shape fields for the payload, the arrays as little-endian float64 bytes)."""
    fields: dict[str, Any] = {"shape": list(ctx.arms.shape)}
    data = np.ascontiguousarray(ctx.arms, dtype="<f8").tobytes()
    if ctx.revenues is not None:
        fields["revenues"] = True
        data += np.ascontiguousarray(ctx.revenues, dtype="<f8").tobytes()
    if ctx.max_size is not None:
        fields["max_size"] = ctx.max_size
    return fields, data


def decode_context(payload: dict[str, Any], data: bytes) -> Context:
    """The :class:`Context` a decision's payload and data hold (:func:`encode_context`).

    Example:
        >>> ctx = Context(arms=[[1.0, 2.0], [3.0, 4.0]], revenues=[1.0, 2.0], max_size=1)
        >>> back = decode_context(*encode_context(ctx))
        >>> back.arms.tolist(), back.revenues.tolist(), back.max_size
        ([[1.0, 2.0], [3.0, 4.0]], [1.0, 2.0], 1)
    """
    k, d = payload["shape"]
    values = np.frombuffer(data, dtype="<f8").astype(np.float64)
    return Context(
        arms=values[: k * d].reshape(k, d),
        revenues=values[k * d :] if payload.get("revenues") else None,
        max_size=payload.get("max_size"),
    )


_NOT_DEEPCOPYABLE: set[type] = set()


def copy_policy(policy: Policy) -> Callable[[], Policy]:
    """Freeze the policy as it is now; calling the result builds an independent copy.

    ``copy.deepcopy`` when the policy allows it (then the copy is made at once, and
    cheaply); otherwise (a policy holding, say, a LAPACK routine) a deep copy of its
    ``state_dict()`` is taken now and loaded into a new policy of the same parameters
    when called, the path ``banditkit.load_policy`` takes: that part, the slow one, can
    run on another thread.

    Example:
        >>> import banditkit as bk
        >>> p = bk.make_policy("linucb", seed=2)
        >>> copy_policy(p)().seed
        2
    """
    cls = type(policy)
    if cls not in _NOT_DEEPCOPYABLE:
        try:
            clone = copy.deepcopy(policy)
            return lambda: clone
        except (TypeError, copy.Error):
            _NOT_DEEPCOPYABLE.add(cls)
    params = policy.get_params()
    state = copy.deepcopy(policy.state_dict())

    def rebuild() -> Policy:
        other = cls(**params)
        other.load_state_dict(state)
        return other

    return rebuild


def _jsonable(action: Any) -> Any:
    return list(action) if isinstance(action, tuple) else action


def _action(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def learn(
    policy: Policy, items: list[tuple[Decision, Any]], version: int, label: str
) -> None:
    """Learn ``items`` (decision, feedback) in order, re-seeded for learning step ``version``.

    An update that raises is logged and skipped; it raises again in a replay, so the state
    stays deterministic.
    """
    reseed(policy, f"learn:{policy.seed}:{version}")
    for decision, value in items:
        try:
            policy.update(decision.ctx, decision.action, value)
        except Exception:
            logger.exception(
                "policy %s: update with %s failed", label, decision.event_id
            )


@dataclass
class Learning:
    """A learning step in the background: a copy of the model and what it learns.

    Attributes:
        make: Builds the copy of the model taken when the step started
            (:func:`copy_policy`); the copy learns on the learner thread while the service
            decides with the model it was copied from.
        policy: The copy, once built.
        items: The buffered (decision, feedback) pairs it learns.
        version: The model version it makes.
        done: Set once learned.
        submitted: Whether the learner thread has it.
    """

    make: Callable[[], Policy]
    items: list[tuple[Decision, Any]]
    version: int
    policy: Policy | None = None
    done: threading.Event = field(default_factory=threading.Event)
    submitted: bool = False

    def run(self, label: str) -> None:
        """Build the copy and learn (on whichever thread calls it); mark the step done."""
        try:
            self.policy = self.make()
            learn(self.policy, self.items, self.version - 1, label)
        finally:
            self.done.set()


@dataclass
class PolicyState:
    """The state of one served policy (see the module docstring).

    Args:
        spec: The policy's configuration.
        log: The event log, to look up decisions no longer in memory.
        next_seq: Hands out the log positions of new events (the writer's counter).
        cache_size: Decisions kept in memory for feedback joins and retries; older ones
            are read back from the log.
    """

    spec: PolicySpec
    log: EventLog
    next_seq: Callable[[], int]
    cache_size: int = 10_000
    policy: Policy = field(init=False)
    version: int = 0
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTS, 0))
    received: int = 0  # feedbacks (client and default) so far: the schedule's n
    last_seq: int = 0
    since_snapshot: int = 0
    replay_mismatches: int = 0
    buffer: list[tuple[Decision, Any]] = field(default_factory=list)
    open: OrderedDict[str, tuple[float, int]] = field(default_factory=OrderedDict)
    recent: OrderedDict[str, Decision] = field(default_factory=OrderedDict)
    absent: set[str] = field(default_factory=set)
    learning: Learning | None = None
    due_pending: bool = False

    def __post_init__(self) -> None:
        self.policy = build_policy(self.spec)
        self.schedule = make_schedule(self.spec.update_every)

    @property
    def id(self) -> str:
        """The policy id."""
        return self.spec.id

    # ------------------------------------------------------------------ lookups
    def _remember(self, decision: Decision) -> None:
        self.recent[decision.event_id] = decision
        self.recent.move_to_end(decision.event_id)
        while len(self.recent) > self.cache_size:
            self.recent.popitem(last=False)

    def lookup(self, event_id: str) -> Decision | None:
        """The logged decision of ``event_id`` (memory first, then the log), or None."""
        decision = self.recent.get(event_id)
        if decision is not None or event_id in self.absent:
            return decision
        found = self.log.find(self.id, "decision", event_id)
        return None if found is None else self._known(found)

    def prefetch(self, event_ids: set[str]) -> None:
        """Look the ids missing from memory up in the log with one query.

        Those the log lacks are remembered as absent until :meth:`forget_absent` (the
        writer calls both around each group), so a new client event id costs no query of
        its own.
        """
        missing = [e for e in event_ids if e not in self.recent]
        if not missing:
            return
        found = self.log.find_many(self.id, "decision", missing)
        for event in found.values():
            self._known(event)
        self.absent.update(e for e in missing if e not in found)

    def forget_absent(self) -> None:
        """Forget the ids :meth:`prefetch` found absent (their events may be logged now)."""
        self.absent.clear()

    def _known(self, event: Event) -> Decision:
        """The :class:`Decision` of a decision read from the log, kept in memory."""
        assert event.data is not None
        if event.event_id in self.open:
            status = "open"
        else:
            fed = self.log.find(self.id, "feedback", event.event_id)
            client = fed is not None and not fed.payload.get("default", False)
            status = "fed" if client else "expired"
        payload = event.payload
        decision = Decision(
            seq=event.seq,
            event_id=event.event_id,
            ctx=decode_context(payload, event.data),
            action=_action(payload["action"]),
            propensity=payload["propensity"],
            version=payload["model_version"],
            status=status,
        )
        self._remember(decision)
        return decision

    # ------------------------------------------------------------------ decisions
    def _act(self, event_id: str, ctx: Context) -> tuple[Any, float | None]:
        policy = self.policy
        if policy.d is not None and ctx.d != policy.d:
            raise ServeError(
                422,
                f"context.arms: each arm must have {policy.d} features (this policy's "
                f"dimension); got {ctx.d}.",
            )
        saved = policy.rng.bit_generator.state
        reseed(policy, f"decide:{policy.seed}:{event_id}")
        try:
            action = policy.act(ctx)
        except (ValueError, TypeError) as exc:
            policy.rng.bit_generator.state = saved
            raise ServeError(422, f"context: {exc}", tainted=True) from None
        p = policy.last_propensity
        return action, (None if p is None else float(p))

    def _add(self, decision: Decision, ts: float) -> None:
        self.counts["decisions"] += 1
        self.open[decision.event_id] = (ts + self.spec.join_window_s, decision.seq)
        self._remember(decision)
        self._applied(decision.seq)

    def _applied(self, seq: int) -> None:
        self.last_seq = seq
        self.since_snapshot += 1

    def decide(
        self, event_id: str, ctx: Context, ts: float
    ) -> tuple[Decision, Record | None]:
        """Decide for a new event, or return the logged decision of a known one.

        Returns:
            (decision, record to log; None when the event was already logged).

        Raises:
            ServeError: 422 for a context the policy cannot act on.
        """
        known = self.recent.get(event_id)  # the writer prefetched what it must check
        if known is not None:
            return known, None
        action, propensity = self._act(event_id, ctx)
        decision = Decision(
            self.next_seq(), event_id, ctx, action, propensity, self.version
        )
        self._add(decision, ts)
        fields, data = encode_context(ctx)
        payload = {
            **fields,
            "action": _jsonable(action),
            "propensity": propensity,
            "model_version": self.version,
        }
        record = self._record(decision.seq, "decision", event_id, ts, payload, data)
        return decision, record

    def _record(
        self,
        seq: int,
        kind: str,
        event_id: str,
        ts: float,
        payload: Any,
        data: bytes | None = None,
    ) -> Record:
        return {
            "seq": seq,
            "policy": self.id,
            "kind": kind,
            "event_id": event_id,
            "ts": ts,
            "payload": payload,
            "data": data,
        }

    # ------------------------------------------------------------------ feedback
    def check_feedback(self, value: Any, action: Any) -> Any:
        """The feedback normalised as the policy's family and likelihood require.

        Raises:
            ServeError: 422 naming ``feedback``.
        """
        try:
            return self.policy._check_feedback(value, action)
        except (ValueError, TypeError) as exc:
            raise ServeError(422, str(exc)) from None

    def _due(self) -> None:
        """The schedule is due: learn now (inline), or start a background step."""
        if self.spec.learning == "inline":
            learn(self.policy, self.buffer, self.version, self.id)
            self.counts["updates"] += len(self.buffer)
            self.buffer.clear()
            self.version += 1
        elif self.learning is None:
            self.start_learning()
        else:  # one step at a time: the next starts when this one is swapped in
            self.due_pending = True

    def start_learning(self) -> None:
        """Copy the model and hand it the buffered feedbacks (a background step)."""
        self.learning = Learning(
            copy_policy(self.policy), list(self.buffer), self.version + 1
        )
        self.buffer.clear()
        self.due_pending = False

    def _swap(self, seq: int) -> None:
        """Put the learned copy in service (learning it first in a replay)."""
        learning = self.learning
        assert learning is not None, "a model event without a learning step"
        if not learning.done.is_set():
            learning.run(self.id)
        assert learning.policy is not None, "the learning step failed"
        self.policy, self.version = learning.policy, learning.version
        self.counts["updates"] += len(learning.items)
        self.learning = None
        self._applied(seq)

    def learned(self, ts: float) -> list[Record]:
        """The model event of a finished background step, swapped in (live path)."""
        if self.learning is None or not self.learning.done.is_set():
            return []
        seq, n = self.next_seq(), len(self.learning.items)
        self._swap(seq)
        payload = {"version": self.version, "updates": n}
        return [self._record(seq, "model", f"v{self.version}", ts, payload)]

    def resume(self) -> Learning | None:
        """After a commit: start the step left due, and return a step to hand out."""
        if self.learning is None and self.due_pending:
            self.start_learning()
        if self.learning is None or self.learning.submitted:
            return None
        self.learning.submitted = True
        return self.learning

    def _feed(self, decision: Decision, value: Any, *, default: bool) -> None:
        self.open.pop(decision.event_id, None)
        if default:
            self.counts["defaults"] += 1
        else:
            decision.status = "fed"
            self.counts["feedbacks"] += 1
        self.received += 1
        self.buffer.append((decision, value))
        if self.schedule.due(self.received):
            self._due()

    def feedback(
        self, event_id: str, value: Any, ts: float
    ) -> tuple[bool, list[Record]]:
        """Join a feedback to its decision.

        Returns:
            (duplicate, records to log: the windows closed by now, then this feedback).

        Raises:
            ServeError: 404 for an unknown event, 409 past its join window, 422 for a
                feedback the policy does not accept.
        """
        records = self.expire(ts)
        decision = self.lookup(event_id)
        if decision is None:
            raise ServeError(
                404, f"event_id: policy {self.id!r} logged no decision {event_id!r}."
            )
        if decision.status == "fed":
            self.counts["duplicates"] += 1
            return True, records
        if decision.status == "expired":
            raise ServeError(
                409,
                f"event_id: the join window of {event_id!r} "
                f"({self.spec.join_window_s:g} s) has closed.",
            )
        value = self.check_feedback(value, decision.action)
        seq = self.next_seq()
        self._feed(decision, value, default=False)
        self._applied(seq)
        records.append(self._record(seq, "feedback", event_id, ts, {"feedback": value}))
        return False, records

    def expire(self, now: float) -> list[Record]:
        """Close the join windows ended by ``now``; learn the default feedback if any."""
        records: list[Record] = []
        default = self.spec.default_feedback
        while self.open:
            event_id, (deadline, _) = next(iter(self.open.items()))
            if deadline >= now:
                break
            self.open.popitem(last=False)
            self.counts["late"] += 1
            decision = self.recent.get(event_id)
            if decision is not None:
                decision.status = "expired"
            if default is None:
                continue
            decision = self.lookup(event_id)
            assert decision is not None
            decision.status = "expired"
            value = self.check_feedback(default, decision.action)
            seq = self.next_seq()
            self._feed(decision, value, default=True)
            self._applied(seq)
            payload = {"feedback": value, "default": True}
            records.append(self._record(seq, "feedback", event_id, now, payload))
        return records

    # ------------------------------------------------------------------ replay
    def apply(self, event: Event) -> None:
        """Apply one logged event (the replay path)."""
        seq, kind, event_id, ts, payload, data = event
        if kind == "model":
            self._swap(seq)
            if self.due_pending:  # live, the next step started right after this event
                self.start_learning()
            return
        if kind == "decision":
            assert data is not None
            ctx = decode_context(payload, data)
            logged = _action(payload["action"])
            action, _ = self._act(event_id, ctx)
            if action != logged:
                self.replay_mismatches += 1
                logger.warning(
                    "policy %s: replaying %s gave action %s, the log holds %s",
                    self.id,
                    event_id,
                    action,
                    logged,
                )
            decision = Decision(
                seq,
                event_id,
                ctx,
                logged,
                payload["propensity"],
                payload["model_version"],
            )
            self._add(decision, ts)
            return
        joined = self.lookup(event_id)
        if joined is None:  # cannot happen in a log this service wrote
            raise ValueError(f"feedback {seq} joins no logged decision {event_id!r}")
        default = bool(payload.get("default", False))
        if default:
            self.counts["late"] += 1
            joined.status = "expired"
        self._feed(joined, payload["feedback"], default=default)
        self._applied(seq)

    def snapshot(self) -> tuple[dict[str, Any], Callable[[], Policy]]:
        """(meta, a frozen copy of the policy): the state after event ``last_seq``.

        The copy (:func:`copy_policy`) is serialised later, off the writer's thread
        (``state_dict()`` and the ``.bk`` bytes take milliseconds for a long history).
        """
        open_from = next(iter(self.open.values()))[1] if self.open else None
        meta = {
            "seq": self.last_seq,
            "version": self.version,
            "received": self.received,
            "counts": dict(self.counts),
            "buffer": [[d.event_id, v] for d, v in self.buffer],
            "open_from": open_from,
            "due_pending": self.due_pending,
        }
        self.since_snapshot = 0
        return meta, copy_policy(self.policy)

    def restore(self) -> int:
        """Load the last snapshot, rebuild the open windows, replay the log after it.

        A snapshot that does not read back (``PolicyFileError``: damaged or truncated)
        is logged and skipped: the previous one (each policy keeps two), else none, with
        the log after it replayed; the log holds every event.

        Windows that closed meanwhile stay open until the writer's next :meth:`expire`
        (a reader's replay, such as ``serve export``, logs nothing).

        Returns:
            The number of events replayed.
        """
        for snap in self.log.snapshots_of(self.id):  # the newest that reads back
            try:
                self._load(*snap)
            except PolicyFileError as exc:
                logger.error(
                    "policy %s: the snapshot after event %d is damaged (%s); "
                    "restoring from an older one and the log after it",
                    self.id,
                    snap[0],
                    exc,
                )
                continue
            if self.due_pending:  # the step started right after the snapshot's event
                self.start_learning()
            break
        replayed = 0
        for event in self.log.read(self.id, self.last_seq):
            self.apply(event)
            replayed += 1
        self.since_snapshot = 0
        self.log.end_read()
        return replayed

    def _load(self, seq: int, meta: dict[str, Any], data: bytes) -> None:
        policy = policy_from_bytes(data)
        if policy.get_params() != self.policy.get_params():
            raise ValueError(
                f"the snapshot of policy {self.id!r} has parameters "
                f"{policy.get_params()}, its definition {self.policy.get_params()}"
            )
        self.policy = policy
        self.last_seq = seq
        self.version = int(meta["version"])
        self.received = int(meta["received"])
        self.counts.update({k: int(v) for k, v in meta["counts"].items()})
        window = self.spec.join_window_s
        if meta["open_from"] is not None:
            low = int(meta["open_from"])
            fed = {e for e, _, _ in self.log.ids(self.id, "feedback", low, seq)}
            for event_id, at, ts in self.log.ids(self.id, "decision", low, seq):
                if event_id not in fed:
                    self.open[event_id] = (ts + window, at)
        self.due_pending = bool(meta.get("due_pending", False))
        for event_id, value in meta["buffer"]:
            decision = self.lookup(event_id)
            assert decision is not None, event_id
            self.buffer.append((decision, value))

    def status(self) -> dict[str, Any]:
        """The counts ``GET /v1/policies/{id}`` returns."""
        return {
            "id": self.id,
            "name": self.spec.name,
            **self.counts,
            "pending": len(self.open),
            "buffered": len(self.buffer),
            "learning": self.learning is not None,
            "version": self.version,
            "log_position": self.last_seq,
            "replay_mismatches": self.replay_mismatches,
        }
