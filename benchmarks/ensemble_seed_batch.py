"""Ten seeds of Neural-ES on the quadratic task as one stack, against one and ten one by one.

Issue [compute], item 3. Workload: ``neural-es`` with its defaults (m = 10 members, width
20, depth 3, 100 GD steps every round after a warm-up of 50) on ``nonlinear`` quadratic
(d = 20, K = 50, noise 0.5), T = 300, seeds 0..9. In one process, one thread, interleaved
repetitions (``benchmarks._seed_batch``): one seed, the ten as one stack
(``policies.ensemble.stacked``: 100 networks in one ``nn.fit``) and the ten one by one.
In float64 the stack takes the separate runs' actions (``same_pairs``).

    banditkit bench --only ensemble_seed_batch --out results/bench
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks._seed_batch import SeedBatch, run

POLICY = "neural-es"
POLICY_PARAMS: dict[str, Any] = {}
ENV = "nonlinear"
ENV_PARAMS: dict[str, Any] = {
    "function": "quadratic",
    "d": 20,
    "n_arms": 50,
    "noise_std": 0.5,
}
HORIZON = 300
SEEDS = list(range(10))


def main(quick: bool, out: Path) -> dict[str, Any]:
    """Time one seed, the stack of ten and (full mode) ten one by one, interleaved."""
    work = SeedBatch(POLICY, ENV, HORIZON, SEEDS, POLICY_PARAMS, ENV_PARAMS)
    return run("ensemble_seed_batch", work, quick, out)
