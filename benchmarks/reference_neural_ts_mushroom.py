"""NeuralTS on mushroom, against the public reference code of [Zhang2021].

Workload (issue 5): mushroom with block one-hot arms (K = 2, input d = 44), T = 2000, 10
seeds. The reference code (diagonal Gram, MLP 44-100-1, training every round) took 152 s
per run (one core, bandit loop only) for a median final regret of 107; banditkit must be at
least 10x faster (<= 15.2 s per run) at a mean final regret <= 107.

Hyper-parameters (the reference's settings are not binding): width 100 and the diagonal
Gram as in the reference; HYPERPARAMETERS_NOTE below says how the rest were chosen.

Run with its identical-work variant (``IDENTICAL_WORK``: a refit of 100 full-batch steps
every round, MLP 44-100-1, as the reference) by ``main``; both are reported.

    banditkit bench --only reference_neural_ts_mushroom --out results/bench
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks._common import (
    Reference,
    Workload,
    compare_variants,
    identical_work,
)

# Chosen on seeds 0-1 (0-2 in the first row; T = 2000, machine loaded, times per run):
# width 100, diagonal Gram, lam 1 unless stated. lr 0.01 diverges on mushroom at width
# 100 (NaN scores after the first refit, also with lam 0.1), so lr is lowered:
#   nu 1,   lr 0.001, every 20 rounds, 50 steps:  regret 696, 698, 676  (7-11 s)
#   nu 0.1, lr 0.005, every 20, 50 steps:         regret 122, 153       (7-12 s)
#   nu 0.1, lr 0.003, every 40, 100 steps:        regret 153, 151       (10 s)
#   nu 0.1, lr 0.003, every 20, 100 steps:        regret 89, 75         (18 s)  <- chosen
HYPERPARAMETERS_NOTE = (
    "nu 0.1, lr 0.003, refit every 20 rounds with 100 GD steps; the only one of four "
    "settings on seeds 0-1 below the reference regret (see the comment above WORKLOAD)"
)
WORKLOAD = Workload(
    name="reference_neural_ts_mushroom",
    policy="neural-ts",
    policy_params={
        "nu": 0.1,
        "lam": 1.0,
        "width": 100,
        "depth": 2,
        "lr": 0.003,
        "steps": 100,
        "update_every": 20,
        "gram": "diagonal",
    },
    env="classification",
    env_params={"dataset": "mushroom", "encoding": "block"},
    horizon=2000,
    reference=Reference(
        seconds=152.0,
        regret=107.0,
        statistic="median",
        code="NeuralTS [Zhang2021], diagonal, MLP 44-100-1, trains every round",
    ),
    chosen=HYPERPARAMETERS_NOTE,
)

IDENTICAL_WORK = identical_work(
    WORKLOAD,
    (
        "The reference code trains the MLP 44-100-1 every round; this variant refits "
        "every round (update_every=1) with 100 full-batch GD steps, the other settings "
        "of WORKLOAD"
    ),
    update_every=1,
    steps=100,
    width=100,
    depth=2,
)


def main(quick: bool, out: Path) -> dict[str, Any]:
    """Run both variants (quick: 2 seeds, T = 300, time scaled) and return them."""
    return compare_variants(
        WORKLOAD, IDENTICAL_WORK, quick=quick, out=out, quick_horizon=300
    )
