"""Kill the decision service at random moments under load; check that nothing was lost.

A ``banditkit serve`` subprocess serves one policy while ``loadgen.py`` (a second process)
sends decisions and feedbacks at a constant rate, retrying across restarts with the same
event ids and recording every acknowledged event. The service is killed with SIGKILL
``--kills`` times (mostly while serving, sometimes while it starts and replays its log) and
restarted each time. Then the suite checks:

1. every acknowledged decision is in the log with the action the client received, and
   every acknowledged feedback is in the log;
2. no decision has two feedbacks (nothing applied twice);
3. the state that ``banditkit serve export`` writes (last snapshot, then the log after it)
   equals that of a twin that never stopped: the policy rebuilt by a reference
   implementation written here from the documented semantics (re-seed from the event id,
   act; buffer feedbacks and learn on the schedule) over the same log, in log order. Both
   act on 1,000 fresh contexts and must take the same actions, and their full states must
   match (``banditkit.testing.assert_same_state``); the twin also checks that every logged
   decision is what the policy decides again.

    python benchmarks/serve/kill_suite.py --kills 50 --rate 300 --out kill.json
    python benchmarks/serve/kill_suite.py --db postgresql://bk@127.0.0.1:5432/bk --kills 50

The tests run it with a handful of kills (tests/serve/test_kill.py).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
TOKEN = "kill-suite-token"


def free_port() -> int:
    """A free TCP port on the loopback interface."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def healthy(port: int) -> bool:
    """Whether the service on ``port`` answers /health with 200."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as r:
            return bool(r.status == 200)
    except OSError:
        return False


def start_server(
    config: Path, db: str, port: int, log: Path
) -> subprocess.Popen[bytes]:
    """``banditkit serve CONFIG --db DB --port PORT`` in a subprocess, output to ``log``."""
    env = {
        **os.environ,
        "REC_TOKEN": TOKEN,
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }
    cmd = [
        sys.executable,
        "-m",
        "banditkit",
        "serve",
        str(config),
        "--db",
        db,
        "--port",
        str(port),
    ]
    with open(log, "ab") as out:
        return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)


def wait_healthy(
    server: subprocess.Popen[bytes], port: int, timeout: float = 60.0
) -> None:
    """Wait for the service to answer (RuntimeError if it exits or times out)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if server.poll() is not None:
            raise RuntimeError(f"the service exited with {server.returncode}")
        if healthy(port):
            return
        time.sleep(0.05)
    raise RuntimeError("the service did not become healthy")


def kill(server: subprocess.Popen[bytes]) -> None:
    """SIGKILL the service and reap it."""
    server.send_signal(signal.SIGKILL)
    server.wait()


def write_config(
    path: Path,
    policy: str,
    params: dict[str, Any],
    update_every: int,
    snapshot_every: int,
    learning: str = "inline",
) -> None:
    """The service config of the suite: one policy ``rec`` with a bearer token."""
    entry = {
        "id": "rec",
        "learning": learning,
        "name": policy,
        "params": params,
        "update_every": update_every,
        "snapshot_every": snapshot_every,
        "join_window_s": 3600,
        "token_env": "REC_TOKEN",
    }
    path.write_text(json.dumps({"policies": [entry]}))  # JSON is YAML


# ---------------------------------------------------------------------- the twin
def reseed(policy: Any, key: str) -> None:
    """The documented re-seeding rule (docs/serve.md), written again independently."""
    digest = hashlib.sha256(key.encode()).digest()
    policy.rng.bit_generator.state = {
        "bit_generator": "PCG64",
        "state": {
            "state": int.from_bytes(digest[:16], "little"),
            "inc": int.from_bytes(digest[16:], "little") | 1,
        },
        "has_uint32": 0,
        "uinteger": 0,
    }


def read_log(db: str) -> list[tuple[int, str, str, Any, bytes | None]]:
    """(seq, kind, event_id, payload, data) of every event of policy ``rec``, in order."""
    import sqlalchemy as sa

    url = sa.engine.make_url(db)
    if url.drivername in ("postgresql", "postgres"):
        url = url.set(drivername="postgresql+psycopg")
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text(
                "SELECT seq, kind, event_id, payload, data FROM bk_events "
                "WHERE policy = 'rec' ORDER BY seq"
            )
        ).all()
    engine.dispose()
    return [
        (int(r[0]), r[1], r[2], json.loads(r[3]), None if r[4] is None else bytes(r[4]))
        for r in rows
    ]


def twin(
    events: list[tuple[int, str, str, Any, bytes | None]],
    name: str,
    params: dict[str, Any],
    update_every: int,
    learning: str = "inline",
) -> tuple[Any, int]:
    """(the policy after the log, decisions it would have taken otherwise), from scratch.

    Inline learning: every ``update_every`` feedbacks, the buffered ones are learned at
    once. Background learning: at such a point a copy of the model starts learning them
    (one step at a time: a point reached meanwhile starts the next step right after the
    current one is swapped in) and the copy replaces the model at the logged ``model``
    event; decisions meanwhile come from the model it was copied from.
    """
    import copy

    import banditkit as bk
    from banditkit.serve.config import serving_params

    params = serving_params(name, params)  # as the service builds it
    policy = bk.make_policy(name, **params)
    decided: dict[str, tuple[Any, Any]] = {}
    buffer: list[tuple[str, Any]] = []
    received = version = mismatches = 0
    step: tuple[Any, list[tuple[str, Any]]] | None = None
    pending = False

    def clone(
        model: Any,
    ) -> Any:  # deepcopy, or through the state for what it cannot copy
        try:
            return copy.deepcopy(model)
        except TypeError:
            other = bk.make_policy(name, **params)
            other.load_state_dict(copy.deepcopy(model.state_dict()))
            return other

    def learn(model: Any, items: list[tuple[str, Any]], at: int) -> None:
        reseed(model, f"learn:{model.seed}:{at}")
        for eid, value in items:
            model.update(*decided[eid], value)

    for _, kind, event_id, payload, data in events:
        if kind == "decision":
            assert data is not None
            k, d = payload["shape"]
            ctx = bk.Context(arms=np.frombuffer(data, "<f8")[: k * d].reshape(k, d))
            reseed(policy, f"decide:{policy.seed}:{event_id}")
            action = policy.act(ctx)
            logged = payload["action"]
            logged = tuple(logged) if isinstance(logged, list) else logged
            mismatches += action != logged
            decided[event_id] = (ctx, logged)
        elif kind == "model":
            assert step is not None
            learn(step[0], step[1], version)
            policy, version, step = step[0], version + 1, None
            if pending:
                step, buffer, pending = (clone(policy), buffer), [], False
        else:
            buffer.append((event_id, payload["feedback"]))
            received += 1
            if received % update_every:
                continue
            if learning == "inline":
                learn(policy, buffer, version)
                buffer, version = [], version + 1
            elif step is None:
                step, buffer = (clone(policy), buffer), []
            else:
                pending = True
    return policy, mismatches


def same_actions(a: Any, b: Any, n: int = 1000, seed: int = 12345) -> int:
    """How many of ``n`` fresh contexts the two policies decide differently."""
    import banditkit as bk

    rng = np.random.default_rng(seed)
    k, d = 10, a.d
    differ = 0
    for i in range(n):
        ctx = bk.Context(arms=rng.normal(size=(k, d)))
        actions = []
        for p in (a, b):
            reseed(p, f"decide:{p.seed}:fresh-{i}")
            actions.append(p.act(ctx))
        differ += actions[0] != actions[1]
    return differ


# ---------------------------------------------------------------------- the suite
def _load(
    work: Path, port: int, rate: float, seconds: float
) -> subprocess.Popen[bytes]:
    env = {**os.environ, "REC_TOKEN": TOKEN}
    cmd = [
        sys.executable, str(HERE / "loadgen.py"), "--url", f"http://127.0.0.1:{port}",
        "--token-env", "REC_TOKEN", "--rate", str(rate), "--duration", str(seconds),
        "--retry", "120", "--record", str(work / "acks.jsonl"), "--stop-file",
        str(work / "stop"), "--out", str(work / "load.json"), "--connections", "32",
    ]  # fmt: skip
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, env=env)


def _kill_cycles(
    config: Path,
    db: str,
    port: int,
    work: Path,
    kills: int,
    rng: random.Random,
    say: Any,
    started: list[subprocess.Popen[bytes]],
) -> tuple[subprocess.Popen[bytes], list[str]]:
    """Start, wait a random moment, SIGKILL; ``kills`` times. Returns the last server.

    Every server started is appended to ``started``, so that a failure midway (a server
    that never became healthy) leaves none running.
    """
    log = work / "server.log"
    moments = []

    def start() -> subprocess.Popen[bytes]:
        started.append(start_server(config, db, port, log))
        return started[-1]

    server = start()
    for i in range(kills):
        if rng.random() < 0.2:  # while it starts: imports, snapshot load, replay
            time.sleep(rng.uniform(0.0, 1.5))
            moments.append("starting" if not healthy(port) else "serving")
        else:
            wait_healthy(server, port)
            time.sleep(rng.uniform(0.1, 1.2))
            moments.append("serving")
        kill(server)
        say(f"kill {i + 1}/{kills} ({moments[-1]})")
        server = start()
    wait_healthy(server, port)
    return server, moments


def _status(port: int) -> dict[str, Any]:
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/policies/rec",
        headers={"Authorization": f"Bearer {TOKEN}"},
    )
    with urllib.request.urlopen(req, timeout=5) as r:
        return json.loads(r.read())


def _check_acks(
    work: Path, events: list[tuple[int, str, str, Any, bytes | None]]
) -> dict[str, Any]:
    decisions = {e[2]: e[3]["action"] for e in events if e[1] == "decision"}
    feedbacks: dict[str, int] = {}
    for e in events:
        if e[1] == "feedback":
            feedbacks[e[2]] = feedbacks.get(e[2], 0) + 1
    acks = [
        json.loads(line)
        for line in (work / "acks.jsonl").read_text().splitlines()
        if line
    ]
    lost_d = [
        a
        for a in acks
        if a["kind"] == "decision" and decisions.get(a["event_id"]) != a["action"]
    ]
    lost_f = [
        a for a in acks if a["kind"] == "feedback" and a["event_id"] not in feedbacks
    ]
    return {
        "acked_decisions": sum(a["kind"] == "decision" for a in acks),
        "acked_feedbacks": sum(a["kind"] == "feedback" for a in acks),
        "acked_duplicates": sum(a.get("duplicate", False) for a in acks),
        "lost_decisions": len(lost_d),
        "lost_feedbacks": len(lost_f),
        "feedback_twice": sum(n > 1 for n in feedbacks.values()),
        "logged_decisions": len(decisions),
        "logged_feedbacks": len(feedbacks),
    }


def run(
    db: str | None = None,
    *,
    kills: int = 50,
    rate: float = 300.0,
    policy: str = "linucb",
    params: dict[str, Any] | None = None,
    update_every: int = 1,
    snapshot_every: int = 500,
    learning: str = "inline",
    seed: int = 0,
    work: Path | None = None,
    say: Any = print,
) -> dict[str, Any]:
    """Run the suite; the result dict has ``passed`` and every count checked."""
    work = Path(work or tempfile.mkdtemp(prefix="bk-kill-"))
    work.mkdir(parents=True, exist_ok=True)
    db = db or f"sqlite:///{work / 'events.db'}"
    params = dict(params if params is not None else {"nu": 0.5})
    config = work / "serve.yaml"
    write_config(config, policy, params, update_every, snapshot_every, learning)
    port = free_port()
    rng = random.Random(seed)
    started = time.monotonic()
    load = _load(work, port, rate, seconds=3600)
    servers: list[subprocess.Popen[bytes]] = []
    try:
        server, moments = _kill_cycles(config, db, port, work, kills, rng, say, servers)
        time.sleep(1.0)  # serve under load a while after the last restart
    except BaseException:
        for started_server in servers:  # none left running after a failure
            if started_server.poll() is None:
                kill(started_server)
        raise
    finally:
        (work / "stop").touch()
        load.wait(timeout=300)
    status = _status(port)
    server.send_signal(signal.SIGTERM)
    server.wait(timeout=60)
    result: dict[str, Any] = {"db": db.split("@")[-1], "kills": kills}
    result["moments"] = {m: moments.count(m) for m in sorted(set(moments))}
    result.update(_verify(db, work, status, policy, params, update_every, learning))
    result["load"] = json.loads((work / "load.json").read_text())
    result["seconds"] = round(time.monotonic() - started, 1)
    return result


def _verify(
    db: str,
    work: Path,
    status: dict[str, Any],
    policy: str,
    params: dict[str, Any],
    update_every: int,
    learning: str,
) -> dict[str, Any]:
    """Every check of the module docstring on the log, the acks and the exported state."""
    import banditkit as bk
    from banditkit.testing import assert_same_state

    exported = work / "rec.bk"
    export = ["serve", "export", "--db", db, "--policy", "rec", "--out", str(exported)]
    subprocess.run(
        [sys.executable, "-m", "banditkit", *export], check=True, capture_output=True
    )
    events = read_log(db)
    result = _check_acks(work, events)
    restored = bk.load_policy(exported)
    reference, mismatches = twin(events, policy, params, update_every, learning)
    result["replayed_decisions_differing"] = mismatches
    result["status_decisions_match"] = status["decisions"] == result["logged_decisions"]
    try:
        assert_same_state(restored, reference)
        result["same_state"] = True
    except AssertionError as exc:
        result["same_state"] = False
        result["state_difference"] = str(exc)[:500]
    result["fresh_actions_differing"] = same_actions(restored, reference)
    result["passed"] = bool(
        result["lost_decisions"] == 0
        and result["lost_feedbacks"] == 0
        and result["feedback_twice"] == 0
        and mismatches == 0
        and result["same_state"]
        and result["fresh_actions_differing"] == 0
        and result["status_decisions_match"]
        and result["acked_feedbacks"] > 0
    )
    return result


def main(argv: list[str] | None = None) -> int:
    """Run the suite from the command line; exit 1 when a check fails."""
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--db", default=None, help="database URL (default: SQLite in the work folder)"
    )
    p.add_argument("--kills", type=int, default=50)
    p.add_argument("--rate", type=float, default=300.0, help="decisions per second")
    p.add_argument("--policy", default="linucb")
    p.add_argument("--params", default='{"nu": 0.5}', help="JSON hyper-parameters")
    p.add_argument("--update-every", type=int, default=1)
    p.add_argument("--snapshot-every", type=int, default=500)
    p.add_argument("--learning", choices=["inline", "background"], default="inline")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--work", default=None)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    result = run(
        args.db,
        kills=args.kills,
        rate=args.rate,
        policy=args.policy,
        params=json.loads(args.params),
        update_every=args.update_every,
        snapshot_every=args.snapshot_every,
        learning=args.learning,
        seed=args.seed,
        work=Path(args.work) if args.work else None,
    )
    text = json.dumps(result, indent=1)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(text)
    return 0 if result["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
