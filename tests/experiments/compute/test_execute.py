"""A run's clock starts after the one-time PyTorch import (``Policy.needs_torch``).

``import banditkit`` leaves PyTorch out; without this, the first neural run of each worker
process would count the ~1 s import in its first round's act time (the runtime panels).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import banditkit as bk
from banditkit.core import POLICIES

CODE = """
import sys
import banditkit.core as core
from banditkit.experiments.compute.execute import compute_run
from banditkit.experiments.config.resolved import RunSpec

seen = {}
real = core.simulate


def spy(policy, *args, **kwargs):
    seen[policy.registry_name] = "torch" in sys.modules
    return real(policy, *args, **kwargs)


core.simulate = spy
env = ("logistic", {"h": "h1", "d": 3, "n_arms": 3})
for name, params in [("linucb", {}), ("neural-ucb", {"width": 4, "steps": 2})]:
    record = compute_run(RunSpec(*env, name, params, seed=0, horizon=3))
    assert record.error is None, record.error
print(seen)
"""


def test_torch_is_imported_before_a_neural_run_starts_and_only_then() -> None:
    out = subprocess.run(
        [sys.executable, "-c", CODE], check=True, capture_output=True, text=True
    ).stdout
    assert out.strip() == "{'linucb': False, 'neural-ucb': True}"


@pytest.mark.parametrize(
    "name",
    [
        "neural-ucb",
        "neurallog-ucb2",
        "neural-es",
        "nvldb-ucb",
        "ndb-ucb",
        "onl-mnl",
        "eps-greedy-mnl",
    ],
)
def test_neural_policies_declare_that_they_need_torch(name: str) -> None:
    assert POLICIES.get(name).needs_torch


@pytest.mark.parametrize(
    "name",
    ["linucb", "glm-ucb", "logistic-ucb1", "lin-es", "blce", "ucb-mnl", "colstim"],
)
def test_other_policies_do_not(name: str) -> None:
    assert not bk.make_policy(name).needs_torch
