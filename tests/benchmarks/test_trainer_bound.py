"""The trainer-bound benchmark's pieces (``benchmarks.trainer_bound``), on small cases."""

from __future__ import annotations

import torch

import banditkit as bk
from benchmarks import _workload
from benchmarks import trainer_bound as bench


def test_every_fit_runs_and_its_gemms_are_the_networks() -> None:
    for kind in bench.KINDS:
        run, net, members = bench.fit_problem(kind, 8, 3, torch.float64)
        result = run()
        assert result.history.shape == (2, members)
        assert bool(torch.isfinite(result.history).all())
        bench.gemms_alone(net, members, torch.float64)()  # runs on the fit's shapes
    assert members == bench.MEMBERS


def test_every_workload_has_a_bar_and_runs() -> None:
    assert set(_workload.WORKLOADS) == set(bench.BARS)
    out = _workload.run_workload("nvldb-ucb m=32", 0, 5)
    assert out["seconds"] >= 0.0 and out["regret"] >= 0.0


def test_the_same_work_turns_off_only_what_leaves_the_actions() -> None:
    assert all(hasattr(bk.Policy, name) for name in _workload.SAME_WORK)
    same = _workload.run_workload("neural-ts digits", 0, 40)
    default = _workload.run_workload("neural-ts digits", 0, 40, same_work=False)
    assert (
        same["regret"] == default["regret"]
    )  # the propensity draws have their own stream


def test_every_timed_fit_descends_at_the_benchmarks_own_width() -> None:
    """A fit that diverges would time arithmetic on NaN: every objective must decrease."""
    for kind in bench.KINDS:
        for depth in bench.DEPTHS:
            for dtype in bench.DTYPES.values():
                run, _, _ = bench.fit_problem(kind, 100, depth, dtype)
                first, last = run().history
                assert bool(torch.isfinite(last).all()), (kind, depth, dtype)
                assert bool((last < first).all()), (kind, depth, dtype)
