import math

import numpy as np
import pytest

from banditkit.core.validation import (
    check_arms,
    check_choice,
    check_finite_array,
    check_int,
    check_scalar,
    suggest,
)


def test_check_scalar_accepts_and_converts():
    assert check_scalar("lam", 2, low=0.0, low_open=True) == 2.0
    assert isinstance(check_scalar("lam", np.float32(0.5), low=0.0), float)


@pytest.mark.parametrize(
    ("value", "kwargs", "exc", "match"),
    [
        (-0.5, {"low": 0.0}, ValueError, r"nu must be a float in \[0, inf\); got -0.5"),
        (0.0, {"low": 0.0, "low_open": True}, ValueError, r"\(0, inf\)"),
        (math.nan, {}, ValueError, "nan"),
        (math.inf, {}, ValueError, "inf"),
        ("1", {}, TypeError, "must be a float"),
        (True, {}, TypeError, "must be a float"),
        (2.0, {"high": 1.0}, ValueError, r"\(-inf, 1\]"),
    ],
)
def test_check_scalar_rejects(value, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        check_scalar("nu", value, **kwargs)


def test_check_int():
    assert check_int("width", np.int64(4), low=1) == 4
    with pytest.raises(ValueError, match=r"width must be an int in \[1, inf\); got 0"):
        check_int("width", 0, low=1)
    with pytest.raises(TypeError):
        check_int("width", 2.5)


def test_suggest_and_choice():
    assert "'linucb'" in suggest("linucbb", ["linucb", "lints", "random"])
    assert suggest("zzzz", ["linucb"]) == ""
    with pytest.raises(ValueError, match="Did you mean 'diagonal'"):
        check_choice("gram", "diagonl", ["full", "diagonal"])


def test_check_arms():
    with pytest.raises(ValueError, match="NaN"):
        check_arms([[1.0, np.nan]])
    with pytest.raises(ValueError, match="inf"):
        check_arms([[1.0, np.inf]])
    with pytest.raises(ValueError, match="2-d"):
        check_arms([1.0, 2.0])
    with pytest.raises(ValueError, match=r"dimension 2 .* d=3"):
        check_arms(np.zeros((4, 2)), d=3)
    with pytest.raises(ValueError, match="at least one row"):
        check_arms(np.zeros((0, 2)))
    with pytest.raises(TypeError):
        check_finite_array("x", object())
