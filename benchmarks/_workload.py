"""One timed policy run for ``trainer_bound``, importable by another banditkit (private).

Run as a file (``runpy``) in a fresh process, so that it imports only banditkit's public
API: a baseline checkout's ``src`` on ``PYTHONPATH`` then runs the same workload on its own
library. ``python _workload.py NAME SEED HORIZON`` prints a JSON line.

The runs do the baseline's work: what the landed main of 2026-12-04 did not compute is
turned off where the library has it (``SAME_WORK``), and ``--default`` (a fourth
argument) runs the policy as it comes, for the price of what was added since.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

#: name -> (policy, params, environment, environment params, horizon, quick horizon)
WORKLOADS: dict[str, tuple[str, dict[str, Any], str, dict[str, Any], int, int]] = {
    "nvldb-ucb m=32": (
        "nvldb-ucb",
        {},
        "dueling",
        {"utility": "square", "d": 5, "n_arms": 5},
        400,
        100,
    ),
    "nvldb-ucb m=100": (
        "nvldb-ucb",
        {"preset": "main"},
        "dueling",
        {"utility": "square", "d": 5, "n_arms": 5},
        400,
        100,
    ),
    "neural-es quadratic": (
        "neural-es",
        {},
        "nonlinear",
        {"function": "quadratic", "d": 20, "n_arms": 50, "noise_std": 0.5},
        300,
        80,
    ),
    "neural-ts digits": (
        "neural-ts",
        {},
        "classification",
        {"dataset": "digits"},
        1000,
        200,
    ),
}


#: Work of every policy that the main of 2026-12-04 did not do, off for a comparison at
#: the same work: the Monte Carlo estimate of a sampling rule's propensity (added
#: 2026-12-05; its draws come from their own stream, so the actions do not change).
SAME_WORK: dict[str, Any] = {"propensity_samples": 0}


def run_workload(
    name: str, seed: int, horizon: int, same_work: bool = True
) -> dict[str, float]:
    """CPU seconds of ``simulate`` and the final regret, after an untimed warm-up run.

    ``same_work``: pass ``SAME_WORK``'s parameters where the library knows them (a
    ``Policy`` attribute of that name), so that an older banditkit and this one do the
    same work; False runs the policy's defaults.
    """
    import torch

    import banditkit as bk

    torch.set_num_threads(1)
    policy, params, env, env_params, _, _ = WORKLOADS[name]
    if same_work:
        known = {k: v for k, v in SAME_WORK.items() if hasattr(bk.Policy, k)}
        params = {**params, **known}
    warm = bk.make_policy(policy, seed=seed + 1000, **params)
    bk.simulate(warm, bk.make_env(env, **env_params), horizon=30, seed=seed + 1000)
    agent = bk.make_policy(policy, seed=seed, **params)
    started = time.process_time()
    run = bk.simulate(agent, bk.make_env(env, **env_params), horizon=horizon, seed=seed)
    seconds = time.process_time() - started
    return {"seconds": seconds, "regret": float(run.cumulative_regret[-1])}


if __name__ == "__main__":
    name, seed, horizon = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    same = sys.argv[4:] != ["--default"]
    print(json.dumps(run_workload(name, seed, horizon, same)))
