"""The writer in a process of its own: the HTTP side and the writer stop sharing one GIL.

``banditkit serve run`` serves with ``--writer process`` by default. The HTTP process
parses, validates and answers requests; a child process (``multiprocessing``, *spawn*)
holds the :class:`~banditkit.serve.service.Service`: every policy's state, the event log,
the snapshots and the learner. They talk over one pipe:

    HTTP process -> writer     ("ask", id, kind, policy, event id, body)  one per request
                               ("statuses", id)                           the counts
                               ("stop",)                                   a graceful stop
    writer -> HTTP process     ("answers", [(id, answer)], commits, alive) one per group
                               ("statuses", id, {policy: counts}, alive)
                               ("ready", counts) | ("failed", kind, message) at the start

The writer answers a group of requests with one message, after its commit, as the
threaded service answers its event loop; the commits' durations ride along for the
metrics. Nothing else changes: the same writer, the same group commit, the same log and
snapshots, so a log written in one mode is served in the other.

Why: under one interpreter the HTTP thread (about 250 us of CPU a request here) and the
writer (about 170 us of Python an event) take turns on one GIL, and near 2,000 requests a
second the queue for it is the latency. In two processes each has its own (docs/serve.md,
"The writer in its own process": on SQLite a p99 of 4.4-4.9 ms against 7.2-8.1 ms at 1,000
decisions and 1,000 feedbacks a second, and 9.3 against 19.8 ms at 1,500 + 1,500, for
about 100 us more CPU a request: the pipe and the second interpreter).

A killed HTTP process takes its writer with it: on Linux the kernel kills the child with
its parent (``PR_SET_PDEATHSIG``); elsewhere the writer exits at the end of the pipe, as
if killed, without a further commit. What was committed is in the log either way, so a
restart replays it exactly as after a kill of a one-process service. The pipe carries
pickles between these two processes only: nothing from a client is unpickled (bodies
reach the writer as the validated ``Context`` objects the HTTP side built).
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import logging
import multiprocessing
import os
import signal
import sys
import threading
import time
from typing import Any

from banditkit.plugins import import_plugins
from banditkit.serve.config import ServeConfig, ServeConfigError
from banditkit.serve.service import Command, Service
from banditkit.serve.state import ServeError
from banditkit.serve.store import DatabaseError, describe, redact

__all__ = ["WriterProcess"]

logger = logging.getLogger("banditkit.serve")

#: How long ``stop`` waits for the writer's graceful stop (answers, snapshots) to end.
STOP_TIMEOUT_S = 120.0
#: How long ``refresh`` waits for the writer's counts before answering 503.
STATUS_TIMEOUT_S = 10.0


def _wire(answer: Any) -> tuple[Any, ...]:
    """An answer as it crosses the pipe: ("ok", value) or ("error", status, message, errors)."""
    if isinstance(answer, ServeError):
        return ("error", answer.status, str(answer), answer.errors)
    if isinstance(answer, BaseException):
        return ("error", 500, "internal error", None)
    return ("ok", answer)


def _unwire(wired: tuple[Any, ...]) -> tuple[bool, Any]:
    """(ok, value or ServeError) of a wired answer."""
    if wired[0] == "ok":
        return True, wired[1]
    _, status, message, errors = wired
    return False, ServeError(status, message, errors=errors)


def _die_with_parent() -> None:
    """On Linux, have the kernel SIGKILL this process when its parent dies."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)


class _Answers:
    """The writer side's sink: each group's answers (and commits) as one pipe message."""

    def __init__(self, conn: Any, service: Service) -> None:
        self.conn = conn
        self.service = service
        self.lock = threading.Lock()  # the writer thread and the reader both send
        self.commits: list[tuple[float, int]] = []

    def committed(self, seconds: float, events: int) -> None:
        """``Service.on_commit``: kept for the next message (the commit's own answers)."""
        with self.lock:
            self.commits.append((seconds, events))

    def __call__(self, answers: list[tuple[Any, Any]]) -> None:
        wired = [(rid, _wire(answer)) for rid, answer in answers]
        with self.lock:  # the commits kept until now go with these answers, once
            commits, self.commits = self.commits, []
            self._send(("answers", wired, commits, self.service.alive))

    def send(self, message: tuple[Any, ...]) -> None:
        """Send ``message`` to the HTTP process."""
        with self.lock:
            self._send(message)

    def _send(self, message: tuple[Any, ...]) -> None:
        try:
            self.conn.send(message)
        except OSError:  # the HTTP process is gone: nothing is waiting for this
            os._exit(0)


def _writer_main(
    conn: Any, config: ServeConfig, url: str, imports: list[str], parent: int
) -> None:
    """The writer process: open the service, then serve the pipe until stopped."""
    _die_with_parent()
    if os.getppid() != parent:  # the parent died before the line above
        os._exit(0)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s: %(message)s")
    sys.setswitchinterval(0.001)  # the reader thread and the writer share this one
    try:
        import_plugins(imports)  # own policies, as the HTTP process did
        service = Service(config, url)
        service.open()
    except ServeConfigError as exc:
        conn.send(("failed", "config", str(exc)))
        return
    except DatabaseError as exc:
        conn.send(("failed", "database", str(exc)))
        return
    except Exception as exc:
        conn.send(("failed", "other", f"{type(exc).__name__}: {describe(exc)}"))
        return
    answers = _Answers(conn, service)
    service.on_commit = answers.committed
    service.start()
    gc.collect()
    gc.freeze()  # as ``create_app(freeze_gc=True)`` does in the HTTP process
    answers.send(("ready", service.statuses()))
    _serve_pipe(conn, service, answers)


def _serve_pipe(conn: Any, service: Service, answers: _Answers) -> None:
    """Read the HTTP process's messages until "stop" (stop gracefully) or the pipe's end."""
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            # the HTTP process died: stop as it did, without another commit
            os._exit(0)
        kind = message[0]
        if kind == "ask":
            _, rid, what, policy, event_id, body = message
            command = Command(what, policy, event_id, body, rid, sink=answers)
            refusal = service.post(command)
            if refusal is not None:
                answers([(rid, refusal)])
        elif kind == "statuses":
            answers.send(("statuses", message[1], service.statuses(), service.alive))
        elif kind == "stop":
            service.stop()
            answers.send(("stopped",))
            return


class WriterProcess:
    """The HTTP side of a :class:`~banditkit.serve.service.Service` run in a child process.

    It offers what :func:`~banditkit.serve.app.create_app` uses of a ``Service``:
    ``open``, ``start`` (in the event loop), ``stop``, ``ask``, ``alive``, ``status``,
    ``statuses`` and ``refresh``, ``config`` and ``on_commit``.

    Args:
        config: The validated configuration.
        url: The database URL.
        imports: Modules or ``.py`` files registering own policies (``--import``): the
            writer process imports them too.

    Example:
        >>> from banditkit.serve import load_config
        >>> cfg = load_config({"policies": [{"id": "rec", "name": "linucb"}]})
        >>> WriterProcess(cfg, "sqlite:///events.db").url
        'sqlite:///events.db'
    """

    def __init__(
        self, config: ServeConfig, url: str, *, imports: list[str] | None = None
    ) -> None:
        self.config = config
        self.url = redact(url)
        self._url = url
        self.imports = list(imports or [])
        self.on_commit: Any = None
        self._process: Any = None
        self._conn: Any = None
        self._send_lock = threading.Lock()
        self._ids = itertools.count()
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._statuses: dict[str, dict[str, Any]] = {}
        self._writer_alive = False
        self._closing = False
        self._loop: asyncio.AbstractEventLoop | None = None

    def open(self) -> None:
        """Start the writer process and wait until it has restored every policy.

        Raises:
            ServeConfigError: A policy's definition differs from its log's.
            DatabaseError: The database cannot be opened.
            RuntimeError: The writer process failed otherwise, or died.
        """
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        self._process = context.Process(
            target=_writer_main,
            args=(child, self.config, self._url, self.imports, os.getpid()),
            name="banditkit-serve-writer",
            daemon=True,
        )
        self._process.start()
        child.close()
        while not self._conn.poll(0.2):
            if not self._process.is_alive():
                raise RuntimeError(
                    "the writer process died while opening the service "
                    f"(exit code {self._process.exitcode})"
                )
        message = self._conn.recv()
        if message[0] == "failed":
            self._process.join(10)
            _, kind, text = message
            raise {"config": ServeConfigError, "database": DatabaseError}.get(
                kind, RuntimeError
            )(text)
        self._statuses = message[1]
        self._writer_alive = True

    def start(self) -> None:
        """Read the writer's answers in the running event loop (the app's lifespan)."""
        if self._conn is None:
            self.open()
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(self._conn.fileno(), self._readable)

    def _readable(self) -> None:
        """Settle what the writer answered (the event loop's reader callback)."""
        try:
            while self._conn.poll():
                self._receive(self._conn.recv())
        except (EOFError, OSError):
            self._lost()

    def _receive(self, message: tuple[Any, ...]) -> None:
        kind = message[0]
        if kind == "answers":
            _, answers, commits, alive = message
            self._writer_alive = alive
            if self.on_commit is not None:
                for seconds, events in commits:
                    self.on_commit(seconds, events)
            for rid, wired in answers:
                self._settle(rid, *_unwire(wired))
        elif kind == "statuses":
            _, rid, statuses, alive = message
            self._statuses, self._writer_alive = statuses, alive
            self._settle(rid, True, statuses)
        elif kind == "stopped":
            self._writer_alive = False

    def _settle(self, rid: int, ok: bool, value: Any) -> None:
        future = self._waiting.pop(rid, None)
        if future is None or future.done():
            return
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    def _lost(self) -> None:
        """The pipe ended: fail whatever waits, stop reading."""
        self._writer_alive = False
        if self._loop is not None and self._conn is not None:
            self._loop.remove_reader(self._conn.fileno())
        if not self._closing:
            logger.error("the writer process ended; the service answers 503")
        waiting, self._waiting = self._waiting, {}
        for future in waiting.values():
            if not future.done():
                future.set_exception(
                    ServeError(503, "the writer process is not running; retry")
                )

    async def _request(self, message: tuple[Any, ...]) -> Any:
        """Send ``message`` (its id second) and wait for its answer."""
        if self._closing or not self.alive:
            raise ServeError(503, "the service is stopping; retry")
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[message[1]] = future
        try:
            with self._send_lock:
                self._conn.send(message)
        except (OSError, ValueError):
            self._waiting.pop(message[1], None)
            raise ServeError(503, "the writer process is not running; retry") from None
        return await future

    async def ask(self, kind: str, policy: str, event_id: str | None, body: Any) -> Any:
        """Send a request to the writer and wait for its answer (see ``Service.ask``).

        Raises:
            ServeError: The writer refused the request, or it is not running (503).
        """
        return await self._request(
            ("ask", next(self._ids), kind, policy, event_id, body)
        )

    async def refresh(self) -> None:
        """Fetch the policies' counts from the writer (``status``, ``statuses``).

        Raises:
            ServeError: 503 if the writer does not answer within ``STATUS_TIMEOUT_S``.
        """
        try:
            await asyncio.wait_for(
                self._request(("statuses", next(self._ids))), STATUS_TIMEOUT_S
            )
        except TimeoutError:
            raise ServeError(503, "the writer did not answer; retry") from None

    def status(self, policy: str) -> dict[str, Any] | None:
        """The counts of a policy at the last ``refresh``."""
        return self._statuses.get(policy)

    def statuses(self) -> dict[str, dict[str, Any]]:
        """The counts of every policy at the last ``refresh``."""
        return dict(self._statuses)

    @property
    def alive(self) -> bool:
        """Whether the writer process runs and its log is writable."""
        return (
            self._process is not None
            and self._process.is_alive()
            and self._writer_alive
        )

    def stop(self) -> None:
        """Stop the writer gracefully: it answers what is queued, snapshots, closes the log."""
        self._closing = True
        if self._process is None:
            return
        if self._process.is_alive():
            try:
                with self._send_lock:
                    self._conn.send(("stop",))
            except (OSError, ValueError):
                pass
            deadline = time.monotonic() + STOP_TIMEOUT_S
            while self._process.is_alive() and time.monotonic() < deadline:
                self._process.join(0.1)
            if self._process.is_alive():
                logger.error("the writer process did not stop; killing it")
                self._process.kill()
        self._process.join()
        self._process = None
