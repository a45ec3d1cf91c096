"""The ``fit`` option of Logistic-UCB-1 and ada-OFU-ECOLog: exact MLE or GD steps.

The "gd" refit is checked against plain NumPy gradient descent on the policy's own
objective sum_i BCE(r_i, x_i^T theta) + lam ||theta||^2 (written out here, not taken
from banditkit.glm), warm-started across refits.
"""

import math

import numpy as np
import pytest

import banditkit as bk
from banditkit.experiments.config.resolved import run_id
from banditkit.policies.parts.models import GLMModel
from banditkit.testing import PolicyCase, check_policy
from tests.policies.helpers import contexts, play

NAMES = ["logistic-ucb1", "ada-ofu-ecolog"]
# get_params of the default policies before the option existed (run ids hash them)
OLD_PARAMS = {"nu", "lam", "kappa", "S", "update_every", "gram", "seed"}


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def _numpy_gd(X, y, theta, lam, steps, lr, loss):
    """``steps`` GD steps on L = sum BCE + lam ||theta||^2 (or L / n)."""
    scale = 1.0 / X.shape[0] if loss == "mean" else 1.0
    for _ in range(steps):
        grad = X.T @ (_sigmoid(X @ theta) - y) + 2.0 * lam * theta
        theta = theta - lr * scale * grad
    return theta


@pytest.mark.parametrize("loss", ["mean", "sum"])
@pytest.mark.parametrize("name", NAMES)
def test_gd_refits_are_numpy_gradient_descent_warm_started(name, loss):
    lam, steps, lr, every = 0.3, 7, 0.05, 5
    policy = bk.make_policy(
        name,
        nu=0.5,
        lam=lam,
        update_every=every,
        fit="gd",
        fit_steps=steps,
        fit_lr=lr,
        fit_loss=loss,
    )
    ctxs = contexts(17, 5, 4, 0)
    rng = np.random.default_rng(2)
    X, y, theta, W = [], [], np.zeros(4), lam * np.eye(4)
    for t, ctx in enumerate(ctxs[:-1]):  # 16 rounds: refits after rounds 5, 10, 15
        a, r = (3 * t) % 5, float(rng.random() < 0.4)
        policy.update(ctx, a, r)
        X.append(ctx.arms[a])
        y.append(r)
        if (t + 1) % every == 0:
            theta = _numpy_gd(np.array(X), np.array(y), theta, lam, steps, lr, loss)
        x = ctx.arms[a]
        W += _sigmoid(x @ theta) * _sigmoid(-(x @ theta)) * np.outer(x, x)
    np.testing.assert_allclose(policy.model.theta, theta, rtol=0, atol=1e-10)
    assert np.linalg.norm(theta) > 1e-3  # the steps moved theta
    mean, _ = policy.scores(ctxs[-1])
    latent = ctxs[-1].arms @ theta
    expected = _sigmoid(latent) if name == "logistic-ucb1" else latent
    np.testing.assert_allclose(mean, expected, rtol=0, atol=1e-10)
    if name == "ada-ofu-ecolog":  # A weighted by the GD estimate after each round
        np.testing.assert_allclose(policy.design.matrix, W, rtol=1e-10)


def test_gd_is_not_the_exact_mle_and_more_steps_approach_it():
    ctxs = contexts(41, 5, 4, 1)
    gaps = []
    exact = bk.make_policy("ada-ofu-ecolog", lam=0.5, update_every=40)
    play(exact, ctxs)
    for steps in (5, 2000):
        gd = bk.make_policy(
            "ada-ofu-ecolog",
            lam=0.5,
            update_every=40,
            fit="gd",
            fit_steps=steps,
            fit_lr=0.5,
        )
        play(gd, ctxs)
        gaps.append(np.linalg.norm(gd.model.theta - exact.model.theta))
    assert gaps[0] > 1e-2
    assert gaps[1] < 1e-6


@pytest.mark.parametrize("name", NAMES)
def test_default_params_and_run_ids_are_unchanged(name):
    default = bk.make_policy(name)
    params = default.get_params()
    assert set(params) == OLD_PARAMS
    params.pop("seed")
    old = dict(params)  # the resolved parameters a stored run was hashed with
    assert run_id("e", {}, name, params, 0, 10) == run_id("e", {}, name, old, 0, 10)
    # the GD knobs do not reach the exact fit: same params, same actions
    ignored = bk.make_policy(name, fit="exact", fit_steps=3, fit_lr=1.0, fit_loss="sum")
    assert ignored.get_params() == default.get_params()
    ctxs = contexts(25, 5, 4, 3)
    assert play(bk.make_policy(name, update_every=5), ctxs) == play(
        bk.make_policy(name, update_every=5, fit_steps=3), ctxs
    )


@pytest.mark.parametrize("name", NAMES)
def test_gd_params_are_reported_and_rebuild_the_policy(name):
    policy = bk.make_policy(name, fit="gd", fit_steps=20, fit_loss="sum")
    params = policy.get_params()
    assert params["fit"] == "gd"
    assert (params["fit_steps"], params["fit_lr"], params["fit_loss"]) == (
        20,
        0.01,
        "sum",
    )
    assert bk.make_policy(name, **params).get_params() == params


def test_gd_policy_passes_the_contract_suite():
    cls = type(bk.make_policy("ada-ofu-ecolog"))
    case = PolicyCase(cls, {"update_every": 3, "fit": "gd", "fit_steps": 5})
    check_policy(case, skip={"fuzz"})


@pytest.mark.parametrize(
    ("kwargs", "word"),
    [
        ({"fit": "newton"}, "fit"),
        ({"fit_steps": 0}, "fit_steps"),
        ({"fit_lr": 0.0}, "fit_lr"),
        ({"fit_lr": math.nan}, "fit_lr"),
        ({"fit_loss": "mean_scaled"}, "fit_loss"),
    ],
)
@pytest.mark.parametrize("name", NAMES)
def test_fit_options_are_validated(name, kwargs, word):
    with pytest.raises(ValueError, match=word):
        bk.make_policy(name, **kwargs)


def test_fit_steps_must_be_an_int():
    with pytest.raises(TypeError, match="fit_steps"):
        bk.make_policy("ada-ofu-ecolog", fit="gd", fit_steps=2.5)


@pytest.mark.parametrize(
    ("kwargs", "word"),
    [
        ({"solver": "newton"}, "solver"),
        ({"solver": "gd", "radius": 1.0}, "radius"),
        ({"solver": "gd", "lam": 0.0}, "lam"),
        ({"reduction": "avg"}, "reduction"),
    ],
)
def test_glm_model_solver_is_validated(kwargs, word):
    params = {"lam": 1.0, **kwargs}
    with pytest.raises(ValueError, match=word):
        GLMModel(3, **params)


@pytest.mark.parametrize("name", NAMES)
def test_exact_refits_on_block_encoded_arms_factor_block_by_block(name, monkeypatch):
    """From d = BLOCKS_FROM (lowered here to 12) the Newton refit goes block by block.

    On the classification bandits' block-encoded arms (arm k: x in block k) the policy
    plays the same rounds as with one factorisation of the whole Hessian, its theta equal
    up to rounding.
    """
    from banditkit.glm import mle
    from banditkit.policies.parts.models import linear

    solves: list[bool] = []
    unchecked = mle.fit_logistic_unchecked

    def spy(*args, **kwargs):
        solves.append(kwargs.get("blocks") is not None)
        return unchecked(*args, **kwargs)

    monkeypatch.setattr(linear, "fit_logistic_unchecked", spy)

    def run(blocks_from):
        monkeypatch.setattr(linear, "BLOCKS_FROM", blocks_from)
        env = bk.make_env("classification", dataset="digits", pool=300)
        policy = bk.make_policy(name, update_every=5, seed=0)
        result = bk.simulate(policy, env, horizon=60, seed=0, progress=False)
        return policy, result

    whole, r_whole = run(10**9)
    assert solves and not any(solves)
    solves.clear()
    blocked, r_blocked = run(12)
    assert solves and all(solves)
    assert np.array_equal(r_whole.actions, r_blocked.actions)
    np.testing.assert_allclose(
        blocked.scorer.model.theta, whole.scorer.model.theta, rtol=0, atol=1e-9
    )
