"""The policy contract, one check per clause, and the ways to run it.

Every check takes a :class:`~banditkit.testing.harness.PolicyCase` and raises
``AssertionError`` with a message when the policy breaks its clause:

    params          family declared through its base; get_params rebuilds the policy
    actions         valid, normalised actions for K = 1 and for K = 200
    horizon         begin(T) before round 1 only; requires_horizon policies refuse to play
                    without it; the horizon is saved with the state
    bad_input       bad ctx / action / feedback raise ValueError naming the argument and
                    leave the policy as it was (also on its very first update)
    inputs          act and update leave the context untouched
    reproducible    same seed, same actions, same state
    save_restore    save at two rounds, load, continue: bit-identical to an uninterrupted
                    run; a state saved under other hyper-parameters is refused
    fuzz            random valid input (hypothesis): no exception, no NaN in the state

Each registered policy runs the suite with its ``contract_params`` and, when they differ,
once more with its defaults (every contract but ``actions`` and ``fuzz``,
:data:`SKIPPED_WITH_DEFAULTS`).
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
from banditkit.core.caller import warn
from banditkit.core.serialization import load_policy, save_policy
from banditkit.core.types import FAMILIES
from banditkit.testing.fuzz import check_fuzz
from banditkit.testing.harness import (
    FAMILY_BASES,
    ContractSkipped,
    PolicyCase,
    assert_same_state,
    expect,
    play,
    start,
)

__all__ = [
    "CONTRACTS",
    "SKIPPED_WITH_DEFAULTS",
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
    common = [math.nan, math.inf, -math.inf, "1", None, [1], np.array([1]), 1j]
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
    bad_arms: list[Any] = [[[math.nan, 0.0]], [["1.5", "0"]], [[1 + 2j, 0.0]], [["a"]]]
    for arms in bad_arms:
        _raises(f"{name}: Context({arms!r})", partial(Context, arms=arms), "ctx.arms")
    expect(policy.t == 3, f"{name}: t moved to {policy.t} on rejected input.")
    expect(
        play(policy, env, 3) == play(twin, twin_env, 3),
        f"{name}: rejected input changed the next actions.",
    )
    assert_same_state(policy, twin)
    _check_first_update_is_atomic(case, ctx, valid, good_feedback)


def _check_first_update_is_atomic(
    case: PolicyCase, ctx: Context, valid: Any, good_feedback: Any
) -> None:
    """A rejected first update (the one that sets the policy up) leaves it fresh."""
    fresh, _ = start(case, n_arms=_K, d=_D, max_size=_CAPACITY)
    twin, _ = start(case, n_arms=_K, d=_D, max_size=_CAPACITY)
    bad_action = _bad_actions(case.family, _K)[0]
    _raises(
        f"{case}: first update(action={bad_action!r})",
        lambda: fresh.update(ctx, bad_action, good_feedback),
        "action",
    )
    _raises(
        f"{case}: first update(feedback=nan)",
        lambda: fresh.update(ctx, valid, math.nan),
        "feedback",
    )
    expect(fresh.d is None, f"{case}: a rejected first update set d = {fresh.d}.")
    assert_same_state(fresh, twin)


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


def _saved_and_loaded(case: PolicyCase, policy: Policy) -> Policy:
    """``policy`` through a policy file: saved, loaded, its counters and params checked."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "policy.bk"
        registry = _registry(case.policy_class)
        save_policy(policy, path, registry)
        restored = load_policy(
            path, expect=str(policy.state_dict()["policy"]), registry=registry
        )
    expect(
        type(restored) is type(policy), f"{case}: load_policy built {type(restored)}."
    )
    for attr in ("t", "n_updates", "horizon", "d"):
        expect(
            getattr(restored, attr) == getattr(policy, attr),
            f"{case}: {attr} is {getattr(restored, attr)!r} after loading, "
            f"{getattr(policy, attr)!r} before.",
        )
    expect(
        restored.get_params() == policy.get_params(),
        f"{case}: hyper-parameters changed on loading.",
    )
    assert_same_state(restored, policy)
    return restored


def check_save_restore(
    case: PolicyCase, *, saves: tuple[int, ...] = (7, 21), rounds: int = 30
) -> None:
    """Save at each round of ``saves``, load, continue: bit-identical to an uninterrupted run.

    Both runs play the same scripted instance; the restored policy is attached to the
    environment again (as a resumed runner would). The second save comes after the
    policies' periodic refits of their defaults (every 20 rounds), so state kept between
    refits is covered too. Also: counters, horizon and hyper-parameters survive, and a
    state saved under other hyper-parameters is refused.
    """
    kw: dict[str, Any] = {"n_arms": _K, "d": _D, "max_size": _CAPACITY}
    whole, whole_env = start(case, seed=2, horizon=rounds, **kw)
    expected = play(whole, whole_env, rounds)
    policy, env = start(case, seed=2, horizon=rounds, **kw)
    done = 0
    for stop in (*saves, rounds):
        actions = play(policy, env, stop - done)
        expect(
            actions == expected[done:stop],
            f"{case}: restored at round {done}, the run diverges:\n"
            f"{actions}\n{expected[done:stop]}",
        )
        done = stop
        if stop < rounds:
            policy = _saved_and_loaded(case, policy)
            policy.attach(env)
    assert_same_state(policy, whole)
    other = case.make(seed=3)
    _raises(
        f"{case}: load_state_dict with other hyper-parameters",
        lambda: other.load_state_dict(whole.state_dict()),
        "hyper-parameters",
    )


#: Contracts not run on a policy's defaults: the fuzz contract's random instances and the
#: 200-arm rounds of ``actions`` would cost minutes with default network widths; they run
#: on the contract parameters.
SKIPPED_WITH_DEFAULTS: frozenset[str] = frozenset({"actions", "fuzz"})

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

    With the default ``params``, a class whose ``contract_params`` differ from its
    defaults then runs the contracts again with its defaults (all but
    :data:`SKIPPED_WITH_DEFAULTS`).

    Args:
        policy: A Policy subclass, a registered name, or a :class:`PolicyCase`.
        params: Keyword arguments other than ``seed`` (default: the class's
            ``contract_params``); ignored for a PolicyCase.
        skip: Names of :data:`CONTRACTS` not to run (e.g. ``{"fuzz"}`` without hypothesis).

    A contract that cannot run here (the fuzz contract without hypothesis) is skipped
    with a warning that names the install command; the others still run.

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
        cases = [policy]
    else:
        cls = POLICIES.get(policy) if isinstance(policy, str) else policy
        label = policy if isinstance(policy, str) else ""
        cases = [PolicyCase(cls, params, name=label)]
        if params is None and cls.contract_params:
            cases.append(PolicyCase(cls, {}, name=label and f"{label}[defaults]"))
    for case in cases:
        extra = SKIPPED_WITH_DEFAULTS if case.defaults else frozenset()
        _run_contracts(case, set(skip) | extra)


def _run_contracts(case: PolicyCase, skip: Collection[str]) -> None:
    for name, contract in CONTRACTS.items():
        if name in skip:
            continue
        try:
            contract(case)
        except ContractSkipped as exc:
            warn(f"contract {name!r} skipped for {case}: {exc}")
        except AssertionError as exc:
            raise AssertionError(f"contract {name!r} failed for {case}: {exc}") from exc
        except Exception as exc:
            raise AssertionError(
                f"contract {name!r} failed for {case}: {type(exc).__name__}: {exc}"
            ) from exc


class PolicyContract:
    """The contract suite as a pytest test class: subclass it as ``Test...`` to run it.

    Set ``policy_class`` (and ``params`` if the defaults are slow); each contract of
    :data:`CONTRACTS` becomes one test, ``test_<name>`` (documented by its clause), and
    ``test_defaults`` runs them on the class's defaults. pytest is not imported: the
    methods are plain ``test_*`` functions.

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

    def test_defaults(self) -> None:
        """The contracts but those of SKIPPED_WITH_DEFAULTS, with the class's defaults."""
        if self.policy_class is None:
            raise ValueError(f"{type(self).__name__}.policy_class is not set.")
        if self.policy_class.contract_params or self.params:
            case = PolicyCase(self.policy_class, {})
            _run_contracts(case, SKIPPED_WITH_DEFAULTS)


def _contract_test(name: str) -> Callable[[PolicyContract], None]:
    """The test method of contract ``name``: its clause, run on the class under test."""

    def test(self: PolicyContract) -> None:
        self._run(name)

    test.__name__ = f"test_{name}"
    test.__qualname__ = f"PolicyContract.test_{name}"
    test.__doc__ = CONTRACTS[name].__doc__
    return test


for _name in CONTRACTS:
    setattr(PolicyContract, f"test_{_name}", _contract_test(_name))
