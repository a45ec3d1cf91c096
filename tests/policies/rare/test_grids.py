"""Update grids of the rare-update policies: exact end points, B, phases, validation."""

import itertools
import math

import numpy as np
import pytest

import banditkit as bk
from banditkit.core import Context
from banditkit.policies.rare import (
    BLCE,
    BLCEG,
    check_grid,
    loglog,
    phase_counts,
    update_grid,
)


def _formula(name, T):
    """The end points written out from the algorithm boxes, independently of the module."""
    L = np.log2(np.log2(T))
    ends = []
    ell = 0
    while not ends or ends[-1] < T:
        ell += 1
        if name == "bgle":
            if ell <= 3:
                end = ell * math.ceil(T ** (1 / 3) / L)
            else:
                end = ends[-1] + math.ceil(T ** (1 - 1 / (3 * 2 ** (ell - 4))) / L)
        elif ell == 1:
            end = math.ceil(np.sqrt(T) / L) + (name == "blce-g")
        else:
            end = (
                ends[-1]
                + math.ceil(T ** (1 - 2.0**-ell) / L)
                + (2 if name == "blce-g" else 1)
            )
        ends.append(min(end, T))
    return tuple(ends)


def test_grids_at_ten_thousand_match_the_worked_example():
    assert update_grid("blce-g", 10_000) == (
        28,
        298,
        1148,
        2657,
        4669,
        6992,
        9488,
        10000,
    )
    assert update_grid("blce", 10_000) == (27, 296, 1145, 2653, 4664, 6986, 9481, 10000)
    assert update_grid("bgle", 10_000) == (
        6,
        12,
        18,
        143,
        721,
        1965,
        3791,
        6003,
        8438,
        10000,
    )
    assert round(loglog(10_000), 5) == 3.73202


@pytest.mark.parametrize("T", [100, 1000, 2000, 5000, 10_000, 12_345, 100_000, 10**6])
@pytest.mark.parametrize("name", ["blce-g", "blce", "bgle"])
def test_grid_end_points_equal_the_formulas(name, T):
    grid = update_grid(name, T)
    assert grid == _formula(name, T)
    assert grid[-1] == T and all(b > a for a, b in itertools.pairwise(grid))
    # B = O(log log T): the bounds of the proofs
    bound = 3 * loglog(T) + (5 if name == "bgle" else 1)
    assert len(grid) <= bound


def test_phase_counts_match_the_worked_example():
    g = BLCEG()
    g.begin(10_000)
    g.act(Context(arms=np.eye(2)))
    assert phase_counts(g, 10_000) == {
        "design": 2890,
        "uncertainty": 2378,
        "greedy": 4732,
    }
    b = BLCE()
    b.begin(10_000)
    b.act(Context(arms=np.eye(2)))
    assert phase_counts(b, 10_000) == {"design": 0, "uncertainty": 5271, "greedy": 4729}


def test_a_user_grid_is_validated_and_used():
    assert check_grid([5, 20], horizon=50) == (5, 20, 50)
    with pytest.raises(ValueError, match="grid must be strictly increasing"):
        check_grid([5, 5])
    with pytest.raises(ValueError, match="grid"):
        check_grid([0, 5])
    with pytest.raises(ValueError, match="grid must hold"):
        check_grid([])
    with pytest.raises(ValueError, match="grid must end at or before the horizon"):
        p = BLCE(grid=[10, 100])
        p.begin(50)
    env = bk.make_env("rare-linear", n_arms=5, d=3)
    run = bk.simulate(BLCE(grid=[7, 20]), env, 30, seed=0)
    updates = run.n_updates
    assert updates[-1] == 3
    assert [int(t) + 1 for t in np.flatnonzero(np.diff(np.r_[0, updates]))] == [
        7,
        20,
        30,
    ]


def test_a_grid_policy_without_a_horizon_is_a_clear_error():
    for name in ("blce", "blce-g", "bgle", "batchlinucb-dg", "softbatch", "b-glincb"):
        with pytest.raises(ValueError, match="needs the horizon"):
            bk.make_policy(name).act(Context(arms=np.eye(2)))


def test_tiny_horizons_use_one_interval():
    assert update_grid("blce", 1) == (1,)
    assert update_grid("bgle", 2) == (2,)
    with pytest.raises(ValueError, match="horizon"):
        loglog(2)
