"""Seeded runs through ``simulate`` and through the runner and store give pinned regrets.

``tests/data/records_golden.npz`` was recorded from the code before per-round records were
declared by environments (and must never be regenerated): the regret arrays of a few seeded
logistic runs, through ``simulate`` and through ``run_experiment`` (Parquet store), and the
summary's ``final_regret_mean``. The comparison is bitwise.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import banditkit as bk
from banditkit.experiments.config.resolve import prepare_experiment
from banditkit.experiments.store.runs import collect
from banditkit.experiments.store.store import RunStore

GOLDEN = np.load(Path(__file__).parent / "data" / "records_golden.npz")

POLICIES = [
    ("linucb", {"nu": 0.5}),
    ("glm-ucb", {"update_every": 1}),
    ("eps-greedy", {"epsilon": 0.1}),
]
POLICIES += [("random", {})]
CONFIG = {
    "name": "golden",
    "horizon": 120,
    "seeds": 2,
    "envs": [{"name": "logistic", "h": "h1", "d": 4, "n_arms": 5, "label": "h1"}],
    "policies": [{"name": "linucb", "nu": 0.5}, {"name": "random"}],
}


@pytest.mark.parametrize(("name", "params"), POLICIES)
@pytest.mark.parametrize("seed", [0, 1])
def test_simulate_regret_is_pinned(name, params, seed):
    env = bk.make_env("logistic", h="h1", d=4, n_arms=5)
    run = bk.simulate(bk.make_policy(name, seed=seed, **params), env, 150, seed=seed)
    expected = GOLDEN[f"simulate/{name}/{seed}"]
    assert run.regret.tobytes() == expected.tobytes()


def test_runner_and_store_regret_is_pinned(tmp_path):
    result = bk.run_experiment(
        CONFIG, tmp_path, backend="serial", progress="none", figures=False
    )
    assert result.ok
    cells = collect(prepare_experiment(CONFIG), RunStore(tmp_path))
    checked = 0
    for runs in cells:
        for seed, table in zip(runs.seeds, runs.tables, strict=True):
            stored = np.asarray(table["regret"], dtype=np.float64)
            expected = GOLDEN[f"store/{runs.cell.policy.label}/{seed}"]
            assert stored.tobytes() == expected.tobytes()
            checked += 1
    assert checked == 4
    for row in result.summary["results"]:
        expected = GOLDEN[f"summary/{row['label']}/final_regret_mean"][0]
        assert row["final_regret_mean"] == expected
        # the general per-metric structure agrees with the legacy key
        assert row["metrics"]["regret"]["final"]["mean"] == pytest.approx(expected)
