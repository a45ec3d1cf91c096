"""Ten seeds of epsilon-greedy-MNL as one stack, against one seed and ten one by one.

Issue [compute], item 3. Workload: ``eps-greedy-mnl`` with its defaults (width 3, 2,000
full-batch Adam steps at the end of every epoch: after rounds 1, 3, 7, ..., 511) on the
realizable ``mnl`` task of Fig. 2 (Gaussian contexts, d = 3, N = 100 items, K = 5),
T = 512, seeds 0..9. In one process, one thread, interleaved repetitions
(``benchmarks._seed_batch``): one seed, the ten as one stack (``policies.mnl.stacked``:
each epoch's ten refits as one ``nn.fit`` over per-member sets) and the ten one by one.
The stack's networks equal the separate fits' to rounding (batched kernels), so it takes
their offers (``same_pairs`` = 1) unless a rounding moves a tie.

    banditkit bench --only mnl_seed_batch --out results/bench
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks._seed_batch import SeedBatch, run

POLICY = "eps-greedy-mnl"
POLICY_PARAMS: dict[str, Any] = {}
ENV = "mnl"
ENV_PARAMS: dict[str, Any] = {
    "utility": "realizable",
    "features": "gaussian",
    "d": 3,
    "n_items": 100,
    "capacity": 5,
}
HORIZON = 512
SEEDS = list(range(10))


def main(quick: bool, out: Path) -> dict[str, Any]:
    """Time one seed, the stack of ten and (full mode) ten one by one, interleaved."""
    work = SeedBatch(POLICY, ENV, HORIZON, SEEDS, POLICY_PARAMS, ENV_PARAMS)
    return run("mnl_seed_batch", work, quick, out)
