"""The policy contract, one check per clause, and the ways to run it.

Every check takes a :class:`~banditkit.testing.harness.PolicyCase` and raises
``AssertionError`` with a message when the policy breaks its clause:

    params          family declared through its base; get_params rebuilds the policy
    actions         valid, normalised actions for K = 1 and for K = 200
    horizon         begin(T) before round 1 only; requires_horizon policies refuse to play
                    without it; the horizon is saved with the state
    bad_input       bad ctx / action / feedback raise ValueError naming the argument and
                    leave the policy as it was
    inputs          act and update leave the context untouched
    reproducible    same seed, same actions, same state
    save_restore    save at round t, load, continue: bit-identical to an uninterrupted run;
                    a state saved under other hyper-parameters is refused
    fuzz            random valid input (hypothesis): no exception, no NaN in the state
"""

from __future__ import annotations

import math
import re
import tempfile
from collections.abc import Callable, Collection, Mapping
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from banditkit.core import POLICIES, Context, Policy, Registry
from banditkit.core.serialization import load_policy, save_policy
from banditkit.core.types import FAMILIES
from banditkit.testing.fuzz import check_fuzz
from banditkit.testing.harness import (
    FAMILY_BASES,
    PolicyCase,
    assert_same_state,
    expect,
    play,
    start,
)

__all__ = [
    "CONTRACTS",
    "PolicyContract",
    "check_actions",
    "check_bad_input",
    "check_horizon",
    "check_inputs",
    "check_params",
    "check_policy",
    "check_reproducible",
    "check_save_restore",
]

#: Arms and dimension of the small instance most checks play.
_K, _D, _CAPACITY = 4, 3, 2


def _raises(name: str, call: Callable[[], object], pattern: str) -> None:
    """``call()`` raises a ValueError whose message matches ``pattern`` (the argument)."""
    try:
        call()
    except ValueError as exc:
        expect(
            re.search(pattern, str(exc)),
            f"{name}: the ValueError must name {pattern!r}; got {exc!r}.",
        )
        return
    except Exception as exc:
        raise AssertionError(f"{name}: expected a ValueError; got {exc!r}.") from exc
    raise AssertionError(f"{name}: expected a ValueError; nothing was raised.")


def check_params(case: PolicyCase) -> None:
    """The class declares a family through its base, and ``get_params`` rebuilds it."""
    cls = case.policy_class
    expect(
        case.family in FAMILIES,
        f"{case}: family must be one of {FAMILIES}; got {case.family!r}.",
    )
    base = FAMILY_BASES[case.family]
    expect(
        issubclass(cls, base),
        f"{case}: a {case.family} policy must derive from {base.__name__}.",
    )
    policy = case.make(seed=3)
    params = policy.get_params()
    expect(params["seed"] == 3, f"{case}: get_params()['seed'] is {params['seed']!r}.")
    clone = cls(**params)
    expect(
        clone.get_params() == params,
        f"{case}: rebuilding from get_params() gives {clone.get_params()} != {params}.",
    )


def check_actions(case: PolicyCase) -> None:
    """Valid, normalised actions for K = 1 and a large K (200)."""
    for n_arms in (1, 200):
        policy, env = start(case, horizon=8, n_arms=n_arms, d=_D, max_size=_CAPACITY)
        actions = play(policy, env, 8)
        if n_arms == 1:
            only = {"contextual": 0, "dueling": (0, 0), "assortment": (0,)}[case.family]
            expect(
                all(a == only for a in actions),
                f"{case}: with one arm every action must be {only!r}; got {actions}.",
            )
        expect(policy.t == 8, f"{case}: t is {policy.t} after 8 updates.")


def check_horizon(case: PolicyCase) -> None:
    """``begin(T)`` is checked, comes before round 1, and is saved with the state."""
    fresh = case.make()
    _raises(f"{case}: begin(0)", lambda: fresh.begin(0), "horizon")
    if case.policy_class.requires_horizon:
        ctx = Context(arms=np.eye(_K, _D))
        _raises(f"{case}: act without begin()", lambda: fresh.act(ctx), "horizon")
    policy, env = start(case, horizon=11, n_arms=_K, d=_D, max_size=_CAPACITY)
    play(policy, env, 2)
    expect(policy.horizon == 11, f"{case}: horizon is {policy.horizon}, not 11.")
    expect(
        policy.state_dict()["horizon"] == 11,
        f"{case}: state_dict()['horizon'] is {policy.state_dict()['horizon']!r}.",
    )
    _raises(f"{case}: begin() after round 2", lambda: policy.begin(11), "begin")


def _bad_actions(family: str, k: int) -> list[Any]:
    if family == "contextual":
        return [k, -1, 1.5, "0", True, (0,), None]
    if family == "dueling":
        return [(0,), (0, 1, 2), (k, 0), (0, -1), (0.5, 0), 0, "01", (True, 0), None]
    return [(), (0, 0), (k,), tuple(range(_CAPACITY + 1)), (0.5,), 0, None]


def _bad_feedback(policy: Policy) -> list[Any]:
    common = [math.nan, math.inf, -math.inf, "1", None, [1]]
    if policy.family == "contextual":
        if getattr(policy, "reward_kind", "real") == "binary":
            return [*common, 2.5, -0.5, 1e300]
        bound = float(getattr(policy, "max_abs_reward", 1e6))
        return [*common, 1e300, -1e300, 2.0 * bound]
    if policy.family == "dueling":
        return [*common, 0.5, 2, -1]
    return [*common, 1, 0.5, -2]  # the offered assortment below is (0,)


def check_bad_input(case: PolicyCase) -> None:
    """Bad ctx, action and feedback raise ValueError naming the argument; no state changes.

    The policy under fire is compared, afterwards, with a twin that never saw the bad
    input: same next actions, same state dict.
    """
    policy, env = start(case, n_arms=_K, d=_D, max_size=_CAPACITY)
    twin, twin_env = start(case, n_arms=_K, d=_D, max_size=_CAPACITY)
    play(policy, env, 3)
    play(twin, twin_env, 3)
    ctx = Context(arms=np.ones((_K, _D)), revenues=np.ones(_K), max_size=_CAPACITY)
    wide = Context(arms=np.ones((_K, _D + 1)), revenues=np.ones(_K), max_size=_CAPACITY)
    valid: Any = {"contextual": 0, "dueling": (0, 1), "assortment": (0,)}[case.family]
    good_feedback = 0 if case.family != "assortment" else -1
    name = str(case)
    _raises(f"{name}: act(ndarray)", lambda: policy.act(ctx.arms), "ctx")  # type: ignore[arg-type]
    _raises(f"{name}: act(wider ctx)", lambda: policy.act(wide), r"dimension 4 .* d=3")
    _raises(
        f"{name}: update(wider ctx)",
        lambda: policy.update(wide, valid, good_feedback),
        r"ctx|arms",
    )
    for action in _bad_actions(case.family, _K):
        _raises(
            f"{name}: update(action={action!r})",
            partial(policy.update, ctx, action, good_feedback),
            "action",
        )
    for feedback in _bad_feedback(policy):
        _raises(
            f"{name}: update(feedback={feedback!r})",
            partial(policy.update, ctx, valid, feedback),
            "feedback",
        )
    nan_arms = np.array([[math.nan, 0.0]])
    _raises(f"{name}: Context with NaN", partial(Context, arms=nan_arms), "NaN")
    expect(policy.t == 3, f"{name}: t moved to {policy.t} on rejected input.")
    expect(
        play(policy, env, 3) == play(twin, twin_env, 3),
        f"{name}: rejected input changed the next actions.",
    )
    assert_same_state(policy, twin)


def check_inputs(case: PolicyCase) -> None:
    """``act`` and ``update`` leave the context's arrays untouched."""
    policy, env = start(case, n_arms=_K, d=_D, max_size=_CAPACITY)
    for _ in range(4):
        ctx = env.context()
        assert ctx is not None
        before = ctx.arms.copy()
        revenues = None if ctx.revenues is None else ctx.revenues.copy()
        action = policy.act(ctx)
        policy.update(ctx, action, env.step(action).feedback)
        expect(
            np.array_equal(ctx.arms, before), f"{case}: act/update changed ctx.arms."
        )
        if revenues is not None:
            expect(
                np.array_equal(np.asarray(ctx.revenues), revenues),
                f"{case}: act/update changed ctx.revenues.",
            )


def check_reproducible(case: PolicyCase) -> None:
    """Two policies with the same seed play the same actions and end in the same state."""
    runs = []
    for _ in range(2):
        policy, env = start(
            case, seed=1, horizon=12, n_arms=_K, d=_D, max_size=_CAPACITY
        )
        runs.append((policy, play(policy, env, 12)))
    (first, a), (second, b) = runs
    expect(a == b, f"{case}: same seed, different actions:\n{a}\n{b}")
    assert_same_state(first, second)


def _registry(cls: type[Policy]) -> Registry[type[Policy]]:
    """The policy registry, or a one-entry registry for an unregistered user class."""
    name = cls.registry_name
    if name and name in POLICIES and POLICIES.get(name) is cls:
        return POLICIES
    registry: Registry[type[Policy]] = Registry("policy")
    registry.register(name or cls.__name__)(cls)
    return registry


def check_save_restore(case: PolicyCase, *, rounds: int = 7) -> None:
    """Save at round t, load, continue: bit-identical to the uninterrupted run.

    Both runs play the same scripted instance; the restored policy is attached to the
    environment again (as a resumed runner would). Also: counters, horizon and
    hyper-parameters survive, and a state saved under other hyper-parameters is refused.
    """
    kw: dict[str, Any] = {"n_arms": _K, "d": _D, "max_size": _CAPACITY}
    whole, whole_env = start(case, seed=2, horizon=2 * rounds, **kw)
    expected = play(whole, whole_env, 2 * rounds)
    half, env = start(case, seed=2, horizon=2 * rounds, **kw)
    play(half, env, rounds)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "policy.bk"
        registry = _registry(case.policy_class)
        save_policy(half, path, registry)
        restored = load_policy(path, registry=registry)
    expect(type(restored) is type(half), f"{case}: load_policy built {type(restored)}.")
    for attr in ("t", "n_updates", "horizon", "d"):
        expect(
            getattr(restored, attr) == getattr(half, attr),
            f"{case}: {attr} is {getattr(restored, attr)!r} after loading, "
            f"{getattr(half, attr)!r} before.",
        )
    expect(
        restored.get_params() == half.get_params(),
        f"{case}: hyper-parameters changed on loading.",
    )
    restored.attach(env)
    continued = play(restored, env, rounds)
    expect(
        continued == expected[rounds:],
        f"{case}: restored at round {rounds}, the run diverges:\n"
        f"{continued}\n{expected[rounds:]}",
    )
    assert_same_state(restored, whole)
    other = case.make(seed=3)
    _raises(
        f"{case}: load_state_dict with other hyper-parameters",
        lambda: other.load_state_dict(half.state_dict()),
        "hyper-parameters",
    )


#: Every contract by name, in the order :func:`check_policy` runs them.
CONTRACTS: dict[str, Callable[[PolicyCase], None]] = {
    "params": check_params,
    "actions": check_actions,
    "horizon": check_horizon,
    "bad_input": check_bad_input,
    "inputs": check_inputs,
    "reproducible": check_reproducible,
    "save_restore": check_save_restore,
    "fuzz": check_fuzz,
}


def check_policy(
    policy: type[Policy] | str | PolicyCase,
    params: Mapping[str, Any] | None = None,
    *,
    skip: Collection[str] = (),
) -> None:
    """Run every contract of the policy's family on one policy class.

    Args:
        policy: A Policy subclass, a registered name, or a :class:`PolicyCase`.
        params: Keyword arguments other than ``seed`` (default: the class's
            ``contract_params``); ignored for a PolicyCase.
        skip: Names of :data:`CONTRACTS` not to run (e.g. ``{"fuzz"}`` without hypothesis).

    Raises:
        AssertionError: The first broken contract, named in the message.
        ValueError: For an unknown contract name in ``skip``.

    Example:
        >>> import numpy as np
        >>> import banditkit as bk
        >>> class First(bk.ContextualPolicy):
        ...     def _act(self, ctx):
        ...         return int(np.argmax(ctx.arms[:, 0]))
        ...     def _update(self, ctx, action, feedback):
        ...         pass
        >>> check_policy(First, skip={"fuzz"})
    """
    unknown = set(skip) - set(CONTRACTS)
    if unknown:
        raise ValueError(
            f"skip names unknown contracts {sorted(unknown)}; see CONTRACTS."
        )
    if isinstance(policy, PolicyCase):
        case = policy
    elif isinstance(policy, str):
        case = PolicyCase(POLICIES.get(policy), params, name=policy)
    else:
        case = PolicyCase(policy, params)
    for name, contract in CONTRACTS.items():
        if name in skip:
            continue
        try:
            contract(case)
        except AssertionError as exc:
            raise AssertionError(f"contract {name!r} failed for {case}: {exc}") from exc
        except Exception as exc:
            raise AssertionError(
                f"contract {name!r} failed for {case}: {type(exc).__name__}: {exc}"
            ) from exc


class PolicyContract:
    """The contract suite as a pytest test class: subclass it as ``Test...`` to run it.

    Set ``policy_class`` (and ``params`` if the defaults are slow); each contract becomes
    one test. pytest is not imported: the methods are plain ``test_*`` functions.

    Example:
        A test module of a user package::

            from banditkit.testing import PolicyContract
            from mypackage import MyPolicy

            class TestMyPolicy(PolicyContract):
                policy_class = MyPolicy
                params = {"width": 8}
    """

    policy_class: ClassVar[type[Policy] | None] = None
    params: ClassVar[Mapping[str, Any] | None] = None

    def _run(self, contract: str) -> None:
        if self.policy_class is None:
            raise ValueError(f"{type(self).__name__}.policy_class is not set.")
        CONTRACTS[contract](PolicyCase(self.policy_class, self.params))

    def test_params(self) -> None:
        """Family declared through its base; get_params rebuilds the policy."""
        self._run("params")

    def test_actions(self) -> None:
        """Valid, normalised actions for K = 1 and K = 200."""
        self._run("actions")

    def test_horizon(self) -> None:
        """The horizon hand-off."""
        self._run("horizon")

    def test_bad_input(self) -> None:
        """Bad ctx / action / feedback raise ValueError naming the argument."""
        self._run("bad_input")

    def test_inputs(self) -> None:
        """The context is left untouched."""
        self._run("inputs")

    def test_reproducible(self) -> None:
        """Same seed, same actions."""
        self._run("reproducible")

    def test_save_restore(self) -> None:
        """Save, load, continue bit-identically."""
        self._run("save_restore")

    def test_fuzz(self) -> None:
        """Random valid input: no exception, no NaN."""
        self._run("fuzz")
