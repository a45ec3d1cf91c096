import numpy as np

import banditkit as bk
from banditkit.core import Context
from banditkit.policies.parts.models import RidgeModel


def test_ridge_two_observations_hand_checked():
    """lam=1, x1=(1,0) r=1, x2=(1,1) r=0: V=[[3,1],[1,2]], b=(1,0), theta=V^-1 b=(0.4,-0.2)."""
    m = RidgeModel(2, 1.0)
    m.add(np.array([1.0, 0.0]), 1.0)
    m.add(np.array([1.0, 1.0]), 0.0)
    np.testing.assert_allclose(m.theta, [0.4, -0.2])
    # ||x||_{V^-1} for x=(0,1): (V^-1)_{22} = 3/5.
    np.testing.assert_allclose(m.gram.norms(np.array([[0.0, 1.0]])), [np.sqrt(0.6)])


def test_linucb_regret_is_sublinear():
    env = bk.make_env("linear", d=5, n_arms=10, noise_std=0.1)
    run = bk.simulate(
        bk.make_policy("linucb", nu=0.5, lam=1.0, seed=0), env, 4000, seed=0
    )
    first = run.regret[:2000].sum()
    second = run.regret[2000:].sum()
    assert second < 0.4 * first, (first, second)


def test_lints_greedy_limit_equals_ridge_argmax():
    p = bk.make_policy("lints", nu=0.0, seed=0)
    ctx = Context(arms=np.array([[1.0, 0.0], [0.0, 1.0]]))
    p.act(ctx)
    p.update(ctx, 1, 1.0)
    assert p.act(ctx) == 1


def test_eps_greedy_explores_at_rate_epsilon():
    p = bk.make_policy("eps-greedy", epsilon=0.3, seed=0)
    ctx = Context(arms=np.array([[1.0], [0.0]]))
    p.act(ctx)
    p.update(ctx, 0, 1.0)  # arm 0 now has the larger estimate
    picks = np.array([p.act(ctx) for _ in range(4000)])
    # Arm 1 is played only when exploring and drawing it: rate 0.15, sd ~ 0.0056; 4 sd.
    assert abs(picks.mean() - 0.15) < 0.025


def test_without_history_the_ridge_policies_play_the_same_with_a_state_of_size_d2(
    tmp_path,
):
    """keep_history=False: the same actions bit for bit, a saved state that does not grow."""
    rng = np.random.default_rng(4)
    contexts = [Context(arms=rng.normal(size=(5, 3))) for _ in range(60)]
    for name in ("linucb", "lints", "eps-greedy"):
        kept = bk.make_policy(name, seed=1)
        bounded = bk.make_policy(name, seed=1, keep_history=False)
        for t, ctx in enumerate(contexts):
            action = kept.act(ctx)
            assert bounded.act(ctx) == action
            for p in (kept, bounded):
                p.update(ctx, action, float(t % 3))
        assert kept.history.n == 60 and bounded.history.n == 0
        assert np.array_equal(kept.model.theta, bounded.model.theta)
        path = tmp_path / f"{name}.bk"
        bk.save_policy(bounded, path)
        loaded = bk.load_policy(path, expect=name)
        assert loaded.keep_history is False
        ctx = contexts[0]
        assert loaded.act(ctx) == bounded.act(ctx)
        assert loaded.history.n == 0
