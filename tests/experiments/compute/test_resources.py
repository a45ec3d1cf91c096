"""Each task's resources (config ``resources`` or family defaults) and the probes' order."""

from __future__ import annotations

from pathlib import Path

import pytest

from banditkit.errors import ConfigError
from banditkit.experiments import run_experiment
from banditkit.experiments.compute.resources import (
    GPU_SHARE,
    Resources,
    TaskSettings,
)
from banditkit.experiments.compute.schedule import RunScheduler
from banditkit.experiments.config.resolved import RunSpec
from banditkit.experiments.config.schema import ResourcesSpec
from banditkit.experiments.plan.tasks import SeedGroup, task_cost
from banditkit.experiments.store.checkpoints import CheckpointFiles
from banditkit.experiments.store.store import RunStore
from tests.experiments.helpers import tiny

CPU = RunSpec("linear", {}, "linucb", {}, 0, 10)
GPU = RunSpec("linear", {}, "neural-ucb", {"device": "cuda"}, 0, 10)


def test_family_defaults_and_the_config_override():
    settings = TaskSettings()
    assert settings.resources_of(CPU) == Resources(1, 0.0)
    assert settings.resources_of(GPU) == Resources(1, GPU_SHARE)
    assert settings.resources_of(SeedGroup((GPU, GPU))) == Resources(1, GPU_SHARE)
    given = TaskSettings(resources=ResourcesSpec(cpus=3, gpus=0.5))
    assert given.resources_of(CPU) == given.resources_of(GPU) == Resources(3, 0.5)


def test_checkpoints_only_when_asked(tmp_path):
    assert TaskSettings(checkpoint_dir=tmp_path).checkpoints() is None
    on = TaskSettings(checkpoint_every=5, checkpoint_dir=tmp_path).checkpoints()
    assert on is not None and on.every == 5 and on.sink == CheckpointFiles(tmp_path)


def test_a_run_gets_its_cpus_as_threads(tmp_path: Path):
    config = tiny(seeds=1, policies=[{"name": "linucb"}], resources={"cpus": 2})
    run_experiment(config, tmp_path, backend="serial", progress="none", figures=False)
    store = RunStore(tmp_path)
    metas = [store.read_meta(p.stem) for p in (tmp_path / "runs").glob("*.parquet")]
    assert metas and all(m["threads"] == 2 for m in metas)
    assert "cpus: 2" in (tmp_path / "config.yaml").read_text()


@pytest.mark.parametrize(
    "resources", [{"cpus": 0}, {"gpus": -1}, {"cpus": 1, "memory": 3}, {"cpus": 1.5}]
)
def test_bad_resources_are_config_errors(tmp_path, resources):
    with pytest.raises(ConfigError, match="resources"):
        run_experiment(tiny(resources=resources), tmp_path, progress="none")


def test_probes_go_longest_first_given_costs():
    long = RunSpec("linear", {}, "linucb", {}, 0, 1000)
    kinds = [CPU.kind, CPU.kind, long.kind]
    costs = [task_cost(CPU), task_cost(CPU), task_cost(long)]
    scheduler = RunScheduler(kinds, costs=costs)
    assert [scheduler.take(0.0), scheduler.take(0.0)] == [2, 0]
    assert [RunScheduler(kinds).take(0.0)] == [0]  # without costs: the config's order
    assert task_cost(SeedGroup((long, long))) == 2000
