"""Choice probabilities and expected revenue of the static MNL model, and their validation."""

import itertools
import math

import numpy as np
import pytest

from banditkit.assortment import (
    choice_probabilities,
    expected_revenue,
    optimal_assortment,
)


def test_revenue_matches_the_formula_by_hand():
    # v = (1, e, e^2), v_0 = 1: R({0, 2}) = (2 * 1 + 3 e^2) / (1 + 1 + e^2)
    u, r = [0.0, 1.0, 2.0], [2.0, 5.0, 3.0]
    want = (2.0 + 3.0 * math.e**2) / (2.0 + math.e**2)
    assert expected_revenue([0, 2], u, r) == pytest.approx(want, rel=1e-14)
    assert expected_revenue([2, 0], u, r) == pytest.approx(want, rel=1e-14)
    assert expected_revenue([], u, r) == 0.0


def test_outside_weight_enters_the_denominator():
    # v_0 = 3, v = 1: R({0}) = 2 / (3 + 1)
    assert expected_revenue([0], [0.0], [2.0], outside=3.0) == pytest.approx(0.5)
    assert choice_probabilities([0], [0.0], outside=3.0).tolist() == pytest.approx(
        [0.75, 0.25]
    )


def test_default_revenues_give_the_purchase_probability():
    u = np.array([0.3, -1.2, 2.0])
    p = choice_probabilities([0, 1, 2], u)
    assert p.sum() == pytest.approx(1.0)
    assert expected_revenue([0, 1, 2], u) == pytest.approx(1.0 - p[0])


@pytest.mark.parametrize("big", [50.0, 700.0, 1000.0])
def test_huge_utilities_stay_finite_and_exact(big):
    # naive exp(1000) overflows; the shifted form keeps every term
    u = np.array([big, big, -big])
    p = choice_probabilities([0, 1, 2], u)
    assert np.isfinite(p).all()
    assert p[1:3].tolist() == pytest.approx([0.5, 0.5])
    assert expected_revenue([0, 1], u, [2.0, 4.0, 1.0]) == pytest.approx(3.0)
    # the outside option still counts when the items are very unattractive
    assert expected_revenue([2], u, [1.0, 1.0, 1.0]) == pytest.approx(
        math.exp(-big) / (1 + math.exp(-big)), rel=1e-12
    )
    assert optimal_assortment(u, [1.0, 1.0, 5.0], capacity=1).items == (0,)


def test_shifted_form_agrees_with_the_naive_one_at_moderate_scale():
    rng = np.random.default_rng(0)
    for _ in range(100):
        n = int(rng.integers(1, 8))
        u, r = rng.normal(size=n), rng.uniform(0, 3, n)
        for k in range(n + 1):
            for s in itertools.combinations(range(n), k):
                v = np.exp(u[list(s)])
                naive = float(v @ r[list(s)] / (1 + v.sum())) if s else 0.0
                assert expected_revenue(s, u, r) == pytest.approx(naive, rel=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"utilities": [0.0, np.nan]}, "utilities"),
        ({"utilities": [0.0, np.inf]}, "utilities"),
        ({"utilities": [[0.0, 1.0]]}, "utilities"),
        ({"utilities": []}, "utilities"),
        ({"revenues": [1.0, -1.0, 0.0]}, "revenues"),
        ({"revenues": [1.0, np.nan, 0.0]}, "revenues"),
        ({"revenues": [1.0, 1.0]}, "revenues"),
        ({"capacity": 0}, "capacity"),
        ({"capacity": -3}, "capacity"),
        ({"outside": 0.0}, "outside"),
        ({"outside": np.nan}, "outside"),
        ({"method": "dinkelbah"}, "method"),
        ({"capacity": 2.5}, "capacity"),
        ({"capacity": None}, "capacity"),
        ({"utilities": "abc"}, "utilities"),
        ({"revenues": ["x", "y", "z"]}, "revenues"),
        ({"outside": "1"}, "outside"),
    ],
)
def test_bad_input_raises_naming_the_argument(kwargs, name):
    args = {"utilities": [0.0, 1.0, 2.0], "capacity": 2, **kwargs}
    with pytest.raises(ValueError, match=name):
        optimal_assortment(**args)


@pytest.mark.parametrize("items", [[0, 0], [3], [-1], [0.5]])
def test_bad_items_raise(items):
    with pytest.raises(ValueError, match="items"):
        expected_revenue(items, [0.0, 1.0, 2.0])
    with pytest.raises(ValueError, match="items"):
        choice_probabilities(items, [0.0, 1.0, 2.0])
