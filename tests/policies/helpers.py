"""Shared helpers of the policy tests: fixed contexts, a play loop, mean final regrets."""

from __future__ import annotations

from typing import Any

import numpy as np

import banditkit as bk
from banditkit.core import Context, Environment
from banditkit.core.members import stack
from banditkit.core.simulate import simulate_seeds


def contexts(
    n: int = 40, k: int = 4, d: int = 6, seed: int = 0, law: str = "uniform"
) -> list[Context]:
    """n contexts of k arms in R^d, Unif(-1, 1) (law="uniform") or N(0, 1) ("normal")."""
    rng = np.random.default_rng(seed)
    if law == "normal":
        return [Context(arms=rng.normal(size=(k, d))) for _ in range(n)]
    return [Context(arms=rng.uniform(-1, 1, size=(k, d))) for _ in range(n)]


def play(policy: Any, ctxs: list[Context], seed: int = 0) -> list[int]:
    """Act on every context and feed back Bernoulli(1/2) rewards; return the actions."""
    rng = np.random.default_rng(seed)
    actions = []
    for ctx in ctxs:
        a = policy.act(ctx)
        actions.append(a)
        policy.update(ctx, a, float(rng.random() < 0.5))
    return actions


def mean_final_regret(
    name: str, env: Environment, horizon: int, seeds: int = 2, **params: Any
) -> float:
    """Mean final cumulative regret of policy ``name`` over seeds 0..seeds-1."""
    return float(
        np.mean(
            [
                bk.simulate(
                    bk.make_policy(name, seed=s, **params), env, horizon, s
                ).cumulative_regret[-1]
                for s in range(seeds)
            ]
        )
    )


def assert_stack_equals_separate(
    name: str,
    params: dict[str, Any],
    env: str,
    env_params: dict[str, Any],
    seeds: list[int],
    horizon: int,
) -> Any:
    """Seeds of ``name`` as one stack against separate ``simulate`` runs (float64).

    Every action, n_updates and metadata equal, regrets within 1e-9; returns the stack's
    ``Members`` (asserted to exist). float64 unless ``params`` names a dtype (the
    policies' default is float32, where a stack equals its runs up to rounding only).
    """
    params = {"dtype": "float64", **params}
    separate = [
        bk.simulate(
            bk.make_policy(name, **params, seed=s),
            bk.make_env(env, **env_params),
            horizon,
            seed=s,
            progress=False,
        )
        for s in seeds
    ]
    policies = [bk.make_policy(name, **params, seed=s) for s in seeds]
    members = stack(policies)
    assert members is not None  # the stacked play, not one by one
    batched = simulate_seeds(
        policies,
        [bk.make_env(env, **env_params) for _ in seeds],
        horizon,
        seeds,
        members=members,
    )
    for one, many in zip(separate, batched, strict=True):
        np.testing.assert_array_equal(many.actions, one.actions)
        np.testing.assert_allclose(
            many.cumulative_regret, one.cumulative_regret, rtol=0, atol=1e-9
        )
        np.testing.assert_array_equal(many.n_updates, one.n_updates)
        np.testing.assert_array_equal(many.reward, one.reward)
        assert [r.name for r in many.records] == [r.name for r in one.records]
        assert many.meta == one.meta
    return members
