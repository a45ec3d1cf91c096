import numpy as np
import pytest

from banditkit.core import STREAMS, make_rng, spawn_seeds


def test_streams_are_reproducible_and_distinct():
    draws = {s: make_rng(7, s).random(4) for s in STREAMS}
    for s in STREAMS:
        np.testing.assert_array_equal(draws[s], make_rng(7, s).random(4))
    values = [tuple(v) for v in draws.values()]
    assert len(set(values)) == len(values)
    assert not np.array_equal(
        make_rng(7, "noise").random(4), make_rng(8, "noise").random(4)
    )


def test_no_global_state_touched():
    state = np.random.get_state()[1].copy()  # noqa: NPY002 - checking global state
    make_rng(3, "policy").random(10)
    spawn_seeds(3, 5)
    np.testing.assert_array_equal(state, np.random.get_state()[1])  # noqa: NPY002


def test_spawn_seeds_and_errors():
    seeds = spawn_seeds(1, 4)
    assert len(set(seeds)) == 4 and seeds == spawn_seeds(1, 4)
    with pytest.raises(ValueError, match="Did you mean 'noise'"):
        make_rng(0, "nois")
    with pytest.raises(ValueError, match="seed"):
        make_rng(-1, "noise")
