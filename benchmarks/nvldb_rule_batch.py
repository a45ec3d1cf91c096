"""The six pair rules of one NVLDB network as one stack, against one run and six one by one.

Issue [compute], item 3. Workload: ``nvldb-ucb`` and ``nvldb-ts`` with the rules ASYM, OSYM
and CSYM (defaults otherwise: preset "appendix", m = 32, depth 3, 20 Adam steps every round)
on ``dueling`` cos, d = 5, K = 5, T = 200, seed 0: six members that differ in their rule
(``Policy.stack_key``) and train as one stack (``policies.dueling.stacked``). In one process,
one thread, interleaved repetitions (``benchmarks._seed_batch``): one run (UCB-ASYM), the
six as one stack and the six one by one. On the exact path (float64, every duel; stated,
as the defaults are float32 on the distinct duels) the stack takes the separate runs'
actions (``same_pairs`` = 1).

    banditkit bench --only nvldb_rule_batch --out results/bench
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks._seed_batch import SeedBatch, run

POLICY = "nvldb-ucb"
POLICY_PARAMS: dict[str, Any] = {}
#: The exact path, under ``POLICY_PARAMS``.
EXACT: dict[str, Any] = {"dtype": "float64", "distinct_duels": False}
ENV = "dueling"
ENV_PARAMS: dict[str, Any] = {"utility": "cos", "d": 5, "n_arms": 5}
HORIZON = 200
SEEDS = [0]
VARIANTS = tuple(
    (name, {"rule": rule})
    for name in ("nvldb-ucb", "nvldb-ts")
    for rule in ("asym", "osym", "csym")
)


def main(quick: bool, out: Path) -> dict[str, Any]:
    """Time one run, the stack of six rules and (full mode) the six one by one."""
    work = SeedBatch(
        POLICY,
        ENV,
        HORIZON,
        SEEDS,
        {**EXACT, **POLICY_PARAMS},
        ENV_PARAMS,
        variants=VARIANTS,
    )
    return run("nvldb_rule_batch", work, quick, out)
