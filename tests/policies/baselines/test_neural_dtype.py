"""float32 compute for the neural policies and the trainer (issue 16).

The network, its training and its gradients may run in float32; what the model hands to
the policy (f, g, q) and the Gram built on it stay float64.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import banditkit as bk
from banditkit import nn
from banditkit.core.simulate import simulate
from banditkit.policies.parts.history import History
from banditkit.policies.parts.models import NeuralModel


def _model(dtype: str) -> NeuralModel:
    trainer = nn.Trainer(
        loss="mse", lam=4.0, center="init", lr=0.01, steps=30, reduction="mean"
    )
    return NeuralModel(
        5,
        width=8,
        depth=2,
        trainer=trainer,
        generator=torch.Generator().manual_seed(3),
        dtype=dtype,
    )


def test_float32_model_matches_float64_to_single_precision() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4, 5))
    history = History(5)
    for x in rng.normal(size=(40, 5)):
        history.append(x, float(np.tanh(x.sum())))
    m64, m32 = _model("float64"), _model("float32")
    assert m32.mlp.theta0.dtype == torch.float32
    # the same draws: theta_0 of float32 is theta_0 of float64 rounded
    np.testing.assert_array_equal(
        m32.mlp.theta0.numpy(), m64.mlp.theta0.numpy().astype(np.float32)
    )
    for model in (m64, m32):
        model.fit(history)
    f64, G64 = m64.evaluate(X)
    f32, G32 = m32.evaluate(X)
    assert f32.dtype == G32.dtype == np.float64  # what the Grams see is float64
    np.testing.assert_allclose(f32, f64, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(G32, G64, rtol=1e-4, atol=1e-5)
    inv_diag = 1.0 / (1.0 + np.arange(m64.n_params))
    _, q64 = m64.evaluate_sq_norms(X, inv_diag)
    _, q32 = m32.evaluate_sq_norms(X, inv_diag)
    assert q32.dtype == np.float64
    np.testing.assert_allclose(q32, q64, rtol=1e-4)
    np.testing.assert_allclose(m32.predict(X), f32, rtol=1e-6, atol=1e-7)
    assert m32.latent(X[0]) == pytest.approx(f32[0], rel=1e-6, abs=1e-7)


def test_nn_fit_runs_in_the_params_dtype() -> None:
    net = nn.StackedMLP(3, width=6)
    gen = torch.Generator().manual_seed(0)
    X = torch.randn(30, 3, generator=gen, dtype=torch.float64)
    y = torch.sin(X.sum(1))
    results = {}
    for dtype in (torch.float64, torch.float32):
        params = net.init(2, torch.Generator().manual_seed(1), dtype=dtype)
        rows = nn.Rows(X, y, dtype=dtype)
        penalty = nn.L2Penalty(0.1)
        results[dtype] = nn.fit(
            net, params, rows, nn.MSE(), penalties=[penalty], steps=40, reduction="mean"
        )
        assert results[dtype].params["layers.0.weight"].dtype == dtype
        assert results[dtype].history.dtype == dtype
    torch.testing.assert_close(
        results[torch.float32].history.double(),
        results[torch.float64].history,
        rtol=1e-4,
        atol=1e-5,
    )


@pytest.mark.parametrize("name", ["neural-ucb", "neural-ts"])
def test_float32_policy_keeps_a_float64_gram(name: str) -> None:
    env = bk.make_env("logistic", d=4, n_arms=3)
    policy = bk.make_policy(
        name, width=8, steps=5, update_every=5, dtype="float32", gram="full", seed=0
    )
    run = simulate(policy, env, horizon=12, seed=0, progress=False)
    assert np.isfinite(run.cumulative_regret).all()
    assert policy.model.mlp.theta0.dtype == torch.float32
    assert policy.design.matrix.dtype == np.float64
    assert policy.get_params()["dtype"] == "float32"


def test_dtype_is_validated() -> None:
    with pytest.raises(ValueError, match="dtype"):
        bk.make_policy("neural-ucb", dtype="float16")
    with pytest.raises(ValueError, match="dtype"):
        _model("half")


def test_float32_model_fits_duels() -> None:
    from banditkit.policies.parts.history import PairHistory

    rng = np.random.default_rng(1)
    history = PairHistory(5)
    for _ in range(20):
        x1, x2 = rng.normal(size=5), rng.normal(size=5)
        history.append(x1, x2, float(x1.sum() > x2.sum()))
    trainer = nn.Trainer(loss="bce", lam=1.0, lr=0.05, steps=20, reduction="mean")
    fitted = {}
    for dtype in ("float64", "float32"):
        model = NeuralModel(
            5,
            width=8,
            depth=2,
            trainer=trainer,
            generator=torch.Generator().manual_seed(0),
            dtype=dtype,
        )
        model.fit(history)
        fitted[dtype] = nn.flat_params(model.mlp).double().numpy()
    np.testing.assert_allclose(
        fitted["float32"], fitted["float64"], rtol=1e-4, atol=1e-5
    )


def test_neurallog_float32_in_practical_mode_only() -> None:
    env = bk.make_env("logistic", d=4, n_arms=3)
    policy = bk.make_policy(
        "neurallog-ucb2", width=8, steps=5, update_every=5, dtype="float32", seed=0
    )
    run = simulate(policy, env, horizon=12, seed=0, progress=False)
    assert np.isfinite(run.cumulative_regret).all()
    assert policy.model.mlp.theta0.dtype == torch.float32
    with pytest.raises(ValueError, match="dtype"):
        bk.make_policy("neurallog-ucb1", mode="theory", dtype="float32")


def test_grouped_rows_train_in_the_network_dtype() -> None:
    # ``grouped`` (ensemble reproduction) and ``dtype`` (speed) compose: the grouped rows
    # are handed to the trainer in the network's dtype, and the decisions match the
    # ungrouped fit on a fixed arm set
    env = bk.make_env("nonlinear", function="quadratic", d=5, n_arms=6)
    actions = {}
    for grouped in (False, True):
        policy = bk.make_policy(
            "neural-ucb", grouped=grouped, dtype="float32", width=8, seed=0
        )
        actions[grouped] = simulate(policy, env, horizon=40, seed=0).actions
    np.testing.assert_array_equal(actions[False], actions[True])


@pytest.mark.parametrize(
    ("dtype", "backtracked"), [("float32", False), ("float64", True)]
)
def test_a_fit_that_ends_on_rounding_noise_is_not_backtracked(
    monkeypatch, dtype, backtracked
) -> None:
    """An end 1e-6 above the start is float32's rounding, a climb in float64.

    Before, every such end divided the step by 10 for good: Neural-UCB in float32 went
    from lr 1e-3 to 1e-9 in 1,400 rounds (docs/logistic.md).
    """
    model = _model(dtype)
    model.backtrack = 2
    monkeypatch.setattr(
        NeuralModel, "_fit_once", lambda self, history: [1.0, 1.0 + 1e-6]
    )
    history = History(5)
    history.append(np.ones(5), 1.0)
    model.fit(history)
    assert (model.trainer.lr < 0.01) is backtracked
