"""Declared hyper-parameters (core.params): one declaration, the base class checks."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from banditkit.core import ContextualPolicy
from banditkit.core.params import (
    POSITIVE,
    AsGiven,
    Choice,
    Flag,
    Int,
    Maybe,
    NoneOnly,
    Real,
    fixed,
    learned,
    param,
    pin,
)


class Base(ContextualPolicy):
    nu: float = param(Real(low=0.0), default=1.0)
    lam: float = param(POSITIVE, default=1.0)
    gram: str | None = param(Maybe(Choice("full", "diagonal")), default=None)
    state: np.ndarray = learned()

    def _resolve(self) -> None:
        self.gram = self.gram or "full"

    def _act(self, ctx):  # pragma: no cover - never played
        return 0

    def _update(self, ctx, action, feedback):  # pragma: no cover
        pass


class Child(Base):
    width: int = param(Int(low=2, even=True), default=4)
    lam: float = param(POSITIVE, default=0.5)  # re-declared: another default, in place
    gram = fixed("diagonal")


def test_the_constructor_is_the_declarations_new_ones_first_and_seed_last() -> None:
    base = ["explore_floor", "propensity_samples", "seed"]  # Policy's own, seed last
    assert list(inspect.signature(Base).parameters) == ["nu", "lam", "gram", *base]
    assert list(inspect.signature(Child).parameters) == ["width", "nu", "lam", *base]
    assert Child.param_names() == ["width", "nu", "lam", *base]
    assert inspect.signature(Child).parameters["lam"].default == 0.5


def test_values_are_stored_as_checked_and_resolved() -> None:
    policy = Base(nu=2, seed=3)
    assert policy.get_params() == {"nu": 2.0, "lam": 1.0, "gram": "full", "seed": 3}
    assert type(policy.nu) is float
    child = Child(width=6)
    assert child.get_params() == {"width": 6, "nu": 1.0, "lam": 0.5, "seed": 0}
    assert child.gram == "diagonal"  # pinned, not a parameter
    assert not hasattr(Base, "state")  # learned state exists once it is set


@pytest.mark.parametrize(
    ("params", "error", "message"),
    [
        ({"lam": 0.0}, ValueError, "lam must be a float in (0, inf); got 0.0."),
        ({"nu": "a"}, TypeError, "nu must be a float in [0, inf); got 'a'."),
        ({"width": 3}, ValueError, "width must be an even int >= 2; got 3."),
        ({"gram": "diagonal"}, TypeError, "unexpected keyword argument 'gram'"),
        ({"mu": 1.0}, TypeError, "unexpected keyword argument 'mu'"),
    ],
)
def test_bad_values_raise_one_line_naming_the_parameter(params, error, message) -> None:
    with pytest.raises(error) as caught:
        Child(**params)
    assert message in str(caught.value)


def test_constraints() -> None:
    assert Flag().check("flag", np.True_) is True
    with pytest.raises(TypeError, match="flag must be a bool; got 1"):
        Flag().check("flag", 1)
    with pytest.raises(ValueError, match="None here"):
        NoneOnly("why").check("x", 1)
    assert AsGiven(Maybe(Real(low=0.0))).check("lr", 1) == 1  # an int stays an int
    assert type(AsGiven(Real()).check("lr", 1)) is int
    with pytest.raises(ValueError, match="Did you mean 'full'"):
        Choice("full", "diagonal").check("gram", "ful")


def test_pin_fixes_several_inherited_parameters() -> None:
    @pin(nu=0.0, lam=2.0)
    class Greedy(Base):
        pass

    assert Greedy.param_names() == [
        "gram",
        "explore_floor",
        "propensity_samples",
        "seed",
    ]
    policy = Greedy()
    assert (policy.nu, policy.lam) == (0.0, 2.0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'nu'"):
        Greedy(nu=1.0)
