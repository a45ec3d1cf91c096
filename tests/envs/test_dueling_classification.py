from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import banditkit as bk
from banditkit.core import Context
from banditkit.core.types import Action, Feedback
from banditkit.envs.dueling_classification import DuelingClassificationEnv
from tests.datasets._data import require_reference_data, use_reference_data


@pytest.fixture(autouse=True, scope="module")
def _reference_data() -> Iterator[Path]:
    with pytest.MonkeyPatch.context() as mp:
        yield use_reference_data(mp)


class RandomPairs(bk.DuelingPolicy):
    """Uniform ordered pairs (possibly identical arms); records what it learned from."""

    def __init__(self, *, seed: int = 0) -> None:
        super().__init__(seed=seed)
        self.outcomes: list[int] = []

    def _act(self, ctx: Context) -> Action:
        return (int(self.rng.integers(ctx.n_arms)), int(self.rng.integers(ctx.n_arms)))

    def _update(self, ctx: Context, action: Action, feedback: Feedback) -> None:
        self.outcomes.append(int(feedback))


class DuelOracle(RandomPairs):
    """Plays the environment's best pair."""

    def attach(self, env: bk.Environment) -> None:
        self.env = env

    def _act(self, ctx: Context) -> Action:
        return self.env.best_action()


def test_registered_in_the_dueling_family() -> None:
    env = bk.make_env("dueling-classification", dataset="digits", pool=50)
    assert env.family == "dueling"
    assert "dueling-classification" in bk.list_envs("dueling")
    env.reset(0)
    assert env.context().arms.shape == (10, 640)
    assert env.label == "dueling-classification-digits"
    np.testing.assert_allclose(np.linalg.norm(env.data.features, axis=1), 1.0)  # "l2"


def test_btl_preferences_and_average_regret() -> None:
    env = DuelingClassificationEnv(dataset="digits", pool=20)
    env.reset(0)
    env.context()
    y = env.best_action()[0]
    wrong = (y + 1) % 10
    other = (y + 2) % 10
    s1 = 1 / (1 + np.exp(-1.0))
    assert env.preference_model == "btl"
    assert env.preference_probability(y, wrong) == pytest.approx(s1)  # 0.731, "P = 0.7"
    assert env.preference_probability(wrong, y) == pytest.approx(1 - s1)
    assert env.preference_probability(wrong, other) == 0.5
    assert env.preference_probability(y, y) == 0.5
    assert env.regrets((y, y)) == {"average": 0.0, "weak": 0.0, "strong": 0.0}
    assert env.regrets((y, wrong)) == {"average": 0.5, "weak": 0.0, "strong": 1.0}
    assert env.regrets((wrong, other)) == {"average": 1.0, "weak": 1.0, "strong": 1.0}
    step = env.step((wrong, y))
    assert step.regret == 0.5 and step.reward == 0.5 and step.feedback in (0, 1)


def test_deterministic_preferences_for_shuttle() -> None:
    require_reference_data("shuttle")
    env = bk.make_env("dueling-classification", dataset="shuttle", pool=500)
    assert env.preference_model == "deterministic"
    env.reset(0)
    for _ in range(50):
        env.context()
        y = env.best_action()[0]
        wrong = (y + 1) % 7
        assert env.step((y, wrong)).feedback == 1
        env.context()
        y = env.best_action()[0]
        assert env.step(((y + 3) % 7, y)).feedback == 0


def test_outcome_frequencies_follow_the_preference() -> None:
    """P(correct beats wrong) = sigmoid(1) = 0.731 under BTL; ties are fair coins.
    4000 duels each: sd 0.007 and 0.008; tolerance 0.03."""
    env = DuelingClassificationEnv(dataset="digits")
    env.reset(5)
    wins_correct, wins_tie = [], []
    for t in range(8000):
        env.context()
        y = env.best_action()[0]
        pair = (y, (y + 1) % 10) if t % 2 == 0 else ((y + 1) % 10, (y + 2) % 10)
        (wins_correct if t % 2 == 0 else wins_tie).append(env.step(pair).feedback)
    assert abs(np.mean(wins_correct) - 1 / (1 + np.exp(-1))) < 0.03
    assert abs(np.mean(wins_tie) - 0.5) < 0.03


def test_oracle_pair_has_zero_regret_and_random_pairs_the_expected_regret() -> None:
    """Uniform pairs over K = 10 classes: E[(2 - u_i - u_j) / 2] = 1 - 1/K = 0.9;
    per-round sd <= 0.3, so sd of the mean over 3000 rounds < 0.006; tolerance 0.025."""
    env = bk.make_env("dueling-classification", dataset="digits")
    oracle = bk.simulate(DuelOracle(), env, horizon=300, seed=0)
    assert oracle.cumulative_regret[-1] == 0.0
    policy = RandomPairs(seed=1)
    run = bk.simulate(policy, env, horizon=3000, seed=0)
    assert abs(run.regret.mean() - 0.9) < 0.025
    assert set(np.unique(run.regret).tolist()) <= {0.0, 0.5, 1.0}
    assert len(policy.outcomes) == 3000


def test_common_random_numbers_across_policies() -> None:
    """Same seed: same rows and the same per-round coin, whatever the pairs played."""
    env = DuelingClassificationEnv(dataset="digits", pool=100)
    runs = []
    for pairs in (itertools.repeat((0, 1)), itertools.repeat((2, 2))):
        env.reset(9)
        labels, coins = [], []
        for pair, _ in zip(pairs, range(200), strict=False):
            env.context()
            labels.append(env.best_action()[0])
            coins.append(env._xi)
            env.step(pair)
        runs.append((labels, coins))
    assert runs[0] == runs[1]


def test_invalid_preference() -> None:
    with pytest.raises(ValueError, match="preference must be one of"):
        DuelingClassificationEnv(preference="plackett")


def test_runs_under_banditkit_run(tmp_path: Path) -> None:
    import json

    from typer.testing import CliRunner

    from banditkit.cli import app

    if "random-duel" not in bk.list_policies("dueling"):
        pytest.skip("no dueling policy is registered yet (random-duel)")
    require_reference_data("magic")
    config = tmp_path / "duel.yaml"
    config.write_text(
        "name: duel-smoke\nhorizon: 50\nseeds: 1\n"
        "env: {name: dueling-classification, dataset: magic, pool: 200}\n"
        "policies:\n  - {name: random-duel}\n"
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
    assert summary["results"][0]["env"] == "dueling-classification-magic"
