import numpy as np
import pytest

from banditkit.policies.parts.history import History, PairHistory, SetHistory


def test_rows_grow_past_the_initial_capacity_and_keep_every_row():
    h = History(3)
    rows = np.arange(3 * 600, dtype=float).reshape(600, 3)
    for i, x in enumerate(rows):
        h.append(x, float(i), weight=0.5 + i)
    assert h.n == 600
    np.testing.assert_array_equal(h.X, rows)
    np.testing.assert_array_equal(h.y, np.arange(600.0))
    np.testing.assert_array_equal(h.w, 0.5 + np.arange(600.0))


def test_rows_state_round_trip_and_old_state_without_weights():
    h = History(2)
    h.append(np.array([1.0, 2.0]), 3.0, weight=2.0)
    other = History(2)
    other.load_state_dict(h.state_dict())
    np.testing.assert_array_equal(other.X, h.X)
    np.testing.assert_array_equal(other.w, [2.0])
    other.load_state_dict({"X": np.ones((2, 2)), "y": np.zeros(2)})
    np.testing.assert_array_equal(other.w, [1.0, 1.0])
    other.append(np.zeros(2), 1.0)
    assert other.n == 3


def test_pairs_keep_both_arms_indices_outcome_and_weight():
    h = PairHistory(2)
    for i in range(300):
        h.append(np.array([i, 0.0]), np.array([0.0, i]), i % 2, weight=2.0, arms=(i, 0))
    assert h.n == 300
    np.testing.assert_array_equal(h.diff[5], [5.0, -5.0])
    np.testing.assert_array_equal(h.outcome[:4], [0.0, 1.0, 0.0, 1.0])
    np.testing.assert_array_equal(h.arms[7], [7, 0])
    assert np.all(h.w == 2.0)
    other = PairHistory(2)
    other.load_state_dict(h.state_dict())
    np.testing.assert_array_equal(other.X1, h.X1)
    np.testing.assert_array_equal(other.arms, h.arms)


def test_sets_ragged_and_padded_layouts_agree():
    rng = np.random.default_rng(0)
    h = SetHistory(2)
    sets = [rng.standard_normal((s, 2)) for s in rng.integers(1, 5, size=400)]
    choices = [int(rng.integers(-1, len(s))) for s in sets]
    for s, c in zip(sets, choices, strict=True):
        h.append(s, c)
    assert h.n == 400
    np.testing.assert_array_equal(h.sizes, [len(s) for s in sets])
    X, mask, choice = h.padded()
    assert X.shape == (400, 4, 2)
    for i in (0, 17, 399):
        got = h.items[h.offsets[i] : h.offsets[i + 1]]
        np.testing.assert_array_equal(got, sets[i])
        np.testing.assert_array_equal(X[i][mask[i]], sets[i])
        assert not X[i][~mask[i]].any()
    np.testing.assert_array_equal(choice, choices)
    other = SetHistory(2)
    other.load_state_dict(h.state_dict())
    np.testing.assert_array_equal(other.padded()[0], X)


def test_sets_reject_a_choice_outside_the_offer():
    h = SetHistory(1)
    with pytest.raises(ValueError, match="choice"):
        h.append(np.ones((2, 1)), choice=2)
    with pytest.raises(ValueError, match="choice"):
        h.append(np.ones((2, 1)), choice=-2)
    assert h.n == 0
