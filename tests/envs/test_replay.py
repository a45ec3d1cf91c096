from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import banditkit as bk
from banditkit.core import Context
from banditkit.core.types import Action, Feedback
from banditkit.envs.replay import OBDReplayEnv
from tests.datasets._data import require_reference_data, use_reference_data


@pytest.fixture(autouse=True, scope="module")
def _reference_data() -> Iterator[Path]:
    with pytest.MonkeyPatch.context() as mp:
        path = use_reference_data(mp)
        require_reference_data("obd")
        yield path


@pytest.fixture(scope="module")
def env() -> OBDReplayEnv:
    return OBDReplayEnv()


class Spy(bk.ContextualPolicy):
    """Uniform play that records every act and every update, with the replayed event."""

    def __init__(self, *, seed: int = 0) -> None:
        super().__init__(seed=seed)
        self.acts = 0
        self.updates: list[
            tuple[int, int, float]
        ] = []  # (event, item played, feedback)

    def attach(self, env: bk.Environment) -> None:
        self.env = env

    def _act(self, ctx: Context) -> Action:
        self.acts += 1
        return int(self.rng.integers(ctx.n_arms))

    def _update(self, ctx: Context, action: Action, feedback: Feedback) -> None:
        env = self.env
        assert isinstance(env, OBDReplayEnv)
        self.updates.append(
            (env._event, int(env._candidates[int(action)]), float(feedback))
        )  # type: ignore[arg-type]


def test_arms_have_the_papers_features(env: OBDReplayEnv) -> None:
    env.reset(0)
    arms = env.context().arms
    assert arms.shape == (5, 42) and env.d == 42
    user, item, pos, aff, inter = (
        arms[:, :16],
        arms[:, 16:24],
        arms[:, 24],
        arms[:, 25],
        arms[:, 26:],
    )
    assert (user == user[0]).all() and (pos == pos[0]).all()
    assert pos[0] in (-1.0, 0.0, 1.0)  # positions 1, 2, 3 scaled to [-1, 1]
    assert aff.min() >= -1.0 and aff.max() <= 1.0
    np.testing.assert_allclose(inter, user * aff[:, None])
    np.testing.assert_array_equal(item, env._features.item[env.candidates])


def test_logged_item_is_always_among_the_top_affinity_candidates(
    env: OBDReplayEnv,
) -> None:
    log = env.log
    env.reset(1)
    n = 0
    while (ctx := env.context()) is not None:
        cands = env.candidates
        event = env._event
        logged = log.item_id[event]
        assert ctx.n_arms == 5 and len(set(cands.tolist())) == 5
        assert logged in cands and cands[env.logged_action()] == logged
        others = cands[cands != logged]
        rest = np.setdiff1d(np.arange(log.n_items), cands)
        assert log.affinity[event, others].min() >= log.affinity[event, rest].max()
        env.step(0)
        n += 1
    assert n == log.n_events == 10000


def test_logged_item_position_is_not_fixed(env: OBDReplayEnv) -> None:
    env.reset(2)
    slots = []
    for _ in range(2000):
        env.context()
        slots.append(env.logged_action())
        env.step(0)
    counts = np.bincount(slots, minlength=5)
    assert counts.min() > 300  # about 400 each under a uniform shuffle


def test_random_acceptance_rate_is_about_one_fifth_and_rewards_are_logged_clicks(
    env: OBDReplayEnv,
) -> None:
    """Reads the whole 10,000-event log: accepted ~ Binomial(10000, 1/5), sd 0.004;
    tolerance 0.02."""
    spy = Spy(seed=0)
    run = bk.simulate(spy, env, horizon=10000, seed=0)
    assert env.events_read == 10000  # the log is exhausted before T
    assert abs(run.horizon / env.events_read - 0.2) < 0.02
    assert abs(run.acceptance_rate - 0.2) < 0.02
    # No update on rejected events: one update per accepted event, all on the logged item.
    assert len(spy.updates) == run.horizon < spy.acts == 10000
    log = env.log
    for (event, item, feedback), reward in zip(spy.updates, run.reward, strict=True):
        assert item == log.item_id[event]
        assert feedback == reward == log.click[event]
    assert run.reward.sum() == sum(log.click[e] for e, _, _ in spy.updates)
    assert run.cumulative_regret[-1] == 0.0
    # no regret figure: the declared regret is not plotted, the clicks and CTR are
    declared = {r.name: r for r in env.declared_records()}
    assert declared["regret"].plot == ()
    assert declared["reward"].plot == ("reward", "average_reward")


def test_run_stops_after_t_accepted_events(env: OBDReplayEnv) -> None:
    run = bk.simulate(bk.make_policy("random", seed=4), env, horizon=150, seed=3)
    assert run.horizon == 150
    assert run.events_read[-1] > 150
    assert np.all(np.diff(run.events_read) >= 1)


def test_rejected_steps_are_flagged(env: OBDReplayEnv) -> None:
    env.reset(0)
    env.context()
    logged = env.logged_action()
    assert env.step(logged).accepted
    env.context()
    wrong = (env.logged_action() + 1) % 5
    step = env.step(wrong)
    assert not step.accepted and step.reward == 0.0


def test_same_seed_same_replay_and_time_order() -> None:
    def first(env: OBDReplayEnv, seed: int) -> list[tuple[int, tuple[int, ...]]]:
        env.reset(seed)
        out = []
        for _ in range(20):
            env.context()
            out.append((env._event, tuple(env.candidates.tolist())))
            env.step(0)
        return out

    shuffled = OBDReplayEnv()
    assert first(shuffled, 5) == first(shuffled, 5) != first(shuffled, 6)
    ordered = OBDReplayEnv(shuffle=False)
    assert [e for e, _ in first(ordered, 5)] == list(range(20))


def test_options() -> None:
    env = bk.make_env("obd-replay", n_arms=3, user_dim=8, item_dim=4, campaign="men")
    env.reset(0)
    assert env.context().arms.shape == (3, 2 * 8 + 4 + 2)
    assert env.label == "obd-replay-random-men"
    assert env.meta()["variant"] == "sample"
    with pytest.raises(ValueError, match="n_arms must be an int"):
        OBDReplayEnv(n_arms=1)
    with pytest.raises(ValueError, match="campaign must be one of"):
        OBDReplayEnv(campaign="kids")


def test_runs_under_banditkit_run(tmp_path: Path) -> None:
    import json

    from typer.testing import CliRunner

    from banditkit.cli import app

    config = tmp_path / "obd.yaml"
    config.write_text(
        "name: obd-smoke\nhorizon: 40\nseeds: 1\n"
        "env: {name: obd-replay, campaign: all}\npolicies:\n  - {name: random}\n"
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
    assert [r["env"] for r in summary["results"]] == ["obd-replay-random-all"]


def test_replays_a_complete_dataset_provided_by_the_user(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.datasets.test_formats import _obd_files

    _obd_files(tmp_path / "obd" / "open_bandit_dataset" / "random" / "all", n=60)
    monkeypatch.setenv("BANDITKIT_DATA", str(tmp_path))
    env = OBDReplayEnv(user_dim=4, item_dim=3)
    assert env.meta()["variant"] == "full" and env.meta()["verified"] is False
    run = bk.simulate(bk.make_policy("random", seed=0), env, horizon=1000, seed=0)
    assert env.events_read == 60 and 0 < run.horizon < 60
    assert env.context() is None  # the log is exhausted
