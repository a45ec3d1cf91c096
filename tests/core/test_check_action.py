"""check_action: each family's action form, with ValueError naming ``action``."""

import numpy as np
import pytest

from banditkit.core import Context, check_action
from banditkit.core.validation import ArgumentTypeError

CTX = Context(arms=np.zeros((4, 2)), max_size=2)


@pytest.mark.parametrize(
    ("action", "family", "expected"),
    [
        (np.int64(3), "contextual", 3),
        ((3, 1), "dueling", (3, 1)),
        ((2, 2), "dueling", (2, 2)),
        (np.array([1, 0]), "dueling", (1, 0)),
        ([3, 0], "assortment", (0, 3)),
        ((np.int32(1),), "assortment", (1,)),
    ],
)
def test_valid_actions_are_normalised(action, family, expected):
    out = check_action(action, CTX, family)
    assert out == expected and type(out) is type(expected)
    if isinstance(out, tuple):
        assert all(type(a) is int for a in out)


@pytest.mark.parametrize(
    ("action", "family", "message"),
    [
        (4, "contextual", "action 4 is out of range for 4 arms"),
        (1.0, "contextual", "action must hold int arm indices"),
        (True, "contextual", "action must hold int arm indices"),
        ((0, 4), "dueling", "index out of range"),
        ((0,), "dueling", "dueling action is a pair"),
        ((0.0, 1), "dueling", "action must hold int arm indices"),
        (np.zeros((2, 1), dtype=int), "dueling", "must be 1-d"),
        (0, "dueling", "dueling action must be a tuple"),
        ((), "assortment", "at least one item"),
        ((1, 1), "assortment", "may not repeat"),
        ((0, 1, 2), "assortment", "capacity is 2"),
        ((0,), "bandit", "unknown family"),
    ],
)
def test_invalid_actions_raise_value_errors_naming_action(action, family, message):
    with pytest.raises(ValueError, match=message) as info:
        check_action(action, CTX, family)
    assert "action" in str(info.value) or "family" in str(info.value)


def test_wrong_types_are_both_type_and_value_errors():
    with pytest.raises(ArgumentTypeError):
        check_action("0", CTX, "contextual")
    assert issubclass(ArgumentTypeError, TypeError)
    assert issubclass(ArgumentTypeError, ValueError)
