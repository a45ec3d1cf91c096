"""The process-grid benchmark's diagnosis (no subprocess: its arithmetic on made-up runs)."""

from __future__ import annotations

from datetime import datetime

import pytest

from benchmarks.process_grid import critical_path, diagnose, replay
from tests.experiments.helpers import brute_force_makespan


@pytest.mark.parametrize(
    "seconds",
    [[1.4, 1.4, 1.4, 0.1, 0.1, 0.1], [5.0], [1.0, 1.0, 4.0], [3.0, 2.0, 2.0, 2.0, 1.0]],
)
def test_critical_path_is_a_lower_bound_reached_by_the_demo_shape(seconds):
    bound = critical_path(seconds, 2)
    assert bound <= brute_force_makespan(seconds, 2) + 1e-12
    if seconds[:3] == [1.4, 1.4, 1.4]:  # three equal dear runs: two share a worker
        assert bound == pytest.approx(2.8) == brute_force_makespan(seconds, 2)


def _meta(i, cpu, policy, pid=1, start="2026-01-01T00:00:00+00:00", end=None):
    return {
        "id": str(i),
        "_order": i,
        "cpu_seconds": cpu,
        "pid": pid,
        "started": start,
        "finished": end or start,
        "env": {"name": "e", "params": {}, "label": "E"},
        "policy": {"name": policy, "params": {}, "label": policy},
    }


def test_replay_predicts_from_cpu_times_and_overheads():
    metas = [_meta(i, 1.4, "dear") for i in range(3)]
    metas += [_meta(3 + i, 0.1, "cheap") for i in range(3)]
    # serial command: 4.5 CPU s of runs + 3 s of driver; parallel: 0.4 s more (start-up)
    r = replay(metas, 7.5, 7.9, 2)
    assert r["run_cpu_total"] == pytest.approx(4.5)
    assert r["driver_cpu"] == pytest.approx(3.0)
    assert r["worker_start_up"] == pytest.approx(0.2)
    assert r["makespan_bound"] == pytest.approx(2.8)
    assert r["makespan_scheduled"] >= r["makespan_bound"] - 1e-12
    assert r["idle_ratio_bound"] == pytest.approx(7.5 / (3.0 + 0.2 + 2.8))
    # 4 seeds: the dear runs split 2 + 2 over the workers
    assert r["what_if_idle_ratio_scheduled"] > r["idle_ratio_scheduled"]


def test_diagnose_splits_busy_and_idle_per_worker():
    metas = [
        _meta(0, 1.0, "a", 1, "2026-01-01T00:00:01+00:00", "2026-01-01T00:00:05+00:00"),
        _meta(1, 1.0, "a", 2, "2026-01-01T00:00:01+00:00", "2026-01-01T00:00:03+00:00"),
    ]
    t0 = datetime.fromisoformat("2026-01-01T00:00:00+00:00").timestamp()
    timing = {"started": t0, "ended": t0 + 7.0}
    d = diagnose(timing, metas, 2)
    assert d["before_runs"] == pytest.approx(1.0)
    assert d["runs_phase"] == pytest.approx(4.0)
    assert d["after_runs"] == pytest.approx(2.0)
    idle = {w["pid"]: w["idle"] for w in d["workers"]}
    assert idle == {1: pytest.approx(0.0), 2: pytest.approx(2.0)}
