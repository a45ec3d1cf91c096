from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.datasets._data import use_reference_data


@pytest.fixture(autouse=True, scope="module")
def _reference_data() -> Iterator[Path]:
    """Every test here reads ../shared/datasets (or $BANDITKIT_DATA) and never downloads."""
    with pytest.MonkeyPatch.context() as mp:
        yield use_reference_data(mp)
