"""The runner: outputs of the contract, resume, failures recorded and retried."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import banditkit as bk
import banditkit.core
from banditkit.errors import RunsFailedError
from banditkit.experiments import ConfigError, OutputDirError, run_experiment
from banditkit.experiments.store.tables import COLUMNS
from tests.experiments.helpers import snapshot, tiny, write_yaml

CONTRACT_ROW_KEYS = {
    "env",
    "policy",
    "params",
    "n_seeds",
    "final_regret_mean",
    "final_regret_std",
    "final_regret_ci",
    "seconds_mean",
    "n_updates_mean",
}


def _run(cfg, out, **kw):
    kw.setdefault("backend", "serial")
    return run_experiment(cfg, out, progress="none", **kw)


def test_outputs_follow_the_contract(tmp_path):
    out = tmp_path / "out"
    res = _run(write_yaml(tmp_path / "c.yaml", tiny()), out)
    assert res.ok and res.n_runs == 12 and res.computed == 12
    assert (out / "config.yaml").is_file()
    summary = json.loads((out / "summary.json").read_text())
    assert {"name", "horizon", "banditkit_version", "results"} <= set(summary)
    assert summary["horizon"] == 40 and summary["banditkit_version"] == bk.__version__
    assert len(summary["results"]) == 6
    for row in summary["results"]:
        assert set(row) >= CONTRACT_ROW_KEYS
        assert row["n_seeds"] == 2
        lo, hi = row["final_regret_ci"]
        assert lo <= row["final_regret_mean"] <= hi
    oracle = [r for r in summary["results"] if r["policy"] == "oracle"]
    assert all(r["final_regret_mean"] == 0.0 for r in oracle)
    runs = sorted(p.name for p in (out / "runs").iterdir())
    assert len(runs) == 24
    meta = json.loads(next((out / "runs").glob("*.json")).read_text())
    for key in ("env", "policy", "seed", "versions", "wall_seconds", "host"):
        assert key in meta
    assert {"python", "numpy", "torch", "banditkit"} <= set(meta["versions"])
    table = pd.read_parquet(next((out / "runs").glob("*.parquet")))
    assert list(table.columns) == list(COLUMNS)
    assert table["t"].tolist() == list(range(1, 41))
    assert table["cumulative_regret"].iloc[-1] == pytest.approx(table["regret"].sum())
    # one figure per environment, and the default multi-panel figure named after the config
    stems = {p.stem for p in (out / "figures").iterdir()}
    assert stems == {"regret-linear", "regret-logistic-h1", "tiny"}
    assert (
        sorted(p.suffix for p in (out / "figures").iterdir())
        == [".png"] * 3 + [".svg"] * 3
    )


def test_results_match_simulate(tmp_path):
    """A stored run equals bk.simulate with the seed convention (policy seed = run seed)."""
    res = _run(tiny(seeds=[3]), tmp_path, figures=False)
    row = next(r for r in res.summary["results"] if r["label"] == "LinUCB")
    env = bk.make_env("linear", d=3, n_arms=4)
    direct = bk.simulate(bk.make_policy("linucb", nu=0.5, seed=3), env, 40, seed=3)
    assert row["final_regret_mean"] == float(direct.cumulative_regret[-1])


def test_rerun_skips_finished_runs(tmp_path):
    out = tmp_path / "out"
    _run(tiny(), out)
    before = {k: v for k, v in snapshot(out / "runs").items()}
    res = _run(tiny(), out)
    assert (res.computed, res.skipped) == (0, 12)
    assert snapshot(out / "runs") == before
    # More seeds: only the new ones are computed.
    res = _run(tiny(seeds=3), out)
    assert (res.computed, res.skipped) == (6, 12)


def test_failing_run_is_recorded_and_retried_alone(tmp_path, monkeypatch):
    real = banditkit.core.simulate
    calls = []

    def flaky(policy, env, horizon, seed=0, **kw):
        calls.append((type(policy).__name__, seed))
        if type(policy).__name__ == "LinUCB" and seed == 1:
            raise RuntimeError("deliberate failure")
        return real(policy, env, horizon, seed, **kw)

    monkeypatch.setattr(banditkit.core, "simulate", flaky)
    out = tmp_path / "out"
    with pytest.raises(RunsFailedError) as info:
        _run(tiny(), out)
    # the error lists the failed runs and says how to retry them; it carries the result
    message = str(info.value)
    res = info.value.result
    assert set(info.value.failed) == set(res.failed)
    assert all(rid in message for rid in res.failed) and "re-run" in message
    assert not res.ok and len(res.failed) == 2  # LinUCB seed 1 on both envs
    assert _run(tiny(), tmp_path / "again", check=False).ok is False
    assert all("deliberate failure" in msg for msg in res.failed.values())
    for run_id in res.failed:
        error = json.loads((out / "runs" / f"{run_id}.error.json").read_text())
        assert "RuntimeError: deliberate failure" in error["traceback"]
        assert not (out / "runs" / f"{run_id}.parquet").exists()
    rows = {(r["env"], r["label"]): r for r in res.summary["results"]}
    assert rows[("linear", "LinUCB")]["n_seeds"] == 1
    assert rows[("linear", "LinUCB")]["n_failed"] == 1
    assert rows[("linear", "Random")]["n_seeds"] == 2

    monkeypatch.setattr(banditkit.core, "simulate", real)
    calls.clear()
    res = _run(tiny(), out)
    assert res.ok and (res.computed, res.skipped) == (2, 10)
    assert not list((out / "runs").glob("*.error.json"))


def test_invalid_config_or_output_leaves_out_untouched(tmp_path):
    out = tmp_path / "out"
    _run(tiny(), out)
    before = snapshot(out)
    with pytest.raises(ConfigError):
        _run(tiny(horizon=-1), out)
    with pytest.raises(ConfigError):
        _run(tiny(policies=[{"name": "nope"}]), out)
    assert snapshot(out) == before
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(OutputDirError):
        _run(tiny(), blocker / "out")


@pytest.mark.parametrize(
    ("env", "policies"),
    [
        (
            {"name": "linear", "d": 3, "n_arms": 4},
            [{"name": "linucb"}, {"name": "lints", "explore_floor": 0.2}],
        ),
        ({"name": "dueling", "d": 3, "n_arms": 4}, [{"name": "colstim"}]),
        ({"name": "mnl", "d": 3, "n_items": 6}, [{"name": "ts-mnl"}]),
    ],
    ids=["contextual", "dueling", "assortment"],
)
def test_runs_store_the_propensities_of_the_actions(tmp_path, env, policies):
    """Each round's propensity is stored: in (0, 1], the one ``bk.simulate`` reports."""
    cfg = {"name": "p", "horizon": 30, "seeds": [2], "env": env, "policies": policies}
    _run(cfg, tmp_path, figures=False)
    frame = bk.load_runs(tmp_path, columns=["propensity"])
    params = {k: v for k, v in env.items() if k != "name"}
    for entry in policies:
        name = entry["name"]
        stored = frame.loc[frame["policy_name"] == name, "propensity"].to_numpy()
        assert stored.shape == (30,)
        assert np.all((stored > 0.0) & (stored <= 1.0)), stored
        direct = bk.simulate(
            bk.make_policy(**entry, seed=2), bk.make_env(env["name"], **params), 30, 2
        )
        np.testing.assert_array_equal(stored, direct.propensities)
