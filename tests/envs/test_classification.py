from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import banditkit as bk
from banditkit.envs.classification import ClassificationEnv, encode_arms
from tests.datasets._data import require_reference_data, use_reference_data


@pytest.fixture(autouse=True, scope="module")
def _reference_data() -> Iterator[Path]:
    with pytest.MonkeyPatch.context() as mp:
        yield use_reference_data(mp)


# ---------------------------------------------------------------------------- encodings
@settings(max_examples=50, deadline=None)
@given(
    x=arrays(np.float64, st.integers(1, 6), elements=st.floats(-10, 10)),
    k=st.integers(1, 6),
)
def test_block_arm_is_the_row_in_its_block_and_zero_elsewhere(
    x: np.ndarray, k: int
) -> None:
    arms = encode_arms(x, k, "block")
    d = x.shape[0]
    assert arms.shape == (k, d * k)
    for arm in range(k):
        blocks = arms[arm].reshape(k, d)
        np.testing.assert_array_equal(blocks[arm], x)
        assert not np.delete(blocks, arm, axis=0).any()


def test_onehot_id_encoding() -> None:
    x = np.array([0.5, -1.0, 2.0])
    arms = encode_arms(x, 4, "onehot-id")
    assert arms.shape == (4, 7)
    np.testing.assert_array_equal(arms[:, :3], np.tile(x, (4, 1)))
    np.testing.assert_array_equal(arms[:, 3:], np.eye(4))


def test_contexts_are_encoded_rows_of_the_dataset() -> None:
    env = ClassificationEnv(dataset="digits", pool=50)
    env.reset(0)
    rows = env.data.features
    for _ in range(20):
        arms = env.context().arms
        y = env.best_action()
        blocks = arms.reshape(10, 10, 64)[np.arange(10), np.arange(10)]
        assert (blocks == blocks[0]).all()  # the same row in every arm's block
        matches = np.flatnonzero((rows == blocks[0]).all(axis=1))
        assert y in env.data.labels[matches]
        env.step(y)


# ---------------------------------------------------------------------------- regret
@pytest.mark.parametrize("encoding", ["block", "onehot-id"])
def test_oracle_has_zero_regret(encoding: str) -> None:
    env = bk.make_env("classification", dataset="digits", pool=300, encoding=encoding)
    run = bk.simulate(bk.make_policy("oracle"), env, horizon=300, seed=1)
    assert run.cumulative_regret[-1] == 0.0
    assert run.reward.sum() == 300


def test_random_regret_is_close_to_k_minus_one_over_k_on_balanced_data() -> None:
    """digits: 10 nearly balanced classes -> 0.9 per round; sd of the mean over 4000
    rounds is sqrt(0.09 / 4000) = 0.0047, tolerance 0.02 (> 4 sd)."""
    env = bk.make_env("classification", dataset="digits")
    run = bk.simulate(bk.make_policy("random", seed=3), env, horizon=4000, seed=0)
    assert abs(run.regret.mean() - 0.9) < 0.02
    assert set(np.unique(run.regret).tolist()) <= {0.0, 1.0}
    np.testing.assert_array_equal(run.regret, 1.0 - run.reward)


def test_random_regret_on_exactly_balanced_covertype_rows() -> None:
    """The first 15,120 Covertype rows hold 2,160 of each of K = 7 classes: 6/7 per round;
    sd of the mean over 3000 rounds is 0.0064, tolerance 0.03."""
    require_reference_data("covertype")
    env = bk.make_env("classification", dataset="covertype", subset="first15120")
    assert env.n_arms == 7
    run = bk.simulate(bk.make_policy("random", seed=5), env, horizon=3000, seed=2)
    assert abs(run.regret.mean() - 6 / 7) < 0.03
    assert env.meta()["is_subset"] is True


# ---------------------------------------------------------------------------- pool and order
def test_pool_limits_the_rows_and_depends_on_the_seed() -> None:
    env = ClassificationEnv(dataset="digits", pool=5)
    seen = []
    for seed in (0, 0, 1):
        env.reset(seed)
        rows = set()
        for _ in range(200):
            env.context()
            rows.add(env._row)
            env.step(0)
        seen.append(rows)
    assert len(seen[0]) == 5 and seen[0] == seen[1] != seen[2]


def test_shuffle_walks_through_the_pool_before_repeating() -> None:
    env = ClassificationEnv(dataset="digits", pool=30, shuffle=True)
    env.reset(4)
    rows = []
    for _ in range(60):
        env.context()
        rows.append(env._row)
        env.step(0)
    assert len(set(rows[:30])) == 30 and set(rows[:30]) == set(rows[30:])
    assert rows[:30] != rows[30:]  # a fresh permutation on the second pass


def test_same_seed_gives_the_same_contexts() -> None:
    def contexts(seed: int) -> list[np.ndarray]:
        env = bk.make_env("classification", dataset="digits", pool=100)
        env.reset(seed)
        out = []
        for _ in range(10):
            out.append(env.context().arms)
            env.step(0)
        return out

    assert all(
        np.array_equal(a, b) for a, b in zip(contexts(3), contexts(3), strict=True)
    )
    assert not all(
        np.array_equal(a, b) for a, b in zip(contexts(3), contexts(4), strict=True)
    )


def test_mushroom_random_map_is_drawn_per_run() -> None:
    require_reference_data("mushroom")
    env = ClassificationEnv(dataset="mushroom", scale="none")
    env.reset(0)
    a = env.data.features
    env.reset(1)
    b = env.data.features
    env.reset(0)
    assert np.array_equal(env.data.features, a) and not np.array_equal(a, b)
    fixed = ClassificationEnv(dataset="mushroom", scale="none", data_seed=7)
    fixed.reset(0)
    c = fixed.data.features
    fixed.reset(1)
    assert np.array_equal(fixed.data.features, c)


@pytest.mark.parametrize(
    ("dataset", "options", "k", "d"),
    [
        ("mushroom", {}, 2, 44),
        ("shuttle", {}, 7, 63),
        ("magic", {}, 2, 20),
        ("adult", {"categorical": "ordinal"}, 2, 28),
        ("covertype", {}, 7, 378),
        ("mnist", {}, 10, 1960),
        ("fashion-mnist", {}, 10, 1960),
        ("banknote", {}, 2, 8),
        ("phoneme", {}, 2, 10),
    ],
)
def test_every_classification_dataset_builds_an_environment(
    dataset: str, options: dict[str, object], k: int, d: int
) -> None:
    require_reference_data()
    env = bk.make_env("classification", dataset=dataset, pool=200, **options)
    run = bk.simulate(bk.make_policy("oracle"), env, horizon=20, seed=0)
    assert env.n_arms == k
    env.reset(0)
    assert env.context().arms.shape == (k, d)
    assert run.cumulative_regret[-1] == 0.0
    assert env.label == f"classification-{dataset}"


def test_invalid_options_are_rejected() -> None:
    with pytest.raises(ValueError, match="encoding must be one of"):
        ClassificationEnv(encoding="dense")
    with pytest.raises(ValueError, match="pool must be an int"):
        ClassificationEnv(pool=0)
    with pytest.raises(ValueError, match="dataset must be one of"):
        ClassificationEnv(dataset="obd")
    with pytest.raises(ValueError, match="has no option 'image_size'"):
        ClassificationEnv(image_size=7)
    with pytest.raises(TypeError, match="shuffle must be a bool"):
        ClassificationEnv(shuffle="yes")  # type: ignore[arg-type]


def test_params_round_trip_through_make_env() -> None:
    env = bk.make_env("classification", dataset="digits", pool=40, shuffle=True)
    params = env.get_params()
    assert (
        params["pool"] == 40 and params["shuffle"] is True and params["scale"] == "auto"
    )
    assert bk.make_env("classification", **params).get_params() == params


def test_runs_under_banditkit_run_with_a_config_naming_a_dataset(
    tmp_path: Path,
) -> None:
    import json

    from typer.testing import CliRunner

    from banditkit.cli import app

    require_reference_data("shuttle")
    config = tmp_path / "shuttle.yaml"
    config.write_text(
        "name: shuttle-smoke\nhorizon: 60\nseeds: 2\n"
        "envs:\n  - {name: classification, dataset: shuttle, pool: 300}\n"
        "  - {name: classification, dataset: mushroom, encoding: onehot-id}\n"
        "policies:\n  - {name: oracle}\n  - {name: random}\n"
    )
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        [
            "run",
            str(config),
            "--out",
            str(out),
            "--backend",
            "serial",
            "--progress",
            "none",
        ],
    )
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    final = {
        (r["env"], r["policy"]): r["final_regret_mean"] for r in summary["results"]
    }
    assert final[("classification-shuttle", "oracle")] == 0.0
    assert final[("classification-mushroom", "oracle")] == 0.0
    assert final[("classification-shuttle", "random")] > 0.0
