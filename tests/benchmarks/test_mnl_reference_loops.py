"""The re-implemented reference loops of the mnl_reference benchmark, checked where an
independent answer exists: OFU-MNL+ with banditkit's tie rule is banditkit's policy, and the
reference objective's gradient is that of the squared penalty (the inconsistency the docs
describe)."""

import numpy as np

from benchmarks._mnl_reference_loops import (
    _cost,
    _gradient,
    run_banditkit,
    run_reference,
)
from benchmarks.mnl_reference import TASK


def test_ofu_mnl_plus_loop_with_low_ties_is_banditkits_policy():
    ours = run_banditkit("ofu-mnl-plus", TASK, 80, 3)
    ref = run_reference("ofu-mnl-plus", TASK, 80, 3, "low")
    assert ours["actions"] == ref["actions"]
    assert ours["regret"] == ref["regret"]
    assert ours["cpu_s"] > 0 and ref["cpu_s"] > 0


def test_reference_gradient_is_that_of_the_squared_penalty():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(30, 5, 3)) * 0.5
    y = np.zeros((30, 6))
    y[np.arange(30), rng.integers(0, 6, 30)] = 1.0
    theta, lam, h = rng.normal(size=3), 1.0, 1e-6

    def squared(v):  # the code's cost with (lam / 2) ||v||^2 in place of lam ||v||
        return _cost(v, x, y, lam) + lam * (0.5 * v @ v - np.linalg.norm(v)) / 30

    fd = np.array(
        [(squared(theta + h * e) - squared(theta - h * e)) / (2 * h) for e in np.eye(3)]
    )
    np.testing.assert_allclose(_gradient(theta, x, y, lam), fd, atol=1e-8)
    fd_norm = np.array(
        [
            (_cost(theta + h * e, x, y, lam) - _cost(theta - h * e, x, y, lam))
            / (2 * h)
            for e in np.eye(3)
        ]
    )
    assert np.abs(_gradient(theta, x, y, lam) - fd_norm).max() > 1e-4
