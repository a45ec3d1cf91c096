"""Open-loop load generator for the banditkit decision service (standard library only).

Sends decisions at a constant rate and, for each acknowledged decision, its feedback ``--lag``
seconds after the decision's intended send time, over keep-alive HTTP/1.1 connections.
Latency is measured from the *intended* send time, so a slow server cannot slow the
generator down and hide its own queueing (no coordinated omission). Run it in its own
process, next to the server:

    python benchmarks/serve/loadgen.py --url http://127.0.0.1:8000 --policy rec \
        --rate 1000 --duration 30 --arms 10 --dim 20 --token-env REC_TOKEN --out load.json

With ``--retry S`` a request that fails (connection refused, reset, 5xx) is sent again with
the same event id, after 50 ms and then backing off to 1 s, for up to S seconds (what a
client does across a restart of the service); ``--record FILE`` writes every acknowledged
event as a JSON line ({"kind", "event_id", "action" or "duplicate"}), which
``kill_suite.py`` checks against the database; ``--timeline FILE`` writes every acknowledged
request's due time and latency (CSV), to see *when* the slow ones came; ``--stop-file F`` ends the schedule early
once F exists (requests in flight still finish). Rewards are
Bernoulli(sigmoid(theta . x_action)) with a fixed random theta.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import random
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit


@dataclass
class Stats:
    """Latencies (seconds from the intended send time) and outcomes of one endpoint."""

    latencies: list[float] = field(default_factory=list)
    codes: dict[str, int] = field(default_factory=dict)

    def add(self, code: str, latency: float | None) -> None:
        """Count one answer (latency None: not acknowledged)."""
        self.codes[code] = self.codes.get(code, 0) + 1
        if latency is not None:
            self.latencies.append(latency)

    def summary(self) -> dict[str, Any]:
        """Counts and latency quantiles in milliseconds."""
        lat = sorted(self.latencies)

        def q(p: float) -> float | None:
            return (
                round(lat[min(len(lat) - 1, int(p * len(lat)))] * 1e3, 3)
                if lat
                else None
            )

        return {
            "ok": len(lat),
            "codes": self.codes,
            "p50_ms": q(0.50),
            "p90_ms": q(0.90),
            "p99_ms": q(0.99),
            "p999_ms": q(0.999),
            "max_ms": round(lat[-1] * 1e3, 3) if lat else None,
        }


class Pool:
    """Keep-alive connections to one host; a request takes an idle one or opens one."""

    def __init__(self, host: str, port: int, size: int) -> None:
        self.host, self.port = host, port
        self.idle: asyncio.Queue[tuple[Any, Any]] = asyncio.Queue()
        self.slots = asyncio.Semaphore(size)

    async def request(self, raw: bytes) -> tuple[int, bytes]:
        """Send one raw request; (status, body) of its answer."""
        async with self.slots:
            try:
                reader, writer = self.idle.get_nowait()
            except asyncio.QueueEmpty:
                reader, writer = await asyncio.open_connection(self.host, self.port)
            try:
                writer.write(raw)
                head = await reader.readuntil(b"\r\n\r\n")
                status = int(head.split(b" ", 2)[1])
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                body = await reader.readexactly(length)
            except BaseException:
                writer.close()
                raise
            self.idle.put_nowait((reader, writer))
            return status, body


class Load:
    """One run of the generator (see the module docstring)."""

    def __init__(self, args: argparse.Namespace) -> None:
        parts = urlsplit(args.url)
        self.pool = Pool(
            parts.hostname or "127.0.0.1", parts.port or 80, args.connections
        )
        self.args = args
        token = os.environ.get(args.token_env, "") if args.token_env else ""
        self.headers = b"Content-Type: application/json\r\n" + (
            f"Authorization: Bearer {token}\r\n".encode() if token else b""
        )
        rng = random.Random(args.seed)
        self.theta = [rng.gauss(0, 1) / math.sqrt(args.dim) for _ in range(args.dim)]
        self.contexts = []
        for _ in range(args.pool):
            arms = [
                [rng.gauss(0, 1) for _ in range(args.dim)] for _ in range(args.arms)
            ]
            means = [
                1
                / (
                    1
                    + math.exp(
                        -sum(a * t for a, t in zip(arm, self.theta, strict=True))
                    )
                )
                for arm in arms
            ]
            self.contexts.append((json.dumps(arms), means))
        self.rng = rng
        self.stats = {"decide": Stats(), "feedback": Stats()}
        self.record = open(args.record, "a") if args.record else None  # noqa: SIM115
        self.failures = 0
        self.timeline: list[tuple[str, float, float]] | None = (
            [] if args.timeline else None
        )
        self.start = 0.0

    def _raw(self, endpoint: str, body: str) -> bytes:
        data = body.encode()
        return (
            f"POST /v1/policies/{self.args.policy}/{endpoint} HTTP/1.1\r\n"
            f"Host: {self.pool.host}\r\nContent-Length: {len(data)}\r\n".encode()
            + self.headers
            + b"\r\n"
            + data
        )

    async def _send(
        self, endpoint: str, body: str, due: float
    ) -> dict[str, Any] | None:
        """Send until acknowledged (or retries run out); record the latency from ``due``."""
        raw = self._raw(endpoint, body)
        deadline = due + self.args.retry
        pause = 0.05
        while True:
            try:
                status, reply = await self.pool.request(raw)
            except (OSError, asyncio.IncompleteReadError, ValueError):
                status, reply = 0, b""
            retry = status == 0 or status >= 500
            if not retry or time.perf_counter() > deadline:
                break
            await asyncio.sleep(pause)
            pause = min(1.0, pause * 1.5)
        late = time.perf_counter() - due
        self.stats[endpoint].add(str(status), late if status == 200 else None)
        if self.timeline is not None and status == 200:
            self.timeline.append((endpoint[0], due - self.start, late))
        if status != 200:
            self.failures += 1
            return None
        return json.loads(reply)

    async def _round(self, i: int, due: float) -> None:
        args = self.args
        arms, means = self.contexts[i % len(self.contexts)]
        event_id = f"{args.prefix}-{i}"
        body = f'{{"event_id":"{event_id}","context":{{"arms":{arms}}}}}'
        decided = await self._send("decide", body, due)
        if decided is None:
            return
        if self.record:
            self.record.write(
                json.dumps(
                    {
                        "kind": "decision",
                        "event_id": event_id,
                        "action": decided["action"],
                    }
                )
                + "\n"
            )
        if args.no_feedback:
            return
        fb_due = due + args.lag
        await asyncio.sleep(max(0.0, fb_due - time.perf_counter()))
        reward = 1.0 if self.rng.random() < means[decided["action"]] else 0.0
        fb = await self._send(
            "feedback", f'{{"event_id":"{event_id}","feedback":{reward}}}', fb_due
        )
        if fb is not None and self.record:
            self.record.write(
                json.dumps(
                    {
                        "kind": "feedback",
                        "event_id": event_id,
                        "duplicate": fb["duplicate"],
                    }
                )
                + "\n"
            )

    async def run(self) -> dict[str, Any]:
        """Send the whole schedule; the summary."""
        args = self.args
        n = int(args.rate * args.duration)
        start = self.start = time.perf_counter() + 0.05
        tasks = set()
        for i in range(n):
            if args.stop_file and i % 50 == 0 and os.path.exists(args.stop_file):
                n = i
                break
            due = start + i / args.rate
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            task = asyncio.create_task(self._round(args.start + i, due))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        sent_for = time.perf_counter() - start
        while tasks:
            await asyncio.sleep(0.01)
        if self.record:
            self.record.close()
        if self.timeline is not None:
            with open(args.timeline, "w") as fh:
                fh.write("endpoint,due_s,latency_ms\n")
                for kind, due, late in sorted(self.timeline, key=lambda r: r[1]):
                    name = "decide" if kind == "d" else "feedback"
                    fh.write(f"{name},{due:.6f},{late * 1e3:.3f}\n")
        return {
            "rate": args.rate,
            "duration_s": args.duration,
            "scheduled": n,
            "send_seconds": round(sent_for, 3),
            "arms": args.arms,
            "dim": args.dim,
            "load_before": os.getloadavg()[0],
            **{k: s.summary() for k, s in self.stats.items()},
        }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Parse the options, run, print (and write) the summary."""
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--url", default="http://127.0.0.1:8000")
    p.add_argument("--policy", default="rec")
    p.add_argument(
        "--token-env", default=None, help="environment variable holding the token"
    )
    p.add_argument("--rate", type=float, default=100.0, help="decisions per second")
    p.add_argument("--duration", type=float, default=10.0, help="seconds of sending")
    p.add_argument("--arms", type=int, default=10)
    p.add_argument("--dim", type=int, default=20)
    p.add_argument(
        "--pool", type=int, default=500, help="distinct contexts, reused in turn"
    )
    p.add_argument(
        "--lag",
        type=float,
        default=0.05,
        help="feedback delay after the decision's due time",
    )
    p.add_argument("--no-feedback", action="store_true")
    p.add_argument("--connections", type=int, default=64)
    p.add_argument(
        "--retry", type=float, default=0.0, help="seconds to retry failed requests"
    )
    p.add_argument("--prefix", default="ev", help="event ids are PREFIX-i")
    p.add_argument("--start", type=int, default=0, help="first i of the event ids")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--record", default=None, help="append acknowledged events to this JSONL file"
    )
    p.add_argument("--out", default=None, help="write the summary JSON here")
    p.add_argument(
        "--timeline",
        default=None,
        help="write every acknowledged request's due time and latency here (CSV)",
    )
    p.add_argument(
        "--stop-file", default=None, help="stop scheduling once this file exists"
    )
    args = p.parse_args(argv)
    run = asyncio.run
    with contextlib.suppress(ImportError):
        import uvloop

        run = uvloop.run
    result = run(Load(args).run())
    text = json.dumps(result, indent=1)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text + "\n")
    print(text)
    return result


if __name__ == "__main__":
    main()
