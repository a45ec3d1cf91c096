import numpy as np
import pytest

import banditkit as bk
from banditkit.core.simulate import simulate_seeds


def test_oracle_has_zero_regret_on_every_env():
    for env in [
        bk.make_env("linear", d=4),
        bk.make_env("logistic", h="h2", d=6, n_arms=4),
        bk.make_env("classification", pool=200),
    ]:
        run = bk.simulate(bk.make_policy("oracle"), env, horizon=200, seed=3)
        assert run.cumulative_regret[-1] == 0.0


def test_same_seed_bit_identical():
    def go():
        env = bk.make_env("logistic", h="h1", d=8, n_arms=5, pool=50)
        return bk.simulate(bk.make_policy("lints", nu=0.5, seed=4), env, 300, seed=2)

    a, b = go(), go()
    np.testing.assert_array_equal(a.regret, b.regret)
    np.testing.assert_array_equal(a.reward, b.reward)


class Recorder(bk.ContextualPolicy):
    """Records the contexts it sees; plays a fixed arm or a random one."""

    def __init__(self, *, fixed: int = -1, seed: int = 0) -> None:
        super().__init__(seed=seed)
        self.fixed = fixed
        self.seen: list[np.ndarray] = []

    def _act(self, ctx):
        self.seen.append(ctx.arms.copy())
        return self.fixed if self.fixed >= 0 else int(self.rng.integers(ctx.n_arms))

    def _update(self, ctx, action, feedback):
        pass


def test_common_random_numbers_across_policies():
    """Two different policies under one seed see identical contexts."""
    env = bk.make_env("logistic", h="h3", d=5, n_arms=4)
    p0, p1 = Recorder(fixed=0), Recorder(seed=9)
    bk.simulate(p0, env, 100, seed=11)
    bk.simulate(p1, env, 100, seed=11)
    np.testing.assert_array_equal(np.stack(p0.seen), np.stack(p1.seen))
    p2 = Recorder(fixed=0)
    bk.simulate(p2, env, 100, seed=12)
    assert not np.array_equal(np.stack(p0.seen), np.stack(p2.seen))


def test_crn_rewards_match_when_actions_match():
    env = bk.make_env("linear", d=3, n_arms=3, noise_std=1.0)
    a = bk.simulate(Recorder(fixed=1), env, 50, seed=5)
    b = bk.simulate(Recorder(fixed=1, seed=99), env, 50, seed=5)
    np.testing.assert_array_equal(a.reward, b.reward)
    c = bk.simulate(Recorder(fixed=1), env, 50, seed=6)
    assert not np.array_equal(a.reward, c.reward)


def test_run_result_fields():
    run = bk.simulate(bk.make_policy("linucb"), bk.make_env("linear", d=3), 20, seed=0)
    assert run.regret.shape == run.act_seconds.shape == run.n_updates.shape == (20,)
    assert run.n_updates[-1] == 20 and np.all(np.diff(run.n_updates) >= 0)
    assert run.acceptance_rate == 1.0 and run.events_read[-1] == 20
    np.testing.assert_allclose(run.cumulative_regret, np.cumsum(run.regret))
    assert np.all(run.act_seconds >= 0) and run.seconds > 0


def test_simulate_rejects_bad_input():
    with pytest.raises(ValueError, match="horizon"):
        bk.simulate(bk.make_policy("random"), bk.make_env("linear"), 0)


class BadPolicy(bk.ContextualPolicy):
    def _act(self, ctx):
        return ctx.n_arms  # out of range

    def _update(self, ctx, action, feedback):
        pass


def test_out_of_range_action_is_caught():
    with pytest.raises(ValueError, match="out of range"):
        bk.simulate(BadPolicy(), bk.make_env("linear", d=2, n_arms=3), 5)


def test_env_protocol_errors():
    env = bk.make_env("linear", d=2)
    with pytest.raises(RuntimeError, match="reset"):
        env.context()
    env.reset(0)
    with pytest.raises(RuntimeError, match="context"):
        env.step(0)


def test_seeds_in_lockstep_equal_their_separate_runs():
    """simulate_seeds without a stacked play: each member on its own, the same runs."""
    seeds = [0, 4, 9]
    runs = simulate_seeds(
        [bk.make_policy("lints", seed=s) for s in seeds],
        [bk.make_env("linear", d=3) for _ in seeds],
        30,
        seeds,
    )
    for seed, run in zip(seeds, runs, strict=True):
        alone = bk.simulate(
            bk.make_policy("lints", seed=seed),
            bk.make_env("linear", d=3),
            30,
            seed=seed,
        )
        np.testing.assert_array_equal(run.actions, alone.actions)
        np.testing.assert_array_equal(run.regret, alone.regret)
        np.testing.assert_array_equal(run.n_updates, alone.n_updates)
        assert run.meta == alone.meta and run.events_total == alone.events_total


def test_simulate_seeds_needs_one_entry_per_seed():
    policies = [bk.make_policy("random", seed=s) for s in (0, 1)]
    envs = [bk.make_env("linear", d=3) for _ in range(2)]
    with pytest.raises(ValueError, match="one entry per seed"):
        simulate_seeds(policies, envs, 5, [0])
    with pytest.raises(ValueError, match="family"):
        simulate_seeds(policies, [bk.make_env("dueling", d=3)] * 2, 5, [0, 1])
