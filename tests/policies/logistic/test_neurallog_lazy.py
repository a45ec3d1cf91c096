"""Selections decided on bounds of d_eff (ScoredPolicy._act, argmax_on_bounds)."""

import numpy as np
import pytest

import banditkit as bk
from banditkit.linalg import EffectiveDimension
from banditkit.policies.parts.selection import argmax_on_bounds


def test_argmax_on_bounds_is_the_exact_argmax_inside_the_interval():
    rng = np.random.default_rng(0)
    decided = 0
    for _ in range(3000):
        K = int(rng.integers(1, 6))
        mean = rng.standard_normal(K)
        if rng.random() < 0.1:
            mean[:] = mean[0]  # ties
        slope = rng.random(K) * rng.choice([0.0, 1e-3, 1.0])
        low = rng.random()
        high = low + rng.random() * rng.choice([0.0, 1e-3, 1.0])
        arm = int(argmax_on_bounds(mean, slope, low, high))
        # the batched form (one member) decides alike
        rows = argmax_on_bounds(mean[None], slope[None], np.array([low]), [high])
        assert arm == int(rows[0])
        if arm < 0:
            continue
        decided += 1
        for radius in np.linspace(low, high, 5):
            scores = mean + radius * slope
            assert np.flatnonzero(scores == scores.max()).tolist() == [arm]
    assert decided > 1000


def play(name: str, exact: bool, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Actions of a short run; ``exact``: d_eff computed every round (no bounds)."""
    with monkeypatch.context() as patch:
        if exact:
            patch.setattr(
                EffectiveDimension, "bounds", lambda self: (self.value, self.value)
            )
        env = bk.make_env("logistic", h="h1", d=5, n_arms=4)
        policy = bk.make_policy(name, seed=1, width=8, update_every=10, steps=20)
        env.reset(1)
        policy.begin(150)
        actions = []
        for _ in range(150):
            ctx = env.context()
            action = policy.act(ctx)
            policy.update(ctx, action, env.step(action).feedback)
            actions.append(action)
        assert policy.effdim is not None and policy.effdim.bounds()[0] > 0.0
    return actions


@pytest.mark.parametrize("name", ["neurallog-ucb2", "neurallog-ts1"])
def test_bounds_give_the_actions_of_the_exact_value(name, monkeypatch):
    assert play(name, True, monkeypatch) == play(name, False, monkeypatch)


def test_score_is_score_parts_with_the_radius():
    env = bk.make_env("logistic", h="h1", d=5, n_arms=4)
    policy = bk.make_policy("neurallog-ucb1", seed=0, width=8, update_every=5)
    env.reset(0)
    for _ in range(12):
        ctx = env.context()
        action = policy.act(ctx)
        policy.update(ctx, action, env.step(action).feedback)
    ctx = env.context()
    scorer = policy.scorer
    mean, norms = scorer.score_parts(ctx.arms)
    radius = scorer.radius(scorer.d_eff)
    got_mean, width = scorer.score(ctx.arms)
    assert np.array_equal(got_mean, mean)
    assert np.array_equal(width, (scorer.nu * radius) * norms)
