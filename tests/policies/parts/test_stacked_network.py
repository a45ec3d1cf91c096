"""StackedNetwork (parts.stacked_network) against the members' own networks."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from banditkit import nn
from banditkit.nn import MLP, Trainer, flat_params
from banditkit.policies.parts.history import History
from banditkit.policies.parts.models import NeuralModel
from banditkit.policies.parts.stacked import StackedHistory
from banditkit.policies.parts.stacked_network import StackedNetwork, fit_members


def _members(S: int, d: int, m: int, **trainer: object) -> list[NeuralModel]:
    defaults = {"loss": "bce", "lam": 0.4, "lr": 0.05, "steps": 20, "reduction": "mean"}
    return [
        NeuralModel(
            d,
            width=m,
            depth=2,
            trainer=Trainer(**{**defaults, **trainer}),
            generator=torch.Generator().manual_seed(s),
        )
        for s in range(S)
    ]


@pytest.mark.parametrize(
    ("loss", "center"), [("bce", "zero"), ("mse", "init"), ("mse", "zero")]
)
def test_fit_members_matches_the_trainer_per_member(loss: str, center: str) -> None:
    gen = torch.Generator().manual_seed(0)
    S, n, d, m = 3, 25, 4, 6
    nets = [MLP(d, width=m, generator=gen) for _ in range(S)]
    X = torch.rand(S, n, d, generator=gen, dtype=torch.float64)
    y = (torch.rand(S, n, generator=gen) < 0.5).to(torch.float64)
    thetas = [flat_params(net).clone() for net in nets]
    for net in nets:  # trained-looking parameters, so that theta_0 differs from theta
        nn.set_flat_params(net, flat_params(net) + 0.1)
    w1 = torch.stack([flat_params(net)[: m * d].view(m, d) for net in nets])
    w2 = torch.stack([flat_params(net)[m * d :] for net in nets])
    c = torch.stack(thetas)
    lam, lr, steps = 0.4, 0.05, 30
    objective = fit_members(
        nets[0].network,
        w1,
        w2,
        (X, y),
        loss=loss,
        lam=lam,
        center=(c[:, : m * d].reshape(S, m, d), c[:, m * d :])
        if center == "init"
        else None,
        lr=lr,
        steps=steps,
        reduction="mean",
    )
    trainer = Trainer(
        loss=loss, lam=lam, lr=lr, steps=steps, reduction="mean", center=center
    )
    for s, net in enumerate(nets):
        net.theta0.copy_(thetas[s])
        trace = trainer.fit(net, X[s], y[s])
        theta = flat_params(net)
        torch.testing.assert_close(
            w1[s].reshape(-1), theta[: m * d], rtol=1e-12, atol=0
        )
        torch.testing.assert_close(w2[s], theta[m * d :], rtol=1e-12, atol=0)
        assert objective[-1, s].item() == pytest.approx(trace[-1], rel=1e-12)
        assert objective[0, s].item() == pytest.approx(trace[0], rel=1e-12)


def test_a_member_is_backtracked_at_its_own_step_as_alone() -> None:
    """A member whose fit climbs is refitted at lr / 10 (kept); the others are not."""
    S, d, m, n = 3, 4, 6, 20
    rng = np.random.default_rng(0)
    make = lambda: _members(S, d, m, loss="mse", center="init", lr=0.5)  # noqa: E731
    alone = make()
    for model in alone:
        model.backtrack = 2
    stacked_members = make()
    for model in stacked_members:
        model.backtrack = 2
    stacked = StackedNetwork(stacked_members)
    history = StackedHistory(S, d, "float64", capacity=n)
    rows, targets = rng.standard_normal((S, n, d)), rng.standard_normal((S, n))
    rows[1] *= 8.0  # member 1's rows: lr 0.5 overshoots
    for t in range(n):
        history.append(rows[:, t], targets[:, t])
    stacked.fit(history)
    for s, model in enumerate(alone):
        separate = History(d)
        for t in range(n):
            separate.append(rows[s, t], targets[s, t])
        model.fit(separate)
        assert stacked.lrs[s] == model.trainer.lr
        theta = flat_params(model.mlp)
        torch.testing.assert_close(
            stacked.w1[s].reshape(-1), theta[: m * d], rtol=1e-10, atol=1e-12
        )
        torch.testing.assert_close(
            stacked.w2[s], theta[m * d :], rtol=1e-10, atol=1e-12
        )
    assert len(set(stacked.lrs.tolist())) > 1  # the members were lowered differently


def test_passes_and_refits_equal_each_members_network() -> None:
    S, d, m, K, n = 3, 4, 6, 5, 30
    rng = np.random.default_rng(0)
    members = _members(S, d, m)
    stacked = StackedNetwork(members)
    history = StackedHistory(S, d, "float64", capacity=8)  # grows
    rows, labels = rng.standard_normal((S, n, d)), (rng.random((S, n)) < 0.5) * 1.0
    for t in range(n):
        history.append(rows[:, t], labels[:, t])
    stacked.fit(history)
    for s, model in enumerate(members):  # independent: each network trained alone
        model.trainer.fit(
            model.mlp, torch.from_numpy(rows[s]), torch.from_numpy(labels[s])
        )
    arms = rng.standard_normal((S, K, d))
    inv_diag = rng.random((S, stacked.n_params))
    latent, sq = stacked.evaluate_sq_norms(arms, inv_diag)
    actions = np.array([0, 3, 4])
    x, played, z = stacked.played(actions)
    for s, model in enumerate(members):
        f, G = model.evaluate(arms[s])
        np.testing.assert_allclose(latent[s], f, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(sq[s], (G * G) @ inv_diag[s], rtol=1e-10)
        np.testing.assert_allclose(z[s], G[actions[s]], rtol=1e-10, atol=1e-12)
        assert played[s] == pytest.approx(f[actions[s]], rel=1e-10)
        np.testing.assert_array_equal(x[s], arms[s, actions[s]])
    np.testing.assert_allclose(
        stacked.latent(x), played, rtol=1e-12
    )  # the same parameters


def test_only_networks_it_can_hold_are_stacked() -> None:
    assert StackedNetwork.of(_members(2, 3, 4, loss="mse", center="init")) is not None
    assert StackedNetwork.of(_members(2, 3, 4)) is not None
    assert StackedNetwork.of(_members(2, 3, 4, optimizer="adam")) is None
    grouped = _members(2, 3, 4, loss="mse")
    grouped[0].grouped = True
    assert StackedNetwork.of(grouped) is None
    with pytest.raises(ValueError, match="depth 2"):
        StackedNetwork(_members(2, 3, 4, optimizer="adam"))


def test_a_fit_that_no_step_size_settles_raises_and_keeps_nothing() -> None:
    S, d, m, n = 2, 3, 4, 6
    stacked = StackedNetwork(_members(S, d, m, loss="mse", center="init"))
    history = StackedHistory(S, d, "float64", capacity=n)
    rng = np.random.default_rng(1)
    for _ in range(n):
        history.append(rng.standard_normal((S, d)), np.array([0.5, 1e300]))
    w1, w2, lrs = stacked.w1.clone(), stacked.w2.clone(), stacked.lrs.copy()
    with pytest.raises(FloatingPointError, match=r"members \[1\].*lr / 10"):
        stacked.fit(history)
    torch.testing.assert_close(stacked.w1, w1, rtol=0, atol=0)
    torch.testing.assert_close(stacked.w2, w2, rtol=0, atol=0)
    np.testing.assert_array_equal(stacked.lrs, lrs)
