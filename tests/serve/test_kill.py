"""SIGKILLs of a real ``banditkit serve`` under load: nothing acknowledged is lost.

A handful of kills here (the full 50-kill suite is ``benchmarks/serve/kill_suite.py``, see
docs/serve.md); each check is described in that script's docstring.
"""

from __future__ import annotations

import pytest

from .conftest import load_script

suite = load_script("kill_suite")


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_kills_lose_nothing(kind, request, tmp_path):
    db = None if kind == "sqlite" else request.getfixturevalue("pg_url")
    result = suite.run(
        db,
        kills=3,
        rate=60,
        policy="lints",
        params={},
        update_every=2,
        snapshot_every=60,
        seed=1,
        work=tmp_path,
        say=lambda _: None,
    )
    summary = {k: v for k, v in result.items() if k != "load"}
    assert result["passed"], summary
    assert result["acked_decisions"] > 50 and result["lost_decisions"] == 0


def test_a_failed_kill_cycle_leaves_no_server_running(tmp_path, monkeypatch):
    """A server that never becomes healthy: the suite raises, and kills what it started."""
    started = []
    start_server = suite.start_server

    def start(*args, **kwargs):
        started.append(start_server(*args, **kwargs))
        return started[-1]

    def never_healthy(server, port):
        raise RuntimeError("never healthy")

    monkeypatch.setattr(suite, "start_server", start)
    monkeypatch.setattr(suite, "wait_healthy", never_healthy)
    with pytest.raises(RuntimeError, match="never healthy"):
        suite.run(kills=2, rate=20, seed=3, work=tmp_path, say=lambda _: None)
    assert started
    assert all(server.poll() is not None for server in started)
