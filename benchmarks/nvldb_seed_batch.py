"""Ten seeds of NVLDB-UCB at m = 32 as one stack, against one seed (issue [compute], item 3).

Workload: ``nvldb-ucb`` with its defaults (preset "appendix": m = 32, depth 3, 20 Adam steps
every round, rule ASYM) on ``dueling`` cos, d = 5, K = 5, T = 300. Timed in one process,
interleaved (``reps`` repetitions, medians), one BLAS and one PyTorch thread
(``benchmarks._seed_batch``): one seed alone, the 10 seeds 0..9 as one stack
(``policies.dueling.stacked``) and the 10 seeds one by one (``core.members.Separate``;
skipped in quick mode). The bar: the stack within 3x the wall time of one seed
(``within_3x``). The share of the stack's pairs equal to the separate runs' is reported
(``same_pairs``; Adam amplifies rounding on the network's head bias, so a seed may part
after a while: docs/performance.md, "Devices, dtype and batched duels").

    banditkit bench --only nvldb_seed_batch --out results/bench
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks._common import write_outputs
from benchmarks._seed_batch import SeedBatch, measure, table

POLICY = "nvldb-ucb"
POLICY_PARAMS: dict[str, Any] = {}
ENV = "dueling"
ENV_PARAMS: dict[str, Any] = {"utility": "cos", "d": 5, "n_arms": 5}
HORIZON = 300
BAR = 3.0
SEEDS = list(range(10))


def main(quick: bool, out: Path) -> dict[str, Any]:
    """Time one seed, the stack of ten and (full mode) ten one by one, interleaved."""
    work = SeedBatch(POLICY, ENV, HORIZON, SEEDS, POLICY_PARAMS, ENV_PARAMS)
    result = measure("nvldb_seed_batch", work, quick, clock="wall")
    result["bar"] = BAR
    result["within_3x"] = bool(result["ratio_stack_to_one"] <= BAR)
    verdict = f" (bar {BAR:g}x: {'PASS' if result['within_3x'] else 'FAIL'})"
    write_outputs(out, result, table(result, verdict))
    return result
