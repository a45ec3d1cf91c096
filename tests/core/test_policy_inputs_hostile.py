"""Hostile policy inputs: what ``Context``, ``act`` and ``update`` accept and refuse.

Every refusal is a ``ValueError`` (a wrong type: ``ArgumentTypeError``, also a
``TypeError``) whose message names the argument (``ctx.arms``, ``feedback``, ``action``),
and a refused ``update`` leaves the policy exactly as it was.
"""

from __future__ import annotations

import math
from decimal import Decimal

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import banditkit as bk
from banditkit.core.validation import ArgumentTypeError
from banditkit.policies.parts.history import Buffers
from banditkit.testing import (
    assert_finite_state,
    assert_same_state,
    play,
    policy_cases,
    start,
)

# --- ctx.arms ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "arms",
    [
        [["1.5", "0"], ["0", "1"]],  # numeric strings: no silent parse
        np.array([[1 + 2j, 0.0]]),  # complex: no silently dropped imaginary part
        [[1 + 0j, 0.0]],
        [["a", "b"]],
        [[Decimal("1.0"), None]],  # objects
        [[1.0, 2.0], [3.0]],  # ragged
        np.array([[b"1"]]),
    ],
    ids=[
        "numeric-strings",
        "complex",
        "complex-real",
        "strings",
        "objects",
        "ragged",
        "bytes",
    ],
)
def test_non_real_arms_are_refused_naming_ctx_arms(arms):
    with pytest.raises(ArgumentTypeError, match=r"ctx\.arms") as info:
        bk.Context(arms=arms)
    assert isinstance(info.value, TypeError) and isinstance(info.value, ValueError)


@pytest.mark.parametrize("x", [["1.0", "2.0"], [1j, 0.0], [None, 1.0]])
def test_shared_features_must_be_real(x):
    with pytest.raises(ArgumentTypeError, match="x must"):
        bk.Context.from_shared(x, n_arms=2)


@pytest.mark.parametrize("value", [1e8 * (1 + 1e-15), -1e9, 1e20, 1.7e308])
def test_features_beyond_the_bound_are_refused_naming_the_limit(value):
    arms = np.array([[0.0, value], [1.0, 2.0]])
    with pytest.raises(ValueError, match=r"ctx\.arms .*MAX_ABS_FEATURE = 1e\+08"):
        bk.Context(arms=arms)
    with pytest.raises(ValueError, match=r"x .*MAX_ABS_FEATURE"):
        bk.Context.from_shared(arms[0], n_arms=2)
    edge = bk.Context(arms=np.array([[1e8, -1e8]]))  # the bound itself is accepted
    assert edge.arms.max() == bk.core.MAX_ABS_FEATURE


def test_a_context_owns_its_arrays():
    """Changing the caller's array after act cannot put NaN into linucb's history."""
    arms = np.ones((3, 2))
    revenues = np.ones(3)
    ctx = bk.Context(arms=arms, revenues=revenues)
    assert arms.flags.writeable and revenues.flags.writeable  # the caller's stay theirs
    policy = bk.make_policy("linucb")
    action = policy.act(ctx)
    arms[:] = np.nan  # the caller reuses its buffer
    policy.update(ctx, action, 1.0)
    history = policy.state_dict()["state"]["history"]["X"]
    assert np.isfinite(history).all() and np.array_equal(history, np.ones((1, 2)))
    assert not ctx.arms.flags.writeable and not ctx.revenues.flags.writeable


def test_a_shared_context_owns_its_row():
    x = np.array([1.0, 2.0])
    ctx = bk.Context.from_shared(x, n_arms=3)
    x[0] = np.nan
    assert np.isfinite(ctx.arms).all()


@settings(max_examples=80, deadline=None, derandomize=True, database=None)
@given(
    arms=hnp.arrays(
        dtype=st.sampled_from(
            [np.float64, np.float32, np.int64, np.uint8, np.bool_, np.complex128]
        ),
        shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4),
    )
)
def test_any_array_is_a_valid_context_or_refused_naming_ctx_arms(arms):
    try:
        ctx = bk.Context(arms=arms)
    except ValueError as exc:
        assert "ctx.arms" in str(exc)
        assert (
            arms.dtype.kind == "c"
            or arms.ndim != 2
            or 0 in arms.shape
            or not np.isfinite(arms.astype(complex)).all()
            or np.abs(arms.astype(np.float64)).max() > bk.core.MAX_ABS_FEATURE
        )
        return
    assert arms.dtype.kind != "c" and ctx.arms.dtype == np.float64
    np.testing.assert_array_equal(ctx.arms, arms.astype(np.float64))


# --- feedback -------------------------------------------------------------------------

_PAIR = {"dueling": (0, 1), "assortment": (0,)}
_NON_SCALARS = [np.array([1]), np.array(1), np.array([[0]]), [1], (1,), {"r": 1}]


@pytest.mark.parametrize(
    "case",
    policy_cases("dueling", defaults=False)
    + policy_cases("assortment", defaults=False),
    ids=str,
)
def test_array_feedback_is_refused_naming_feedback(case):
    policy = case.make()
    twin = case.make()
    ctx = bk.Context(arms=np.eye(3), max_size=2)
    if case.policy_class.requires_horizon:
        policy.begin(10)
        twin.begin(10)
    for feedback in _NON_SCALARS:
        with pytest.raises(ValueError, match="feedback") as info:
            policy.update(ctx, _PAIR[case.family], feedback)
        assert "ambiguous" not in str(info.value)
    assert policy.d is None
    assert_same_state(policy, twin)


_FEEDBACK = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-3, 3),
    st.booleans(),
    st.complex_numbers(max_magnitude=2),
    st.text(max_size=3),
    st.none(),
    hnp.arrays(np.float64, hnp.array_shapes(min_dims=0, max_dims=2, max_side=2)),
)


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(
    family=st.sampled_from(["contextual", "dueling", "assortment"]),
    feedback=_FEEDBACK,
)
def test_update_accepts_valid_feedback_or_refuses_it_without_a_trace(family, feedback):
    name = {"contextual": "linucb", "dueling": "colstim", "assortment": "ucb-mnl"}[
        family
    ]
    policy, twin = bk.make_policy(name), bk.make_policy(name)
    for p in (policy, twin):
        p.begin(10)
    ctx = bk.Context(arms=np.eye(3), max_size=2)
    action = policy.act(ctx)
    twin.act(ctx)
    try:
        policy.update(ctx, action, feedback)
    except ValueError as exc:
        assert "feedback" in str(exc)
        assert policy.t == 0
        assert_same_state(policy, twin)
        return
    valid = {
        "contextual": lambda f: isinstance(f, int | float) and math.isfinite(f),
        "dueling": lambda f: isinstance(f, int | float) and f in (0, 1),
        "assortment": lambda f: (
            isinstance(f, int | float)
            and not isinstance(f, bool)
            and (f == -1 or f in action)
        ),
    }[family]
    assert valid(feedback) and policy.t == 1


def test_a_first_update_with_a_bad_action_leaves_the_policy_fresh():
    policy, twin = bk.make_policy("linucb"), bk.make_policy("linucb")
    with pytest.raises(ValueError, match="action"):
        policy.update(bk.Context(arms=np.eye(3)), 7, 1.0)
    assert policy.d is None
    assert_same_state(policy, twin)


# --- a failed update ------------------------------------------------------------------


class _Injected(RuntimeError):
    """The failure a test injects into an update."""


def _fail_after(call):
    """``call`` (a method), then an exception: the update fails with its work done."""

    def failing(self, *args, **kwargs):
        call(self, *args, **kwargs)
        raise _Injected("injected")

    return failing


_WHERE = {
    # the policy's own _update ran to its end: every part has learned the round
    "end": lambda policy: (type(policy), "_update"),
    # a shared part mid-update: the round's row is in the history, nothing after it
    "history": lambda policy: (Buffers, "push"),
}


@pytest.mark.parametrize("where", sorted(_WHERE))
@pytest.mark.parametrize("case", policy_cases(defaults=False), ids=str)
def test_a_failed_update_leaves_the_policy_as_it_was(case, where, monkeypatch):
    """After a failure anywhere in update: the same state, then the same play as a twin."""
    policy, env = start(case, n_arms=4, d=3, max_size=2, horizon=40)
    twin, twin_env = start(case, n_arms=4, d=3, max_size=2, horizon=40)
    play(policy, env, 12)
    play(twin, twin_env, 12)
    ctx, twin_ctx = env.context(), twin_env.context()  # an oracle reads its env
    action = policy.act(ctx)
    assert twin.act(twin_ctx) == action
    feedback = env.step(action).feedback
    twin_env.step(action)
    with monkeypatch.context() as patch:
        owner, name = _WHERE[where](policy)
        patch.setattr(owner, name, _fail_after(getattr(owner, name)))
        try:
            policy.update(ctx, action, feedback)
        except _Injected:
            failed = True
        else:
            failed = False  # this policy keeps no history: nothing was injected
    if not failed:
        assert where == "history"
        return
    assert_same_state(policy, twin)
    policy.update(ctx, action, feedback)  # the round again: as the twin learns it
    twin.update(twin_ctx, action, feedback)
    assert_same_state(policy, twin)
    assert policy.act(env.context()) == twin.act(twin_env.context())


# --- extreme but finite input -----------------------------------------------------------

_NEURAL = [c for c in policy_cases(defaults=False) if c.policy_class.needs_torch]


def _extreme_feedback(policy, family, rng, big):
    """Feedback at the accepted extremes: rewards of +-max_abs_reward, wins, choices."""
    if family == "contextual":
        if getattr(policy, "reward_kind", "real") == "binary":
            return float(rng.integers(2))
        return float(rng.choice([-1.0, 1.0])) * (policy.max_abs_reward if big else 1.0)
    return 1 if family == "dueling" else -1


@pytest.mark.parametrize("case", _NEURAL, ids=str)
def test_neural_policies_train_stably_at_the_extremes(case):
    """Default training (small width, frequent refits) at feature norm 1e3, reward 1e6."""
    small = {
        k: v
        for k, v in dict(case.params).items()
        if k in ("width", "m", "update_every", "warmup", "t0")
    }
    policy = case.policy_class(seed=0, **small)
    policy.begin(60)
    rng = np.random.default_rng(0)
    for t in range(36):
        arms = rng.normal(size=(4, 3))
        arms *= 1e3 / np.linalg.norm(arms, axis=1, keepdims=True)
        ctx = bk.Context(arms=arms, max_size=2)
        action = policy.act(ctx)
        policy.update(
            ctx, action, _extreme_feedback(policy, case.family, rng, t % 3 == 0)
        )
    assert policy.n_updates > 0  # it refit at those scales
    assert_finite_state(policy)
    scores = getattr(policy, "scores", None)
    if callable(scores):
        assert np.isfinite(np.asarray(scores(ctx), dtype=float)).all()


@settings(max_examples=25, deadline=None, derandomize=True, database=None)
@given(
    scale=st.sampled_from([1e-8, 1.0, 1e3, 1e6, bk.core.MAX_ABS_FEATURE]),
    reward=st.sampled_from([0.0, 1.0, -1e6, 1e6]),
    name=st.sampled_from(["linucb", "lints", "eps-greedy", "ucb1", "linucb-per-arm"]),
)
def test_linear_policies_handle_features_up_to_the_bound(scale, reward, name):
    """Arms up to MAX_ABS_FEATURE and rewards up to 1e6: a valid action, a finite state."""
    policy = bk.make_policy(name)
    rng = np.random.default_rng(1)
    for _ in range(6):
        ctx = bk.Context(arms=np.clip(rng.normal(size=(3, 2)) * scale, -1e8, 1e8))
        action = policy.act(ctx)
        assert 0 <= action < 3
        policy.update(ctx, action, reward)
    assert_finite_state(policy)
