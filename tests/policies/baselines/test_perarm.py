"""Per-arm (disjoint) ridge policies: the stack against direct inverses, decisions against the
block-encoded shared-parameter policies, arms that come and go, batch fits."""

import numpy as np
import pytest

import banditkit as bk
from banditkit.core import Context
from banditkit.envs.classification import encode_arms

NAMES = ["linucb", "lints", "eps-greedy"]


def _rounds(n, K, d, seed=0):
    """n shared contexts, a true theta per arm."""
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)), rng.normal(size=(K, d)), rng


def _drive(policy, X, theta, rng, *, shared=True, forced=0):
    """Play the rounds of X (shared contexts); rewards x^T theta_a + noise. Returns actions.

    The first ``forced`` rounds play arm t mod K (a warm start that plays every arm).
    """
    K = theta.shape[0]
    actions = []
    for t, x in enumerate(X):
        ctx = (
            Context.from_shared(x, n_arms=K)
            if shared
            else Context(arms=encode_arms(x, K))
        )
        a = t % K if t < forced else policy.act(ctx)
        policy.update(ctx, a, float(theta[a] @ x + 0.1 * rng.normal()))
        actions.append(a)
    return actions


def test_from_shared_is_a_broadcast_view_and_validates():
    x = np.array([1.0, 2.0])
    ctx = Context.from_shared(x, n_arms=3)
    assert ctx.arms.shape == (3, 2) and ctx.is_shared
    np.testing.assert_array_equal(ctx.arms, np.tile(x, (3, 1)))
    x[0] = 9.0  # a copy of x was taken
    assert ctx.arms[0, 0] == 1.0
    assert not Context(arms=np.ones((3, 2))).is_shared
    with pytest.raises(ValueError, match="x"):
        Context.from_shared(np.ones((2, 2)), n_arms=2)
    with pytest.raises(ValueError, match="NaN"):
        Context.from_shared([np.nan], n_arms=2)
    with pytest.raises(ValueError, match="n_arms"):
        Context.from_shared([1.0], n_arms=0)


def test_make_policy_per_arm():
    assert {bk.make_policy(n, per_arm=True).registry_name for n in NAMES} == {
        f"{n}-per-arm" for n in NAMES
    }
    assert bk.make_policy("linucb").registry_name == "linucb"
    with pytest.raises(ValueError, match="per_arm"):
        bk.make_policy("neural-ucb", per_arm=True)
    with pytest.raises(ValueError, match="per_arm"):
        bk.make_policy("linucb", per_arm=1)


@pytest.mark.parametrize("shared", [True, False])
def test_stack_equals_direct_ridge_per_arm(shared):
    K, d, n = 4, 3, 60
    rng = np.random.default_rng(1)
    policy = bk.make_policy("linucb", per_arm=True, lam=0.7)
    arms = rng.normal(size=(n, K, d))
    if shared:
        arms[:] = arms[:, :1]
    acts = rng.integers(K, size=n)
    rews = rng.normal(size=n)
    for t in range(n):
        ctx = (
            Context.from_shared(arms[t, 0], n_arms=K)
            if shared
            else Context(arms=arms[t])
        )
        policy.update(ctx, int(acts[t]), float(rews[t]))
    probe = rng.normal(size=(K, d))
    mean, width2 = policy._means_widths2(probe, False)
    for a in range(K):
        X = arms[acts == a, a]
        A = 0.7 * np.eye(d) + X.T @ X
        bvec = X.T @ rews[acts == a]
        np.testing.assert_allclose(
            policy.A_inv[a], np.linalg.inv(A), rtol=1e-10, atol=1e-12
        )
        np.testing.assert_allclose(
            policy.theta[a], np.linalg.solve(A, bvec), atol=1e-10
        )
        np.testing.assert_allclose(
            mean[a], probe[a] @ np.linalg.solve(A, bvec), atol=1e-10
        )
        np.testing.assert_allclose(
            width2[a], probe[a] @ np.linalg.solve(A, probe[a]), atol=1e-10
        )
    assert policy.counts.tolist() == np.bincount(acts, minlength=K).tolist()


# Before every arm has been played the untouched arms' scores are equal in exact arithmetic and
# differ by rounding in the block encoding (each arm's nonzeros sit elsewhere in a (K d)-vector);
# scores within selection.TIE_RTOL are ties, so both runs draw among the same arms from the
# first round on (tests/policies/baselines/test_perarm_shared.py does it on the UCI tables).


@pytest.mark.parametrize("name", ["linucb", "eps-greedy"])
def test_decisions_equal_block_encoded_shared_parameter_run(name):
    X, theta, _ = _rounds(300, 6, 5)
    per_arm = _drive(
        bk.make_policy(name, per_arm=True, seed=3),
        X,
        theta,
        np.random.default_rng(7),
    )
    block = _drive(
        bk.make_policy(name, seed=3),
        X,
        theta,
        np.random.default_rng(7),
        shared=False,
    )
    assert per_arm == block
    assert len(set(per_arm[6:])) > 1


def test_classification_env_shared_encoding_equals_block():
    runs = {}
    for encoding in ("shared", "block"):
        env = bk.make_env(
            "classification", dataset="digits", pool=300, encoding=encoding
        )
        policy = bk.make_policy("linucb", per_arm=encoding == "shared", nu=0.3, seed=2)
        env.reset(4)
        actions, regret = [], 0.0
        for _ in range(150):
            ctx = env.context()
            a = policy.act(ctx)
            step = env.step(a)
            policy.update(ctx, a, step.feedback)
            actions.append(a)
            regret += step.regret
        runs[encoding] = actions, regret
    assert runs["shared"] == runs["block"]
    assert runs["shared"][1] < 120  # it learns: uniform play expects 0.9 * 150 = 135


def test_lints_draws_one_gaussian_scalar_per_arm():
    K, d = 5, 3
    X, theta, rng = _rounds(80, K, d, seed=2)
    policy = bk.make_policy("lints", per_arm=True, nu=0.8, seed=5)
    _drive(policy, X, theta, rng)
    ctx = Context.from_shared(rng.normal(size=d), n_arms=K)
    x = ctx.arms[0]
    twin = np.random.default_rng()
    twin.bit_generator.state = policy.rng.bit_generator.state
    mean = np.array(
        [
            x @ np.linalg.solve(np.linalg.inv(policy.A_inv[a]), policy.b[a])
            for a in range(K)
        ]
    )
    sd = np.array([np.sqrt(x @ policy.A_inv[a] @ x) for a in range(K)])
    expected = int(np.argmax(mean + 0.8 * sd * twin.standard_normal(K)))
    assert policy.act(ctx) == expected
    # the same per-arm score distribution as lints on the block encoding: mean x^T theta_a,
    # variance nu^2 x_block^T V^-1 x_block of the block-diagonal Gram V
    arms = encode_arms(x, K)
    per = bk.make_policy("linucb", per_arm=True)
    blk = bk.make_policy("linucb")
    rng2 = np.random.default_rng(3)
    for _ in range(40):
        z = rng2.normal(size=d)
        a = int(rng2.integers(K))
        r = float(rng2.normal())
        per.update(Context.from_shared(z, n_arms=K), a, r)
        blk.update(Context(arms=encode_arms(z, K)), a, r)
    m, w2 = per._means_widths2(np.broadcast_to(x, (K, d)), True)
    np.testing.assert_allclose(m, arms @ blk.model.theta, atol=1e-10)
    np.testing.assert_allclose(w2, blk.model.gram.norms(arms) ** 2, atol=1e-10)


def test_other_number_of_arms_is_refused():
    policy = bk.make_policy("linucb", per_arm=True)
    policy.act(Context.from_shared(np.ones(2), n_arms=3))
    with pytest.raises(ValueError, match="ctx has 4 arms"):
        policy.act(Context.from_shared(np.ones(2), n_arms=4))


# ------------------------------------------------------------------ arms that come and go


def _logs(n, K, d, seed):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)), rng.integers(K, size=n), rng.normal(size=n)


@pytest.mark.parametrize("name", NAMES)
def test_removed_arm_leaves_the_others_as_if_it_never_existed(name):
    K, d = 4, 3
    X, acts, rews = _logs(120, K, d, 0)
    gone = 1
    full = bk.make_policy(name, per_arm=True, seed=9).partial_fit(
        X, acts, rews, n_arms=K
    )
    full.remove_arm(gone)
    keep = acts != gone
    never = bk.make_policy(name, per_arm=True, seed=9).partial_fit(
        X[keep], acts[keep] - (acts[keep] > gone), rews[keep], n_arms=K - 1
    )
    for key in ("A_inv", "b", "theta", "counts"):
        np.testing.assert_array_equal(getattr(full, key), getattr(never, key))
    Xn, theta, _ = _rounds(60, K - 1, d, seed=4)
    a1 = _drive(full, Xn, theta, np.random.default_rng(1))
    a2 = _drive(never, Xn, theta, np.random.default_rng(1))
    assert a1 == a2


@pytest.mark.parametrize("name", NAMES)
def test_added_arm_starts_fresh_and_keeps_the_others(name):
    K, d = 3, 2
    X, acts, rews = _logs(50, K, d, 1)
    grown = bk.make_policy(name, per_arm=True, seed=2).partial_fit(
        X, acts, rews, n_arms=K
    )
    before = grown.A_inv.copy()
    assert grown.add_arm() == K
    np.testing.assert_array_equal(grown.A_inv[:K], before)
    np.testing.assert_array_equal(grown.A_inv[K], np.eye(d))
    born = bk.make_policy(name, per_arm=True, seed=2).partial_fit(
        X, acts, rews, n_arms=K + 1
    )
    Xn, theta, _ = _rounds(40, K + 1, d, seed=5)
    assert _drive(grown, Xn, theta, np.random.default_rng(0)) == _drive(
        born, Xn, theta, np.random.default_rng(0)
    )
    restored = bk.make_policy(name, per_arm=True, seed=2)
    restored.load_state_dict(grown.state_dict())
    assert restored.n_arms == K + 1
    np.testing.assert_array_equal(restored.A_inv, grown.A_inv)


def test_catalogue_changes_are_validated():
    policy = bk.make_policy("linucb", per_arm=True)
    with pytest.raises(ValueError, match="add_arm"):
        policy.add_arm()
    policy.act(Context.from_shared(np.ones(2), n_arms=2))
    with pytest.raises(ValueError, match="arm"):
        policy.remove_arm(2)
    policy.remove_arm(0)
    with pytest.raises(ValueError, match="only arm"):
        policy.remove_arm(0)


# ------------------------------------------------------------------ batch fits


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("form", ["shared", "per-arm", "contexts"])
def test_partial_fit_equals_updates_one_at_a_time(name, form):
    K, d, n = 3, 4, 40
    rng = np.random.default_rng(6)
    arms = rng.normal(size=(n, K, d))
    if form == "shared":
        arms[:] = arms[:, :1]
    acts = rng.integers(K, size=n)
    rews = rng.normal(size=n)
    ctxs = [
        Context.from_shared(arms[t, 0], n_arms=K)
        if form == "shared"
        else Context(arms=arms[t])
        for t in range(n)
    ]
    online = bk.make_policy(name, per_arm=True, seed=1)
    for t in range(n):
        online.update(ctxs[t], int(acts[t]), float(rews[t]))
    batch = {"shared": arms[:, 0], "per-arm": arms, "contexts": ctxs}[form]
    half = bk.make_policy(name, per_arm=True, seed=1)
    half.partial_fit(batch[:20], acts[:20], rews[:20], n_arms=K)
    half.partial_fit(batch[20:], acts[20:], rews[20:])
    refit = bk.make_policy(name, per_arm=True, seed=1)
    refit.fit(batch[:5], acts[:5], rews[:5], n_arms=K)
    refit.fit(batch, acts, rews, n_arms=K)
    expected = online.state_dict()
    for policy in (half, refit):
        got = policy.state_dict()
        assert got["t"] == expected["t"] == n
        for key, value in expected["state"].items():
            np.testing.assert_array_equal(got["state"][key], value)


def test_batch_is_validated_and_a_rejected_batch_changes_nothing():
    K, d = 3, 2
    X, acts, rews = _logs(10, K, d, 2)
    policy = bk.make_policy("linucb", per_arm=True).partial_fit(X, acts, rews, n_arms=K)
    before = policy.state_dict()
    bad_rews = rews.copy()
    bad_rews[-1] = np.nan
    cases = [
        ((X, acts, rews[:-1]), "rewards"),
        ((X, acts.astype(float), rews), "actions"),
        ((X, np.full(10, K), rews), "actions"),
        ((X, acts, bad_rews), "feedback"),
        ((np.ones((10, 5)), acts, rews), "dimension"),
        ((np.ones((10, K + 1, d)), acts, rews), "n_arms"),
        (("rows", acts, rews), "contexts"),
    ]
    for args, match in cases:
        with pytest.raises(ValueError, match=match):
            policy.partial_fit(*args)
    with pytest.raises(ValueError, match="n_arms"):
        bk.make_policy("linucb", per_arm=True).fit(X, acts, rews)
    after = policy.state_dict()
    assert after["t"] == before["t"]
    for key, value in before["state"].items():
        np.testing.assert_array_equal(after["state"][key], value)


def test_docs_page_runs_and_prints_what_it_says(capsys, tmp_path, monkeypatch):
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[3] / "docs" / "per-arm.md").read_text()
    codes = re.findall(r"```python\n(.*?)```", page, flags=re.S)
    assert len(codes) == 6
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for i, code in enumerate(codes):
        exec(compile(code, f"per-arm.md[{i}]", "exec"), namespace)
        expected = [line[2:] for line in code.splitlines() if line.startswith("# ")]
        assert capsys.readouterr().out.splitlines() == expected
