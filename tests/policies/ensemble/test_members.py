"""Ensemble members against independent per-member computations."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from banditkit import nn
from banditkit.core import Context
from banditkit.core.transaction import snapshot
from banditkit.glm import fit_glm, fit_glm_stacked, get_link
from banditkit.policies.ensemble import (
    GLMEnsemble,
    LinES,
    NeuralEnsemble,
    PerturbedHistory,
    RidgeEnsemble,
)
from banditkit.policies.parts.history import History
from banditkit.policies.parts.models import RidgeModel


def _history(rng, d=4, K=6, n=40, M=3, sigma=0.3, arms=None):
    arms = rng.standard_normal((K, d)) / np.sqrt(d) if arms is None else arms
    h = PerturbedHistory(d, M)
    for _ in range(n):
        k = int(rng.integers(arms.shape[0]))
        h.append(arms[k], float(rng.normal(0.3, 0.5)), rng.normal(0, sigma, M))
    return arms, h


def test_lin_es_without_perturbation_is_ridge_exactly():
    rng = np.random.default_rng(0)
    d, K = 5, 8
    arms = rng.standard_normal((K, d))
    policy = LinES(m=1, sigma_r=0.0, lam=0.7, seed=3)
    ridge, rows = RidgeModel(d, 0.7), History(d)
    for _ in range(60):
        ctx = Context(arms=arms)
        k = policy.act(ctx)
        r = float(arms[k] @ np.ones(d) + rng.normal())
        policy.update(ctx, k, r)
        rows.append(arms[k], r)
        ridge.fit(rows)
        np.testing.assert_array_equal(
            policy.model.predict(arms)[0], ridge.predict(arms)
        )
    V = 0.7 * np.eye(d) + rows.X.T @ rows.X
    direct = np.linalg.solve(V, rows.X.T @ rows.y)
    np.testing.assert_allclose(policy.model.theta[:, 0], direct, rtol=1e-10, atol=1e-12)


def test_ridge_members_equal_their_own_solves():
    rng = np.random.default_rng(1)
    _, h = _history(rng, M=4)
    model = RidgeEnsemble(4, 1.5, 4)
    model.fit(h)
    V = 1.5 * np.eye(4) + h.X.T @ h.X
    for j in range(4):
        own = np.linalg.solve(V, h.X.T @ (h.y + h.Z[:, j]))
        np.testing.assert_allclose(model.theta[:, j], own, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(model.predict_member(np.eye(4), j), own, atol=1e-12)


def test_glm_members_newton_equal_fit_glm_on_own_data():
    rng = np.random.default_rng(2)
    _, h = _history(rng, M=3)
    model = GLMEnsemble(4, 1.0, 3, solver="newton")
    model.fit(h)
    for j in range(3):
        own = fit_glm(h.X, h.y + h.Z[:, j], link="logistic", lam=1.0, tol=1e-12).theta
        np.testing.assert_allclose(model.theta[:, j], own, atol=1e-8)


def test_glm_members_gd_equal_a_per_member_loop_on_ungrouped_rows():
    rng = np.random.default_rng(3)
    _, h = _history(rng, M=3)
    model = GLMEnsemble(4, 1.0, 3, steps=50, lr=0.5, reduction="mean")
    model.fit(h)
    mu = get_link("logistic").mean
    for j in range(3):
        theta, y = np.zeros(4), h.y + h.Z[:, j]
        for _ in range(
            50
        ):  # GD on (1/n) [sum_l (b(x^T theta) - y x^T theta) + lam/2 |theta|^2]
            theta -= 0.5 / h.n * (h.X.T @ (mu(h.X @ theta) - y) + theta)
        np.testing.assert_allclose(model.theta[:, j], theta, atol=1e-12)


def test_stacked_gd_sum_reduction_and_validation():
    X = np.eye(2)
    theta = fit_glm_stacked(
        X,
        np.ones(2),
        np.zeros((2, 1)),
        np.ones((2, 1)),
        lam=1.0,
        steps=1,
        lr=0.1,
        reduction="sum",
    )
    # grad at theta = 1: mu(1) - 0 + 1 per coordinate
    np.testing.assert_allclose(theta[:, 0], 1 - 0.1 * (1 / (1 + np.exp(-1)) + 1))
    with pytest.raises(ValueError, match="lam"):
        fit_glm_stacked(X, np.ones(2), np.zeros((2, 1)), np.zeros((2, 1)), lam=0.0)
    with pytest.raises(ValueError, match="theta"):
        fit_glm_stacked(X, np.ones(2), np.zeros((2, 1)), np.zeros((3, 1)), lam=1.0)


def test_neural_members_equal_independent_fits_on_own_data():
    rng = np.random.default_rng(4)
    d, M = 4, 3
    _, h = _history(rng, d=d, M=M)
    model = NeuralEnsemble(
        d,
        M,
        width=6,
        depth=3,
        lam=1.0,
        steps=20,
        lr=0.05,
        reduction="mean",
        generator=torch.Generator().manual_seed(0),
    )
    theta0 = {k: v.clone() for k, v in model.params0.items()}
    model.fit(h)
    X = torch.tensor(h.X)
    for j in range(M):
        own = nn.fit(
            model.net,
            theta0,
            nn.Rows(X, torch.tensor(h.y + h.Z[:, j])),
            nn.MSE(),
            penalties=[nn.L2Penalty(6.0, theta0)],
            lr=0.05,
            steps=20,
            reduction="mean",
        ).params
        for name, value in own.items():
            torch.testing.assert_close(
                model.params[name][j], value[0], atol=1e-10, rtol=0
            )


def test_neural_members_share_theta0_and_start_at_zero_output():
    model = NeuralEnsemble(
        6,
        4,
        width=8,
        depth=3,
        lam=1.0,
        steps=1,
        lr=0.01,
        reduction="mean",
        generator=torch.Generator().manual_seed(1),
    )
    X = np.random.default_rng(0).standard_normal((5, 6))
    out = model.predict(X)
    assert out.shape == (4, 5)
    np.testing.assert_allclose(out, 0.0, atol=1e-12)  # mirrored init: f(x; theta_0) = 0
    for value in model.params.values():
        assert torch.equal(value[0], value[3])


def test_grouped_history_matches_raw_rows():
    rng = np.random.default_rng(5)
    _, h = _history(rng, M=2)
    X, c, S = h.grouped()
    assert c.sum() == h.n and X.shape[0] == h.n_groups <= 6
    for u in range(X.shape[0]):
        rows = np.all(X[u] == h.X, axis=1)
        np.testing.assert_allclose(S[u], (h.y[rows, None] + h.Z[rows]).sum(0))
    restored = PerturbedHistory(4, 2)
    restored.load_state_dict(h.state_dict())
    for a, b in zip(restored.grouped(), h.grouped(), strict=True):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="z"):
        h.append(np.zeros(4), 0.0, np.zeros(3))


@pytest.mark.parametrize("n_rows", [0, 5, 256])  # fresh, mid-buffer, growing
@pytest.mark.parametrize("new_group", [True, False])
def test_a_failed_append_is_undone_by_the_history_transaction(n_rows, new_group):
    """snapshot, append (a new or a known row), restore: as a twin that never appended."""
    rng = np.random.default_rng(7)
    arms = rng.normal(size=(6, 3))
    h, twin = PerturbedHistory(3, 2), PerturbedHistory(3, 2)
    for _ in range(n_rows):
        x, y, z = arms[rng.integers(6)], rng.normal(), rng.normal(size=2)
        h.append(x, y, z)
        twin.append(x, y, z)
    saved = snapshot(h)
    x = rng.normal(size=3) if new_group or n_rows == 0 else h.X[-1].copy()
    h.append(x, 0.5, np.array([0.1, -0.2]))
    h.append(arms[0], 0.25, np.array([0.3, 0.4]))
    saved.restore()
    assert h.n == twin.n and h.n_groups == twin.n_groups
    np.testing.assert_array_equal(h.inverse, twin.inverse)
    for a, b in zip(h.grouped(), twin.grouped(), strict=True):
        np.testing.assert_array_equal(a, b)
    for history in (h, twin):  # and both learn the next rows alike
        history.append(x, 0.5, np.array([0.1, -0.2]))
    for a, b in zip(h.grouped(), twin.grouped(), strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(h.Z, twin.Z)
    assert sorted(h._index.values()) == sorted(twin._index.values())


def test_the_member_played_and_the_stack_are_read_together():
    """``predict_played``: member j's scores and every member's, in one read."""
    rng = np.random.default_rng(6)
    arms, h = _history(rng, M=3)
    ridge, glm = RidgeEnsemble(4, 1.5, 3), GLMEnsemble(4, 1.0, 3, steps=20, lr=0.5)
    neural = NeuralEnsemble(
        4, 3, width=6, depth=3, lam=1.0, steps=20, lr=0.05, reduction="mean",
        generator=torch.Generator().manual_seed(0),
    )  # fmt: skip
    for model in (ridge, glm, neural):
        model.fit(h)
        every = model.predict(arms)
        for j in range(3):
            scores, stack = model.predict_played(arms, j)
            np.testing.assert_array_equal(stack, every)
            if model is neural:  # row j of the one pass: the law's ties are its own
                np.testing.assert_array_equal(scores, every[j])
            else:  # the member's own solve, bitwise as a run that reads only it
                np.testing.assert_array_equal(scores, model.predict_member(arms, j))
            np.testing.assert_allclose(scores, model.predict_member(arms, j), atol=1e-6)
            assert not np.shares_memory(scores, stack)
