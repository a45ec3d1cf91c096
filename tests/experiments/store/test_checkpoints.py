"""Run checkpoints in the result store: a crashed run resumes from its last one.

A run that dies after its k-th checkpoint is computed again from that checkpoint (its
metadata says after which round), and its stored table is the uninterrupted run's; a
finished run leaves no checkpoint behind; a damaged checkpoint is ignored.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from banditkit.experiments import run_experiment
from banditkit.experiments.compute.execute import (
    compute_run,
    compute_seed_group,
    group_checkpoint_id,
)
from banditkit.experiments.config.resolve import resolve
from banditkit.experiments.config.resolved import RunSpec
from banditkit.experiments.plan.plan import make_plan
from banditkit.experiments.plan.tasks import SeedGroup
from banditkit.experiments.store.checkpoints import CheckpointFiles, RunCheckpoints
from banditkit.experiments.store.tables import TIMING_COLUMNS
from tests.experiments.helpers import tiny, untimed_tables, write_yaml

SPEC = RunSpec("linear", {"d": 3, "n_arms": 4}, "lints", {}, seed=2, horizon=60)
BANDITKIT = [sys.executable, "-c", "from banditkit.cli import main; main()"]


class _DiesAt:
    """A sink that keeps checkpoints as files and raises at its n-th save (a crash)."""

    def __init__(self, folder: Path, n: int) -> None:
        self.files = CheckpointFiles(folder)
        self.left = n

    def save(self, run_id: str, data: bytes) -> None:
        self.left -= 1
        if self.left == 0:
            raise RuntimeError("the node died")
        self.files.save(run_id, data)

    def load(self, run_id: str) -> bytes | None:
        return self.files.load(run_id)

    def drop(self, run_id: str) -> None:
        self.files.drop(run_id)


def _untimed(columns: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {k: v for k, v in columns.items() if k not in TIMING_COLUMNS}


def test_a_run_resumes_from_its_last_checkpoint(tmp_path):
    whole = compute_run(SPEC)
    crashed = compute_run(SPEC, RunCheckpoints(7, _DiesAt(tmp_path, 4)))
    assert not crashed.ok and "the node died" in crashed.meta["error"]
    files = CheckpointFiles(tmp_path)
    resumed = compute_run(SPEC, RunCheckpoints(7, files))
    assert resumed.ok and resumed.meta["resumed_at"] == 21  # the third checkpoint
    assert whole.columns is not None and resumed.columns is not None
    a, b = _untimed(whole.columns), _untimed(resumed.columns)
    assert a.keys() == b.keys()
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def test_a_damaged_checkpoint_is_ignored(tmp_path, caplog):
    files = CheckpointFiles(tmp_path)
    files.save(SPEC.id, b"not a checkpoint")
    record = compute_run(SPEC, RunCheckpoints(7, files))
    assert record.ok and "resumed_at" not in record.meta
    assert "the run starts from round 1" in caplog.text


@pytest.mark.parametrize("backend", ["serial", "process"])
def test_the_runner_checkpoints_and_clears(tmp_path, backend):
    config = tiny(seeds=1, checkpoint_every=10)
    result = run_experiment(
        config, tmp_path, backend=backend, jobs=2, progress="none", figures=False
    )
    assert result.ok
    assert (tmp_path / "checkpoints").is_dir()
    assert not list((tmp_path / "checkpoints").iterdir())  # stored runs drop theirs
    assert "checkpoint_every: 10" in (tmp_path / "config.yaml").read_text()


def test_sigkill_mid_run_then_resume_from_the_checkpoint(tmp_path):
    """``banditkit run`` killed mid-run: the re-run resumes the run where it was saved."""
    config = tiny(
        envs=[{"name": "linear", "d": 8, "n_arms": 8}],
        policies=[{"name": "lints", "label": "LinTS"}],
        seeds=1,
        horizon=4000,
        checkpoint_every=100,
    )
    path = write_yaml(tmp_path / "exp.yaml", config)
    out = tmp_path / "killed"
    command = [*BANDITKIT, "run", str(path), "--out", str(out), "--jobs", "1"]
    command += ["--progress", "none"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 60
        while not list((out / "checkpoints").glob("*.npz")):
            assert proc.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not list((out / "runs").glob("*.json"))
    resumed = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=300
    )
    assert resumed.returncode == 0, resumed.stderr
    (meta,) = [json.loads(p.read_text()) for p in (out / "runs").glob("*.json")]
    assert meta["resumed_at"] >= 100 and meta["resumed_at"] % 100 == 0
    assert not list((out / "checkpoints").iterdir())
    reference = tmp_path / "reference"
    assert run_experiment(path, reference, progress="none", figures=False).ok
    killed, ref = untimed_tables(out), untimed_tables(reference)
    assert killed.keys() == ref.keys()
    for key, table in ref.items():
        pd.testing.assert_frame_equal(killed[key], table, check_exact=True)


@pytest.mark.parametrize("value", [0, -1, 1.5, "x"])
def test_checkpoint_every_must_be_a_positive_int(tmp_path, value):
    from banditkit.errors import ConfigError

    with pytest.raises(ConfigError, match="checkpoint_every"):
        run_experiment(tiny(checkpoint_every=value), tmp_path, progress="none")


STACKED_PARAMS = {"width": 4, "steps": 2}
STACKED = {"name": "neural-ts", "label": "NeuralTS", **STACKED_PARAMS}


def test_runs_that_ask_for_checkpoints_are_not_batched(tmp_path):
    """A stack that cannot be resumed is not checkpointed: such runs go one by one."""
    config = tiny(
        envs=[{"name": "linear", "d": 3, "n_arms": 4}],
        policies=[STACKED],
        seeds=3,
        horizon=12,
        checkpoint_every=5,
    )
    plan = make_plan(resolve(config), lambda run_id: False)
    assert not any(isinstance(task, SeedGroup) for task in plan.tasks)
    result = run_experiment(config, tmp_path, progress="none", figures=False)
    assert result.ok
    metas = [json.loads(p.read_text()) for p in (tmp_path / "runs").glob("*.json")]
    assert len(metas) == 3 and not any("batched_seeds" in m for m in metas)
    batched = tmp_path / "batched"  # without checkpoints the same seeds batch
    config.pop("checkpoint_every")
    assert run_experiment(config, batched, progress="none", figures=False).ok
    metas = [json.loads(p.read_text()) for p in (batched / "runs").glob("*.json")]
    assert [m.get("batched_seeds") for m in metas] == [3, 3, 3]


def test_a_seed_group_given_checkpoints_runs_and_saves_run_by_run(tmp_path):
    specs = tuple(
        RunSpec("linear", {"d": 3, "n_arms": 4}, "neural-ts", STACKED_PARAMS, s, 12)
        for s in (0, 1)
    )
    saved: list[str] = []

    class _Kept(CheckpointFiles):
        def save(self, run_id: str, data: bytes) -> None:
            saved.append(run_id)
            super().save(run_id, data)

    records = compute_seed_group(
        SeedGroup(specs), RunCheckpoints(5, _Kept(tmp_path / "checkpoints"))
    )
    assert all(r.ok and "batched_seeds" not in r.meta for r in records)
    assert sorted(set(saved)) == sorted(spec.id for spec in specs)


DUELS = {"utility": "cos", "d": 4, "n_arms": 5}
#: The exact path (float64, every duel), where a stack is its separate runs bitwise;
#: on the defaults (float32, distinct duels) it equals them up to rounding only.
DUEL_PARAMS = {"width": 6, "steps": 2, "dtype": "float64", "distinct_duels": False}


def _duel_group() -> SeedGroup:
    """Two seeds x two pair rules of one NVLDB network: one resumable stack."""
    return SeedGroup(
        tuple(
            RunSpec("dueling", DUELS, name, {**DUEL_PARAMS, "rule": rule}, s, 24)
            for name, rule in (("nvldb-ucb", "asym"), ("nvldb-ts", "csym"))
            for s in (0, 1)
        )
    )


def test_a_dueling_stack_is_checkpointed_as_one_and_resumes(tmp_path):
    """A stack killed mid-run resumes from its group checkpoint, with the same results.

    The four runs go into one checkpoint every 5 rounds; the re-run finds it, resumes
    after round 10 (the second save), and every run equals the uninterrupted group's
    and its separate run's; the finished group's checkpoint is dropped.
    """
    group = _duel_group()
    whole = compute_seed_group(group)
    crashed = compute_seed_group(group, RunCheckpoints(5, _DiesAt(tmp_path, 3)))
    assert not any(r.ok for r in crashed)
    assert all("the node died" in r.meta["error"] for r in crashed)
    saved = list(tmp_path.iterdir())
    assert [p.name for p in saved] == [f"{group_checkpoint_id(group.specs)}.npz"]
    resumed = compute_seed_group(group, RunCheckpoints(5, CheckpointFiles(tmp_path)))
    assert not list(tmp_path.iterdir())  # dropped once the group is done
    for a, b, spec in zip(whole, resumed, group.specs, strict=True):
        assert b.ok and b.meta["resumed_at"] == 10 and b.meta["batched_seeds"] == 4
        separate = compute_run(spec)
        assert a.columns is not None and b.columns is not None
        assert separate.columns is not None
        for name, column in _untimed(a.columns).items():
            np.testing.assert_array_equal(column, b.columns[name], err_msg=name)
            np.testing.assert_array_equal(column, separate.columns[name], err_msg=name)


def test_checkpointed_duels_batch_where_the_stack_resumes(tmp_path):
    config = tiny(
        envs=[{"name": "dueling", **DUELS}],
        policies=[
            {"name": "nvldb-ucb", "label": "UCB", **DUEL_PARAMS},
            {"name": "nvldb-ts", "label": "TS", "rule": "osym", **DUEL_PARAMS},
        ],
        seeds=2,
        horizon=12,
        checkpoint_every=4,
    )
    plan = make_plan(resolve(config), lambda run_id: False)
    groups = [task for task in plan.tasks if isinstance(task, SeedGroup)]
    assert len(plan.tasks) == 1 and len(groups[0].specs) == 4
    result = run_experiment(config, tmp_path, progress="none", figures=False)
    assert result.ok
    metas = [json.loads(p.read_text()) for p in (tmp_path / "runs").glob("*.json")]
    assert [m.get("batched_seeds") for m in metas] == [4, 4, 4, 4]
    assert not list((tmp_path / "checkpoints").iterdir())


MNL = {
    "utility": "realizable",
    "features": "gaussian",
    "d": 3,
    "n_items": 12,
    "capacity": 4,
}
MNL_PARAMS = {"width": 3, "steps": 20, "lr": 0.05}


def test_an_mnl_stack_is_checkpointed_as_one_and_resumes(tmp_path):
    """eps-greedy-MNL seeds (``policies.mnl.stacked``) resume from their group checkpoint.

    Killed at its third save, the group resumes after round 10 with every column of the
    uninterrupted group (the members' networks and epochs come back from their states),
    and within rounding of the separate runs (the stack's batched kernels).
    """
    group = SeedGroup(
        tuple(
            RunSpec("mnl", MNL, "eps-greedy-mnl", MNL_PARAMS, s, 24) for s in (0, 1, 2)
        )
    )
    whole = compute_seed_group(group)
    crashed = compute_seed_group(group, RunCheckpoints(5, _DiesAt(tmp_path, 3)))
    assert not any(r.ok for r in crashed)
    resumed = compute_seed_group(group, RunCheckpoints(5, CheckpointFiles(tmp_path)))
    assert not list(tmp_path.iterdir())  # dropped once the group is done
    for a, b, spec in zip(whole, resumed, group.specs, strict=True):
        assert b.ok and b.meta["resumed_at"] == 10 and b.meta["batched_seeds"] == 3
        separate = compute_run(spec)
        assert a.columns is not None and b.columns is not None
        assert separate.columns is not None
        for name, column in _untimed(a.columns).items():
            if isinstance(column, list):  # the offered assortments, of any size
                assert [tuple(x) for x in column] == [tuple(x) for x in b.columns[name]]
                assert [tuple(x) for x in column] == [
                    tuple(x) for x in separate.columns[name]
                ], name
                continue
            np.testing.assert_array_equal(column, b.columns[name], err_msg=name)
            np.testing.assert_allclose(
                column, separate.columns[name], rtol=0, atol=1e-9, err_msg=name
            )
