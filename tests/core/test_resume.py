"""A run resumed from its checkpoint is the uninterrupted run, bit for bit (``core.resume``).

Each case runs once without interruption, keeping the snapshots that ``simulate`` hands out
every few rounds (each encoded to a checkpoint file's bytes and read back, as the result
store does); a fresh policy and environment resumed from a middle snapshot must then give
every record of the uninterrupted run, the per-round wall times aside.
"""

from __future__ import annotations

import numpy as np
import pytest

import banditkit as bk
from banditkit.core.resume import Checkpoints, Snapshot
from banditkit.core.simulate import RunResult, row_width
from banditkit.experiments.store.checkpoints import (
    CheckpointFileError,
    decode_snapshot,
    encode_snapshot,
)

T = 24
EVERY = 5

CASES = [
    ("linucb", {}, "linear", {"d": 3, "n_arms": 4}),
    ("lints", {}, "linear", {"d": 3, "n_arms": 4, "pool": 9}),
    ("eps-greedy", {}, "logistic", {"d": 3, "n_arms": 3}),
    (
        "neural-ucb",
        {"width": 4, "steps": 3, "update_every": 4},
        "nonlinear",
        {"d": 3, "n_arms": 3},
    ),
    (
        "neurallog-ts2",
        {"width": 4, "steps": 3, "update_every": 5},
        "logistic",
        {"d": 3, "n_arms": 2},
    ),
    ("colstim", {}, "dueling", {"utility": "cos", "d": 3, "n_arms": 4}),
    ("ucb-mnl", {}, "mnl", {"utility": "realizable", "d": 3, "n_items": 6}),
    ("rs-oful", {}, "rare-linear", {}),
]


def _run(policy, params, env, env_params, checkpoints=None) -> RunResult:
    return bk.simulate(
        bk.make_policy(policy, **params, seed=3),
        bk.make_env(env, **env_params),
        T,
        seed=5,
        progress=False,
        checkpoints=checkpoints,
    )


def _same(a: RunResult, b: RunResult) -> None:
    for name, values in a.columns().items():
        if name in ("act_seconds", "update_seconds"):
            continue
        other = b.column(name)
        if isinstance(values, list):
            assert values == other, name
        else:
            np.testing.assert_array_equal(values, other, err_msg=name)
    assert a.events_total == b.events_total


@pytest.mark.parametrize(("policy", "params", "env", "env_params"), CASES)
def test_resumed_run_is_the_uninterrupted_run(policy, params, env, env_params):
    family = bk.make_env(env, **env_params).family
    saved: list[bytes] = []

    def save(snapshot: Snapshot) -> None:
        saved.append(encode_snapshot(snapshot, "run-a", family))

    whole = _run(policy, params, env, env_params, Checkpoints(EVERY, save))
    assert len(saved) == (T - 1) // EVERY  # none after the last round
    plain = _run(policy, params, env, env_params)
    _same(whole, plain)  # checkpointing changes nothing
    width = row_width(bk.make_env(env, **env_params))
    snapshot = decode_snapshot(
        saved[2], run_id="run-a", runs=1, width=width, horizon=T, family=family
    )
    assert snapshot.rounds == 3 * EVERY
    resumed = _run(
        policy, params, env, env_params, Checkpoints(EVERY, lambda s: None, snapshot)
    )
    _same(resumed, plain)


def test_a_checkpoint_of_another_run_or_edited_is_refused():
    saved: list[bytes] = []
    _run(
        "linucb",
        {},
        "linear",
        {"d": 3},
        Checkpoints(
            EVERY, lambda s: saved.append(encode_snapshot(s, "a", "contextual"))
        ),
    )
    args = {"runs": 1, "width": 7, "horizon": T, "family": "contextual"}
    with pytest.raises(CheckpointFileError, match="checkpoint of run 'a', not 'b'"):
        decode_snapshot(saved[0], run_id="b", **args)
    with pytest.raises(CheckpointFileError, match="does not fit this run"):
        decode_snapshot(saved[0], run_id="a", **{**args, "horizon": 3})
    damaged = bytearray(saved[0])
    damaged[len(damaged) // 2] ^= 0xFF
    with pytest.raises(CheckpointFileError):
        decode_snapshot(bytes(damaged), run_id="a", **args)


def test_resuming_another_seed_is_refused():
    saved: list[Snapshot] = []
    _run("linucb", {}, "linear", {"d": 3}, Checkpoints(EVERY, saved.append))
    with pytest.raises(ValueError, match="seed 5; this run's is 6"):
        bk.simulate(
            bk.make_policy("linucb", seed=3),
            bk.make_env("linear", d=3),
            T,
            seed=6,
            checkpoints=Checkpoints(EVERY, lambda s: None, saved[0]),
        )
