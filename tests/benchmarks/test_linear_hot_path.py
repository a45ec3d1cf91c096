"""The linear hot-path benchmark's contestants play the same LinUCB (issue 16)."""

from __future__ import annotations

import numpy as np

import banditkit as bk
from benchmarks.linear_hot_path import (
    SnapshotLinUCB,
    dense_table,
    run_banditkit,
    run_bare,
    run_naive,
)


def test_banditkit_bare_naive_and_snapshot_make_the_same_decisions() -> None:
    table = dense_table(K=6, d=12, T=80, seed=1)
    ours = run_banditkit(bk.make_policy("linucb"), table, 80)
    assert ours == run_bare(table, 80)
    assert ours == run_naive(table, 80)  # re-inverting the Gram every round
    assert ours == run_banditkit(SnapshotLinUCB(), table, 80)
    assert len(set(ours)) > 1


def test_table_env_serves_its_rows_and_regret() -> None:
    table = dense_table(K=3, d=2, T=2, seed=0)
    table.reset(0)
    ctx = table.context()
    assert ctx is not None and np.array_equal(ctx.arms, table.arms[0])
    step = table.step(1)
    means = table.means[0]
    assert step.regret == means.max() - means[1]
    assert step.reward == means[1] + table.noise[0]
