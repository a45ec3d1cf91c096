"""The order a process pool computes runs in (experiments.schedule)."""

from __future__ import annotations

import time

import pytest

from banditkit.experiments.compute.schedule import RunScheduler, simulate_schedule
from banditkit.experiments.config.load import load_config
from banditkit.experiments.config.resolve import resolve
from tests.experiments.helpers import brute_force_makespan


def test_one_probe_per_kind_then_the_dearest_kind_first():
    s = RunScheduler(["cheap", "cheap", "cheap", "dear", "dear", "dear"])
    assert [s.take(0.0), s.take(0.0)] == [0, 3]  # probes, config order
    s.finish(0, 1.0)
    s.finish(3, 10.0)
    assert s.take(10.0) == 4  # the dear kind goes next
    assert s.take(10.0) == 5
    assert s.take(10.0) == 1
    assert s.take(10.0) == 2
    assert s.take(10.0) is None
    assert s.remaining == 0


def test_a_running_probe_is_priced_by_its_elapsed_time():
    s = RunScheduler(["a", "a", "b", "b"])
    assert [s.take(0.0), s.take(0.0)] == [0, 2]
    s.finish(2, 3.0)  # b took 3 s; a's probe still runs
    assert s.expected("a", 2.0) == pytest.approx(2.0)
    assert s.take(2.0) == 3  # a is cheaper so far
    assert s.expected("a", 5.0) == pytest.approx(5.0)
    assert s.take(5.0) == 1


def test_failed_runs_do_not_price_their_kind():
    s = RunScheduler(["a", "a"])
    s.take(0.0)
    s.finish(0, None)
    assert s.expected("a", 1.0) is None


def test_longest_first_fixes_the_idle_tail_of_the_config_order():
    # cheap cells first, three dear runs of one cell last (the demo's shape)
    seconds = [1.0] * 6 + [10.0] * 3
    kinds = ["c1", "c1", "c2", "c2", "c3", "c3", "dear", "dear", "dear"]
    old = simulate_schedule(seconds, None, 2)
    new = simulate_schedule(seconds, kinds, 2)
    assert old.makespan == 23.0  # 3 + 10 + 10: the last dear run alone
    # one cheap probe ahead of the second dear run: within one cheap run of the optimum
    assert new.makespan == 21.0
    assert brute_force_makespan(seconds, 2) == 20.0
    assert sorted(new.order) == list(range(9))
    assert sum(new.busy) == pytest.approx(sum(seconds))


@pytest.mark.parametrize("seed", range(5))
def test_replays_respect_the_bound_and_hand_out_every_run_once(seed):
    import numpy as np

    rng = np.random.default_rng(seed)
    n_kinds, per_kind = 4, 3
    cost = rng.uniform(0.1, 5.0, n_kinds)
    kinds = [k for k in range(n_kinds) for _ in range(per_kind)]
    seconds = [float(cost[k]) for k in kinds]
    for workers in (1, 2, 3):
        out = simulate_schedule(seconds, kinds, workers)
        bound = max(max(seconds), sum(seconds) / workers)
        assert out.makespan >= bound - 1e-9
        assert sorted(out.order) == list(range(len(seconds)))
        if workers == 1:
            assert out.makespan == pytest.approx(sum(seconds))


def test_simulate_schedule_rejects_no_workers():
    with pytest.raises(ValueError, match="workers"):
        simulate_schedule([1.0], None, 0)


def test_run_kind_ignores_the_seed_only():
    cfg = load_config(
        {
            "name": "k",
            "horizon": 10,
            "seeds": 2,
            "env": {"name": "linear", "d": 3},
            "policies": [{"name": "random"}, {"name": "linucb"}],
        }
    )
    runs = resolve(cfg).runs()
    kinds = [r.kind for r in runs]
    assert kinds[0] == kinds[1]
    assert kinds[2] == kinds[3]
    assert kinds[0] != kinds[2]


def test_early_pool_only_for_a_process_pool_and_always_closed(tmp_path):
    import multiprocessing

    from banditkit.experiments.config.errors import ConfigError
    from banditkit.experiments.runner import early_pool, run_experiment

    assert early_pool("auto", 1) is None
    assert early_pool("serial", 4) is None
    assert early_pool("auto", None) is None
    with pytest.raises(ValueError, match="backend"):
        early_pool("threads", 2)
    with pytest.raises(ValueError, match="start_method"):
        run_experiment({}, tmp_path / "never", jobs=2, start_method="forkserver")
    # an invalid config: the workers started before resolving it are shut down
    bad = {"name": "x", "horizon": 5, "seeds": 1, "env": {"name": "linear"}}
    with pytest.raises(ConfigError):
        run_experiment(bad, tmp_path / "out", jobs=2, progress="none")
    deadline = time.monotonic() + 60.0  # they exit in the background
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert multiprocessing.active_children() == []
    assert not (tmp_path / "out").exists()
