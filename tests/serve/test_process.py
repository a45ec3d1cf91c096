"""The writer in its own process (``serve.process``): the same answers, failures, and death.

The HTTP API itself runs against both writers in ``test_app.py``; the kill suite
(``test_kill.py``) SIGKILLs ``banditkit serve``, which uses the writer process by default.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time

import httpx
import numpy as np
import pytest

from banditkit.serve import DatabaseError, ServeConfigError

from .conftest import Live, open_service, open_writer_process

CONFIG = {
    "policies": [
        {"id": "rec", "name": "lints", "params": {"nu": 0.5}, "update_every": 2},
        {"id": "duel", "name": "colstim"},
    ]
}


def _traffic(live: Live) -> list[dict]:
    """Decisions and feedbacks of both policies, retries and refusals among them."""
    rng = np.random.default_rng(7)
    replies = []
    with httpx.Client(base_url=live.url, timeout=30) as client:
        for i in range(30):
            for policy in ("rec", "duel"):
                arms = np.round(rng.normal(size=(5, 3)), 3).tolist()
                body = {"context": {"arms": arms}, "event_id": f"{policy}-{i}"}
                r = client.post(f"/v1/policies/{policy}/decide", json=body)
                replies.append({"code": r.status_code, **r.json()})
                value = float(rng.normal()) if policy == "rec" else int(i % 2)
                fb = {"event_id": f"{policy}-{i}", "feedback": value}
                for _ in range(1 + (i % 7 == 0)):  # some feedback twice
                    r = client.post(f"/v1/policies/{policy}/feedback", json=fb)
                    replies.append({"code": r.status_code, **r.json()})
        r = client.post(
            "/v1/policies/rec/feedback", json={"event_id": "x", "feedback": 1}
        )
        replies.append({"code": r.status_code, **r.json()})
        for policy in ("rec", "duel"):
            replies.append(client.get(f"/v1/policies/{policy}").json())
    return replies


def test_the_writer_process_answers_as_the_writer_thread(tmp_path):
    """Same requests, same answers: actions, propensities, duplicates, refusals, counts."""
    answers = {}
    for mode in ("thread", "process"):
        url = f"sqlite:///{tmp_path / mode}.db"
        service = (open_service if mode == "thread" else open_writer_process)(
            CONFIG, url
        )
        with Live(service) as live:
            answers[mode] = _traffic(live)
    assert answers["process"] == answers["thread"]
    assert answers["process"][-2]["feedbacks"] == 30
    assert sum(a.get("code") == 404 for a in answers["process"]) == 1


def test_open_failures_raise_what_the_writer_thread_raises(tmp_path):
    url = f"sqlite:///{tmp_path / 'e.db'}"
    open_service(CONFIG, url).stop()  # the log now holds these definitions
    changed = {"policies": [{"id": "rec", "name": "linucb"}]}
    with pytest.raises(ServeConfigError, match="new id"):
        open_writer_process(changed, url)
    with pytest.raises(DatabaseError):
        open_writer_process(CONFIG, f"sqlite:///{tmp_path / 'no' / 'such' / 'e.db'}")


def test_a_dead_writer_is_a_503_and_unhealthy(tmp_path):
    writer = open_writer_process(CONFIG, f"sqlite:///{tmp_path / 'e.db'}")
    with Live(writer) as live, httpx.Client(base_url=live.url, timeout=30) as client:
        body = {"context": {"arms": [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]}}
        assert client.post("/v1/policies/rec/decide", json=body).status_code == 200
        writer._process.kill()
        writer._process.join()
        r = client.post("/v1/policies/rec/decide", json=body)
        assert r.status_code == 503 and r.headers["retry-after"] == "1"
        assert client.get("/health").status_code == 503
        assert client.get("/v1/policies/rec").status_code == 503
        metrics = client.get("/metrics")  # the last counts known, still scraped
        assert metrics.status_code == 200
        assert 'banditkit_serve_decisions_total{policy="rec"}' in metrics.text


def _running(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie waiting to be reaped."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG")
def test_the_writer_dies_with_a_killed_parent(tmp_path):
    """A SIGKILLed HTTP process leaves no writer behind to race its restart."""
    script = textwrap.dedent(
        f"""
        import sys, time
        from banditkit.serve import load_config
        from banditkit.serve.process import WriterProcess
        w = WriterProcess(load_config({CONFIG!r}), "sqlite:///{tmp_path / "e.db"}")
        w.open()
        print(w._process.pid, flush=True)
        time.sleep(600)
        """
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True
    )
    try:
        child = int(parent.stdout.readline())
        assert _running(child)
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        end = time.monotonic() + 10
        while time.monotonic() < end and _running(child):
            time.sleep(0.05)
        if _running(child):
            pytest.fail("the writer process outlived its killed parent")
    finally:
        parent.kill()
