"""Shared pytest set-up: the names every doctest may use."""

from __future__ import annotations

import numpy as np
import pytest

import banditkit as bk


@pytest.fixture(autouse=True)
def _doctest_names(doctest_namespace: dict) -> None:
    doctest_namespace["np"] = np
    doctest_namespace["bk"] = bk
