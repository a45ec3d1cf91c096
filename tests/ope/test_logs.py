"""User logs and evaluate() of banditkit.ope."""

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LinearRegression

from banditkit import ope


def _frame(n=200, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(2, size=n)
    return pd.DataFrame(
        {
            "reward": (rng.random(n) < 0.3 + 0.4 * a).astype(float),
            "action": a,
            "propensity": np.full(n, 0.5),
            "age": rng.normal(size=n),
        }
    )


def test_read_log_from_csv_and_parquet(tmp_path):
    frame = _frame()
    frame.to_csv(tmp_path / "log.csv", index=False)
    frame.to_parquet(tmp_path / "log.parquet")
    for name in ("log.csv", "log.parquet"):
        log = ope.read_log(tmp_path / name, feature_columns=["age"])
        assert log.n == 200 and log.n_actions == 2
        np.testing.assert_array_equal(log.actions, frame["action"])
        assert log.features is not None and log.features.shape == (200, 1)
    with pytest.raises(ValueError, match="missing columns"):
        ope.read_log(tmp_path / "log.csv", reward="click")


def test_evaluate_runs_each_method_and_reuses_one_reward_model():
    frame = _frame(n=2000)
    log = ope.BanditLog(
        rewards=frame["reward"].to_numpy(),
        actions=frame["action"].to_numpy(),
        propensities=frame["propensity"].to_numpy(),
        n_actions=2,
        features=frame[["age"]].to_numpy(),
    )
    always_one = np.tile([0.0, 1.0], (log.n, 1))
    out = ope.evaluate(log, always_one, methods=("ips", "snips", "dm", "dr"))
    assert list(out) == ["ips", "snips", "dm", "dr"]
    for e in out.values():
        assert e.contains(0.7) or abs(e.value - 0.7) < 0.05, e
    direct = ope.dr(
        rewards=log.rewards,
        actions=log.actions,
        propensities=log.propensities,
        target=always_one,
        regressor=LinearRegression(),
        features=log.features,
    )
    assert ope.evaluate(log, always_one, methods=("dr",), regressor=LinearRegression())[
        "dr"
    ].value == pytest.approx(direct.value)
    with pytest.raises(ValueError, match="methods"):
        ope.evaluate(log, always_one, methods=("ipw",))


def test_banditkit_exports_ope_without_importing_scikit_learn():
    import subprocess
    import sys

    code = (
        "import sys, banditkit\n"
        "assert banditkit.ope.ips is not None\n"
        "assert 'sklearn' not in sys.modules, 'import banditkit pulled in scikit-learn'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_evaluate_command_on_a_user_log(tmp_path):
    frame = _frame(n=1000)
    frame.to_csv(tmp_path / "log.csv", index=False)
    np.save(tmp_path / "always_one.npy", np.tile([0.0, 1.0], (1000, 1)))
    text = ope.evaluate_command(
        log=tmp_path / "log.csv",
        target=tmp_path / "always_one.npy",
        features=["age"],
        methods=("ips", "dr"),
    )
    lines = text.splitlines()
    assert lines[0].endswith("n = 1000, K = 2")
    assert lines[1] == "target " + str(tmp_path / "always_one.npy")
    assert [line.split()[0] for line in lines[3:]] == ["ips", "dr"]
    value = float(lines[3].split()[1])
    assert 0.6 < value < 0.8
    with pytest.raises(ValueError, match=r"target .* 'greedy' is none.*eps-greedy"):
        ope.evaluate_command(
            log=tmp_path / "log.csv", target="greedy", methods=("ips",)
        )
    with pytest.raises(ValueError, match="--feature COLUMN"):
        ope.evaluate_command(log=tmp_path / "log.csv", methods=("dr",))
