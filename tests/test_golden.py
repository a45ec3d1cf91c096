"""Seeded runs stay bitwise identical across refactors (see ``tests/golden.py``)."""

from __future__ import annotations

import numpy as np
import pytest

from tests import golden


@pytest.fixture(scope="module")
def recorded() -> dict[str, np.ndarray]:
    with np.load(golden.GOLDEN) as data:
        return {k: data[k] for k in data.files}


@pytest.mark.parametrize(
    ("env_label", "index", "seed"),
    golden.cases(),
    ids=[golden.key(*c) for c in golden.cases()],
)
def test_run_is_unchanged(
    recorded: dict[str, np.ndarray], env_label: str, index: int, seed: int
) -> None:
    actions, regrets = golden.play(env_label, index, seed)
    prefix = golden.key(env_label, index, seed)
    np.testing.assert_array_equal(actions, recorded[prefix + "/actions"])
    np.testing.assert_array_equal(regrets, recorded[prefix + "/regret"])
