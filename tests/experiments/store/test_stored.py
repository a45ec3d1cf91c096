"""The experiment of an output directory read back from config.yaml and cells.json alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from banditkit.experiments import ConfigError, run_experiment
from banditkit.experiments.config.resolve import resolve
from banditkit.experiments.store.stored import CELLS_FILE, stored_experiment
from tests.experiments.helpers import tiny

SRC = str(Path(__file__).resolve().parents[3] / "src")

PLUGIN = textwrap.dedent(
    """
    from banditkit.core import ENVIRONMENTS, POLICIES, ContextualPolicy
    from banditkit.envs.synthetic import LinearEnv


    @POLICIES.register("first-arm-stored")
    class FirstArm(ContextualPolicy):
        def __init__(self, *, shift: float = 0.0, seed: int = 0) -> None:
            super().__init__(seed=seed)
            self.shift = shift

        def _act(self, ctx):
            return 0

        def _update(self, ctx, action, feedback):
            pass


    @ENVIRONMENTS.register("linear-stored")
    class ShiftedLinear(LinearEnv):
        pass
    """
)

READ = """
import sys
import banditkit as bk
from banditkit.experiments.runner import redraw

frame = bk.load_runs(sys.argv[1], summaries=True)
print(len(frame), sorted(set(frame["policy_name"])), sorted(set(frame["env_name"])))
print(len(redraw(sys.argv[1])) > 0, "my_plugin" in sys.modules)
"""


def _python(*args: str, cwd: Path) -> str:
    env = {**os.environ, "PYTHONPATH": SRC, "OMP_NUM_THREADS": "1"}
    env.pop("BANDITKIT_IMPORTS", None)
    done = subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_results_of_plugin_classes_are_read_without_importing_them(tmp_path):
    (tmp_path / "my_plugin.py").write_text(PLUGIN)
    config = tiny(
        envs=[{"name": "linear-stored", "label": "shifted", "d": 3, "n_arms": 4}],
        policies=[
            {"name": "first-arm-stored", "label": "First", "shift": 1},
            {"name": "random", "label": "Random"},
        ],
        horizon=10,
    )
    (tmp_path / "exp.yaml").write_text(yaml.safe_dump(config))
    _python(
        "-m", "banditkit", "run", "exp.yaml", "--out", "out", "--jobs", "1",
        "--progress", "none", "--import", "my_plugin.py", cwd=tmp_path,
    )  # fmt: skip
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    # A fresh interpreter that never imports the plugin reads the runs and redraws them.
    out = _python("-c", READ, str(tmp_path / "out"), cwd=tmp_path).splitlines()
    assert out == ["4 ['first-arm-stored', 'random'] ['linear-stored']", "True False"]
    again = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert again["results"] == summary["results"]
    # Without cells.json (a directory written before it existed) the classes are needed.
    (tmp_path / "out" / CELLS_FILE).unlink()
    with pytest.raises(subprocess.CalledProcessError):
        subprocess.run(
            [sys.executable, "-c", READ, str(tmp_path / "out")],
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": SRC},
            capture_output=True,
            check=True,
        )


def test_stored_experiment_equals_the_resolved_one(tmp_path):
    config = tiny(
        env_overrides={"logistic-h1": {"LinUCB": {"lam": 3.0}}},
        tuned={"linear": {"LinUCB": {"nu": 0.25}}},
    )
    resolved = resolve(config)
    run_experiment(config, tmp_path, backend="serial", progress="none", figures=False)
    stored = stored_experiment(tmp_path)
    assert stored.envs == resolved.envs
    assert [e.records for e in stored.envs] == [e.records for e in resolved.envs]
    assert stored.policies == resolved.policies
    assert stored.cells == resolved.cells
    assert [r.id for r in stored.runs()] == [r.id for r in resolved.runs()]
    # A cells.json of another config (labels that do not match) is not used.
    doc = json.loads((tmp_path / CELLS_FILE).read_text())
    doc["policies"][0]["label"] = "Renamed"
    (tmp_path / CELLS_FILE).write_text(json.dumps(doc))
    assert stored_experiment(tmp_path).cells == resolved.cells  # resolved again


def test_a_directory_without_config_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="an output directory of `banditkit run`"):
        stored_experiment(tmp_path)
