"""Pricing a protocol before it runs (``plan.costs``, ``reproduce --plan``)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from banditkit.core import make_policy
from banditkit.experiments.compute.execute import compute_run
from banditkit.experiments.config.resolve import resolve
from banditkit.experiments.config.resolved import RunSpec
from banditkit.experiments.plan import costs
from banditkit.experiments.plan.costs import (
    GPU_FLOPS,
    GPU_ROUND_SECONDS,
    MIN_ROUNDS,
    KindCost,
    figure_cost,
    plan_table,
    price,
    probe_kind,
    wall_seconds,
    warmup_spans,
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


def test_warmup_rounds_are_priced_at_their_own_cost():
    spans = ((0, 10), (30, 35), (90, 200))  # the last cut at the horizon
    cost = KindCost(setup=1.0, a=0.01, b=1e-4, warm=0.5, warmup=spans)
    warm = {t for start, stop in spans for t in range(start, stop)}
    expected = 1.0 + sum(0.5 if t in warm else 0.01 + 1e-4 * t for t in range(100))
    # the priced line is the integral of a + b t: within b/2 a round of the sum
    assert cost.cpu_seconds(100) == pytest.approx(expected, abs=1e-4 * 100)


def test_warmup_spans_are_the_rounds_warmup_rounds_counts():
    for policy, horizon in (
        (make_policy("glm-es", warmup=30), 100),
        (make_policy("glm-es", warmup=50, anytime={"t0": 40, "base": 2.0}), 1000),
        (make_policy("linucb"), 100),
    ):
        spans = warmup_spans(policy, horizon)
        counts = [policy.warmup_rounds(h) for h in range(horizon + 1)]
        warm = {t for t in range(horizon) if counts[t + 1] > counts[t]}
        assert {t for a, b in spans for t in range(a, b)} == warm
    anytime = warmup_spans(
        make_policy("glm-es", warmup=50, anytime={"t0": 40, "base": 2.0}), 1000
    )
    assert anytime[0][0] == 0 and len(anytime) > 2  # a warm-up at every restart


def test_interleaved_replays_veto_a_growth_that_the_load_could_fake():
    probe = costs._Probe(0.0, ())
    assert costs._grows(probe) is None and costs._keep(probe) == "significant"
    probe.early = (10, [1.0, 1.1, 0.9, 1.0, 1.05])
    probe.late = (110, [1.6, 1.5, 1.7, 1.5, 1.55])
    assert costs._grows(probe) and costs._keep(probe) == "significant"
    probe.late = (110, [1.6, 1.5, 1.7, 1.5, 1.08])  # 21 of 25 pairs: still grows
    assert costs._grows(probe)
    probe.late = (110, [1.6, 1.5, 1.0, 1.0, 1.08])  # 16 of 25: no
    assert not costs._grows(probe) and costs._keep(probe) == "none"
    spec = RunSpec("x", {}, "y", {}, 0, 50)
    drift = {t: 1.0 + 0.01 * t for t in range(5, 45)}
    assert costs._fit(spec, drift, {}, "none") == (0.0, pytest.approx(1.245), 0.0)
    assert costs._fit(spec, drift, {}, "significant") == (
        0.0,
        pytest.approx(1.0),
        pytest.approx(0.01),
    )


def test_the_growth_is_kept_only_where_it_stands_out_of_the_noise():
    rng = np.random.default_rng(0)
    t = np.arange(100, 500)
    a, b = costs._line(t, 1e-3 + 1e-6 * t + rng.normal(0, 1e-5, t.size))
    assert a == pytest.approx(1e-3, rel=0.05) and b == pytest.approx(1e-6, rel=0.05)
    noise = 1e-3 + rng.normal(0, 2e-4, t.size)
    assert costs._line(t, noise) == (pytest.approx(noise.mean()), 0.0)
    small = 1e-3 * (
        1 + 0.03 * (t - 100) / 400
    )  # a rise of 3 %, exact: not extrapolated
    assert costs._line(t, small) == (pytest.approx(small.mean()), 0.0)
    assert costs._line(t, small, keep="any")[1] == pytest.approx(0.03e-3 / 400)
    falling = 2e-3 - 1e-6 * t
    assert costs._line(t, falling) == (pytest.approx(falling.mean()), 0.0)
    # a re-fit every 10 rounds that costs 1e-5 t: bins of whole periods see it grow
    spiky = np.where(t % 10 == 0, 1e-5 * t, 0.0)
    a, b = costs._line(t, spiky, period=10)
    assert a + b * t.mean() == pytest.approx(spiky.mean(), rel=0.05)


def test_a_probe_measures_a_growing_cost():
    spec = RunSpec("linear", {"d": 3}, "linucb", {}, 0, 50)
    cost = probe_kind(spec)
    assert cost.error is None and MIN_ROUNDS <= cost.rounds <= 50
    assert cost.a + cost.b > 0 and cost.flops_a is None
    broken = probe_kind(
        RunSpec("classification", {"dataset": "nope"}, "random", {}, 0, 5)
    )
    assert broken.error is not None and broken.cpu_seconds(5) == 0.0


def test_kinds_are_probed_once_and_alike_kinds_share_a_price_past_the_budget():
    probed: list[str] = []
    warmups: list[int | None] = []

    def probe(spec: RunSpec) -> KindCost:
        probed.append(spec.policy_name)
        warmups.append(spec.policy_params.get("warmup"))
        return KindCost(0.0, 0.001 if spec.policy_name == "linucb" else 1e-5, 0.0)

    resolved = resolve(CONFIG)
    prices = price(resolved.runs(), budget=0.0, probe=probe)
    assert sorted(probed) == ["linucb", "random"]  # each kind once
    cost = figure_cost("fig", resolved, prices)
    assert cost.runs == 6 and cost.rounds == 600
    assert cost.cpu_hours == pytest.approx(3 * (0.1 + 0.001) / 3600)
    assert wall_seconds(cost, 1) == pytest.approx(3 * 0.101)
    assert wall_seconds(cost, 6) == pytest.approx(0.1)  # one run per CPU
    probed.clear()
    alpha = resolve({**CONFIG, "policies": [{"name": "linucb", "nu": 3.0}]}).runs()
    prices = price(resolved.runs() + alpha, budget=1e9, probe=probe)
    assert sorted(probed) == ["linucb", "random"]  # another nu: priced alike
    probed.clear()
    other = resolve({**CONFIG, "env": {"name": "linear", "d": 4}}).runs()
    prices = price(resolved.runs() + other, budget=0.0, probe=probe)
    assert sorted(probed) == ["linucb", "linucb", "random", "random"]  # d = 4: its own
    probed.clear()
    warm = resolve(
        {
            **CONFIG,
            "policies": [
                {"name": "glm-ucb", "label": "W20", "warmup": 20},
                {"name": "glm-ucb"},
            ],
        }
    ).runs()
    prices = price(warm, budget=0.0, probe=probe)
    assert probed == ["glm-ucb"] and warmups[-1] == 0  # the one without a warm-up
    # each priced with its own
    assert {c.warmup for c in prices.values()} == {(), ((0, 20),)}
    table = plan_table([cost, cost], jobs=2, nodes=2, node_cpus=3)
    assert "| fig | 6 | 600 |" in table and "| **all** | 12 | 1,200 |" in table


def test_a_preset_that_sets_the_width_is_a_size_of_its_own():
    """NVLDB's "main" preset (m = 100) is not priced as its "appendix" (m = 32) runs.

    Fig. 2's main-preset runs priced as Fig. E.1's appendix-preset ones came out at
    0.31-0.44x of their measured time.
    """
    probed: list[str] = []

    def probe(spec: RunSpec) -> KindCost:
        probed.append(spec.policy_params["preset"])
        return KindCost(0.0, 1e-3, 0.0)

    runs = resolve(
        {
            "name": "x",
            "horizon": 10,
            "seeds": 1,
            "env": {"name": "dueling", "utility": "cos", "d": 5, "n_arms": 5},
            "policies": [
                {"name": "nvldb-ucb", "label": "m32", "preset": "appendix"},
                {"name": "nvldb-ucb", "label": "m100", "preset": "main"},
                {"name": "nvldb-ucb", "label": "m32b", "preset": "appendix", "a": 2.0},
            ],
        }
    ).runs()
    price(runs, budget=0.0, probe=probe)
    assert sorted(probed) == ["appendix", "main"]  # a = 2 shares the appendix price


LOGISTIC = {"function": "logistic", "d": 5, "n_arms": 10}


@pytest.mark.parametrize(
    ("policy", "params", "horizon"),
    [
        ("linucb", {}, 2000),  # flat
        (
            "glm-ucb",
            {"update_every": 1, "rewards": "real"},
            1000,
        ),  # a re-fit on the whole history
        ("glm-es", {"warmup": 200, "m": 4, "steps": 20}, 800),  # cheap warm-up, re-fits
        (  # fits on its distinct rows (at most K = 10: growth_cap)
            "neural-ucb",
            {"grouped": True, "width": 8, "depth": 2, "steps": 20, "update_every": 1},
            1500,
        ),
    ],
)
def test_the_plan_prices_a_run_within_a_factor_two_of_its_measured_cpu_seconds(
    monkeypatch, policy, params, horizon
):
    for name in ("PROBE_SECONDS", "TORCH_PROBE_SECONDS"):  # a part of the run, as
        monkeypatch.setattr(costs, name, 0.02)  # for T large
    spec = RunSpec("nonlinear", LOGISTIC, policy, params, 0, horizon)
    # a short run first, so that a process's first calls (imports, lazy
    # initialisations) land in neither the run nor the probe: in a probe cut 20x shorter
    # than a plan's they weigh 20x more, in the run as much as its rounds
    compute_run(replace(spec, horizon=20))
    measured = compute_run(spec).meta["cpu_seconds"]
    cost = probe_kind(spec)
    assert cost.error is None and cost.rounds < horizon / 2
    assert 0.5 < cost.cpu_seconds(horizon) / measured < 2.0


def test_a_pytorch_policy_is_probed_replayed_and_its_flops_counted():
    params = {"width": 8, "depth": 2, "steps": 3, "update_every": 1}
    cost = probe_kind(RunSpec("nonlinear", LOGISTIC, "neural-ucb", params, 0, 60))
    assert cost.error is None and cost.flops_a is not None and cost.flops_a > 0
    assert cost.a > 0 and cost.gpu_seconds(60) is not None


def test_runs_on_their_distinct_duels_are_priced_apart_and_as_upper_bounds():
    """``distinct_duels``: the first rounds overstate the share of duels the fits read."""
    probed: list[bool] = []

    def probe(spec: RunSpec) -> KindCost:
        probed.append(bool(spec.policy_params.get("distinct_duels")))
        return KindCost(0.0, 0.01, 1e-5, upper=costs._shrinking(spec))

    config = {
        **CONFIG,
        "env": {"name": "dueling", "utility": "cos", "d": 3, "n_arms": 4},
        "policies": [
            {"name": "nvldb-ucb", "label": "all", "width": 4, "distinct_duels": False},
            {
                "name": "nvldb-ucb",
                "label": "distinct",
                "width": 4,
                "distinct_duels": True,
            },
        ],
    }
    resolved = resolve(config)
    prices = price(resolved.runs(), budget=1e9, probe=probe)
    assert sorted(probed) == [False, True]  # not priced alike: one probe each
    assert sorted(c.upper for c in prices.values()) == [False, True]
    cost = figure_cost("figE5", resolved, prices)
    assert cost.upper
    exact = figure_cost(
        "fig", resolve(CONFIG), price(resolve(CONFIG).runs(), 1e9, probe)
    )
    assert not exact.upper
    table = plan_table([cost, exact], jobs=2, nodes=2, node_cpus=3)
    rows = {line.split("|")[1].strip(): line for line in table.splitlines()[2:]}
    # CPU-hours and the three wall times (no GPU-hours: these kinds count no FLOPs)
    assert rows["figE5"].count("<= ") == 4
    assert "<=" not in rows["fig"] and rows["**all**"].count("<= ") == 4
    spec = next(s for s in resolved.runs() if s.policy_params.get("distinct_duels"))
    assert probe_kind(spec).upper  # the real probe marks it too


def test_a_capped_line_is_summed_as_its_rounds():
    spans = ((0, 10), (30, 35))
    for cap in (None, 0, 20, 50, 500):
        cost = KindCost(setup=0.0, a=0.01, b=1e-4, warm=0.5, warmup=spans, cap=cap)
        warm = {t for start, stop in spans for t in range(start, stop)}
        top = 10**9 if cap is None else cap
        expected = sum(
            0.5 if t in warm else 0.01 + 1e-4 * min(t, top) for t in range(100)
        )
        assert cost.cpu_seconds(100) == pytest.approx(expected, abs=1e-4 * 100)


def test_the_growth_is_capped_only_for_distinct_rows_over_fixed_arms():
    """``growth_cap``: K n / u for a policy that reads distinct rows of fixed arms."""
    grouped = {"grouped": True, "width": 8, "depth": 2, "steps": 2, "update_every": 1}
    cost = probe_kind(RunSpec("nonlinear", LOGISTIC, "neural-ucb", grouped, 0, 400))
    assert cost.error is None and cost.cap is not None
    assert cost.rounds <= cost.cap <= 10 * cost.rounds  # K = 10 arms, u >= 1
    plain = probe_kind(
        RunSpec(
            "nonlinear", LOGISTIC, "neural-ucb", {**grouped, "grouped": False}, 0, 400
        )
    )
    assert plain.cap is None  # every row is fitted: the cost grows with the rounds
    fresh = probe_kind(  # contexts drawn afresh each round: no fixed arms
        RunSpec(
            "linear",
            {"d": 3, "n_arms": 4, "law": "unit-ball"},
            "neural-ucb",
            grouped,
            0,
            400,
        )
    )
    assert fresh.error is None and fresh.cap is None
    assert make_policy("neural-es").reads_distinct_rows
    assert not make_policy("neural-phe").reads_distinct_rows  # Theta(t) draws a round
    assert not make_policy("evill").reads_distinct_rows


def test_a_constant_flop_count_is_no_growth_that_lets_any_cpu_slope_through(
    monkeypatch,
):
    """``_flops_grow``: the fitted slope of an exact, constant count is rounding error.

    Taken for growth, it switched the CPU line to "any positive slope" and a drift of a
    few per cent over a Neural-PHE probe priced its run of T = 10,000 up to 100x higher.
    """
    probe = costs._Probe(0.0, ())
    probe.flops = {100: 2.02e7, 101: 2.02e7, 102: 2.02e7}
    for noise in (6.76e-12, 1.79e-9, 0.0):  # slopes fitted on such counts
        assert not costs._flops_grow(probe, noise)
    assert costs._flops_grow(probe, 0.5)  # a FLOP over two rounds: a growing count
    assert not costs._flops_grow(costs._Probe(0.0, (), flops={5: 1.0}), 10.0)

    rounds = range(5, 125)  # CPU-seconds that drift up 5 %: kept only as "any"
    drift = {t: 6e-3 * (1 + 0.05 * (t - 5) / 120) for t in rounds}
    played = costs._Probe(0.0, (), seconds=drift, warm=dict.fromkeys(rounds, False))
    played.flops = {125: 2.02e7, 126: 2.02e7 + 1e-8, 127: 2.02e7 + 2e-8}
    monkeypatch.setattr(costs, "_play", lambda *args: played)
    params = {"width": 8, "depth": 2, "steps": 2}
    cost = probe_kind(RunSpec("nonlinear", LOGISTIC, "neural-phe", params, 0, 10_000))
    assert cost.error is None and cost.b == 0.0 and cost.flops_b == 0.0
    assert cost.a == pytest.approx(np.mean(list(drift.values())))
    assert cost.flops_a == pytest.approx(2.02e7)
    played.flops = {125: 2.0e7, 126: 2.1e7, 127: 2.2e7}  # a network on every row
    grows = probe_kind(RunSpec("nonlinear", LOGISTIC, "neural-phe", params, 0, 10_000))
    assert grows.flops_b > 0 and grows.b > 0  # the rise of the CPU line is kept


def test_the_first_round_after_the_warm_up_is_priced_once_not_per_round():
    """``_first_round``: PyTorch's first calls (40 ms against 2 ms) are a set-up cost."""
    warm = dict.fromkeys(range(5), True)
    seconds = {t: 0.5 for t in range(5)} | {5: 0.04} | {t: 2e-3 for t in range(6, 40)}
    probe = costs._Probe(0.0, ((0, 5),), seconds=dict(seconds), warm=dict(warm))
    assert costs._first_round(probe) == 0.04
    assert 5 not in probe.seconds and len(probe.seconds) == 39
    assert costs._first_round(probe) == 2e-3  # (each call takes the next)
    few = {t: 2e-3 for t in range(MIN_ROUNDS)}
    short = costs._Probe(0.0, (), seconds=dict(few), warm={})
    assert costs._first_round(short) == 0.0 and short.seconds == few


def test_a_probe_prices_its_first_round_in_the_set_up(monkeypatch):
    seconds = {0: 0.04} | {t: 2e-3 for t in range(1, 60)}
    played = costs._Probe(0.01, (), seconds=seconds, warm=dict.fromkeys(seconds, False))
    monkeypatch.setattr(costs, "_play", lambda *args: played)
    cost = probe_kind(RunSpec("linear", {"d": 3}, "linucb", {}, 0, 10_000))
    assert cost.error is None and cost.rounds == 60
    assert cost.setup == pytest.approx(0.05) and cost.a == pytest.approx(2e-3)
    assert cost.cpu_seconds(10_000) == pytest.approx(0.05 + 20.0)


def test_a_growth_the_flops_show_is_measured_by_the_replays_or_the_gemm_rate():
    """``_growth``: where the FLOPs grow, b is the replays' slope, at least the GEMM's."""
    rate = costs.gemm_seconds_per_flop("float32")
    assert 1e-13 < rate < 1e-8  # 1.0e-11 s (100 GFLOP/s) on the AMD EPYC
    assert costs.gemm_seconds_per_flop("float64") > rate / 4
    probe = costs._Probe(0.0, ())
    assert costs._growth(probe, 1e6, "float32") == pytest.approx(1e6 * rate)
    probe.early = (10, [0.0450, 0.0420, 0.0431])  # fastest of each: 42.0 and 54.6 ms
    probe.late = (74, [0.0546, 0.0600, 0.0571])
    assert costs._growth(probe, 1e6, "float32") == pytest.approx(0.0126 / 64)
    probe.early = (1, [0.070, 0.071, 0.070])  # a first fit that costs more than later
    assert costs._growth(probe, 1e6, "float32") == pytest.approx(1e6 * rate)
    rounds = range(10, 75)
    seconds = {t: 0.04 + 2e-4 * t for t in rounds}
    warm = dict.fromkeys(rounds, False)
    spec = RunSpec("x", {}, "y", {}, 0, 100)
    _, a, b = costs._fit(spec, seconds, warm, slope=2e-4)
    assert (a, b) == (pytest.approx(0.04), 2e-4)
    assert costs._fit(spec, seconds, warm, slope=1.0)[1] == 0.0  # never below zero


def test_a_capped_growth_is_priced_as_an_upper_bound(monkeypatch):
    """New arms come more slowly after the probe than at its rate: a + b min(t, cap) is
    an upper bound of a kind that fits on its distinct rows (``KindCost.upper``)."""
    rounds = range(1, 61)
    played = costs._Probe(0.0, (), warm=dict.fromkeys(rounds, False))
    played.distinct_rows, played.arms = True, np.zeros((10, 2))
    played.played, played.played_rounds = {b"a", b"b"}, 20  # K n / u = 100
    monkeypatch.setattr(costs, "_play", lambda *args: played)
    spec = RunSpec("linear", {"d": 2}, "linucb", {}, 0, 10_000)
    played.seconds = {t: 1e-3 * (1 + t / 50) for t in rounds}  # grows, capped
    grows = probe_kind(spec)
    assert grows.cap == 100 and grows.b > 0 and grows.upper
    played.seconds = dict.fromkeys(rounds, 1e-3)  # flat: no bound to speak of
    assert not probe_kind(spec).upper
    played.seconds = {t: 1e-3 * (1 + t / 50) for t in rounds}
    played.distinct_rows = False  # every row fitted: the growth is the run's own
    assert not probe_kind(spec).upper
