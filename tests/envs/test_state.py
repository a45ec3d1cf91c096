"""An environment's state between two rounds: taken and restored, the run goes on identically.

For every registered environment (and the options that carry state from one round to the
next: pools with a queue, shuffled rows, a log position), a copy restored from the state
after round r shows the same contexts and gives the same outcomes as the original.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import banditkit as bk
from banditkit.core import ENVIRONMENTS
from banditkit.core.types import Step
from tests.envs.test_mnl_text import write_corpus

CASES: list[tuple[str, dict]] = [
    ("linear", {"d": 3, "n_arms": 4}),
    ("linear", {"d": 3, "n_arms": 4, "pool": 9}),
    ("linear", {"d": 3, "n_arms": 4, "pool": 9, "pool_sampling": "permutation"}),
    (
        "logistic",
        {"h": "h1", "d": 3, "n_arms": 3, "pool": 7, "pool_sampling": "permutation"},
    ),
    ("nonlinear", {"d": 3, "n_arms": 4}),
    ("rare-linear", {}),
    ("rare-logistic", {}),
    ("classification", {"dataset": "digits", "pool": 11}),
    ("classification", {"dataset": "digits", "pool": 11, "shuffle": True}),
    ("dueling", {"utility": "cos", "d": 3, "n_arms": 4}),
    ("dueling-classification", {"dataset": "digits", "pool": 11, "shuffle": True}),
    ("mnl", {"utility": "realizable", "d": 3, "n_items": 6, "capacity": 2}),
    ("mnl-text", {"n_items": 8, "capacity": 3, "n_components": 4, "hidden": 4}),
    ("obd-replay", {}),
    ("log-replay", {}),
]


def _make(name: str, params: dict, folder) -> bk.core.Environment:
    if name == "mnl-text":
        if not (folder / "train").is_dir():
            write_corpus(folder)
        return bk.make_env(name, corpus=str(folder), steps=20, **params)
    if name == "log-replay":
        rng = np.random.default_rng(0)
        log = pd.DataFrame(
            {
                "x": rng.random(40),
                "action": rng.integers(0, 3, 40),
                "reward": rng.random(40),
            }
        )
        return bk.make_env(name, data=log, propensity=None, **params)
    return bk.make_env(name, **params)


def _action(env: bk.core.Environment, ctx: bk.Context, rng: np.random.Generator):
    k = ctx.n_arms
    if env.family == "contextual":
        return int(rng.integers(k))
    if env.family == "dueling":
        return tuple(int(i) for i in rng.choice(k, 2, replace=False))
    size = int(rng.integers(1, getattr(env, "capacity", 1) + 1))
    return tuple(sorted(int(i) for i in rng.choice(k, size, replace=False)))


def _play(env, rounds: int, rng: np.random.Generator) -> list:
    seen = []
    for _ in range(rounds):
        ctx = env.context()
        if ctx is None:
            seen.append(None)
            continue
        step: Step = env.step(_action(env, ctx, rng))
        seen.append(
            (ctx.arms.copy(), step.regret, step.reward, step.feedback, step.values)
        )
    return seen


def _same(a: list, b: list) -> bool:
    for x, y in zip(a, b, strict=True):
        if (x is None) != (y is None):
            return False
        if x is not None and not (np.array_equal(x[0], y[0]) and x[1:] == y[1:]):
            return False
    return True


def test_the_cases_cover_every_registered_environment():
    assert {name for name, _ in CASES} == set(ENVIRONMENTS.names())


@pytest.mark.parametrize(("name", "params"), CASES, ids=lambda c: str(c))
def test_restored_environment_continues_identically(name, params, tmp_path):
    env = _make(name, params, tmp_path)
    env.reset(7)
    _play(env, 13, np.random.default_rng(1))
    state = env.state_dict()
    later = _play(env, 15, np.random.default_rng(2))

    copy = _make(name, params, tmp_path)
    copy.reset(3)  # another run first: the state replaces it
    _play(copy, 2, np.random.default_rng(3))
    copy.load_state_dict(state)
    assert copy.round == 13
    assert _same(_play(copy, 15, np.random.default_rng(2)), later)


def test_state_is_taken_between_rounds_only():
    env = bk.make_env("linear", d=3)
    with pytest.raises(RuntimeError, match="between two rounds"):
        env.state_dict()
    env.reset(0)
    env.context()
    with pytest.raises(RuntimeError, match="between two rounds"):
        env.state_dict()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda s: s.pop("rng"), "missing the entries"),
        (lambda s: s.update(seed=-1), "state\\['seed'\\]"),
        (lambda s: s["rng"].pop("noise"), "must hold the streams"),
        (lambda s: s["rng"].update(noise={"bit_generator": "MT19937"}), "noise"),
        (lambda s: s["state"].update(queue=np.array([0, 99])), "queue"),
        (lambda s: s["state"].update(queue=np.array([0.5])), "queue"),
    ],
)
def test_a_bad_state_is_refused_naming_the_entry(change, message):
    env = bk.make_env("linear", d=3, n_arms=2, pool=5, pool_sampling="permutation")
    env.reset(0)
    state = env.state_dict()
    change(state)
    with pytest.raises(ValueError, match=message):
        env.load_state_dict(state)


def test_a_replay_position_beyond_the_log_is_refused(tmp_path):
    env = _make("log-replay", {}, tmp_path)
    env.reset(0)
    state = env.state_dict()
    state["state"]["next"] = 41
    with pytest.raises(ValueError, match="next"):
        env.load_state_dict(state)
