import pytest
import torch

from banditkit.nn import (
    BCE,
    MLP,
    MNL,
    BradleyTerry,
    Gaussian,
    L2Penalty,
    Pairs,
    Rows,
    Sets,
    StackedMLP,
    fit,
    flat_params,
    stack_params,
    train,
)
from tests.nn.helpers import gen, rand, randn

M, N, D = 4, 30, 3


def member(obs, k: int):
    """Member k's own data as a one-member container."""

    def row(v):
        return None if v is None else (v[k : k + 1] if v.ndim == 2 else v)

    if isinstance(obs, Rows):
        return Rows(obs.X, row(obs.y), row(obs.weights))
    if isinstance(obs, Pairs):
        return Pairs(obs.X, obs.first, obs.second, row(obs.y), row(obs.weights))
    return Sets(obs.X, obs.items, obs.choice, row(obs.weights))


def setups():
    X = randn(N, D)
    labels = (rand(N, seed=1) < 0.5).double()
    bootstrap = torch.randint(0, 3, (M, N), generator=gen(2)).double()
    first, second = torch.arange(0, N - 1), torch.arange(1, N)
    items = torch.randint(-1, N, (12, 4), generator=gen(3))
    items[:, 0] = torch.arange(12)
    choice = torch.randint(-1, 1, (12,), generator=gen(4))
    return [
        ("bce-bootstrap", BCE(), Rows(X, labels, bootstrap)),
        ("gaussian-perturbed", Gaussian(0.5), Rows(X, randn(M, N, seed=5))),
        ("btl", BradleyTerry(), Pairs(X, first, second, rand(N - 1, seed=6))),
        ("mnl", MNL(), Sets(X, items, choice, rand(M, 12, seed=7))),
    ]


@pytest.mark.parametrize("setup", setups(), ids=[s[0] for s in setups()])
@pytest.mark.parametrize("optimizer", ["gd", "adam"])
@pytest.mark.parametrize("depth", [2, 3])
def test_stack_equals_members_trained_one_by_one(setup, optimizer, depth):
    _, loss, obs = setup
    net = StackedMLP(D, width=6, depth=depth)
    params0 = net.init(M, gen(0))
    anchors = net.init(M, gen(1))  # per-member random prior
    kw = dict(optimizer=optimizer, lr=0.01, steps=15, reduction="mean")

    def penalties(k=None):
        pick = (
            (lambda p: p)
            if k is None
            else (lambda p: {n: v[k : k + 1] for n, v in p.items()})
        )
        return [L2Penalty(0.5, pick(anchors)), L2Penalty(0.1, None, net.head_names)]

    stacked = fit(net, params0, obs, loss, penalties=penalties(), **kw)
    separate = fit(
        net, params0, obs, loss, penalties=penalties(), separate_members=True, **kw
    )
    assert stacked.history.shape == (15, M)
    for k in range(M):
        one = {n: p[k : k + 1] for n, p in params0.items()}
        alone = fit(net, one, member(obs, k), loss, penalties=penalties(k), **kw)
        for n in params0:
            if depth > 2:  # separate_members: the stack computes member by member
                assert torch.equal(separate.params[n][k], alone.params[n][0]), n
            torch.testing.assert_close(
                stacked.params[n][k], alone.params[n][0], rtol=0, atol=1e-12
            )
        torch.testing.assert_close(
            stacked.history[:, k], alone.history[:, 0], rtol=1e-12, atol=0
        )
    # members differ (own init, own data) and training moved them
    assert not torch.equal(
        stacked.params["layers.0.weight"][0], stacked.params["layers.0.weight"][1]
    )
    assert not torch.equal(
        stacked.params["layers.0.weight"], params0["layers.0.weight"]
    )


@pytest.mark.parametrize("optimizer", ["gd", "adam"])
def test_one_member_fit_is_the_trainer_bitwise(optimizer):
    X, labels = randn(N, D), (rand(N, seed=1) < 0.5).double()
    model = MLP(D, width=8, generator=gen(0))
    params = {k: v.clone() for k, v in stack_params(model).items()}
    center = {k: v.clone() for k, v in params.items()}
    history = train(
        model, X, labels, lam=0.3, center="init", optimizer=optimizer, lr=0.05, steps=25
    )
    result = fit(
        model.network,
        params,
        Rows(X, labels),
        BCE(),
        penalties=[L2Penalty(0.3, center)],
        optimizer=optimizer,
        lr=0.05,
        steps=25,
    )
    assert torch.equal(
        torch.cat([p.reshape(-1) for p in result.params.values()]), flat_params(model)
    )
    assert result.history[:, 0].tolist() == history


def test_penalty_on_a_group_leaves_the_others_alone():
    net = StackedMLP(D, width=6)
    params = net.init(2, gen(0))
    grads = {k: torch.zeros_like(p) for k, p in params.items()}
    value, grads = L2Penalty(2.0, None, net.head_names).apply(params, grads)
    assert float(grads["layers.0.weight"].abs().sum()) == 0.0
    assert torch.equal(grads["layers.1.weight"], 2.0 * params["layers.1.weight"])
    expected = (params["layers.1.weight"] ** 2).reshape(2, -1).sum(1)
    torch.testing.assert_close(value, expected)
    with pytest.raises(ValueError, match="center lacks"):
        L2Penalty(1.0, {"x": torch.zeros(1)}, net.head_names)


def test_zero_bootstrap_weight_equals_dropping_the_row():
    X, labels = randn(N, D), (rand(N, seed=1) < 0.5).double()
    net = StackedMLP(D, width=6)
    params = net.init(1, gen(0))
    w = torch.ones(1, N, dtype=torch.float64)
    w[0, :5] = 0.0
    a = fit(net, params, Rows(X, labels, w), BCE(), steps=10)
    b = fit(net, params, Rows(X[5:], labels[5:]), BCE(), steps=10)
    for n in params:
        torch.testing.assert_close(a.params[n], b.params[n], rtol=0, atol=1e-12)


def test_warm_start_and_inplace():
    X, labels = randn(N, D), (rand(N, seed=1) < 0.5).double()
    net = StackedMLP(D, width=6)
    params = net.init(2, gen(0))
    before = {k: v.clone() for k, v in params.items()}
    once = fit(net, params, Rows(X, labels), BCE(), steps=20)
    assert all(torch.equal(params[k], before[k]) for k in params)  # not in place
    half = fit(net, params, Rows(X, labels), BCE(), steps=10)
    twice = fit(net, half.params, Rows(X, labels), BCE(), steps=10, inplace=True)
    assert twice.params["layers.0.weight"] is half.params["layers.0.weight"]
    for k in params:
        assert torch.equal(once.params[k], twice.params[k])
    assert bool((once.history[-1] < once.history[0]).all())


def test_fit_validates():
    X, labels = randn(N, D), (rand(N, seed=1) < 0.5).double()
    net = StackedMLP(D, width=6)
    params = net.init(2, gen(0))
    rows = Rows(X, labels)
    with pytest.raises(ValueError, match="obs must be Pairs for BradleyTerry"):
        fit(net, params, rows, BradleyTerry())
    with pytest.raises(ValueError, match=r"obs\.weights has 3 member rows"):
        fit(net, params, Rows(X, labels, torch.ones(3, N)), BCE())
    with pytest.raises(ValueError, match=r"obs\.X must have d = 3"):
        fit(net, params, Rows(X[:, :2], labels), BCE())
    with pytest.raises(ValueError, match=r"penalties\[0\] names unknown"):
        fit(net, params, rows, BCE(), penalties=[L2Penalty(1.0, None, ["w"])])
    bad_center = net.init(3, gen(1))
    with pytest.raises(
        ValueError, match=r"penalties\[0\]\.center\['layers.0.weight'\]"
    ):
        fit(net, params, rows, BCE(), penalties=[L2Penalty(1.0, bad_center)])
    with pytest.raises(ValueError, match="lr must be"):
        fit(net, params, rows, BCE(), lr=0.0)
    with pytest.raises(ValueError, match="optimizer must be one of"):
        fit(net, params, rows, BCE(), optimizer="sgd")


def test_penalty_outside_the_trainer_records_no_graph() -> None:
    # the trainer runs the penalty under no_grad; called on its own with parameters
    # that require grad, it still returns plain tensors of the right values
    theta = {"a": torch.ones(2, 3, requires_grad=True), "b": torch.full((2, 1), 2.0)}
    center = {"a": torch.zeros(1, 3), "b": torch.ones(1, 1)}
    grads = {"a": torch.zeros(2, 3), "b": torch.zeros(2, 1)}
    value, out = L2Penalty(0.5, center).apply(theta, grads)
    assert value.grad_fn is None and out["a"].grad_fn is None
    assert value.tolist() == [0.25 * (3 + 1)] * 2  # (lam / 2) ||theta - c||^2
    assert out["b"].tolist() == [[0.5], [0.5]]
    zero, _ = L2Penalty(0.0).apply(theta, grads)
    assert zero.tolist() == [0.0, 0.0]
