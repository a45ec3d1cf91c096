"""Ten seeds of NVLDB-UCB at m = 32 as one stack, against one seed (issue [compute], item 3).

Workload: ``nvldb-ucb`` (preset "appendix": m = 32, depth 3, 20 Adam steps every round,
rule ASYM) on ``dueling`` cos, d = 5, K = 5, T = 300, in two configurations:

    exact   ``dtype: float64, distinct_duels: false`` (the defaults before 2026-12-06):
            on the CPU the stack computes its members one by one inside the stacked
            fit and takes the separate runs' pairs bit for bit
    fast    ``dtype: float32, distinct_duels: true`` (the defaults since): batched
            kernels for the fits and for the members' passes outside them (equal to
            the separate runs up to rounding), fits on the duels of two different arms
            only

Each is timed in one process, interleaved (``reps`` repetitions, medians), one BLAS and
one PyTorch thread (``benchmarks._seed_batch``): one seed alone, the 10 seeds 0..9 as one
stack (``policies.dueling.stacked``) and the 10 seeds one by one (``core.members.Separate``;
skipped in quick mode). The bar: the stack within 3x the wall time of one seed of the same
configuration (``within_3x`` per configuration). The share of the stack's pairs equal to
the separate runs' is reported (``same_pairs``: 1 for the exact configuration).

    banditkit bench --only nvldb_seed_batch --out results/bench
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks._common import write_outputs
from benchmarks._seed_batch import SeedBatch, measure, table

POLICY = "nvldb-ucb"
CONFIGS: dict[str, dict[str, Any]] = {
    "exact": {"dtype": "float64", "distinct_duels": False},
    "fast": {"dtype": "float32", "distinct_duels": True},
}
ENV = "dueling"
ENV_PARAMS: dict[str, Any] = {"utility": "cos", "d": 5, "n_arms": 5}
HORIZON = 300
BAR = 3.0
SEEDS = list(range(10))


def main(quick: bool, out: Path) -> dict[str, Any]:
    """Time one seed, the stack of ten and (full mode) ten one by one, per configuration."""
    result: dict[str, Any] = {"workload": "nvldb_seed_batch", "bar": BAR}
    tables = []
    for config, params in CONFIGS.items():
        work = SeedBatch(POLICY, ENV, HORIZON, SEEDS, params, ENV_PARAMS)
        measured = measure(f"nvldb_seed_batch ({config})", work, quick, clock="wall")
        measured["within_3x"] = bool(measured["ratio_stack_to_one"] <= BAR)
        result[config] = measured
        verdict = f" (bar {BAR:g}x: {'PASS' if measured['within_3x'] else 'FAIL'})"
        tables.append(table(measured, verdict))
    result["within_3x"] = {config: result[config]["within_3x"] for config in CONFIGS}
    write_outputs(out, result, "\n".join(tables))
    return result
