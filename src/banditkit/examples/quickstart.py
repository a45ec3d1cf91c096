"""A first script: linear and GLM baselines with bk.simulate on digits and on h1.

Write it out with ``banditkit examples quickstart.py`` and run it with ``python quickstart.py``;
prints final regret (mean over seeds) and the seconds spent inside each policy. Each run uses
one BLAS/PyTorch thread (``bk.simulate``'s default), as ``banditkit run`` does: the same seed
gives the same numbers from both.
"""

from __future__ import annotations

import time

import numpy as np

import banditkit as bk

HORIZON = 500
SEEDS = range(2)
ENVS = {
    "digits": lambda: bk.make_env("classification", dataset="digits"),
    "logistic-h1": lambda: bk.make_env("logistic", h="h1", d=10, n_arms=5, pool=2500),
}
POLICIES = {
    "random": {},
    "oracle": {},
    "eps-greedy": {"epsilon": 0.05},
    "linucb": {"nu": 0.5},
    "lints": {"nu": 0.1},
    "glm-ucb": {"nu": 0.5, "update_every": 10},
    "glm-ts": {"nu": 0.1, "update_every": 10},
}


def main() -> None:
    print(f"{'environment':<14}{'policy':<12}{'final regret':>14}{'seconds':>10}")
    for env_name, make in ENVS.items():
        env = make()
        for name, params in POLICIES.items():
            regrets, seconds = [], []
            for seed in SEEDS:
                start = time.perf_counter()
                run = bk.simulate(
                    bk.make_policy(name, seed=seed, **params), env, HORIZON, seed
                )
                regrets.append(run.cumulative_regret[-1])
                seconds.append(time.perf_counter() - start)
            print(
                f"{env_name:<14}{name:<12}{np.mean(regrets):>14.1f}{np.mean(seconds):>10.2f}"
            )


if __name__ == "__main__":
    main()
