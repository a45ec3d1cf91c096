"""The single writer: one thread owns every policy's state and the event log.

Requests are queued; the writer thread takes everything waiting (up to ``max_batch``),
computes each event in arrival order, writes the whole group to the log in one transaction
(one sync to disk for all of them: *group commit*), and only then answers every request of
the group. So no reply leaves before its event is durable, and the log's order is the order
in which the state advanced, which is what replay follows.

A refused request changes nothing. If computing a decision fails inside the policy (a
context it cannot act on), the events already computed are committed and the policy's state
is rebuilt from the log, as at a restart. If the log cannot be written, the group is answered
503 (nothing of it is recorded; a retry is safe) and every state is rebuilt from the log.

After a group the writer takes the due snapshots (a copy of the policy, every
``snapshot_every`` events); a snapshot thread serialises them, and the writer stores them in
its next groups' transactions, at most ``snapshot_part_bytes`` a group (a larger file goes in
parts, its row with the last one). One connection writes the database: a snapshot neither
waits for SQLite's write lock nor holds it against the events, and no group waits for a whole
large snapshot to be written. A graceful stop snapshots every policy with new events. With
``learning: background`` a learner thread runs the learning steps on copies; the writer swaps
each learned model in, as the last event of a group, with a logged ``model`` event.
"""

from __future__ import annotations

import asyncio
import json
import logging
import queue
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from banditkit.core.serialization import policy_to_bytes
from banditkit.serve.config import ServeConfig, ServeConfigError
from banditkit.serve.state import PolicyState, Record, ServeError
from banditkit.serve.store import (
    EventLog,
    Snapshot,
    SnapshotPart,
    describe,
    redact,
)

__all__ = ["Command", "Service"]

logger = logging.getLogger("banditkit.serve")

_STOP = object()
_WAKE = object()  # a learning step finished: the writer looks at once


@dataclass
class Command:
    """A request for the writer: "decide" (body: a Context) or "feedback" (the value).

    ``future`` is a ``concurrent.futures.Future`` (``loop`` and ``sink`` None), an asyncio
    future of ``loop``, or any key of ``sink``: the writer settles the asyncio ones with
    one call into their loop per group, and hands each sink its (future, answer) pairs in
    one call per group (``serve.process``: the answers go to another process).
    """

    kind: str
    policy: str
    event_id: str | None
    body: Any
    future: Any
    loop: asyncio.AbstractEventLoop | None = None
    sink: Callable[[list[tuple[Any, Any]]], None] | None = None


def _settle(answers: list[tuple[Any, Any]]) -> None:
    """Set each future's result, or exception when the answer is one (skip cancelled)."""
    for future, answer in answers:
        if future.done():
            continue
        if isinstance(answer, BaseException):
            future.set_exception(answer)
        else:
            future.set_result(answer)


class Service:
    """The served policies over one database (see the module docstring).

    Args:
        config: The validated configuration.
        url: The database URL (``sqlite:///events.db``, ``postgresql://...``).
        cache_size: Decisions per policy kept in memory (older ones are read back).
        max_batch: Most requests committed together.
        tick_s: Longest wait of the idle writer (join windows close at this resolution).
        careful_s: After a retry of a decision memory had forgotten (caught by the log's
            unique key, which costs a rebuild of every state from the log), the writer
            looks every event id of its groups up in the log for this many seconds, so
            that further such retries cost one query per group instead of a rebuild each.
        snapshot_part_bytes: Most bytes of snapshot stored with one group; a larger
            snapshot is stored in parts over several groups.
        clock: Wall-clock time in seconds (tests replace it).
        on_commit: Called with (seconds, events) after each commit (metrics).
    """

    def __init__(
        self,
        config: ServeConfig,
        url: str,
        *,
        cache_size: int = 10_000,
        max_batch: int = 256,
        tick_s: float = 0.25,
        careful_s: float = 60.0,
        snapshot_part_bytes: int = 256 * 1024,
        clock: Callable[[], float] = time.time,
        on_commit: Callable[[float, int], None] | None = None,
    ) -> None:
        self.config = config
        self.url = redact(url)
        self._url = url
        self.cache_size = max(cache_size, max_batch)
        self.max_batch = max_batch
        self.tick_s = tick_s
        self.careful_s = careful_s
        self._careful_until = -float(
            "inf"
        )  # time.monotonic() of the careful window's end
        self.rebuilds = 0  # rebuilds after a retry of a forgotten decision
        self.clock = clock
        self.on_commit = on_commit
        self.states: dict[str, PolicyState] = {}
        self._log: EventLog | None = None
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._closing = False
        self._seq = 0
        self._last_ts = 0.0
        self.broken: str | None = None
        self._snapshotter = _Snapshotter(self)
        self._writes = _SnapshotWrites(snapshot_part_bytes)  # for the writer's commits
        self._learner = _Learner(self)

    # ------------------------------------------------------------------ start and stop
    @property
    def log(self) -> EventLog:
        """The writer's connection to the database."""
        if self._log is None:
            raise RuntimeError("the service is not open")
        return self._log

    def open(self) -> None:
        """Connect, check the stored definitions, restore every policy, close due windows.

        Raises:
            DatabaseError: The database cannot be opened.
            ServeConfigError: A policy's definition differs from the one its log was written
                under.
        """
        self._log = EventLog(self._url, synchronous=self.config.sqlite_synchronous)
        # nothing is being stored: parts without their snapshot were left by a stopped
        # writer, and a snapshot still queued here starts again from its first part
        self._log.drop_orphan_parts()
        self._writes.restart()
        for spec in self.config.policies:
            self._check_definition(spec.id, spec.definition())
        self._restore_all()
        if any(s.policy.needs_torch for s in self.states.values()):
            import torch  # noqa: F401 - now, not in the first request (seconds)

    def _check_definition(self, policy: str, definition: dict[str, Any]) -> None:
        mine = json.loads(json.dumps(definition))
        stored = self.log.definition(policy)
        if stored is None:
            self.log.register(policy, mine, self.clock())
        elif stored != mine:
            raise ServeConfigError(
                f"policy {policy!r}: its log in {self.url} was written under {stored}, "
                f"the config now gives {mine}; replaying the log under another model "
                "would not rebuild its state. Give the changed policy a new id."
            )

    def _restore_all(self) -> None:
        self._seq, self._last_ts = self.log.last()
        self.states.clear()  # in place: the metrics read this very dict
        for spec in self.config.policies:
            self.states[spec.id] = self._restore(spec.id)
        self.log.append(self._expire_all(self._now()))
        self.broken = None

    def _restore(self, policy: str) -> PolicyState:
        state = PolicyState(
            self.config.policy(policy), self.log, self._next_seq, self.cache_size
        )
        started = time.perf_counter()
        replayed = state.restore()
        logger.info(
            "policy %s (%s): restored at log position %d, %d events replayed in %.2f s",
            policy,
            state.spec.name,
            state.last_seq,
            replayed,
            time.perf_counter() - started,
        )
        return state

    def start(self) -> None:
        """Start the writer thread (opening the service first if it is not open)."""
        if self._log is None:
            self.open()
        self._closing = False
        self._snapshotter.start()
        self._learner.start()
        self._thread = threading.Thread(
            target=self._run, name="banditkit-serve-writer", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Answer what is queued, stop the writer, snapshot what changed, close the log."""
        self._closing = True
        if self._thread is not None:
            self._queue.put(_STOP)
            self._thread.join()
            self._thread = None
        if self._log is not None and self.broken is None:
            self._snapshots(force=True)
        self._snapshotter.stop()
        self._store_serialised()
        self._learner.stop()
        if self._log is not None:
            self._log.close()
            self._log = None

    @property
    def alive(self) -> bool:
        """Whether the writer runs and the log is writable."""
        return (
            self._thread is not None and self._thread.is_alive() and self.broken is None
        )

    # ------------------------------------------------------------------ requests
    def submit(
        self, kind: str, policy: str, event_id: str | None, body: Any
    ) -> Future[Any]:
        """Queue a request from any thread; the future holds the reply or a ServeError."""
        future: Future[Any] = Future()
        refusal = self.post(Command(kind, policy, event_id, body, future))
        if refusal is not None:
            future.set_exception(refusal)
        return future

    def post(self, command: Command) -> ServeError | None:
        """Queue ``command`` for the writer; the refusal instead when the service refuses it."""
        refusal = self._refusal()
        if refusal is None:
            self._queue.put(command)
        return refusal

    def status(self, policy: str) -> dict[str, Any] | None:
        """The counts of a served policy (None while it is being restored)."""
        state = self.states.get(policy)
        return None if state is None else state.status()

    def statuses(self) -> dict[str, dict[str, Any]]:
        """The counts of every served policy (the metrics read them at each scrape)."""
        return {pid: state.status() for pid, state in self.states.items()}

    async def refresh(self) -> None:
        """Nothing to do: the counts are read in this process (``WriterProcess`` asks)."""

    def _refusal(self) -> ServeError | None:
        """503 while the service stops, or with ``limits.max_pending`` requests waiting."""
        if self._closing or self._thread is None:
            return ServeError(503, "the service is stopping; retry")
        waiting = self._queue.qsize()
        if waiting >= self.config.limits.max_pending:
            return ServeError(
                503,
                f"the service is overloaded ({waiting} requests waiting, "
                f"limits.max_pending = {self.config.limits.max_pending}); retry later",
            )
        return None

    async def ask(self, kind: str, policy: str, event_id: str | None, body: Any) -> Any:
        """Queue a request from the event loop and wait for its reply.

        Raises:
            ServeError: The request is refused (or the service is stopping or
                overloaded: 503).
        """
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        refusal = self.post(Command(kind, policy, event_id, body, future, loop))
        if refusal is not None:
            raise refusal
        return await future

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _now(self) -> float:
        """Wall-clock time, never earlier than the last logged event's (windows stay ordered)."""
        self._last_ts = max(self.clock(), self._last_ts)
        return self._last_ts

    # ------------------------------------------------------------------ the writer
    def _run(self) -> None:
        stop = False
        while not stop:
            try:
                first = self._queue.get(timeout=self.tick_s)
            except queue.Empty:
                first = None
            batch = [] if first is None else [first]
            while len(batch) < self.max_batch:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            stop = any(c is _STOP for c in batch)
            commands = [c for c in batch if isinstance(c, Command)]
            careful = time.monotonic() < self._careful_until
            try:
                self._group(commands, careful=careful)
            except Exception:  # a bug: answer, rebuild, keep serving
                logger.exception("the writer failed on a group of %d", len(commands))
                self._fail(
                    commands, ServeError(500, "internal error; nothing was logged")
                )
                self._rebuild()

    def _fail(self, commands: list[Command], error: ServeError) -> None:
        self._answer([(c, error) for c in commands])

    @staticmethod
    def _answer(replies: list[tuple[Command, Any]]) -> None:
        """Settle the futures: threads' at once, each event loop's and sink's in one call."""
        by_loop: dict[Any, list[tuple[Any, Any]]] = {}
        for command, answer in replies:
            to = command.loop if command.sink is None else command.sink
            by_loop.setdefault(to, []).append((command.future, answer))
        for to, answers in by_loop.items():
            if to is None:
                _settle(answers)
            elif isinstance(to, asyncio.AbstractEventLoop):
                if not to.is_closed():
                    to.call_soon_threadsafe(_settle, answers)
            else:
                to(answers)

    def _group(self, commands: list[Command], *, careful: bool = False) -> None:
        """Compute, commit and answer a group of commands (see the module docstring).

        A decision's event id is looked up in memory only: an id the log holds but memory
        has forgotten makes the commit fail on the log's unique key, and the group runs
        again, ``careful``, with every id looked up in the log first.
        """
        if self.broken is not None:
            self._rebuild()
            if self.broken is not None:
                error = ServeError(503, f"the event log is unavailable ({self.broken})")
                self._fail(commands, error)
                return
        now = self._now()
        records = self._expire_all(now)
        self._prefetch(commands, careful)
        replies: list[tuple[Command, Any]] = []
        first = 0  # commands before this one are committed and answered
        for i, command in enumerate(commands):
            state = self.states[command.policy]
            try:
                reply, new = self._handle(state, command, now)
            except ServeError as exc:
                replies.append((command, exc))
                if exc.tainted:  # commit what came before, then rebuild from the log
                    outcome = self._commit(records, replies, careful)
                    if outcome != "ok":
                        self._again(outcome, commands[first:])
                        return
                    records, replies, first = [], [], i + 1
                    self.states[state.id] = self._restore(state.id)
                    self._prefetch(commands[first:], careful)
                continue
            records.extend(new)
            replies.append((command, reply))
        for state in self.states.values():  # background steps done: last in the group
            records.extend(state.learned(now))
        outcome = self._commit(records, replies, careful)
        if outcome == "ok":
            self._snapshots()
            for state in self.states.values():
                state.forget_absent()
                step = state.resume()
                if step is not None:
                    self._learner.put((state.id, step))
        else:
            self._again(outcome, commands[first:])

    def _again(self, outcome: str, commands: list[Command]) -> None:
        """After a commit refused for a known event id, run the commands again, carefully.

        The writer stays careful for ``careful_s`` seconds: a client retrying old events
        (after a restart, or on purpose) costs one rebuild per window, not one per request.
        """
        if outcome == "duplicate":
            self.rebuilds += 1
            self._careful_until = time.monotonic() + self.careful_s
            self._group(commands, careful=True)

    def _prefetch(self, commands: list[Command], careful: bool) -> None:
        """One log query per policy for the ids to look up (feedbacks; all if careful)."""
        wanted: dict[str, set[str]] = {}
        for c in commands:
            if c.event_id is not None and (careful or c.kind == "feedback"):
                wanted.setdefault(c.policy, set()).add(c.event_id)
        for policy, ids in wanted.items():
            self.states[policy].prefetch(ids)

    def _handle(
        self, state: PolicyState, command: Command, now: float
    ) -> tuple[Any, list[Record]]:
        if command.kind == "decide":
            event_id = command.event_id or uuid.uuid4().hex
            decision, record = state.decide(event_id, command.body, now)
            return decision.reply(), [] if record is None else [record]
        assert command.event_id is not None
        duplicate, records = state.feedback(command.event_id, command.body, now)
        return {"duplicate": duplicate}, records

    def _expire_all(self, now: float) -> list[Record]:
        records: list[Record] = []
        for state in self.states.values():
            records.extend(state.expire(now))
        return records

    def _commit(
        self, records: list[Record], replies: list[tuple[Command, Any]], careful: bool
    ) -> str:
        """Write ``records`` in one transaction, then answer ``replies``.

        Returns:
            "ok"; "duplicate" when the log already holds one of the events (nothing is
            answered: the states are rebuilt for a careful run); "failed" when the write
            failed (answered 503, states rebuilt).
        """
        import sqlalchemy as sa

        started = time.perf_counter()
        parts, snapshots, stored = self._writes.next(self._writes.part_bytes)
        try:
            self.log.append(records, snapshots, parts)
        except sa.exc.IntegrityError as exc:
            if not careful:
                self._restore_all()
                return "duplicate"
            self._write_failed(exc, replies)
            return "failed"
        except Exception as exc:
            self._write_failed(exc, replies)
            return "failed"
        stored()
        if self.on_commit is not None and records:
            self.on_commit(time.perf_counter() - started, len(records))
        self._answer(replies)
        return "ok"

    def _write_failed(
        self, exc: BaseException, replies: list[tuple[Command, Any]]
    ) -> None:
        logger.error("writing the event log failed: %s", describe(exc))
        error = ServeError(503, "the event log could not be written; retry")
        self._fail([c for c, _ in replies], error)
        self.broken = "a write failed"
        self._rebuild()

    def _rebuild(self) -> None:
        """Reconnect and rebuild every state from the log (after a failed write)."""
        try:
            if self._log is not None:
                try:
                    self._log.close()
                except Exception:
                    logger.debug("closing the broken connection failed", exc_info=True)
            self._log = EventLog(self._url, synchronous=self.config.sqlite_synchronous)
            self._restore_all()
        except Exception as exc:
            self.broken = describe(exc)
            logger.error("the event log is unavailable: %s", self.broken)

    def _store_serialised(self) -> None:
        """Store the serialised snapshots now, whole (the writer does not run)."""
        parts, snapshots, stored = self._writes.next(None)
        if snapshots and self._log is not None and self.broken is None:
            try:
                self._log.append((), snapshots, parts)
                stored()
            except Exception as exc:
                logger.error(
                    "storing %d snapshots failed: %s", len(snapshots), describe(exc)
                )

    def _snapshots(self, *, force: bool = False) -> None:
        """Take the due snapshots (all changed ones when ``force``) for the snapshotter."""
        for state in self.states.values():
            due = state.since_snapshot >= state.spec.snapshot_every
            if state.learning is None and (due or (force and state.since_snapshot > 0)):
                meta, policy = state.snapshot()
                self._snapshotter.put((state.id, meta, policy, self._now()))


class _Worker:
    """A thread doing one kind of work for the writer, in the order it was handed.

    Without a running thread (before ``start``, after ``stop``) the work is done at once
    on the caller's thread.
    """

    name = "worker"

    def __init__(self, service: Service) -> None:
        self.service = service
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the thread."""
        self._thread = threading.Thread(
            target=self._run, name=f"banditkit-serve-{self.name}", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Finish what is queued, then stop the thread."""
        if self._thread is not None:
            self._queue.put(_STOP)
            self._thread.join()
            self._thread = None

    def put(self, item: Any) -> None:
        """Hand over a piece of work (done now when the thread does not run)."""
        if self._thread is None:
            self._do(item, inline=True)
        else:
            self._queue.put(item)

    def _run(self) -> None:
        while (item := self._queue.get()) is not _STOP:
            self._do(item, inline=False)
        self._done()

    def _do(self, item: Any, *, inline: bool) -> None:
        raise NotImplementedError

    def _done(self) -> None:
        """Release what the thread held."""


class _Snapshotter(_Worker):
    """Serialises snapshots in the order they were taken, on its own thread.

    A snapshot's serialisation (``state_dict()``, the ``.bk`` bytes, its digest) can take
    tens of milliseconds; done here, it does not hold up the writer, which stores the bytes
    in its next transaction. Items: (policy id, meta, a frozen copy of the policy
    (``copy_policy``), time). Done inline (no thread running: the writer neither), the
    snapshot is stored at once.
    """

    name = "snapshots"

    def _do(self, item: Any, *, inline: bool) -> None:
        policy, meta, make, ts = item
        try:
            state = policy_to_bytes(make())
        except Exception as exc:
            logger.error("policy %s: the snapshot failed: %s", policy, describe(exc))
            return
        self.service._writes.add(Snapshot(policy, meta["seq"], ts, meta, state))
        if inline:
            self.service._store_serialised()


class _SnapshotWrites:
    """Serialised snapshots waiting for the writer's commits, and how far the first got.

    The snapshot thread adds; the writer takes what its next commit stores
    (:meth:`next`) and, once that commit succeeded, calls the function it got, which
    moves on (a failed commit leaves everything to be taken again).
    """

    def __init__(self, part_bytes: int) -> None:
        self.part_bytes = part_bytes
        self._queue: deque[Snapshot] = deque()
        self._offset = 0  # bytes of the first snapshot already stored in parts
        self._part = 0

    def add(self, snapshot: Snapshot) -> None:
        """Queue a serialised snapshot (from any thread)."""
        self._queue.append(snapshot)

    def restart(self) -> None:
        """Store the first queued snapshot from its first part again (a reopened log)."""
        self._offset, self._part = 0, 0

    def next(
        self, budget: int | None
    ) -> tuple[list[SnapshotPart], list[Snapshot], Callable[[], None]]:
        """(parts, finished snapshots, done) for one commit of at most ``budget`` bytes.

        A snapshot that fits what is left of the budget goes whole, in its row; a larger
        one in parts of up to the budget, its row (state empty) with the last part. None:
        everything at once.
        """
        parts: list[SnapshotPart] = []
        rows: list[Snapshot] = []
        left = float("inf") if budget is None else budget
        offset, part, taken = self._offset, self._part, 0
        for snapshot in list(self._queue):
            size = len(snapshot.state)
            if offset == 0 and size <= left:
                rows.append(snapshot)
                left -= size
                taken += 1
                continue
            if left <= 0 or (offset == 0 and size <= self.part_bytes):
                break  # the next commit
            end = int(min(size, offset + left))
            parts.append(
                SnapshotPart(
                    snapshot.policy, snapshot.seq, part, snapshot.state[offset:end]
                )
            )
            left -= end - offset
            offset, part = end, part + 1
            if offset < size:
                break
            rows.append(snapshot._replace(state=b""))
            offset, part, taken = 0, 0, taken + 1

        def done() -> None:
            for _ in range(taken):
                self._queue.popleft()
            self._offset, self._part = offset, part

        return parts, rows, done


class _Learner(_Worker):
    """Runs background learning steps one after the other on its own thread.

    A finished step wakes the writer, which swaps the learned model in with a logged
    ``model`` event (``PolicyState.learned``). Steps of a state that was rebuilt meanwhile
    are dropped: the rebuilt state hands out its own. Items: (policy id, step).
    """

    name = "learner"

    def _do(self, item: Any, *, inline: bool) -> None:
        policy, step = item
        try:
            step.run(policy)
        except Exception:
            logger.exception("policy %s: a learning step failed", policy)
        if not inline:
            self.service._queue.put(_WAKE)  # the writer swaps it in
