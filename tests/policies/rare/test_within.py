"""The within-interval Gram H (``WithinGram``) against ``linalg.Gram``, bit for bit."""

import numpy as np
import pytest

from banditkit.core.transaction import snapshot
from banditkit.linalg import Gram
from banditkit.policies.parts.history import History
from banditkit.policies.rare.within import IntervalRows, WithinGram


@pytest.mark.parametrize("weighted", [False, True])
def test_the_inverse_and_matrix_are_grams_bit_for_bit(weighted):
    # 1100 pulls: two refactorisations (every 512 pulls), H read now and then
    rng = np.random.default_rng(5)
    gram, within = Gram(5, 1.0), WithinGram(5, 1.0)
    for t, x in enumerate(rng.uniform(-1.0, 1.0, (1100, 5))):
        w = float(rng.uniform(0.1, 2.0)) if weighted else 1.0
        gram.update(x, w)
        within.update(x, w)
        assert np.array_equal(gram.inverse, within.inverse)
        if t % 97 == 0 or t in (510, 511, 512, 1023, 1024):
            assert np.array_equal(gram.matrix, within.matrix)
    assert np.array_equal(gram.matrix, within.matrix)
    assert within.n_updates == gram.n_updates == 1100
    assert not within.inverse.flags.writeable


def test_the_state_is_grams_and_a_restored_one_continues_bit_for_bit():
    rng = np.random.default_rng(6)
    gram, within = Gram(4, 2.0), WithinGram(4, 2.0)
    X = rng.standard_normal((700, 4))
    for x in X[:600]:
        gram.update(x)
        within.update(x)
    state = within.state_dict()
    reference = gram.state_dict()
    assert state.keys() == reference.keys()
    for key, value in reference.items():
        assert np.array_equal(np.asarray(state[key]), np.asarray(value)), key
    restored = WithinGram.from_state_dict(state)
    for x in X[600:]:
        gram.update(x)
        restored.update(x)
        assert np.array_equal(gram.inverse, restored.inverse)
    assert np.array_equal(gram.matrix, restored.matrix)
    assert restored.state_dict()["logdet"] == gram.logdet


def test_pulls_are_checked():
    within = WithinGram(3, 1.0)
    with pytest.raises(ValueError, match="x"):
        within.update(np.array([1.0, np.nan, 0.0]))
    with pytest.raises(ValueError, match="x"):
        within.update(np.ones(2))
    with pytest.raises(ValueError, match="weight"):
        within.update(np.ones(3), 0.0)
    assert within.n_updates == 0


def test_interval_rows_hold_what_a_history_holds():
    rng = np.random.default_rng(9)
    rows, history = IntervalRows(3, capacity=5), History(3)
    for x, y in zip(rng.standard_normal((40, 3)), rng.standard_normal(40), strict=True):
        rows.append(x, float(y))  # grows past its capacity twice
        history.append(x, float(y))
        assert np.array_equal(rows.X, history.X) and np.array_equal(rows.y, history.y)
    state = rows.state_dict()
    reference = history.state_dict()
    assert state.keys() == reference.keys()
    for key in reference:
        assert np.array_equal(state[key], reference[key]), key
    restored = IntervalRows(3)
    restored.load_state_dict(reference)
    assert restored.n == 40 and np.array_equal(restored.X, history.X)
    restored.append(np.ones(3), 2.0)
    assert restored.n == 41 and restored.y[-1] == 2.0
    history.append(np.ones(3), 1.0, weight=0.5)
    with pytest.raises(ValueError, match="state\\['w'\\]"):
        IntervalRows(3).load_state_dict(history.state_dict())


def test_an_undone_update_costs_o1_in_the_pulls_and_restores_h_bit_for_bit():
    """The transaction undoes pulls by the lists' length: it never walks or copies them."""
    rng = np.random.default_rng(8)
    within, twin = (
        WithinGram(3, 1.0, refactor_every=50),
        WithinGram(3, 1.0, refactor_every=50),
    )
    sizes = []
    for n in (10, 40):
        for x in rng.uniform(-1.0, 1.0, (n, 3)):
            within.update(x)
            twin.update(x)
        saved = snapshot(within)
        sizes.append(len(saved._keep))
        within.update(rng.uniform(-1.0, 1.0, 3))
        saved.restore()
        assert within.n_updates == twin.n_updates
        assert np.array_equal(within.inverse, twin.inverse)
        assert np.array_equal(within.matrix, twin.matrix)
    assert sizes[0] == sizes[1]


def test_interval_rows_undo_an_append_in_o1_across_a_doubling():
    """The transaction keeps the arrays and n, not a copy of the rows (also when full)."""
    rng = np.random.default_rng(9)
    rows, twin = IntervalRows(2, capacity=4), IntervalRows(2, capacity=4)
    kept = []
    for n in (3, 1, 4, 7):  # the appends undone at 3, 4 (doubling), 8 (doubling), 15
        for x in rng.normal(size=(n, 2)):
            rows.append(x, float(x[0]))
            twin.append(x, float(x[0]))
        saved = snapshot(rows)
        kept.append(sum(a.nbytes for a in saved._keep if isinstance(a, np.ndarray)))
        rows.append(rng.normal(size=2), 9.0)
        saved.restore()
        assert rows.n == twin.n
        assert np.array_equal(rows.X, twin.X) and np.array_equal(rows.y, twin.y)
    assert kept == [0, 0, 0, 0]
