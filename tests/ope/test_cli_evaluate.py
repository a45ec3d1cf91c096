"""`banditkit evaluate`: the CLI face of banditkit.ope."""

from __future__ import annotations

import numpy as np
import pandas as pd
from typer.testing import CliRunner

from banditkit.cli import app


def test_evaluate_a_users_log(tmp_path):
    rng = np.random.default_rng(0)
    n, k = 400, 3
    actions = rng.integers(k, size=n)
    rewards = (rng.random(n) < 0.2 + 0.2 * actions).astype(float)
    path = tmp_path / "log.csv"
    pd.DataFrame(
        {"reward": rewards, "action": actions, "propensity": np.full(n, 1 / k)}
    ).to_csv(path, index=False)
    result = CliRunner().invoke(app, ["evaluate", str(path), "--method", "ips"])
    assert result.exit_code == 0, result.output
    line = next(x for x in result.output.splitlines() if x.startswith("ips"))
    # uniform target on a uniform log: IPS is the log's mean reward
    assert float(line.split()[1]) == round(float(rewards.mean()), 6)


def test_evaluate_missing_log_is_a_user_error(tmp_path):
    result = CliRunner().invoke(app, ["evaluate", str(tmp_path / "none.csv")])
    assert result.exit_code == 2
    assert "none.csv" in result.output and "Traceback" not in result.output
