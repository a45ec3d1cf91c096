"""The user's own tables: ``classification`` with ``data=`` and the ``log-replay`` env."""

from __future__ import annotations

import os
import runpy
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import banditkit as bk
from banditkit import ope
from banditkit.experiments import run_experiment
from banditkit.experiments.config.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]


def _table(n: int = 60, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "a": rng.normal(size=n),
            "b": rng.integers(0, 5, size=n),
            "flag": rng.random(n) < 0.5,
            "species": rng.choice(["cat", "dog", "eel"], size=n),
        }
    )


def _contexts(env: bk.Environment, seed: int, n: int = 15) -> np.ndarray:
    env.reset(seed)
    out = []
    for _ in range(n):
        ctx = env.context()
        assert ctx is not None
        out.append(ctx.arms)
        env.step(0)
    return np.stack(out)


# ---------------------------------------------------------------------------- classification
def test_csv_parquet_and_dataframe_give_the_same_env(tmp_path: Path) -> None:
    frame = _table()
    frame.to_csv(tmp_path / "t.csv", index=False)
    frame.to_parquet(tmp_path / "t.parquet", index=False)
    sources = [str(tmp_path / "t.csv"), tmp_path / "t.parquet", frame]
    envs = [
        bk.make_env("classification", data=s, label_column="species", pool=40)
        for s in sources
    ]
    first = _contexts(envs[0], seed=3)
    for env in envs[1:]:
        np.testing.assert_array_equal(_contexts(env, seed=3), first)
    assert first.shape[1:] == (
        3,
        3 * 3,
    )  # K = 3 classes, d = 3 features, block encoding
    assert not np.array_equal(_contexts(envs[0], seed=4), first)


def test_labels_are_sorted_classes_and_features_scaled_as_builtin_tables() -> None:
    frame = _table()
    env = bk.make_env(
        "classification", data=frame, label_column="species", features=["a", "b"]
    )
    assert env.data.meta["classes"] == {"cat": 0, "dog": 1, "eel": 2}
    expected = frame["species"].map({"cat": 0, "dog": 1, "eel": 2}).to_numpy()
    np.testing.assert_array_equal(env.data.labels, expected)
    np.testing.assert_allclose(
        env.data.features, bk.datasets.scale_features(frame[["a", "b"]], "minmax")
    )
    assert env.data.features.min() == -1.0 and env.data.features.max() == 1.0
    assert env.label == "classification-dataframe"
    onehot = bk.make_env(
        "classification", data=frame, label_column="species", encoding="onehot-id"
    )
    onehot.reset(0)
    assert onehot.context().arms.shape == (3, 3 + 3)


def test_oracle_on_a_user_table_has_zero_regret() -> None:
    env = bk.make_env("classification", data=_table(), label_column="species")
    run = bk.simulate(bk.make_policy("oracle"), env, horizon=50, seed=0)
    assert run.cumulative_regret[-1] == 0.0 and run.reward.sum() == 50


@pytest.mark.parametrize(
    ("change", "kwargs", "message"),
    [
        (None, {"label_column": "kind"}, "label column 'kind' is not in"),
        (
            None,
            {"label_column": "species", "features": ["a", "zz"]},
            "feature column 'zz'",
        ),
        (
            "text",
            {"label_column": "species"},
            r"feature column 'note' .* not numeric .*'oops'",
        ),
        (
            "nan",
            {"label_column": "species"},
            r"'a' .* 2 missing \(NaN\) values, the first in row 4",
        ),
        (
            "nan-label",
            {"label_column": "species"},
            r"label column 'species' .* 1 missing .* row 7",
        ),
        ("one-class", {"label_column": "species"}, "at least 2"),
        (
            None,
            {"label_column": "species", "dataset": "digits"},
            "either dataset= .* or data=",
        ),
        (None, {}, "needs label_column="),
        (None, {"label_column": "species", "split": "train"}, "split is an option"),
        (
            None,
            {"label_column": "species", "features": ["species"]},
            "must not include the label",
        ),
    ],
)
def test_table_errors_name_the_column(
    change: str | None, kwargs: dict[str, object], message: str
) -> None:
    frame = _table(10)
    if change == "text":
        frame["note"] = ["1.5"] * 5 + ["oops"] + ["2"] * 4  # a typo in a number column
    elif change == "nan":
        frame.loc[[4, 6], "a"] = np.nan
    elif change == "nan-label":
        frame.loc[7, "species"] = None
    elif change == "one-class":
        frame["species"] = "cat"
    with pytest.raises(ValueError, match=message):
        bk.make_env("classification", data=frame, **kwargs)


def test_bad_sources_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not found"):
        bk.make_env("classification", data=str(tmp_path / "no.csv"), label_column="y")
    with pytest.raises(ValueError, match=r"\.csv or \.parquet"):
        bk.make_env("classification", data=str(tmp_path / "t.xlsx"), label_column="y")
    with pytest.raises(ValueError, match="label_column and features go with data="):
        bk.make_env("classification", label_column="y")


def test_a_dueling_bandit_from_a_table() -> None:
    env = bk.make_env("dueling-classification", data=_table(), label_column="species")
    assert env.label == "dueling-classification-dataframe" and env.n_arms == 3
    np.testing.assert_allclose(np.linalg.norm(env.data.features, axis=1), 1.0)  # "l2"
    run = bk.simulate(bk.make_policy("random-duel"), env, horizon=20, seed=0)
    assert run.regret.shape == (20,)


def test_builtin_params_are_unchanged_by_the_table_options() -> None:
    """Run ids of existing configs hash these parameters: no new keys without data=."""
    for name in ("classification", "dueling-classification"):
        params = bk.make_env(name).get_params()
        assert params["dataset"] == "digits"
        assert not {"data", "label_column", "features"} & set(params)


def _config(data: object, horizon: int = 20) -> dict[str, object]:
    return {
        "name": "own",
        "horizon": horizon,
        "seeds": 2,
        "env": {
            "name": "classification",
            "data": data,
            "label_column": "species",
            "pool": 30,
        },
        "policies": [{"name": "random"}, {"name": "oracle"}],
    }


def test_yaml_config_on_a_csv_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A relative ``data:`` is read from the config's folder, whatever the working directory."""
    import yaml

    (tmp_path / "cfg").mkdir()
    _table().to_csv(tmp_path / "cfg" / "animals.csv", index=False)
    config = tmp_path / "cfg" / "exp.yaml"
    config.write_text(yaml.safe_dump(_config("animals.csv")))
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    result = run_experiment(config, tmp_path / "out", backend="serial", figures=False)
    assert result.ok and result.n_runs == 4
    resolved = yaml.safe_load((tmp_path / "out" / "config.yaml").read_text())
    env = resolved["envs"][0]
    assert env["data"] == str(tmp_path / "cfg" / "animals.csv")
    assert env["label"] == "classification-animals" and env["label_column"] == "species"
    assert result.summary  # the runs were summarised
    again = run_experiment(
        tmp_path / "out" / "config.yaml",
        tmp_path / "out",
        backend="serial",
        figures=False,
    )
    assert again.skipped == 4  # the resolved config names the same runs


def test_a_dataframe_in_a_config_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="DataFrame cannot be stored in a config"):
        run_experiment(_config(_table()), tmp_path / "out", backend="serial")


# ---------------------------------------------------------------------------- log replay
def _uniform_log(n: int = 6000, k: int = 3, seed: int = 0) -> pd.DataFrame:
    """A log of uniform-random play; reward 1 w.p. 0.2, or 0.7 when the action matches x0's
    sign class, so the uniform policy's value is 0.2 + 0.5 / K."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2))
    actions = rng.integers(k, size=n)
    good = np.where(x[:, 0] > 0, 0, 1)
    p = 0.2 + 0.5 * (actions == good)
    return pd.DataFrame(
        {
            "x0": x[:, 0],
            "x1": x[:, 1],
            "arm": actions,
            "click": (rng.random(n) < p).astype(float),
            "p": np.full(n, 1.0 / k),
        }
    )


def test_replay_of_uniform_play_matches_the_logged_mean() -> None:
    """Uniform play accepts ~1/3 of 6000 events: about 2000 accepted rewards whose mean
    estimates the log's mean (sd about sqrt(0.23 * 0.77 / 2000) = 0.0094): 4 sd = 0.04."""
    log = _uniform_log()
    env = bk.make_env(
        "log-replay", data=log, action="arm", reward="click", propensity="p"
    )
    run = bk.simulate(bk.make_policy("random", seed=1), env, horizon=10_000, seed=0)
    accepted = run.reward.shape[0]
    assert run.events_read[-1] == 6000  # the log ran out before 10,000 accepted events
    assert abs(accepted / 6000 - 1 / 3) < 0.03
    assert abs(run.reward.mean() - log["click"].mean()) < 0.04
    np.testing.assert_array_equal(run.regret, 0.0)


def test_simulate_on_a_log_records_events_read(tmp_path: Path) -> None:
    log = _uniform_log(800)
    log.to_csv(tmp_path / "log.csv", index=False)
    env = bk.make_env(
        "log-replay", data=tmp_path / "log.csv", action="arm", reward="click",
        propensity="p", features=["x0", "x1"], encoding="onehot-id",
    )  # fmt: skip
    assert env.label == "log-replay-log" and env.n_arms == 3
    run = bk.simulate(bk.make_policy("linucb"), env, horizon=50, seed=2)
    assert run.reward.shape[0] == 50
    assert np.all(np.diff(run.events_read) >= 1) and run.events_read[-1] > 50
    assert "events_read" in [r.name for r in env.declared_records()]


def test_replay_accepts_only_the_logged_action() -> None:
    env = bk.make_env(
        "log-replay",
        data=_uniform_log(30),
        action="arm",
        reward="click",
        propensity="p",
    )
    env.reset(0)
    ctx = env.context()
    assert ctx is not None and ctx.arms.shape == (3, 3 * 2)
    logged = env.logged_action()
    assert not env.step((logged + 1) % 3).accepted
    env.context()
    row = env.event
    step = env.step(env.logged_action())
    assert step.accepted and step.reward == _uniform_log(30)["click"][row]


def test_the_log_feeds_the_estimators() -> None:
    """IPS of the uniform policy on a uniform log is the log's mean reward exactly."""
    log = _uniform_log()
    env = bk.make_env("log-replay", data=log.drop(columns="p"), action="arm",
                      reward="click", propensity=None)  # fmt: skip
    bandit_log = env.bandit_log()
    np.testing.assert_array_equal(bandit_log.propensities, 1 / 3)  # none given: uniform
    assert bandit_log.features is not None and bandit_log.features.shape == (6000, 2)
    estimates = ope.evaluate(
        bandit_log, bandit_log.uniform_target(), methods=("ips", "dr")
    )
    assert estimates["ips"].value == pytest.approx(log["click"].mean())
    assert abs(estimates["dr"].value - log["click"].mean()) < 0.03


@pytest.mark.parametrize(
    ("change", "kwargs", "message"),
    [
        ("float-action", {}, r"action column 'arm' .* integers"),
        (None, {"reward": "clicks"}, "reward column 'clicks' is not in"),
        ("zero-p", {"propensity": "p"}, r"propensity column 'p' .* \(0, 1\]"),
        (None, {"n_arms": 2}, "n_arms"),
        ("text", {}, "feature column 'note'"),
        (
            None,
            {"propensity": "propensity"},
            "propensity column 'propensity' is not in",
        ),
        ("inf", {}, r"feature column 'x1' .* infinite value in row 5"),
    ],
)
def test_log_errors_name_the_column(
    change: str | None, kwargs: dict[str, object], message: str
) -> None:
    log = _uniform_log(20)
    if change == "float-action":
        log["arm"] = log["arm"] + 0.5
    elif change == "zero-p":
        log.loc[3, "p"] = 0.0
    elif change == "text":
        log["note"] = "n"
    elif change == "inf":
        log.loc[5, "x1"] = np.inf
    params = {"action": "arm", "reward": "click", "propensity": "p", **kwargs}
    with pytest.raises(ValueError, match=message):
        bk.make_env("log-replay", data=log, **params)


def test_non_uniform_propensities_warn() -> None:
    log = _uniform_log(20)
    log["p"] = np.linspace(0.1, 0.9, 20)
    with pytest.warns(UserWarning, match="not uniform") as caught:
        bk.make_env(
            "log-replay", data=log, action="arm", reward="click", propensity="p"
        )
    # the warning points at the user's line (this file), not into banditkit
    assert [w.filename for w in caught] == [__file__]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bk.make_env("log-replay", data=_uniform_log(20), action="arm", reward="click",
                    propensity="p")  # fmt: skip


# ---------------------------------------------------------------------------- the example
def test_the_own_data_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BANDITKIT_EXAMPLE_QUICK", "1")
    namespace = runpy.run_path(
        os.fspath(ROOT / "src" / "banditkit" / "examples" / "own_data.py"),
        run_name="__main__",
    )
    assert namespace["result"].ok
    assert 0.0 <= namespace["replayed"] <= 1.0


# ---------------------------------------------------------------------------- the docs page
def test_the_docs_page_examples_print_what_it_shows() -> None:
    import contextlib
    import io
    import re

    text = (ROOT / "docs" / "own-data.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    assert len(blocks) == 3
    namespace: dict[str, object] = {"__name__": "docs_example"}
    for block in blocks:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(block, namespace)
        shown = [ln[2:] for ln in block.splitlines() if ln.startswith("# ")]
        assert out.getvalue().splitlines() == shown
