"""Per-arm policies on the classification environments' shared context: the same decisions as
the block-encoded shared-parameter policies from the first round on, and the reproduction
configs that use them."""

import numpy as np
import pytest

import banditkit as bk
from banditkit.core import Context
from banditkit.experiments.config.load import load_config
from banditkit.experiments.config.papers import paper_dir
from banditkit.glm import glm_hessian
from banditkit.policies.parts.selection import TIE_RTOL, argmax_random_tie, tied
from tests.datasets._data import require_reference_data, use_reference_data


@pytest.fixture
def uci(monkeypatch):
    """The reference copies of the UCI tables (skip without them; no downloads)."""
    for name in ("shuttle", "magic", "mushroom"):
        require_reference_data(name)
    use_reference_data(monkeypatch)


def _run(name, per_arm, env_params, params, seed, horizon):
    env = bk.make_env("classification", **env_params)
    policy = bk.make_policy(name, per_arm=per_arm, seed=seed, **params)
    return policy, bk.simulate(policy, env, horizon, seed=seed)


def test_block_environment_serves_shared_contexts_to_per_arm_policies_only():
    env = bk.make_env("classification", dataset="digits", pool=100)
    policy = bk.make_policy("linucb", per_arm=True)
    bk.simulate(policy, env, 3, seed=0)
    assert policy.A_inv.shape == (10, 64, 64)  # one 64-d model per class, not 640-d
    env.reset(0)  # the next run starts block-encoded again
    assert env.context().arms.shape == (10, 640)
    # a run's rows, labels and regrets do not depend on who asked for the shared context
    a = bk.simulate(bk.make_policy("oracle"), env, 20, seed=5)
    env.reset(5)
    assert env.serve_shared()
    assert env.context().is_shared
    b = bk.simulate(bk.make_policy("oracle"), env, 20, seed=5)
    np.testing.assert_array_equal(a.actions, b.actions)
    onehot = bk.make_env("classification", dataset="digits", encoding="onehot-id")
    onehot.reset(0)
    assert not onehot.serve_shared()
    assert onehot.context().arms.shape == (10, 74)


# Tie-breaking. Before every arm has been played the scores of the untouched arms are equal in
# exact arithmetic; the block encoding sums each of them at another offset of a (K d)-vector,
# so they differ by an ulp or two, in a pattern set by d, K and the BLAS. The linear and GLM
# policies (both kinds) tie scores within TIE_RTOL of the best, so both draw among the same arms (shuttle: d = 9,
# magic: d = 10; their offsets are not multiples of the SIMD width, which is where the block
# encoding's sums differ).
@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("linucb", {"nu": 0.1}),
        ("linucb", {"nu": 1.0, "lam": 0.5}),
        ("eps-greedy", {}),
        ("glm-ucb", {"nu": 0.1, "update_every": 1}),
    ],
)
@pytest.mark.parametrize(
    "env_params",
    [
        {"dataset": "shuttle", "scale": "l2", "pool": 500},
        {"dataset": "magic", "pool": 500},
    ],
    ids=["shuttle", "magic"],
)
def test_decisions_equal_block_encoded_run_from_the_first_round(
    uci, name, params, env_params
):
    for seed in (2, 3):
        per, run_per = _run(name, True, env_params, params, seed, 60)
        blk, run_blk = _run(name, False, env_params, params, seed, 60)
        np.testing.assert_array_equal(run_per.actions, run_blk.actions)
        np.testing.assert_array_equal(run_per.regret, run_blk.regret)
        assert per.d * per.n_arms == blk.d  # the per-arm policy saw x, not the blocks


def test_rounding_apart_scores_are_tied_and_drawn_at_random():
    top = 0.3
    scores = np.array([top, np.nextafter(top, 1.0), top * (1 - 10 * TIE_RTOL)])
    assert tied(scores, rtol=TIE_RTOL).tolist() == [True, True, False]
    assert tied(scores).tolist() == [False, True, False]  # default: exact ties
    picks = {
        argmax_random_tie(scores, np.random.default_rng(s), TIE_RTOL) for s in range(40)
    }
    assert picks == {0, 1}
    assert {argmax_random_tie(scores, np.random.default_rng(s)) for s in range(5)} == {
        1
    }
    assert (
        argmax_random_tie(scores, None, TIE_RTOL) == 1
    )  # no stream: the first largest
    inf = np.array([np.inf, np.inf, 1.0])
    assert tied(inf, rtol=TIE_RTOL).tolist() == [True, True, False]
    assert tied(np.array([0.0, -1e-300]), rtol=TIE_RTOL).tolist() == [True, False]


# ------------------------------------------------------------------ reproduction configs

#: the per-arm entries of ensemble/fig5 and the shared-parameter policy each stands for
FIG5 = {
    "Lin-UCB": "linucb",
    "Lin-TS": "lints",
    "GLM-UCB": "glm-ucb",
    "GLM-TSL": "glm-ts",
}


def _fig5():
    return load_config(paper_dir("ensemble") / "fig5.yaml")


def test_fig5_baselines_are_the_per_arm_variants():
    cfg = _fig5()
    by_label = {p.label: p for p in cfg.policies}
    for label, base in FIG5.items():
        assert by_label[label].name == f"{base}-per-arm"
    assert all(e.name == "classification" for e in cfg.envs)


@pytest.mark.parametrize("label", ["Lin-UCB", "GLM-UCB"])
def test_fig5_per_arm_baselines_decide_as_the_block_encoded_ones(uci, label):
    """A short run of the config's entry, on its first two data sets, against the
    block-encoded shared-parameter policy with the same parameters."""
    cfg = _fig5()
    spec = next(p for p in cfg.policies if p.label == label)
    for env_spec in cfg.envs[:2]:  # shuttle, mushroom
        params = {**env_spec.params, "pool": 400}
        runs = []
        for name in (spec.name, FIG5[label]):
            env = bk.make_env(env_spec.name, **params)
            policy = bk.make_policy(name, seed=1, **spec.params)
            runs.append(bk.simulate(policy, env, 40, seed=1).actions)
        np.testing.assert_array_equal(runs[0], runs[1])


@pytest.mark.parametrize("label", ["Lin-TS", "GLM-TSL"])
def test_fig5_per_arm_thompson_baselines_have_the_block_posterior(uci, label):
    """Thompson sampling draws K scalars instead of one (K d)-vector: other draws, the same
    per-arm distribution N(x^T theta_a, nu^2 x^T P_a^-1 x) as the block-encoded posterior."""
    cfg = _fig5()
    spec = next(p for p in cfg.policies if p.label == label)
    env_spec = cfg.envs[0]
    env = bk.make_env(env_spec.name, **{**env_spec.params, "pool": 400})
    per = bk.make_policy(spec.name, seed=0, **spec.params)
    blk = bk.make_policy(FIG5[label], seed=0, **spec.params)
    env.reset(0)
    rng = np.random.default_rng(0)
    K = env.n_arms
    for _ in range(30):
        ctx = env.context()
        a = int(rng.integers(K))
        r = env.step(a).feedback
        d = ctx.arms.shape[1] // K
        per.update(Context.from_shared(ctx.arms[0, :d], n_arms=K), a, r)
        blk.update(ctx, a, r)
    ctx = env.context()
    x = ctx.arms[0, :d]
    if label == "Lin-TS":
        mean_blk = ctx.arms @ blk.model.theta
        var_blk = blk.model.gram.norms(ctx.arms) ** 2
        mean_per, var_per = per._means_widths2(np.broadcast_to(x, (K, d)), True)
    else:
        H = glm_hessian(blk.history.X, blk.model.theta, link=blk.link, lam=blk.lam)
        mean_blk = ctx.arms @ blk.model.theta
        var_blk = np.einsum("ki,ij,kj->k", ctx.arms, np.linalg.inv(H), ctx.arms)
        mean_per = per.theta @ x
        var_per = np.einsum("kij,i,j->k", per.H_inv, x, x)
    np.testing.assert_allclose(mean_per, mean_blk, atol=1e-8)
    np.testing.assert_allclose(var_per, var_blk, rtol=1e-6, atol=1e-10)
