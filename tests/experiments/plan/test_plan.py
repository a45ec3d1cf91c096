"""The plan: distinct runs, those left to compute, their tasks and the backend."""

from __future__ import annotations

from banditkit.experiments.config.resolve import resolve
from banditkit.experiments.plan.plan import make_plan
from banditkit.experiments.plan.tasks import SeedGroup
from tests.experiments.helpers import tiny


def test_labels_with_identical_settings_share_a_run_and_finished_runs_are_left_out():
    config = tiny(
        policies=[
            {"name": "linucb", "label": "A", "nu": 0.5},
            {"name": "linucb", "label": "B", "nu": 0.5},
            {"name": "random", "label": "R"},
        ]
    )
    resolved = resolve(config)
    assert len(resolved.runs()) == 2 * 3 * 2
    plan = make_plan(resolved, lambda run_id: False)
    assert len(plan.runs) == 2 * 2 * 2  # A and B are one configuration
    assert [s.id for s in plan.runs] == list(
        dict.fromkeys(s.id for s in resolved.runs())
    )
    done = {plan.runs[0].id, plan.runs[3].id}
    later = make_plan(resolved, done.__contains__)
    assert later.skipped == 2 and len(later.todo) == 6
    assert all(s.id not in done for s in later.todo)
    assert later.tasks == later.todo  # nothing here batches its seeds


def test_auto_backend_and_workers():
    resolved = resolve(tiny())
    assert (make_plan(resolved, lambda i: False).backend, 1) == ("serial", 1)
    pool = make_plan(resolved, lambda i: False, jobs=3)
    assert (pool.backend, pool.workers) == ("process", 3)
    one_left = make_plan(resolved, lambda i: i != resolved.runs()[0].id, jobs=3)
    assert (one_left.backend, one_left.workers) == ("serial", 1)
    ray = make_plan(resolved, lambda i: False, backend="ray", jobs=2)
    assert (ray.backend, ray.workers) == ("ray", 2)


def test_seeds_of_a_batchable_configuration_are_one_task():
    config = tiny(
        envs=[{"name": "logistic", "h": "h1", "d": 3, "n_arms": 3}],
        policies=[
            {"name": "neurallog-ucb2", "label": "N", "width": 4, "steps": 2},
            {"name": "random", "label": "R"},
        ],
        seeds=3,
    )
    plan = make_plan(resolve(config), lambda i: False, batch_seeds="on")
    groups = [t for t in plan.tasks if isinstance(t, SeedGroup)]
    assert len(groups) == 1 and [s.seed for s in groups[0].specs] == [0, 1, 2]
    assert len(plan.tasks) == 1 + 3
    assert groups[0].kind != plan.tasks[1].kind
