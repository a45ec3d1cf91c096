"""Seeded runs stay bitwise identical across refactors (see ``tests/golden.py``)."""

from __future__ import annotations

import numpy as np
import pytest

from tests import golden


@pytest.fixture(scope="module")
def recorded() -> list[dict[str, np.ndarray]]:
    return golden.records()


@pytest.mark.parametrize(
    ("env_label", "index", "seed"),
    golden.cases(),
    ids=[golden.key(*c) for c in golden.cases()],
)
def test_run_is_unchanged(
    recorded: list[dict[str, np.ndarray]], env_label: str, index: int, seed: int
) -> None:
    """The run equals the main record, or a platform variant of it (tests/golden.py)."""
    actions, regrets = golden.play(env_label, index, seed)
    prefix = golden.key(env_label, index, seed)
    candidates = [r for r in recorded if prefix + "/actions" in r]
    for record in candidates:
        if np.array_equal(actions, record[prefix + "/actions"]) and np.array_equal(
            regrets, record[prefix + "/regret"]
        ):
            return
    # report against the main record
    np.testing.assert_array_equal(actions, candidates[0][prefix + "/actions"])
    np.testing.assert_array_equal(regrets, candidates[0][prefix + "/regret"])
