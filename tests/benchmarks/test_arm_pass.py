"""The per-arm pass benchmark (``benchmarks.arm_pass``) runs every case it reports."""

from __future__ import annotations

import math

from benchmarks import arm_pass as bench


def test_every_network_dtype_and_call_is_measured_with_both_methods() -> None:
    rows = bench.measure(repeats=1, calls=1)
    cases = {(r["depth"], r["bias"], r["dtype"], r["call"]) for r in rows}
    assert len(cases) == len(rows) == len(bench.NETWORKS) * len(bench.DTYPES) * 3
    for r in rows:
        assert r["backprop_ms"] > 0 and r["torch_func_ms"] > 0
        assert math.isfinite(r["speedup"])
