"""Logs of pairs and sets: their checks, files, policy targets and the command (docs/ope.md)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import banditkit as bk
from banditkit import ope
from banditkit.cli import app
from banditkit.ope import BanditLog, target_probabilities


def _pairs(n=300, k=3, seed=0, best=0):
    """A uniform log of ordered pairs; arm ``best`` has utility 1, the others 0."""
    rng = np.random.default_rng(seed)
    actions = rng.integers(k, size=(n, 2))
    u = np.eye(k)[best]
    first, second = u[actions[:, 0]], u[actions[:, 1]]
    won = (rng.random(n) < 1 / (1 + np.exp(-4 * (first - second)))).astype(int)
    return BanditLog(
        rewards=(first + second) / 2,
        actions=actions,
        propensities=np.full(n, 1 / k**2),
        n_actions=k,
        kind="pair",
        feedback=won,
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"actions": np.array([[0, 1], [3, 0]])},
            r"pairs \(i, j\) of arms in \[0, 3\); row 1",
        ),
        (
            {"propensities": np.array([0.5, 0.0])},
            r"propensities must be .* in \(0, 1\]",
        ),
        ({"feedback": np.array([1, 2])}, r"feedback must be 1 .* or 0; row 1"),
        ({"actions": np.array([0, 1])}, r"\(n, 2\) ordered pairs"),
    ],
)
def test_bad_pair_logs_are_named(change, message):
    log = {
        "rewards": np.array([0.5, 0.2]),
        "actions": np.array([[0, 1], [2, 2]]),
        "propensities": np.array([0.25, 0.5]),
        "n_actions": 3,
        "kind": "pair",
        "feedback": np.array([1, 0]),
    }
    with pytest.raises(ValueError, match=message):
        BanditLog(**{**log, **change})


@pytest.mark.parametrize(
    ("actions", "message"),
    [
        (
            [[0, 1, 2], [1, -1, -1]],
            r"row 0 offers 3 items \[0, 1, 2\]; the capacity is 2",
        ),
        ([[1, 0, -1], [1, -1, -1]], "sorted and padded with -1; row 0"),
        ([[0, 4, -1], [1, -1, -1]], r"distinct items in \[0, 4\)"),
        ([[-1, -1, -1], [1, -1, -1]], "non-empty"),
    ],
)
def test_bad_set_logs_are_named(actions, message):
    with pytest.raises(ValueError, match=message):
        BanditLog(
            rewards=np.zeros(2),
            actions=np.array(actions),
            propensities=np.full(2, 0.1),
            n_actions=4,
            kind="set",
            capacity=2,
        )


def test_a_chosen_item_must_be_offered():
    with pytest.raises(ValueError, match="an offered item or -1"):
        BanditLog(
            rewards=np.zeros(2),
            actions=np.array([[0, 1], [2, -1]]),
            propensities=np.full(2, 0.1),
            n_actions=4,
            kind="set",
            feedback=np.array([-1, 3]),
        )


def test_model_estimators_are_refused_on_pairs_naming_those_that_work():
    log = _pairs(n=20)
    with pytest.raises(ValueError, match="evaluated by ips and snips"):
        ope.evaluate(log, log.uniform_target(), methods=("ips", "dr"))
    with pytest.raises(ValueError, match="a log of pairs evaluates dueling policies"):
        target_probabilities("linucb", log)


def test_the_estimators_take_either_form_of_the_target():
    with pytest.raises(ValueError, match="exactly one of target"):
        ope.ips(rewards=[1.0, 0.0], propensities=[0.5, 0.5])
    with pytest.raises(ValueError, match=r"target_propensities must be probabilities"):
        ope.snips(
            rewards=[1.0, 0.0], propensities=[0.5, 0.5], target_propensities=[2.0, 0.0]
        )
    # on one-arm logs both forms agree
    rng = np.random.default_rng(3)
    actions, target = rng.integers(3, size=50), rng.dirichlet(np.ones(3), size=50)
    common = {"rewards": rng.random(50), "propensities": np.full(50, 1 / 3)}
    for estimator in (ope.ips, ope.snips):
        full = estimator(**common, actions=actions, target=target)
        logged = estimator(**common, target_propensities=target[np.arange(50), actions])
        assert full == logged


def test_uniform_and_random_duel_targets_on_a_pair_log_are_exact():
    log = _pairs(n=900, k=3)
    uniform = ope.evaluate(log, log.uniform_target(), methods=("ips",))["ips"]
    # a uniform log: every weight is 1, IPS is the mean reward; the exact value is 1/3
    assert uniform.value == pytest.approx(log.rewards.mean())
    assert uniform.contains(1 / 3)
    # random-duel plays the K (K - 1) pairs of distinct arms, exactly
    law = target_probabilities("random-duel", log)
    distinct = log.actions[:, 0] != log.actions[:, 1]
    np.testing.assert_allclose(law, np.where(distinct, 1 / 6, 0.0))
    estimate = ope.evaluate(log, law, methods=("ips",))["ips"]
    assert estimate.contains(1 / 3)  # its exact value: one arm in three pays


def test_a_learning_dueling_target_learns_from_the_rows_it_agrees_with():
    log = _pairs(n=1500, k=3)
    uniform = ope.evaluate(log, log.uniform_target(), methods=("ips",))["ips"]
    policy = bk.make_policy("colstim", seed=0)
    law = ope.policy_target(policy, log)
    # its Monte Carlo propensities of the logged pairs; it learns from the agreeing rows
    assert np.all((law >= 0) & (law <= 1)) and 0 < policy.t < log.n / 2
    learned = ope.evaluate(log, law, methods=("ips", "snips"))
    # it finds arm 0 (utility 1): (0, 0) pays 1, against 1/3 for a uniform pair
    assert learned["snips"].value > 0.7 and learned["ips"].ci[0] > uniform.ci[1]


def test_a_log_of_pairs_without_feedback_cannot_train_a_target():
    log = _pairs(n=10)
    bare = BanditLog(
        rewards=log.rewards,
        actions=log.actions,
        propensities=log.propensities,
        n_actions=3,
        kind="pair",
    )
    with pytest.raises(ValueError, match="learns from the log's feedback"):
        target_probabilities("colstim", bare)
    assert target_probabilities("uniform", bare).shape == (10,)


def test_read_log_of_sets_and_pairs(tmp_path):
    path = tmp_path / "offers.csv"
    pd.DataFrame(
        {
            "reward": [1.0, 0.0, 1.0],
            "action": ["[0, 2]", "1", "0;3"],
            "propensity": [0.1, 0.2, 0.1],
            "chosen": [2, -1, 0],
        }
    ).to_csv(path, index=False)
    log = ope.read_log(path, action_kind="set", capacity=2, feedback="chosen")
    assert (log.kind, log.n_actions, log.capacity, log.n_choices) == ("set", 4, 2, 10)
    assert [log.action(i) for i in range(3)] == [(0, 2), (1,), (0, 3)]
    with pytest.raises(ValueError, match="row 0 offers 2 items"):
        ope.read_log(path, action_kind="set", capacity=1)
    pairs = tmp_path / "duels.parquet"
    pd.DataFrame(
        {"reward": [0.5, 1.0], "action": [[0, 1], [1, 1]], "propensity": [0.25, 0.25]}
    ).to_parquet(pairs)
    log = ope.read_log(pairs, action_kind="pair")
    assert log.actions.tolist() == [[0, 1], [1, 1]] and log.n_choices == 4
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"reward": [1.0], "action": ["a b"], "propensity": [0.5]}).to_csv(
        bad, index=False
    )
    with pytest.raises(ValueError, match="must hold a pair of integer items"):
        ope.read_log(bad, action_kind="pair")


FLOORED = {"horizon": 200, "seeds": 2}
RUNS = {
    "duels": ({"name": "dueling", "d": 3, "n_arms": 4}, "colstim"),
    "offers": (
        {"name": "mnl", "utility": "linear", "d": 3, "n_items": 5, "capacity": 2},
        "ts-mnl",
    ),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Stored runs of a dueling and an MNL policy, each with an explore floor of 0.2."""
    out = {}
    for key, (env, policy) in RUNS.items():
        out[key] = tmp_path_factory.mktemp(key)
        cfg = {
            "name": key,
            **FLOORED,
            "env": env,
            "policies": [{"name": policy, "explore_floor": 0.2}],
        }
        bk.run_experiment(
            cfg, out[key], backend="serial", progress="none", figures=False
        )
    return out


def test_stored_duels_and_offers_are_logs(runs):
    duels = ope.log_from_runs(runs["duels"])
    assert (duels.kind, duels.n, duels.n_actions, duels.n_choices) == (
        "pair",
        400,
        4,
        16,
    )
    assert set(np.unique(duels.feedback)) <= {0, 1}
    offers = ope.log_from_runs(runs["offers"], seeds=[1])
    assert (offers.kind, offers.n, offers.capacity, offers.n_choices) == (
        "set",
        200,
        2,
        15,
    )
    offered = [offers.action(i) for i in range(offers.n)]
    assert all(c == -1 or c in s for c, s in zip(offers.feedback, offered, strict=True))
    for log in (duels, offers):
        assert np.all(log.propensities >= 0.2 / log.n_choices - 1e-12)
        estimate = ope.evaluate(log, log.uniform_target(), methods=("ips",))["ips"]
        assert np.isfinite(estimate.value) and estimate.n == log.n


@pytest.mark.parametrize(
    ("which", "target"), [("duels", "colstim"), ("offers", "ucb-mnl")]
)
def test_evaluate_a_run_directory_with_a_policy_target(runs, which, target):
    result = CliRunner().invoke(
        app, ["evaluate", str(runs[which]), "--target", target, "--target", "uniform"]
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    kind = "pairs" if which == "duels" else "sets"
    assert f"actions: {kind}" in lines[0] and f"target {target}" in lines
    rows = [line.split() for line in lines if line.startswith(("ips", "snips"))]
    assert len(rows) == 4 and all(np.isfinite(float(r[1])) for r in rows)
    assert "dm and dr are left out" in result.output


def test_evaluate_refuses_dr_on_duels_in_one_line(runs):
    result = CliRunner().invoke(app, ["evaluate", str(runs["duels"]), "--method", "dr"])
    assert result.exit_code == 2
    assert "ips and snips" in result.output and "Traceback" not in result.output
