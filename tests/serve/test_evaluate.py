"""Off-policy evaluation on the service's own log: estimates recover known values."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

import banditkit as bk
from banditkit.cli import app
from banditkit.serve.evaluate import (
    candidate_target,
    evaluate_service_log,
    parse_candidate,
    read_service_log,
)
from banditkit.serve.store import EventLog

from .conftest import open_service

K, D, N = 4, 3, 1500


def logged_service(url, name="eps-greedy", params=None, n=N, seed=0):
    """A service log of ``name`` on Bernoulli rewards with known means; returns the means."""
    rng = np.random.default_rng(seed)
    theta = np.array([1.0, -1.0, 0.5])
    cfg = {
        "policies": [
            {
                "id": "rec",
                "name": name,
                "params": {"epsilon": 0.5} if params is None else params,
            }
        ]
    }
    service = open_service(cfg, url)
    service.start()
    arms = rng.normal(size=(n, K, D))
    means = 1 / (1 + np.exp(-arms @ theta))
    futures = [
        service.submit("decide", "rec", f"e{i}", bk.Context(arms=arms[i]))
        for i in range(n)
    ]
    actions = np.array([f.result(timeout=60)["action"] for f in futures])
    rewards = (rng.random(n) < means[np.arange(n), actions]).astype(float)
    missing = rng.random(n) < 0.1  # no feedback: left out of the estimates
    futures = [
        service.submit("feedback", "rec", f"e{i}", float(rewards[i]))
        for i in range(n)
        if not missing[i]
    ]
    for f in futures:
        f.result(timeout=60)
    service.stop()
    return means, actions, ~missing


def test_estimates_contain_the_true_values(tmp_path):
    url = f"sqlite:///{tmp_path / 'e.db'}"
    means, actions, kept = logged_service(url)
    text, report = evaluate_service_log(
        url, "rec", ["linucb:nu=0.1"], out=tmp_path / "r"
    )
    assert report["usable"] == kept.sum() and report["decisions"] == N
    assert report["dropped"] == {"no feedback": N - kept.sum()}
    assert 0.85 < report["usable_share"] < 0.95
    m = means[kept]
    truth = {
        "logged": m[np.arange(len(m)), actions[kept]].mean(),
        "uniform": m.mean(),
    }
    log = EventLog(url, create=False)
    data = read_service_log(log, "rec")
    log.close()
    target = candidate_target(data, "linucb:nu=0.1")
    truth["linucb:nu=0.1"] = (target * m).sum(axis=1).mean()
    assert truth["linucb:nu=0.1"] > truth["uniform"] + 0.05  # it learned something
    for label, value in truth.items():
        for method in ("ips", "snips", "dr"):
            low, high = report["estimates"][label][method]["ci"]
            assert low <= value <= high, (label, method, value, low, high)
    assert "linucb:nu=0.1" in text and "usable" in text
    saved = json.loads((tmp_path / "r" / "evaluation.json").read_text())
    assert saved["estimates"].keys() == report["estimates"].keys()
    assert (tmp_path / "r" / "estimates.png").read_bytes()[:4] == b"\x89PNG"
    assert "estimates.png" in (tmp_path / "r" / "report.md").read_text()


def test_candidate_specs():
    assert parse_candidate("lints") == ("lints", {})
    assert parse_candidate("eps-greedy:epsilon=0.1") == ("eps-greedy", {"epsilon": 0.1})
    for bad in ("linucb:nu", ":nu=1", "linucb:=1"):
        with pytest.raises(ValueError, match="--candidate"):
            parse_candidate(bad)


def test_the_command(tmp_path):
    url = f"sqlite:///{tmp_path / 'e.db'}"
    logged_service(url, n=200)
    runner = CliRunner()
    out = tmp_path / "report"
    args = [
        "evaluate",
        "--db",
        url,
        "--policy",
        "rec",
        "--candidate",
        "random",
        "--out",
        str(out),
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "uniform" in result.output and (out / "report.md").exists()
    for bad, message in [
        (["--candidate", "nope"], "nope"),
        (["--candidate", "colstim"], "dueling"),
        (["--method", "xx"], "methods"),
    ]:
        result = runner.invoke(app, [*args[:5], *bad, "--out", str(out)])
        assert result.exit_code == 2, result.output
        assert message in result.output and "Traceback" not in result.output
    result = runner.invoke(app, ["evaluate", "--db", url, "--policy", "other"])
    assert result.exit_code == 2 and "policies: rec" in result.output
    result = runner.invoke(app, ["evaluate", "--db", url])
    assert result.exit_code == 2 and "--policy" in result.output


def test_logs_without_propensities_say_so(tmp_path):
    url = f"sqlite:///{tmp_path / 'e.db'}"
    # a sampler told to estimate no propensity (propensity_samples = 0) logs none
    logged_service(url, name="lints", params={"propensity_samples": 0}, n=50)
    with pytest.raises(ValueError, match="no propensity"):
        evaluate_service_log(url, "rec", [])
