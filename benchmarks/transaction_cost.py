"""What the undo of a failed update costs (``core.transaction``; docs/performance.md).

``Policy.update`` records the policy before ``_update`` and puts the record back when
``_update`` raises. This benchmark times ``update`` with that record and without it (the
record replaced by one that does nothing), side by side in one process on the very same
policy: repetitions alternate between the two (ABBA order), each a batch of rounds in which
only the ``update`` calls are timed (CPU time of the thread), and the ratio of the medians
is reported. The cases: ``linucb``, ``lints`` and ``glm-ucb`` at K = 10, d = 20 after 2,000
updates, ``linucb`` at d = 640 after 2,000 updates on block-encoded arms (the classification
bandits' encoding of docs/performance.md: arm k holds 64 features in block k) and on dense
arms, and ``neural-ucb`` (width 100, d = 20, after 200 updates). Bar: at most 1.15 (the
record adds at most 15 % to an update).

    banditkit bench --only transaction_cost --out results/bench
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

import banditkit as bk
from banditkit.core import Context
from banditkit.core import policy as policy_module
from banditkit.experiments.compute.threads import single_threaded

BAR = 1.15

#: (label, policy name, parameters, d, warm-up updates, block-encoded arms)
CASES: tuple[tuple[str, str, dict[str, Any], int, int, bool], ...] = (
    ("linucb d=20", "linucb", {}, 20, 2000, False),
    ("lints d=20", "lints", {}, 20, 2000, False),
    ("glm-ucb d=20", "glm-ucb", {}, 20, 2000, False),
    ("linucb d=640 (block-encoded)", "linucb", {}, 640, 2000, True),
    ("linucb d=640 (dense)", "linucb", {}, 640, 2000, False),
    ("neural-ucb width 100", "neural-ucb", {"width": 100}, 20, 200, False),
)
K = 10


def _arms(rng: np.random.Generator, d: int, block: bool) -> np.ndarray:
    """K arms of dimension d: dense, or arm k's d / K features in block k."""
    if not block:
        return rng.normal(size=(K, d)) / np.sqrt(d)
    m = d // K
    arms = np.zeros((K, d))
    for k in range(K):
        arms[k, k * m : (k + 1) * m] = rng.normal(size=m) / np.sqrt(m)
    return arms


class _NoRecord:
    def restore(self) -> None:
        """Nothing was recorded."""

    def commit(self) -> None:
        """Nothing to close."""


@contextlib.contextmanager
def _without_record() -> Iterator[None]:
    saved = policy_module.snapshot
    policy_module.snapshot = lambda obj: _NoRecord()  # type: ignore[assignment,return-value]
    try:
        yield
    finally:
        policy_module.snapshot = saved


def _rounds(
    policy: bk.Policy, contexts: list[Context], rewards: np.ndarray, start: int, n: int
) -> float:
    """Play rounds start .. start + n - 1; return the CPU time of their ``update`` calls."""
    spent = 0.0
    for i in range(start, start + n):
        ctx = contexts[i % len(contexts)]
        action = policy.act(ctx)
        began = time.thread_time()
        policy.update(ctx, action, float(rewards[i % len(rewards)]))
        spent += time.thread_time() - began
    return spent


def measure(
    case: tuple[str, str, dict[str, Any], int, int, bool],
    reps: int,
    batch: int,
    warm_divisor: int = 1,
) -> dict[str, Any]:
    """Median CPU seconds per update with and without the record, and their ratio."""
    _, name, params, d, warm, block = case
    warm //= warm_divisor
    rng = np.random.default_rng(0)
    contexts = [Context(arms=_arms(rng, d, block)) for _ in range(256)]
    rewards = (rng.random(4096) < 0.5).astype(float)
    policy = bk.make_policy(name, seed=0, **params)
    _rounds(policy, contexts, rewards, 0, warm)
    times: dict[str, list[float]] = {"with": [], "without": []}
    start = warm
    for rep in range(reps):
        order = ("with", "without") if rep % 2 == 0 else ("without", "with")
        for mode in order:
            if mode == "with":
                spent = _rounds(policy, contexts, rewards, start, batch)
            else:
                with _without_record():
                    spent = _rounds(policy, contexts, rewards, start, batch)
            times[mode].append(spent / batch)
            start += batch
    with_, without = (statistics.median(times[m]) for m in ("with", "without"))
    return {
        "us_with": round(with_ * 1e6, 2),
        "us_without": round(without * 1e6, 2),
        "ratio": round(with_ / without, 3),
        "meets_bar": with_ / without <= BAR,
    }


def main(quick: bool, out: Path) -> dict[str, Any]:
    """Time every case; write result.json and result.md."""
    reps, batch = (6, 50) if quick else (20, 100)
    load_before = os.getloadavg()[0]
    with single_threaded():
        cases = {
            case[0]: measure(case, reps, batch, 4 if quick else 1) for case in CASES
        }
    result = {
        "quick": quick,
        "reps": reps,
        "batch": batch,
        "bar": BAR,
        "cases": cases,
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
    }
    lines = [
        "# The undo record's cost" + (" (quick)" if quick else ""),
        "",
        f"{reps} alternating repetitions of {batch} updates each, CPU time of the thread, "
        f"medians; 1-minute load {load_before:.1f} before, "
        f"{result['load_after']:.1f} after.",
        "",
        "| case | us / update with | without | ratio (bar 1.15) |",
        "|---|---|---|---|",
        *(
            f"| {label} | {c['us_with']} | {c['us_without']} | {c['ratio']} |"
            for label, c in cases.items()
        ),
    ]
    out.mkdir(parents=True, exist_ok=True)
    (out / "result.json").write_text(json.dumps(result, indent=1) + "\n")
    (out / "result.md").write_text("\n".join(lines) + "\n")
    return result


if __name__ == "__main__":
    import sys

    print(
        json.dumps(
            main("--quick" in sys.argv, Path("results/transaction_cost")), indent=1
        )
    )
