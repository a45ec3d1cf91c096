import math

import pytest
import torch

from banditkit.nn import (
    BCE,
    MNL,
    MSE,
    BradleyTerry,
    Gaussian,
    L2Penalty,
    Pairs,
    Rows,
    Sets,
    StackedMLP,
    loss_and_derivative,
)
from banditkit.nn.fit import objective_and_grads
from tests.nn.helpers import gen, rand, randn

M, N, D = 3, 9, 4


def cases():
    """(name, loss, observations): every loss, with shared and per-member data."""
    X = randn(N, D)
    labels = (rand(N, seed=1) < 0.5).double()
    first = torch.tensor([0, 1, 2, 3, 4, 5, 6, 0])
    second = torch.tensor([1, 2, 3, 4, 5, 6, 7, 8])
    items = torch.tensor([[0, 1, 2], [3, 4, -1], [5, -1, -1], [6, 7, 8], [0, 8, 4]])
    choice = torch.tensor([2, -1, 0, 1, -1])
    return [
        ("bce", BCE(), Rows(X, labels)),
        ("weighted-bce", BCE(), Rows(X, labels, rand(M, N, seed=2) * 2)),
        ("mse", MSE(), Rows(X, randn(N, seed=3))),
        ("gaussian-perturbed", Gaussian(0.5), Rows(X, randn(M, N, seed=3))),
        ("btl", BradleyTerry(), Pairs(X, first, second, rand(8, seed=4))),
        (
            "btl-weighted",
            BradleyTerry(),
            Pairs(X, first, second, (rand(8, seed=4) < 0.5).double(), rand(8) + 0.5),
        ),
        ("mnl", MNL(), Sets(X, items, choice)),
        ("mnl-weighted", MNL(), Sets(X, items, choice, rand(M, 5, seed=5))),
    ]


@pytest.mark.parametrize(("name", "loss", "obs"), cases(), ids=[c[0] for c in cases()])
def test_dloss_df_equals_autograd(name, loss, obs):
    f = randn(M, N, seed=7).requires_grad_(True)
    values, df = loss.value_and_dloss_df(f, obs)
    assert values.shape == (M, obs.n) and df.shape == (M, N)
    (ref,) = torch.autograd.grad(values.sum(), f)
    torch.testing.assert_close(df, ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(("name", "loss", "obs"), cases(), ids=[c[0] for c in cases()])
@pytest.mark.parametrize("depth", [2, 3])
def test_objective_gradient_equals_autograd(name, loss, obs, depth):
    """The trainer's gradient of J = loss + penalties equals autograd to 1e-10."""
    net = StackedMLP(D, width=6, depth=depth, bias=depth == 3)
    params0 = net.init(M, gen(0))
    params = {k: p + 0.3 * randn(*p.shape, seed=11) for k, p in params0.items()}
    anchors = net.init(M, gen(1))
    penalties = [L2Penalty(0.7, params0), L2Penalty(0.2, anchors, net.head_names)]
    value, grads = objective_and_grads(net, params, obs, loss, penalties)
    leaves = {k: p.clone().requires_grad_(True) for k, p in params.items()}
    values, _ = loss.value_and_dloss_df(net.forward(leaves, obs.X), obs)
    ref = values.sum(-1)
    for k, p in leaves.items():
        ref = ref + 0.35 * ((p - params0[k]) ** 2).reshape(M, -1).sum(1)
        if k in net.head_names:
            ref = ref + 0.1 * ((p - anchors[k]) ** 2).reshape(M, -1).sum(1)
    ref_grads = torch.autograd.grad(ref.sum(), list(leaves.values()))
    torch.testing.assert_close(value, ref.detach(), rtol=1e-12, atol=1e-12)
    for g, r in zip(grads.values(), ref_grads, strict=True):
        torch.testing.assert_close(g, r, rtol=1e-10, atol=1e-12)


def test_hand_values():
    zero = torch.zeros(1, 3, dtype=torch.float64)
    X = torch.eye(3, dtype=torch.float64)
    # BTL at equal utilities: log 2 per pair, derivative -+1/2
    values, df = BradleyTerry().value_and_dloss_df(zero, Pairs(X, [0], [1], [1.0]))
    assert float(values) == pytest.approx(math.log(2.0))
    assert df.tolist() == [[-0.5, 0.5, 0.0]]
    # MNL: u = (log 2, 0) offered, choose slot 0: P = 2 / (1 + 2 + 1) = 1/2
    f = torch.tensor([[math.log(2.0), 0.0, 5.0]], dtype=torch.float64)
    values, df = MNL().value_and_dloss_df(f, Sets(X, [[0, 1]], [0]))
    assert float(values) == pytest.approx(math.log(2.0))
    torch.testing.assert_close(df, torch.tensor([[0.5 - 1.0, 0.25, 0.0]]).double())
    # outside option: P(none) = 1 / 4
    values, _ = MNL().value_and_dloss_df(f, Sets(X, [[0, 1]], [-1]))
    assert float(values) == pytest.approx(math.log(4.0))
    # Gaussian: (0 - 1)^2 / (2 * 0.25)
    values, df = Gaussian(0.5).value_and_dloss_df(zero[:, :1], Rows(X[:1], [1.0]))
    assert float(values) == pytest.approx(2.0) and float(df) == pytest.approx(-4.0)


def test_zero_weight_drops_an_observation_for_that_member_only():
    X = randn(N, D)
    f = randn(2, N, seed=3)
    w = torch.ones(2, N, dtype=torch.float64)
    w[1, 4] = 0.0
    labels = (rand(N, seed=1) < 0.5).double()
    values, df = BCE().value_and_dloss_df(f, Rows(X, labels, w))
    assert float(values[1, 4]) == 0.0 and float(df[1, 4]) == 0.0
    assert float(df[0, 4]) != 0.0


def test_old_loss_and_derivative_matches_the_loss_objects():
    f, y = randn(5), rand(5, seed=1)
    w = rand(5, seed=2)
    for name, obj, weights in [
        ("bce", BCE(), None),
        ("weighted-bce", BCE(), w),
        ("mse", MSE(), None),
    ]:
        v, g = loss_and_derivative(name, f, y, weights)
        v2, g2 = obj.value_and_dloss_df(f[None], Rows(torch.zeros(5, 1), y, weights))
        assert torch.equal(v, v2[0]) and torch.equal(g, g2[0])


def test_observations_validate():
    X = torch.zeros(3, 2)
    with pytest.raises(ValueError, match=r"X must have shape \(N, d\)"):
        Rows(torch.zeros(3), [0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match=r"y must have shape \(3,\) or \(M, 3\)"):
        Rows(X, [0.0, 1.0])
    with pytest.raises(ValueError, match="weights must be >= 0"):
        Rows(X, [0.0, 1.0, 0.0], [1.0, -1.0, 1.0])
    with pytest.raises(ValueError, match="y contains NaN"):
        Rows(X, [0.0, float("nan"), 0.0])
    with pytest.raises(ValueError, match=r"second must hold integers in \[0, 3\)"):
        Pairs(X, [0], [3], [1.0])
    with pytest.raises(ValueError, match="first must be an integer array"):
        Pairs(X, [0.5], [1], [1.0])
    with pytest.raises(ValueError, match=r"choice must hold integers in \[-1, 2\)"):
        Sets(X, [[0, 1]], [2])
    with pytest.raises(ValueError, match="choice must point at an offered slot"):
        Sets(X, [[0, -1]], [1])
    with pytest.raises(ValueError, match="sigma"):
        Gaussian(0.0)
