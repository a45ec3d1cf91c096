"""Ten seeds of NDB-UCB at m = 32 as one stack, against one seed and ten one by one.

Issue [compute], item 3. Workload: ``ndb-ucb`` with its defaults (preset "appendix": m = 32,
depth 3, 20 Adam steps every round, the full p x p Gram of the gradients) on ``dueling``
cos, d = 5, K = 5, T = 200, seeds 0..9. In one process, one thread, interleaved
repetitions (``benchmarks._seed_batch``): one seed, the ten as one stack
(``policies.dueling.stacked``: the fits as one ``nn.fit``; each member's gradients and Gram
stay its own) and the ten one by one. In float64 the stack takes the separate runs'
actions (``same_pairs`` = 1).

    banditkit bench --only ndb_seed_batch --out results/bench
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks._seed_batch import SeedBatch, run

POLICY = "ndb-ucb"
POLICY_PARAMS: dict[str, Any] = {}
ENV = "dueling"
ENV_PARAMS: dict[str, Any] = {"utility": "cos", "d": 5, "n_arms": 5}
HORIZON = 200
SEEDS = list(range(10))


def main(quick: bool, out: Path) -> dict[str, Any]:
    """Time one seed, the stack of ten and (full mode) ten one by one, interleaved."""
    work = SeedBatch(POLICY, ENV, HORIZON, SEEDS, POLICY_PARAMS, ENV_PARAMS)
    return run("ndb_seed_batch", work, quick, out)
