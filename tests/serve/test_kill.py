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
