"""The exact assortment optimisers against brute force and against each other."""

import itertools
import math
import statistics
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import banditkit as bk
from banditkit.assortment import (
    expected_revenue,
    optimal_assortment,
    revenue_ordered_assortment,
)

EXACT = ("auto", "dinkelbach", "rss", "brute")


@st.composite
def instances(draw, scale=50.0):
    """N <= 10 items, utilities in [-scale, scale] (some tied), revenues with ties/zeros."""
    n = draw(st.integers(1, 10))
    ints = draw(st.booleans())
    elem = (
        st.integers(-int(scale), int(scale)).map(float)
        if ints
        else st.floats(-scale, scale, allow_nan=False)
    )
    u = draw(st.lists(elem, min_size=n, max_size=n))
    rev = st.one_of(st.sampled_from([0.0, 1.0, 2.0, 3.0]), st.floats(0.0, 10.0))
    r = draw(st.lists(rev, min_size=n, max_size=n))
    k = draw(st.integers(1, n + 2))
    return np.array(u), np.array(r), k


def _check(result, u, r, k):
    items, revenue = result
    assert list(items) == sorted(set(items)) and len(items) <= k
    assert all(isinstance(i, int) for i in items)
    assert revenue == pytest.approx(expected_revenue(items, u, r), rel=1e-12, abs=0)


def _enumerate(u, r, k):
    """Independent oracle: itertools over every subset, scored by expected_revenue."""
    n = len(u)
    return max(
        expected_revenue(s, u, r)
        for size in range(min(k, n) + 1)
        for s in itertools.combinations(range(n), size)
    )


@settings(
    max_examples=2500, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(instances())
def test_exact_methods_equal_brute_force(case):
    u, r, k = case
    want = optimal_assortment(u, r, capacity=k, method="brute")
    _check(want, u, r, k)
    for method in EXACT:
        got = optimal_assortment(u, r, capacity=k, method=method)
        _check(got, u, r, k)
        assert got.revenue == pytest.approx(want.revenue, rel=1e-9, abs=1e-300)


@settings(max_examples=300, deadline=None)
@given(instances(scale=8.0))
def test_brute_force_oracle_equals_plain_enumeration(case):
    u, r, k = case
    got = optimal_assortment(u, r, capacity=k, method="brute").revenue
    assert got == pytest.approx(_enumerate(u, r, k), rel=1e-12, abs=1e-300)


@settings(max_examples=600, deadline=None)
@given(instances(scale=3.0))
def test_lp_agrees_with_dinkelbach(case):
    # the LP is a cross-check for moderate utility spans: weights e^{u} that differ by
    # more than ~1e7 fall under the LP solver's tolerances (see docs/assortment.md)
    u, r, k = case
    lp = optimal_assortment(u, r, capacity=k, method="lp")
    _check(lp, u, r, k)
    exact = optimal_assortment(u, r, capacity=k, method="dinkelbach")
    # HiGHS stops at its optimality tolerance (1e-7): on a near-tie (two weights e^u that
    # differ by 6e-8) it may return the other item, worth 1.5e-8 less in relative terms
    assert lp.revenue == pytest.approx(exact.revenue, rel=1e-7, abs=1e-7 * r.max())


def test_dinkelbach_rss_and_lp_agree_on_larger_instances():
    rng = np.random.default_rng(3)
    for n, k in [(30, 5), (60, 10), (100, 3), (80, 100)]:
        u, r = rng.normal(0, 1.5, n), rng.lognormal(0, 1, n)
        d = optimal_assortment(u, r, capacity=k, method="dinkelbach")
        for method in ("rss", "lp"):
            other = optimal_assortment(u, r, capacity=k, method=method)
            assert other.revenue == pytest.approx(d.revenue, rel=1e-10)


def test_revenue_ordered_sets_are_suboptimal_under_a_capacity():
    # A: r = 10, v = 0.01; B: r = 5, v = 10; C: r = 4.9, v = 10; K = 2.
    # Revenue-ordered prefixes: {A}: 0.1 / 1.01, {A, B}: 50.1 / 11.01 = 4.5504.
    # The optimum drops the high-revenue item A: {B, C}: 99 / 21 = 4.7143.
    u = np.log([0.01, 10.0, 10.0])
    r = np.array([10.0, 5.0, 4.9])
    heuristic = revenue_ordered_assortment(u, r, capacity=2)
    assert heuristic.items == (0, 1)
    assert heuristic.revenue == pytest.approx(50.1 / 11.01)
    for method in (*EXACT, "lp"):
        best = optimal_assortment(u, r, capacity=2, method=method)
        assert best.items == (1, 2)
        assert best.revenue == pytest.approx(99.0 / 21.0)
        assert best.revenue > heuristic.revenue + 0.1
    # without a binding capacity the revenue-ordered set is optimal (Talluri-van Ryzin)
    free = optimal_assortment(u, r, capacity=3)
    assert free.items == (0, 1, 2)
    assert revenue_ordered_assortment(u, r, capacity=3) == free


@settings(max_examples=500, deadline=None)
@given(instances())
def test_revenue_ordered_is_optimal_without_a_capacity(case):
    u, r, _ = case
    n = len(u)
    heuristic = revenue_ordered_assortment(u, r, capacity=n)
    best = optimal_assortment(u, r, capacity=n)
    assert heuristic.revenue == pytest.approx(best.revenue, rel=1e-9, abs=1e-300)


def test_equal_revenues_give_the_top_k_utilities_with_lower_index_ties():
    u = [0.5, 2.0, 2.0, 2.0, -1.0]
    assert optimal_assortment(u, capacity=2).items == (1, 2)
    assert optimal_assortment(u, [3.0] * 5, capacity=2, method="topk").items == (1, 2)
    # exactly min(K, N) items, however unattractive
    assert optimal_assortment([-40.0, -900.0], capacity=5).items == (0, 1)
    # the top-K set does not depend on the revenue level
    assert optimal_assortment(u, [7.0] * 5, capacity=3).items == (1, 2, 3)


def test_topk_refuses_unequal_revenues():
    with pytest.raises(ValueError, match="revenues"):
        optimal_assortment([0.0, 1.0], [1.0, 2.0], capacity=1, method="topk")


def test_brute_refuses_beyond_its_size_guard():
    with pytest.raises(ValueError, match="utilities"):
        optimal_assortment(np.zeros(17), np.arange(17.0), capacity=3, method="brute")


def test_ties_are_deterministic():
    # equal scores: the lower index wins
    assert optimal_assortment([0.0] * 4, [1.0, 3.0, 3.0, 3.0], capacity=1).items == (1,)
    # item 1 has r_1 = R* = 1: adding it leaves the revenue unchanged, so it is left out
    res = optimal_assortment([0.0, 0.0], [2.0, 1.0], capacity=2)
    assert res.items == (0,) and res.revenue == pytest.approx(1.0)
    assert optimal_assortment([0.0, 0.0], [2.0, 1.0], capacity=2, method="brute") == res
    # all-zero revenues: nothing earns anything, the empty set
    assert optimal_assortment([1.0, 2.0], [0.0, 0.0], capacity=2) == ((), 0.0)


def test_capacity_beyond_n_means_no_limit():
    rng = np.random.default_rng(5)
    u, r = rng.normal(size=6), rng.uniform(size=6)
    assert optimal_assortment(u, r, capacity=6) == optimal_assortment(
        u, r, capacity=1000
    )


def test_the_optimal_set_can_be_smaller_than_the_capacity():
    # a low-revenue item dilutes the high-revenue one: offering it alone is best
    res = optimal_assortment([0.0, 0.0], [10.0, 1.0], capacity=2)
    assert res.items == (0,) and res.revenue == pytest.approx(5.0)


def test_result_unpacks_as_items_and_revenue():
    items, revenue = bk.assortment.optimal_assortment([0.0, 1.0], capacity=1)
    assert items == (1,)
    assert revenue == pytest.approx(math.e / (1 + math.e))


def test_speed_n1000_k50():
    rng = np.random.default_rng(0)
    u, r = rng.normal(size=1000), rng.uniform(0.5, 2.0, 1000)
    optimal_assortment(u, r, capacity=50)
    times = []
    for _ in range(30):
        started = time.perf_counter()
        res = optimal_assortment(u, r, capacity=50)
        times.append(time.perf_counter() - started)
    assert 1 <= len(res.items) <= 50
    assert statistics.median(times) < 0.05  # the benchmark's bar is 10 ms


def test_random_instances_where_revenue_ordered_sets_fail_are_solved_exactly():
    # capacities that bind: a sizeable share of instances defeats the heuristic, and the
    # exact solver matches brute force on every one of them
    rng = np.random.default_rng(11)
    beaten = 0
    for _ in range(500):
        n = int(rng.integers(5, 10))
        k = int(rng.integers(1, 4))
        u, r = rng.normal(0, 2, n), rng.exponential(1, n)
        heuristic = revenue_ordered_assortment(u, r, capacity=k).revenue
        brute = optimal_assortment(u, r, capacity=k, method="brute").revenue
        exact = optimal_assortment(u, r, capacity=k).revenue
        assert exact == pytest.approx(brute, rel=1e-12)
        beaten += heuristic < brute * (1 - 1e-9)
    assert beaten >= 100  # 131 of 500 (26%) with this seed
