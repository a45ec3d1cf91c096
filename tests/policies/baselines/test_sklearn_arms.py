"""scikit-learn estimators as per-arm learners: validation, the fits against estimators
trained independently on the same weighted rows, save / restore by replay, the explorers."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.linear_model import Ridge, SGDClassifier, SGDRegressor

import banditkit as bk
from banditkit.core import Context
from banditkit.core.serialization import load_policy, save_policy

K, D = 3, 4


def _play(policy, T, seed=0, binary=False):
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=(K, D))
    for _ in range(T):
        ctx = Context.from_shared(rng.normal(size=D), n_arms=K)
        a = policy.act(ctx)
        mean = theta[a] @ ctx.arms[0]
        r = (
            float(rng.random() < 1 / (1 + np.exp(-mean)))
            if binary
            else mean + 0.1 * rng.normal()
        )
        policy.update(ctx, a, r)
    return rng


def test_construction_is_validated():
    for kwargs, match in [
        ({"estimator": "numpy.linalg.LinAlgError"}, "estimator"),
        ({"estimator": "sklearn.linear_model.NoSuchModel"}, "estimator"),
        (
            {
                "estimator": "sklearn.linear_model.Ridge",
                "estimator_params": {"nope": 1},
            },
            "estimator_params",
        ),
        (
            {
                "estimator": "sklearn.linear_model.Ridge",
                "estimator_params": {"alpha": object()},
            },
            "estimator_params",
        ),
        ({"estimator": "sklearn.neighbors.KNeighborsRegressor"}, "sample_weight"),
        ({"estimator": 3}, "estimator"),
        ({"explorer": "greedy"}, "explorer"),
        ({"explorer": "bootstrap-ts", "n_bootstrap": 1}, "n_bootstrap"),
        (
            {"estimator": Ridge(), "estimator_params": {"alpha": 2.0}},
            "estimator_params",
        ),
    ]:
        with pytest.raises(ValueError, match=match):
            bk.make_policy("sklearn", **kwargs)
    p = bk.make_policy(
        "sklearn", estimator=SGDClassifier(loss="log_loss", random_state=3)
    )
    assert p.estimator == "sklearn.linear_model.SGDClassifier"  # the public path
    assert p.estimator_params["loss"] == "log_loss" and p.reward_kind == "binary"
    knn = bk.make_policy(
        "sklearn",
        estimator="sklearn.neighbors.KNeighborsRegressor",
        estimator_params={"n_neighbors": 1},
        explorer="eps-greedy",
        n_bootstrap=1,
    )
    _play(knn, 30)
    assert knn.reward_kind == "real" and knn.n_updates == 3  # refitted every 10 rounds


def test_partial_fit_members_equal_independent_estimators():
    policy = bk.make_policy(
        "sklearn",
        estimator="sklearn.linear_model.SGDRegressor",
        estimator_params={"random_state": 0},
        explorer="bootstrap-ucb",
        n_bootstrap=3,
    )
    rng = _play(policy, 60)
    x = rng.normal(size=(1, D))
    for a in range(K):
        rows = np.flatnonzero(policy.row_arms == a)
        for m in range(3):
            est = clone(SGDRegressor(random_state=0))
            for i in rows:
                if policy.weights[i, m] > 0:
                    est.partial_fit(
                        policy.rows[i : i + 1],
                        policy.targets[i : i + 1],
                        sample_weight=policy.weights[i : i + 1, m],
                    )
            assert est.predict(x)[0] == policy._models[a][m].predict(x)[0]
    preds = policy._predictions(np.repeat(x, K, axis=0))
    ucb = np.quantile(preds, 0.8, axis=1)
    twin = bk.make_policy("sklearn", **policy.get_params())
    twin.load_state_dict(policy.state_dict())  # restored by replaying the partial fits
    np.testing.assert_array_equal(twin._predictions(np.repeat(x, K, axis=0)), preds)
    twin.rng.bit_generator.state = policy.rng.bit_generator.state
    assert policy.act(Context.from_shared(x[0], n_arms=K)) == int(np.argmax(ucb))


def test_refit_mode_equals_ridge_on_the_weighted_rows(tmp_path):
    policy = bk.make_policy(
        "sklearn", estimator="sklearn.linear_model.Ridge", n_bootstrap=2, refit_every=5
    )
    _play(policy, 43)
    assert policy.n_updates == 8 and policy.n_fit.sum() == 40
    x = np.ones((1, D))
    for a in range(K):
        mine = np.flatnonzero(policy.row_arms == a)[: policy.n_fit[a]]
        for m in range(2):
            w = policy.weights[mine, m]
            ref = Ridge().fit(
                policy.rows[mine][w > 0],
                policy.targets[mine][w > 0],
                sample_weight=w[w > 0],
            )
            np.testing.assert_allclose(
                policy._models[a][m].predict(x), ref.predict(x), rtol=1e-12
            )
    save_policy(policy, tmp_path / "p.bk")
    back = load_policy(tmp_path / "p.bk")
    ctx = Context.from_shared(np.arange(D, dtype=float), n_arms=K)
    np.testing.assert_array_equal(
        back._predictions(ctx.arms), policy._predictions(ctx.arms)
    )


def test_classifier_softmax_propensities_and_learning():
    policy = bk.make_policy(
        "sklearn",
        estimator="sklearn.linear_model.SGDClassifier",
        estimator_params={"loss": "log_loss", "random_state": 0},
        explorer="softmax",
        n_bootstrap=1,
        temperature=0.2,
    )
    _play(policy, 40, binary=True)
    ctx = Context.from_shared(np.ones(D), n_arms=K)
    mean = policy._predictions(ctx.arms)[:, 0]
    assert np.all((mean >= 0) & (mean <= 1))
    p = np.exp((mean - mean.max()) / 0.2)
    p /= p.sum()
    a = policy.act(ctx)
    assert policy.last_propensity == pytest.approx(p[a])
    with pytest.raises(ValueError, match="feedback"):
        policy.update(ctx, a, 2.0)


# ------------------------------------------------------------------ catalogue and batch fits

ESTIMATORS = {
    "partial": {
        "estimator": "sklearn.linear_model.SGDRegressor",
        "estimator_params": {"random_state": 0},
    },
    "refit": {"estimator": "sklearn.linear_model.Ridge", "refit_every": 7},
}


def _log(n, seed, form="shared"):
    rng = np.random.default_rng(seed)
    arms = rng.normal(size=(n, K, D))
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
    batch = {"shared": arms[:, 0], "per-arm": arms, "contexts": ctxs}[form]
    return ctxs, batch, acts, rews


def _same_state(p, q):
    a, b = p.state_dict(), q.state_dict()
    assert a["t"] == b["t"]
    for key, value in a["state"].items():
        np.testing.assert_array_equal(b["state"][key], value)
    assert p.rng.bit_generator.state == q.rng.bit_generator.state


@pytest.mark.parametrize("mode", list(ESTIMATORS))
@pytest.mark.parametrize("form", ["shared", "per-arm", "contexts"])
def test_partial_fit_and_fit_equal_updates_one_at_a_time(mode, form):
    ctxs, batch, acts, rews = _log(30, 1, form)
    online = bk.make_policy("sklearn", seed=2, **ESTIMATORS[mode])
    for t in range(30):
        online.update(ctxs[t], int(acts[t]), float(rews[t]))
    half = bk.make_policy("sklearn", seed=2, **ESTIMATORS[mode])
    half.partial_fit(batch[:11], acts[:11], rews[:11], n_arms=K)
    half.partial_fit(batch[11:], acts[11:], rews[11:])
    fitted = bk.make_policy("sklearn", seed=2, **ESTIMATORS[mode])
    fitted.fit(batch, acts, rews, n_arms=K)
    probe = Context(arms=np.random.default_rng(3).normal(size=(K, D)))
    for policy in (half, fitted):
        _same_state(online, policy)
        np.testing.assert_array_equal(
            policy.predictions(probe), online.predictions(probe)
        )
    # fit forgets: what it knows afterwards is the batch only (its stream goes on)
    fitted.fit(batch[:4], acts[:4], rews[:4], n_arms=K)
    assert fitted.t == 4
    np.testing.assert_array_equal(fitted.row_arms, acts[:4])


def test_a_rejected_batch_changes_nothing():
    _, batch, acts, rews = _log(10, 4)
    policy = bk.make_policy("sklearn", **ESTIMATORS["refit"]).partial_fit(
        batch, acts, rews, n_arms=K
    )
    before = policy.state_dict()
    for args, match in [
        ((batch, acts, rews[:-1]), "rewards"),
        ((batch, np.full(10, K), rews), "actions"),
        ((np.ones((10, D + 1)), acts, rews), "dimension"),
    ]:
        with pytest.raises(ValueError, match=match):
            policy.partial_fit(*args)
    after = policy.state_dict()
    assert after["t"] == before["t"]
    for key, value in before["state"].items():
        np.testing.assert_array_equal(after["state"][key], value)
    with pytest.raises(ValueError, match="n_arms"):
        bk.make_policy("sklearn").fit(batch, acts, rews)


@pytest.mark.parametrize("mode", list(ESTIMATORS))
def test_removed_arm_leaves_the_others_estimators_and_rows(mode, tmp_path):
    _, batch, acts, rews = _log(40, 5)
    policy = bk.make_policy("sklearn", seed=1, **ESTIMATORS[mode]).partial_fit(
        batch, acts, rews, n_arms=K
    )
    probe = np.random.default_rng(6).normal(size=(K, D))
    before = policy.predictions(Context(arms=probe))
    kept_rows = policy.rows[policy.row_arms != 1]
    policy.remove_arm(1)
    after = policy.predictions(Context(arms=probe[[0, 2]]))
    np.testing.assert_array_equal(after, before[[0, 2]])
    np.testing.assert_array_equal(policy.rows, kept_rows)
    assert set(policy.row_arms.tolist()) <= {0, 1} and policy.n_arms == K - 1
    save_policy(policy, tmp_path / "p.bk")  # the restored copy replays the same fits
    restored = load_policy(tmp_path / "p.bk")
    np.testing.assert_array_equal(
        restored.predictions(Context(arms=probe[[0, 2]])), after
    )
    with pytest.raises(ValueError, match="arm"):
        policy.remove_arm(2)


def test_added_arm_is_played_first_and_the_others_keep_their_models(tmp_path):
    _, batch, acts, rews = _log(30, 7)
    policy = bk.make_policy("sklearn", seed=1, **ESTIMATORS["partial"])
    with pytest.raises(ValueError, match="add_arm"):
        policy.add_arm()
    policy.partial_fit(batch, acts, rews, n_arms=K)
    probe = np.random.default_rng(8).normal(size=(K + 1, D))
    before = policy.predictions(Context(arms=probe[:K]))
    assert policy.add_arm() == K
    preds = policy.predictions(Context(arms=probe))
    np.testing.assert_array_equal(preds[:K], before)
    assert np.isnan(preds[K]).all()
    assert policy.act(Context(arms=probe)) == K
    with pytest.raises(ValueError, match="arms"):
        policy.act(Context(arms=probe[:K]))
    save_policy(policy, tmp_path / "p.bk")
    restored = load_policy(tmp_path / "p.bk")
    assert restored.n_arms == K + 1
    np.testing.assert_array_equal(restored.predictions(Context(arms=probe)), preds)


def test_estimators_that_cannot_be_saved_without_pickle_are_refused():
    from sklearn.ensemble import BaggingRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    for estimator in (
        make_pipeline(StandardScaler(), Ridge()),  # steps hold estimator objects
        BaggingRegressor(estimator=Ridge()),  # a nested estimator
        SGDRegressor(random_state=np.random.RandomState(0)),  # a generator object
    ):
        with pytest.raises(ValueError, match="pickle"):
            bk.make_policy("sklearn", estimator=estimator)
