"""Shared helpers of the policy tests: fixed contexts, a play loop, mean final regrets."""

from __future__ import annotations

from typing import Any

import numpy as np

import banditkit as bk
from banditkit.core import Context, Environment


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
