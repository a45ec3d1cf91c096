"""The runner's seed batching (execute.group_seeds, compute_seed_group, batch_seeds)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import banditkit as bk
from banditkit.experiments.config.resolved import RunSpec
from banditkit.experiments.plan.tasks import SeedGroup, group_seeds
from banditkit.experiments.store.tidy import load_runs

ENV = {"h": "h1", "d": 5, "n_arms": 3, "pool": 30}
#: float64: a seed batch equals the separate runs by construction there (the default
#: float32 agrees up to rounding).
NEURAL = {"width": 6, "update_every": 10, "steps": 5, "lr": 0.1, "dtype": "float64"}


def _spec(policy: str, params: dict, seed: int) -> RunSpec:
    return RunSpec("logistic", ENV, policy, params, seed=seed, horizon=20)


def test_group_seeds_groups_batchable_configurations_only() -> None:
    specs = [_spec("neurallog-ucb2", NEURAL, s) for s in range(4)]
    specs += [_spec("linucb", {}, s) for s in range(2)]
    tasks = group_seeds(specs, "on")
    groups = [t for t in tasks if isinstance(t, SeedGroup)]
    assert len(groups) == 1 and [s.seed for s in groups[0].specs] == [0, 1, 2, 3]
    singles = [t for t in tasks if isinstance(t, RunSpec)]
    assert [s.policy_name for s in singles] == ["linucb", "linucb"]  # fall back
    assert group_seeds(specs, "off") == specs
    # auto with more workers than tasks: the group is split, two seeds at least each
    split = group_seeds(specs, "auto", jobs=4)
    parts = [t for t in split if isinstance(t, SeedGroup)]
    assert len(parts) == 2 and all(len(p.specs) == 2 for p in parts)
    with pytest.raises(ValueError, match="batch_seeds"):
        group_seeds(specs, "sometimes")


def test_batched_store_equals_separate_store(tmp_path) -> None:
    cfg = {
        "name": "batch",
        "horizon": 40,
        "seeds": 3,
        "env": {"name": "logistic", **ENV},
        "policies": [{"name": "neurallog-ucb2", **NEURAL}, {"name": "linucb"}],
    }
    outs = {}
    for mode in ("on", "off"):
        outs[mode] = tmp_path / mode
        result = bk.run_experiment(
            cfg,
            outs[mode],
            backend="serial",
            progress="none",
            figures=False,
            batch_seeds=mode,
        )
        assert result.ok and result.computed == 6
    files = {
        mode: sorted(p.name for p in (out / "runs").iterdir())
        for mode, out in outs.items()
    }
    assert files["on"] == files["off"]  # the same run ids and files
    keys = ["policy", "seed", "t"]
    on = load_runs(outs["on"]).sort_values(keys).reset_index(drop=True)
    off = load_runs(outs["off"]).sort_values(keys).reset_index(drop=True)
    assert list(on.columns) == list(off.columns)
    np.testing.assert_array_equal(on["action"], off["action"])
    np.testing.assert_allclose(
        on["cumulative_regret"], off["cumulative_regret"], atol=1e-9
    )
    batched = [
        json.loads(p.read_text())
        for p in (outs["on"] / "runs").glob("*.json")
        if json.loads(p.read_text())["policy"]["name"] == "neurallog-ucb2"
    ]
    assert [m["batched_seeds"] for m in batched] == [3, 3, 3]
    again = bk.run_experiment(
        cfg, outs["on"], backend="serial", progress="none", figures=False
    )
    assert again.computed == 0 and again.skipped == 6  # resumable as before


def test_replay_environments_are_not_batched() -> None:
    specs = [
        RunSpec("log-replay", {}, "neurallog-ucb2", NEURAL, seed=s, horizon=5)
        for s in range(3)
    ]
    assert group_seeds(specs, "on") == specs


def test_command_line_option(tmp_path) -> None:
    from typer.testing import CliRunner

    from banditkit.cli import app
    from tests.experiments.helpers import write_yaml

    cfg = {
        "name": "batch-cli",
        "horizon": 12,
        "seeds": 2,
        "env": {"name": "logistic", **ENV},
        "policies": [{"name": "neurallog-ucb2", **NEURAL}],
    }
    path = write_yaml(tmp_path / "exp.yaml", cfg)
    cli = CliRunner()
    args = ["run", str(path), "--out", str(tmp_path / "out"), "--backend", "serial"]
    done = cli.invoke(app, [*args, "--batch-seeds", "on"], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    metas = [
        json.loads(p.read_text()) for p in (tmp_path / "out" / "runs").glob("*.json")
    ]
    assert sorted(m["batched_seeds"] for m in metas) == [2, 2]
    bad = cli.invoke(app, [*args, "--batch-seeds", "sometimes"])
    assert bad.exit_code == 2


def test_process_backend_computes_groups_in_workers(tmp_path) -> None:
    cfg = {
        "name": "batch-process",
        "horizon": 15,
        "seeds": 4,
        "env": {"name": "logistic", **ENV},
        "policies": [{"name": "neurallog-ucb2", **NEURAL}],
    }
    kwargs = {"progress": "none", "figures": False}
    pooled = bk.run_experiment(
        cfg, tmp_path / "pool", backend="process", jobs=2, **kwargs
    )
    alone = bk.run_experiment(
        cfg, tmp_path / "alone", backend="serial", batch_seeds="off", **kwargs
    )
    assert pooled.ok and pooled.computed == 4
    metas = [
        json.loads(p.read_text()) for p in (tmp_path / "pool" / "runs").glob("*.json")
    ]
    assert sorted(m["batched_seeds"] for m in metas) == [2, 2, 2, 2]  # split in two
    keys = ["seed", "t"]
    a = load_runs(tmp_path / "pool").sort_values(keys).reset_index(drop=True)
    b = load_runs(tmp_path / "alone").sort_values(keys).reset_index(drop=True)
    np.testing.assert_array_equal(a["action"], b["action"])
    assert alone.ok
