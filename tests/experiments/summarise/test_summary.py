"""Statistics over seeds: the t-interval and the regret halves used by claims."""

from __future__ import annotations

import numpy as np
import pytest

from banditkit.experiments.summarise.stats import curve_band, t_interval


def test_t_interval_by_hand():
    """Values 1, 2, 3: mean 2, std 1, t_{0.975, 2} = 4.302653, half-width 4.302653 / sqrt(3)."""
    lo, hi = t_interval([1.0, 2.0, 3.0], 0.95)
    half = 4.302653 / np.sqrt(3)
    assert lo == pytest.approx(2 - half, abs=1e-5)
    assert hi == pytest.approx(2 + half, abs=1e-5)
    narrow = t_interval([1.0, 2.0, 3.0], 0.5)
    assert lo < narrow[0] < narrow[1] < hi


def test_t_interval_degenerate_cases():
    assert t_interval([4.0], 0.95) == (4.0, 4.0)
    assert t_interval([2.0, 2.0], 0.95) == (2.0, 2.0)
    assert all(np.isnan(v) for v in t_interval([], 0.95))


def test_curve_band_matches_pointwise_interval():
    matrix = np.array([[1.0, 2.0], [2.0, 4.0], [3.0, 9.0]])
    mean, lo, hi = curve_band(matrix, 0.9)
    assert mean.tolist() == [2.0, 5.0]
    for j in range(2):
        assert (lo[j], hi[j]) == pytest.approx(t_interval(matrix[:, j], 0.9))
