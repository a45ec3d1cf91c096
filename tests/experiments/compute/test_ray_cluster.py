"""A worker node of a real Ray cluster dies mid-run: the experiment finishes, unchanged.

A head and two worker nodes are started with ``ray start`` (``raycluster``); the runs
checkpoint every few rounds into the result store (through the keeper on the driver's
node). Once every run has a checkpoint, one worker node is killed with everything it runs.
Ray starts its task again on the other node, the run resumes from its checkpoint, and the
stored results are those of an uninterrupted serial run. The cluster is killed in the
fixture's teardown, whatever happens.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from banditkit.experiments import run_experiment
from banditkit.experiments.store.store import RunStore
from tests.experiments.helpers import tiny, untimed_tables, write_yaml

pytest.importorskip(
    "ray", reason="the cluster test needs Ray (pip install 'banditkit[ray]')"
)

from tests.experiments.compute.raycluster import RAY, LocalCluster

BANDITKIT = [sys.executable, "-c", "from banditkit.cli import main; main()"]
EVERY = 100
CONFIG = tiny(
    envs=[{"name": "linear", "d": 8, "n_arms": 8}],
    policies=[{"name": "lints", "label": "LinTS"}],
    seeds=2,
    horizon=4000,
    checkpoint_every=EVERY,
)


def _local_cluster():
    """A head and two worker nodes of one CPU each, killed at the end whatever happens."""
    if not Path(RAY).is_file():
        pytest.skip(
            f"the cluster test starts nodes with Ray's command, not found at {RAY}"
        )
    nodes = LocalCluster.start(workers=2)
    try:
        yield nodes
    finally:
        nodes.stop()


cluster = pytest.fixture(scope="module", name="cluster")(_local_cluster)
#: A cluster of its own, for a test that must not follow another test's killed node.
fresh_cluster = pytest.fixture(name="fresh_cluster")(_local_cluster)


def _kill_when_checkpointed(
    cluster: LocalCluster, out: Path, killed: list[float], node: int = 1
):
    """Kill worker ``node`` once both tasks have a checkpoint (or give up after 120 s)."""
    deadline = time.monotonic() + 120
    folder = out / "checkpoints"
    while time.monotonic() < deadline:
        if len(list(folder.glob("*.npz"))) >= 2:
            cluster.kill_node(node)
            killed.append(time.monotonic())
            return
        time.sleep(0.005)


def _run_killing_a_node(
    cluster: LocalCluster, config: dict, tmp_path: Path, node: int, *args: str
) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """``banditkit run`` on the cluster, killing worker ``node`` once two checkpoints exist."""
    path = write_yaml(tmp_path / "exp.yaml", config)
    out = tmp_path / "cluster"
    killed: list[float] = []
    killer = threading.Thread(
        target=_kill_when_checkpointed, args=(cluster, out, killed, node), daemon=True
    )
    killer.start()
    driver = subprocess.run(  # the driver gets the cluster's token from its environment
        [
            *BANDITKIT,
            "run",
            str(path),
            "--out",
            str(out),
            "--backend",
            "ray",
            "--address",
            cluster.address,
            "--progress",
            "log",
            *args,
        ],
        env=cluster.env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    killer.join(timeout=5)
    assert killed, "no worker was killed: the runs ended before two had a checkpoint"
    assert driver.returncode == 0, driver.stderr[-3000:]
    return out, driver


def test_a_killed_worker_node_costs_a_few_rounds_not_the_results(cluster, tmp_path):
    out, _ = _run_killing_a_node(cluster, CONFIG, tmp_path, 1, "--batch-seeds", "off")
    store = RunStore(out)
    metas = [store.read_meta(run_id) for run_id in untimed_tables(out)]
    resumed = [m["resumed_at"] for m in metas if "resumed_at" in m]
    assert len(resumed) == 1 and resumed[0] % EVERY == 0 and resumed[0] >= EVERY
    assert not list((out / "checkpoints").iterdir())

    reference = tmp_path / "serial"
    run_experiment(CONFIG, reference, backend="serial", progress="none", figures=False)
    ours, ref = untimed_tables(out), untimed_tables(reference)
    assert ours.keys() == ref.keys() and len(ref) == 2
    for key, table in ref.items():
        pd.testing.assert_frame_equal(ours[key], table, check_exact=True)


DUEL_EVERY = 50
EXACT = {"dtype": "float64", "distinct_duels": False}
DUEL_CONFIG = tiny(
    envs=[{"name": "dueling", "utility": "cos", "d": 4, "n_arms": 5}],
    policies=[  # two networks: two seed stacks, one per worker node; on the exact
        # path (float64, every duel), where a stack is bitwise its separate runs
        {"name": "nvldb-ucb", "label": "narrow", "width": 4, "steps": 2, **EXACT},
        {"name": "nvldb-ts", "label": "wide", "width": 6, "steps": 2, **EXACT},
    ],
    seeds=2,
    horizon=1500,
    checkpoint_every=DUEL_EVERY,
)


def test_a_killed_worker_node_resumes_its_seed_stack(fresh_cluster, tmp_path):
    """The same for two seed stacks, each checkpointed as one (``group-*.npz``).

    Two worker nodes of one CPU each: one stack runs on each; the killed node's stack
    resumes on the other afterwards.
    """
    cluster = fresh_cluster
    out, driver = _run_killing_a_node(
        cluster, DUEL_CONFIG, tmp_path, cluster.workers[0]
    )
    store = RunStore(out)
    metas = [store.read_meta(run_id) for run_id in untimed_tables(out)]
    assert [m["batched_seeds"] for m in metas] == [2, 2, 2, 2]
    resumed = [m["resumed_at"] for m in metas if "resumed_at" in m]
    # the killed node's stack: both its runs resume from one checkpoint
    assert len(resumed) == 2 and len(set(resumed)) == 1, (
        resumed,
        driver.stderr[-2000:],
    )
    assert resumed[0] % DUEL_EVERY == 0 and resumed[0] >= DUEL_EVERY
    assert not list((out / "checkpoints").iterdir())

    reference = tmp_path / "serial"
    run_experiment(
        DUEL_CONFIG,
        reference,
        backend="serial",
        progress="none",
        figures=False,
        batch_seeds="off",  # each run on its own: the stacks equal them bitwise
    )
    ours, ref = untimed_tables(out), untimed_tables(reference)
    assert ours.keys() == ref.keys() and len(ref) == 4
    for key, table in ref.items():
        pd.testing.assert_frame_equal(ours[key], table, check_exact=True)
