"""Ten seeds of NeuralTS on digits as one stack, against one seed and ten one by one.

Issue [compute], item 3. Workload: ``neural-ts`` with its defaults (width 100, 50 GD steps
every 20 rounds, diagonal Gram) on ``classification`` digits (block-encoded, K = 10,
d = 640), T = 1000, seeds 0..9. In one process, one thread, interleaved repetitions
(``benchmarks._seed_batch``): one seed, the ten as one stack (``parts.stacked``) and the
ten one by one. In float64 the stack takes the separate runs' actions (``same_pairs``).

    banditkit bench --only neural_seed_batch --out results/bench
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks._seed_batch import SeedBatch, run

POLICY = "neural-ts"
POLICY_PARAMS: dict[str, Any] = {}
ENV = "classification"
ENV_PARAMS: dict[str, Any] = {"dataset": "digits"}
HORIZON = 1000
SEEDS = list(range(10))


def main(quick: bool, out: Path) -> dict[str, Any]:
    """Time one seed, the stack of ten and (full mode) ten one by one, interleaved."""
    work = SeedBatch(POLICY, ENV, HORIZON, SEEDS, POLICY_PARAMS, ENV_PARAMS)
    return run("neural_seed_batch", work, quick, out)
