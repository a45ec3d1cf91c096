"""What the contracts share: the policy under test, a play loop, and state comparisons.

``banditkit.testing`` re-exports the names of ``__all__``; ``expect`` is the clauses' own.
"""

from __future__ import annotations

import unittest
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from banditkit.core import (
    POLICIES,
    AssortmentPolicy,
    Context,
    ContextualPolicy,
    DuelingPolicy,
    Policy,
    list_policies,
)
from banditkit.core.types import FAMILIES, Action, check_action
from banditkit.testing.doubles import ScriptedEnvironment, scripted_env

__all__ = [
    "FAMILY_BASES",
    "ContractSkipped",
    "PolicyCase",
    "assert_finite_state",
    "assert_same_state",
    "play",
    "policy_cases",
    "start",
]


class ContractSkipped(unittest.SkipTest):
    """A contract that cannot run here (a missing optional dependency); names the fix.

    A ``unittest.SkipTest``, so pytest reports the test that raised it as skipped.
    """


#: The base class each family's policies derive from.
FAMILY_BASES: dict[str, type[Any]] = {
    "contextual": ContextualPolicy,
    "dueling": DuelingPolicy,
    "assortment": AssortmentPolicy,
}


def expect(condition: object, message: str) -> None:
    """Raise ``AssertionError(message)`` unless ``condition`` (kept under ``python -O``)."""
    if not condition:
        raise AssertionError(message)


@dataclass(frozen=True)
class PolicyCase:
    """One policy under test: a class and the keyword arguments to build it with.

    Args:
        policy_class: A concrete :class:`~banditkit.core.Policy` subclass.
        params: Keyword arguments other than ``seed`` (default: the class's
            ``contract_params``; ``{}``: its defaults).
        name: Label in messages and test ids (default: the registry name, else the class
            name; ``[defaults]`` appended when ``params`` is ``{}`` and the class has
            contract parameters).

    Example:
        >>> from banditkit.policies import LinUCB
        >>> case = PolicyCase(LinUCB, {"nu": 0.5})
        >>> str(case), case.family, case.make(seed=3).nu
        ('linucb', 'contextual', 0.5)
    """

    policy_class: type[Policy]
    params: Mapping[str, Any] | None = None
    name: str = field(default="")

    def __post_init__(self) -> None:
        if not (
            isinstance(self.policy_class, type)
            and issubclass(self.policy_class, Policy)
        ):
            raise ValueError(
                f"policy_class must be a Policy subclass; got {self.policy_class!r}."
            )
        contract = dict(self.policy_class.contract_params)
        if self.params is None:
            object.__setattr__(self, "params", contract)
        if not self.name:
            label = self.policy_class.registry_name or self.policy_class.__name__
            if self.defaults:
                label += "[defaults]"
            object.__setattr__(self, "name", label)

    @property
    def defaults(self) -> bool:
        """True when the case runs the class's defaults (other than its contract params)."""
        return not self.params and bool(self.policy_class.contract_params)

    @property
    def family(self) -> str:
        """The family the class declares."""
        return str(getattr(self.policy_class, "family", ""))

    def make(self, seed: int = 0) -> Policy:
        """A fresh instance with ``params`` and ``seed``."""
        return self.policy_class(seed=seed, **dict(self.params or {}))

    def __str__(self) -> str:
        return self.name


def policy_cases(
    family: str | None = None, *, defaults: bool = True
) -> list[PolicyCase]:
    """The :class:`PolicyCase` of each registered policy (of ``family``).

    Each policy comes with its contract params and, when those differ from its
    defaults, a second time with its defaults (named ``"name[defaults]"``): the
    defaults are what users run, and a bug may hide in them (a state of size zero).

    Feed it to ``pytest.mark.parametrize`` so that every registered policy, present and
    future, runs the suite: ``@pytest.mark.parametrize("case", policy_cases("dueling"),
    ids=str)``.

    Args:
        family: Only this family's policies (None: all).
        defaults: Add the defaults cases.

    Example:
        >>> {"oracle-duel", "random-duel"} <= {str(c) for c in policy_cases("dueling")}
        True
        >>> "linucb-hybrid[defaults]" in {str(c) for c in policy_cases("contextual")}
        True
    """
    if family is not None and family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}; got {family!r}.")
    cases = []
    for name in list_policies(family):
        cls = POLICIES.get(name)
        cases.append(PolicyCase(cls, name=name))
        if defaults and cls.contract_params:
            cases.append(PolicyCase(cls, {}, name=f"{name}[defaults]"))
    return cases


def start(
    case: PolicyCase,
    *,
    seed: int = 0,
    env_seed: int = 0,
    horizon: int | None = 20,
    **env_params: Any,
) -> tuple[Policy, ScriptedEnvironment]:
    """A fresh policy and a scripted environment of its family, set up as ``simulate`` does.

    The environment is reset with ``env_seed``; the policy is told ``horizon`` and attached.
    A contextual environment draws rewards of the policy's ``reward_kind``; parameters of
    other families' environments (``max_size``, ``reward_scale``) are dropped.
    """
    policy = case.make(seed)
    if policy.family != "assortment":
        env_params.pop("max_size", None)
    if policy.family != "contextual":
        env_params.pop("reward_scale", None)
    env = scripted_env(
        policy.family,
        reward_kind=str(getattr(policy, "reward_kind", "real")),
        **env_params,
    )
    env.reset(env_seed)
    policy.begin(horizon)
    policy.attach(env)
    return policy, env


def assert_valid_action(action: Action, ctx: Context, family: str) -> None:
    """The action a policy returned is exactly of its family's normalised form."""
    normalised = check_action(action, ctx, family)
    if family == "contextual":
        ok = type(action) is int
    else:
        ok = type(action) is tuple and all(type(a) is int for a in action)
    kind = "a Python int" if family == "contextual" else "a tuple of Python ints"
    expect(
        ok and action == normalised,
        f"act returned {action!r}; a {family} action must be {kind} in normal form "
        f"({normalised!r}).",
    )


def play(policy: Policy, env: ScriptedEnvironment, rounds: int) -> list[Action]:
    """Play ``rounds`` rounds of ``env`` (act, step, update); return the actions."""
    actions: list[Action] = []
    for _ in range(rounds):
        ctx = env.context()
        expect(ctx is not None, "the scripted environment ran out of rounds.")
        assert ctx is not None
        action = policy.act(ctx)
        assert_valid_action(action, ctx, policy.family)
        step = env.step(action)
        policy.update(ctx, action, step.feedback)
        actions.append(action)
    return actions


def _leaves(obj: Any, path: str = "state") -> list[tuple[str, Any]]:
    if isinstance(obj, Mapping):
        return [leaf for k, v in obj.items() for leaf in _leaves(v, f"{path}[{k!r}]")]
    if isinstance(obj, list | tuple):
        return [leaf for i, v in enumerate(obj) for leaf in _leaves(v, f"{path}[{i}]")]
    return [(path, obj)]


def assert_finite_state(policy: Policy) -> None:
    """Every float in ``policy.state_dict()`` is finite (no NaN or inf poisoned the state)."""
    for path, leaf in _leaves(policy.state_dict()):
        if isinstance(leaf, np.ndarray) and np.issubdtype(leaf.dtype, np.inexact):
            expect(np.all(np.isfinite(leaf)), f"{path} holds NaN or inf.")
        elif isinstance(leaf, float | np.floating):
            expect(np.isfinite(leaf), f"{path} is {leaf!r}.")


def assert_same_state(a: Policy, b: Policy) -> None:
    """The two policies' state dicts are equal bit for bit (arrays, scalars, RNG state)."""
    left, right = _leaves(a.state_dict()), _leaves(b.state_dict())
    expect(
        [p for p, _ in left] == [p for p, _ in right], "the state dicts differ in keys."
    )
    for (path, x), (_, y) in zip(left, right, strict=True):
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            same = (
                isinstance(x, np.ndarray)
                and isinstance(y, np.ndarray)
                and x.dtype == y.dtype
                and np.array_equal(x, y, equal_nan=True)
            )
        else:
            same = x == y or (x != x and y != y)
        expect(same, f"{path} differs: {x!r} != {y!r}.")
