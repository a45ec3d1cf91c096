"""Targets of off-policy evaluation: any banditkit policy, replayed on a log (ope/targets.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

import banditkit as bk
from banditkit import ope
from banditkit.cli import app
from banditkit.core import POLICIES
from banditkit.errors import UnknownNameError
from banditkit.ope import BanditLog, parse_policy, policy_target, target_probabilities


def _log(n=300, k=2, seed=0, features=False) -> BanditLog:
    """A uniform log where action 1 always pays 1 and action 0 pays 0."""
    rng = np.random.default_rng(seed)
    actions = rng.integers(k, size=n)
    return BanditLog(
        rewards=(actions == 1).astype(float),
        actions=actions,
        propensities=np.full(n, 1.0 / k),
        n_actions=k,
        features=rng.normal(size=(n, 3)) if features else None,
    )


class Cycler(bk.ContextualPolicy):
    """Plays (updates received) mod K: its picks show which rows it learned from."""

    def _act(self, ctx):
        return self.t % ctx.n_arms

    def _update(self, ctx, action, feedback):
        pass


def test_parse_policy():
    assert parse_policy("LinUCB:nu=0.5,lam=2") == ("linucb", {"nu": 0.5, "lam": 2})
    assert parse_policy("neural-ucb:gram=full,grouped=true") == (
        "neural-ucb",
        {"gram": "full", "grouped": True},
    )
    assert parse_policy("random") == ("random", {})
    with pytest.raises(ValueError, match="k=v"):
        parse_policy("linucb:nu")
    with pytest.raises(UnknownNameError, match="Did you mean 'linucb'"):
        parse_policy("linucbb:nu=1")


def test_a_policy_learns_only_from_the_rows_it_agrees_with():
    log = _log(n=40, k=3)
    target = policy_target(Cycler(), log)
    learned, expected = 0, np.zeros((40, 3))
    for i, logged in enumerate(log.actions):  # the replay by hand
        pick = learned % 3
        expected[i, pick] = 1.0
        learned += pick == logged
    np.testing.assert_array_equal(target, expected)


def test_ips_of_a_replayed_policy_matches_its_matched_rewards():
    log = _log(n=200, k=2)
    target = policy_target(Cycler(), log)
    picks = target.argmax(axis=1)
    by_hand = np.mean((picks == log.actions) * log.rewards * 2.0)  # 1 / p = K
    assert ope.ips(
        rewards=log.rewards,
        actions=log.actions,
        propensities=log.propensities,
        target=target,
    ).value == pytest.approx(by_hand)


@pytest.mark.parametrize("features", [False, True])
def test_a_learning_policy_is_estimated_above_uniform(features):
    log = _log(n=600, k=2, features=features)
    uniform = ope.evaluate(log, log.uniform_target(), methods=("ips",))["ips"]
    learner = target_probabilities("linucb:nu=0.1", log, encoding="onehot-id")
    learned = ope.evaluate(log, learner, methods=("ips",))["ips"]
    assert uniform.value == pytest.approx(log.rewards.mean())
    # it finds arm 1 (pays 1) within a few rounds: IPS near 1 against 0.5
    assert learned.value > 0.85 and learned.ci[0] > uniform.ci[1]


def test_policies_a_log_cannot_evaluate(tmp_path):
    log = _log(n=10)
    with pytest.raises(ValueError, match="plays from the environment itself"):
        target_probabilities("oracle", log)
    with pytest.raises(ValueError, match="contextual"):
        target_probabilities("random-duel", log)
    with pytest.raises(ValueError, match="shape"):
        np.save(tmp_path / "wrong.npy", np.zeros((3, 2)))
        target_probabilities(tmp_path / "wrong.npy", log)


def _write_log(tmp_path, features=False):
    log = _log(n=300, k=3, features=features)
    frame = pd.DataFrame(
        {"reward": log.rewards, "action": log.actions, "propensity": log.propensities}
    )
    if features:
        frame["x1"] = log.features[:, 0]
    path = tmp_path / "mylog.csv"
    frame.to_csv(path, index=False)
    return path


def test_evaluate_works_with_its_defaults_on_a_log_without_features(tmp_path):
    result = CliRunner().invoke(app, ["evaluate", str(_write_log(tmp_path))])
    assert result.exit_code == 0, result.output
    methods = [line.split()[0] for line in result.output.splitlines()]
    assert "ips" in methods and "snips" in methods and "dr" not in methods
    assert "dr is left out" in result.output and "--feature" in result.output
    explicit = CliRunner().invoke(
        app, ["evaluate", str(_write_log(tmp_path)), "--method", "dr"]
    )
    assert explicit.exit_code == 2 and "--feature COLUMN" in explicit.output


def test_evaluate_any_policy_or_config_as_the_target(tmp_path):
    log = _write_log(tmp_path, features=True)
    config = tmp_path / "mine.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "name": "mine",
                "horizon": 10,
                "seeds": 1,
                "env": {"name": "linear"},
                "policies": [
                    {"name": "linucb", "label": "LinUCB", "nu": 0.1},
                    {"name": "eps-greedy", "label": "eps", "epsilon": 0.1},
                ],
            }
        )
    )
    result = CliRunner().invoke(
        app,
        ["evaluate", str(log), "--feature", "x1", "--target", "uniform",
         "--target", "ucb1", "--target", str(config)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    headers = [x for x in result.output.splitlines() if x.startswith("target ")]
    assert headers == ["target uniform", "target ucb1", "target LinUCB", "target eps"]
    assert result.output.count("\ndr ") == 4  # features given: dr too
    bad = CliRunner().invoke(app, ["evaluate", str(log), "--target", "linucbb"])
    assert bad.exit_code == 2 and "Did you mean 'linucb'" in bad.output


def test_every_contextual_learner_can_be_a_target():
    """Each registered contextual policy that learns replays on a small log."""
    log = _log(n=30, k=3, features=True)
    for name in bk.list_policies("contextual"):
        cls = POLICIES.get(name)
        if cls.attach is not bk.Policy.attach or name.endswith("-per-arm"):
            continue
        params = dict(cls.contract_params)
        target = target_probabilities({"name": name, **params}, log)
        np.testing.assert_array_equal(target.sum(axis=1), np.ones(30))
