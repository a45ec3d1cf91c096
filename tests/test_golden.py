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
    prefix = golden.key(env_label, index, seed)
    candidates = [r for r in recorded if prefix + "/actions" in r]
    if prefix in golden.PLATFORM_RUNS:  # pinned on its own platform only
        here = golden.platform()
        candidates = [r for r in candidates if str(r.get("platform")) == here]
        if not candidates:
            pytest.skip(
                f"{prefix} is pinned per platform and has no record for {here!r}: "
                "record it with python -m tests.golden"
            )
    actions, regrets = golden.play(env_label, index, seed)
    for record in candidates:
        if np.array_equal(actions, record[prefix + "/actions"]) and np.array_equal(
            regrets, record[prefix + "/regret"]
        ):
            return
    # report against the main record
    np.testing.assert_array_equal(actions, candidates[0][prefix + "/actions"])
    np.testing.assert_array_equal(regrets, candidates[0][prefix + "/regret"])


def test_platform_runs_are_pinned_per_platform_only(
    monkeypatch: pytest.MonkeyPatch, recorded: list[dict[str, np.ndarray]]
) -> None:
    """They are cases, absent from the main record; elsewhere they skip, naming why."""
    keys = {golden.key(*c) for c in golden.cases()}
    assert golden.PLATFORM_RUNS.issubset(keys)
    assert not any(
        prefix + "/actions" in recorded[0] for prefix in golden.PLATFORM_RUNS
    )
    monkeypatch.setattr(golden, "platform", lambda: "a platform never recorded")
    case = next(c for c in golden.cases() if golden.key(*c) in golden.PLATFORM_RUNS)
    with pytest.raises(pytest.skip.Exception, match="pinned per platform"):
        test_run_is_unchanged(recorded, *case)
