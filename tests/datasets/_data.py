"""Where the tests find the reference datasets (../shared/datasets next to the repository)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED_DATASETS = Path(__file__).resolve().parents[2].parent / "shared" / "datasets"


def reference_data_dir() -> Path:
    """``$BANDITKIT_DATA`` when set, else ../shared/datasets relative to the repository."""
    env = os.environ.get("BANDITKIT_DATA")
    return Path(env) if env else SHARED_DATASETS


def use_reference_data(mp: pytest.MonkeyPatch) -> Path:
    """Point ``BANDITKIT_DATA`` at the reference copy (if unset) and forbid downloads."""
    path = reference_data_dir()
    mp.setenv("BANDITKIT_DATA", str(path))
    mp.setenv("BANDITKIT_OFFLINE", "1")
    return path


def require_reference_data(name: str = "") -> Path:
    """The reference directory, or skip the test when it (or dataset ``name``) is absent."""
    path = reference_data_dir()
    target = path / name if name else path
    if not target.is_dir():
        pytest.skip(f"reference datasets not found at {target} (set BANDITKIT_DATA)")
    return path
