"""Pricing a protocol before it runs (``plan.costs``, ``reproduce --plan``)."""

from __future__ import annotations

import pytest

from banditkit.experiments.config.resolve import resolve
from banditkit.experiments.config.resolved import RunSpec
from banditkit.experiments.plan.costs import (
    GPU_FLOPS,
    GPU_ROUND_SECONDS,
    KindCost,
    figure_cost,
    plan_table,
    price,
    probe_kind,
    wall_seconds,
)

CONFIG = {
    "name": "x",
    "horizon": 100,
    "seeds": 3,
    "env": {"name": "linear", "d": 3},
    "policies": [{"name": "linucb"}, {"name": "random"}],
}


def test_a_run_is_priced_from_its_per_round_line():
    cost = KindCost(setup=2.0, a=0.01, b=1e-4, flops_a=1e9, flops_b=1e6)
    assert cost.cpu_seconds(100) == pytest.approx(2.0 + 1.0 + 1e-4 * 100**2 / 2)
    flops = 1e9 * 100 + 1e6 * 100**2 / 2
    assert cost.gpu_seconds(100) == pytest.approx(
        2.0 + flops / GPU_FLOPS + GPU_ROUND_SECONDS * 100
    )
    assert KindCost(0.0, 0.01, 0.0).gpu_seconds(100) is None  # no PyTorch


def test_a_probe_measures_a_growing_cost():
    spec = RunSpec("linear", {"d": 3}, "linucb", {}, 0, 50)
    cost = probe_kind(spec)
    assert cost.error is None and 12 <= cost.rounds <= 50
    assert cost.a + cost.b > 0 and cost.flops_a is None
    broken = probe_kind(
        RunSpec("classification", {"dataset": "nope"}, "random", {}, 0, 5)
    )
    assert broken.error is not None and broken.cpu_seconds(5) == 0.0


def test_kinds_are_probed_once_and_alike_kinds_share_a_price_past_the_budget():
    probed: list[str] = []

    def probe(spec: RunSpec) -> KindCost:
        probed.append(spec.policy_name)
        return KindCost(0.0, 0.001 if spec.policy_name == "linucb" else 1e-5, 0.0)

    resolved = resolve(CONFIG)
    prices = price(resolved.runs(), budget=0.0, probe=probe)
    assert sorted(probed) == ["linucb", "random"]  # each kind once
    cost = figure_cost("fig", resolved, prices)
    assert cost.runs == 6 and cost.rounds == 600
    assert cost.cpu_hours == pytest.approx(3 * (0.1 + 0.001) / 3600)
    assert wall_seconds(cost, 1) == pytest.approx(3 * 0.101)
    assert wall_seconds(cost, 6) == pytest.approx(0.1)  # one run per CPU
    other = resolve({**CONFIG, "env": {"name": "linear", "d": 4}}).runs()
    probed.clear()
    prices = price(resolved.runs() + other, budget=0.0, probe=probe)
    assert sorted(probed) == ["linucb", "random"]  # d = 4 priced as d = 3
    table = plan_table([cost, cost], jobs=2, nodes=2, node_cpus=3)
    assert "| fig | 6 | 600 |" in table and "| **all** | 12 | 1,200 |" in table
