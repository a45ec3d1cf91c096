"""The ``serve`` commands: errors a user can fix exit 2 in one line; export; secrets."""

from __future__ import annotations

import numpy as np
from typer.testing import CliRunner

import banditkit as bk
from banditkit.cli import app

from .conftest import open_service

runner = CliRunner()


def test_bad_config_exits_2_in_one_line(tmp_path):
    config = tmp_path / "serve.yaml"
    config.write_text("policies:\n  - {id: rec, name: linucbb}\n")
    result = runner.invoke(
        app, ["serve", str(config), "--db", f"sqlite:///{tmp_path}/e.db"]
    )
    assert result.exit_code == 2
    assert "linucbb" in result.output and "Traceback" not in result.output


def test_missing_token_variable(tmp_path, monkeypatch):
    monkeypatch.delenv("BK_TEST_TOKEN", raising=False)
    config = tmp_path / "serve.yaml"
    config.write_text(
        "policies:\n  - {id: rec, name: linucb, token_env: BK_TEST_TOKEN}\n"
    )
    result = runner.invoke(
        app, ["serve", str(config), "--db", f"sqlite:///{tmp_path}/e.db"]
    )
    assert result.exit_code == 2 and "BK_TEST_TOKEN is not set" in result.output


def test_database_passwords_are_never_printed(tmp_path):
    url = "postgresql://bk:hunter2@127.0.0.1:1/bk"
    config = tmp_path / "serve.yaml"
    config.write_text("policies:\n  - {id: rec, name: linucb}\n")
    for args in (
        ["serve", str(config), "--db", url],
        [
            "serve",
            "export",
            "--db",
            url,
            "--policy",
            "rec",
            "--out",
            str(tmp_path / "x.bk"),
        ],
        ["evaluate", "--db", url, "--policy", "rec"],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, result.output
        assert "hunter2" not in result.output and "bk:***@127.0.0.1" in result.output
    result = runner.invoke(app, ["serve", str(config), "--db", "sqlite://"])
    assert result.exit_code == 2 and "in-memory" in result.output
    result = runner.invoke(app, ["serve", str(config), "--db", "not a url"])
    assert result.exit_code == 2 and "--db" in result.output


def test_export_writes_what_load_policy_reads(tmp_path):
    url = f"sqlite:///{tmp_path / 'e.db'}"
    service = open_service({"policies": [{"id": "rec", "name": "linucb"}]}, url)
    service.start()
    rng = np.random.default_rng(0)
    for i in range(20):
        service.submit(
            "decide", "rec", f"e{i}", bk.Context(arms=rng.normal(size=(3, 2)))
        ).result()
        service.submit("feedback", "rec", f"e{i}", 1.0).result()
    live = service.states["rec"].policy.state_dict()
    service.stop()
    out = tmp_path / "rec.bk"
    result = runner.invoke(
        app, ["serve", "export", "--db", url, "--policy", "rec", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "20 decisions, 20 feedbacks, model version 20" in result.output
    restored = bk.load_policy(out)
    assert restored.t == 20
    np.testing.assert_array_equal(
        restored.state_dict()["state"]["model"]["theta"],
        live["state"]["model"]["theta"],
    )
    result = runner.invoke(
        app, ["serve", "export", "--db", url, "--policy", "zz", "--out", str(out)]
    )
    assert result.exit_code == 2 and "policies: rec" in result.output
    empty = f"sqlite:///{tmp_path / 'empty.db'}"
    result = runner.invoke(
        app, ["serve", "export", "--db", empty, "--policy", "rec", "--out", str(out)]
    )
    assert result.exit_code == 2 and "no banditkit service log" in result.output


def test_help_lists_the_group():
    result = runner.invoke(app, ["serve", "--help"])
    assert (
        result.exit_code == 0 and "export" in result.output and "run" in result.output
    )
