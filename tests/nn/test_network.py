import pytest
import torch

from banditkit.nn import (
    MLP,
    NeuralLinear,
    StackedMLP,
    flat_params,
    stack_params,
)
from banditkit.nn import _kernels as kernels
from tests.nn.helpers import gen


def X_of(n: int = 7, d: int = 4, seed: int = 0) -> torch.Tensor:
    return torch.randn(n, d, generator=gen(seed), dtype=torch.float64)


def perturbed(net: StackedMLP, params, seed: int = 5):
    g = gen(seed)
    return {
        k: p + 0.3 * torch.randn(p.shape, generator=g, dtype=p.dtype)
        for k, p in params.items()
    }


@pytest.mark.parametrize("init", ["mirrored", "standard"])
def test_one_generator_draws_members_in_turn_like_successive_mlps(init):
    net = StackedMLP(4, width=6, depth=3, init=init, bias=True)
    params = net.init(3, gen(0))
    g = gen(0)
    for k in range(3):
        model = MLP(4, width=6, depth=3, init=init, bias=True, generator=g)
        flat = torch.cat([p[k].reshape(-1) for p in params.values()])
        assert torch.equal(flat, flat_params(model))


def test_one_generator_per_member():
    net = StackedMLP(4, width=6)
    params = net.init(2, [gen(3), gen(8)])
    for k, seed in enumerate([3, 8]):
        model = MLP(4, width=6, generator=gen(seed))
        for (name, p), q in zip(params.items(), model.parameters(), strict=True):
            assert torch.equal(p[k], q.detach()), name
    with pytest.raises(ValueError, match="generator must be one generator or 2"):
        net.init(2, [gen(0)])


@pytest.mark.parametrize(
    ("depth", "bias", "activation"),
    [(2, False, "relu"), (2, True, "sigmoid"), (3, True, "relu")],
)
def test_stack_forward_equals_each_member_mlp(depth, bias, activation):
    kw = dict(width=6, depth=depth, bias=bias, activation=activation)
    net = StackedMLP(4, **kw)
    params = perturbed(net, net.init(3, gen(1)))
    f = net.forward(params, X_of())
    assert f.shape == (3, 7)
    for k in range(3):
        model = MLP(4, **kw)
        with torch.no_grad():
            for p, q in zip(params.values(), model.parameters(), strict=True):
                q.copy_(p[k])
            torch.testing.assert_close(f[k], model(X_of()), rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    ("depth", "bias", "activation"),
    [(2, False, "relu"), (2, True, "sigmoid"), (3, True, "relu")],
)
def test_vjp_equals_autograd_for_every_member(depth, bias, activation):
    net = StackedMLP(4, width=6, depth=depth, bias=bias, activation=activation)
    params = perturbed(net, net.init(3, gen(1)))
    X = X_of()
    v = torch.randn(3, 7, generator=gen(9), dtype=torch.float64)
    leaves = {k: p.clone().requires_grad_(True) for k, p in params.items()}
    ref = torch.autograd.grad((net.forward(leaves, X) * v).sum(), list(leaves.values()))
    methods = ["auto", "torch.func"] + (["closed-form"] if depth == 2 else [])
    for method in methods:
        f, vjp = net.forward_vjp(params, X, method=method)
        torch.testing.assert_close(f, net.forward(params, X), rtol=0, atol=1e-12)
        grads = vjp(v)
        assert list(grads) == list(params)
        for g, r in zip(grads.values(), ref, strict=True):
            torch.testing.assert_close(g, r, rtol=1e-10, atol=1e-12)
    if depth != 2:
        with pytest.raises(ValueError, match="closed-form' needs depth 2"):
            net.forward_vjp(params, X, method="closed-form")


def test_neural_linear_features_feed_a_linear_head():
    net = NeuralLinear(4, width=5, depth=3)
    assert net.head_names == ["layers.2.weight", "layers.2.bias"]
    assert net.representation_names == [
        "layers.0.weight",
        "layers.0.bias",
        "layers.1.weight",
        "layers.1.bias",
    ]
    params = net.init(2, gen(0))
    X = X_of()
    phi = net.features(params, X)
    assert phi.shape == (2, 7, 5) and bool((phi >= 0).all())  # relu
    w, b = params["layers.2.weight"][:, 0], params["layers.2.bias"]
    expected = torch.einsum("mnj,mj->mn", phi, w) + b
    torch.testing.assert_close(net.forward(params, X), expected, rtol=0, atol=1e-12)
    assert not net.scale_output and net.bias and net.init_name == "standard"


def test_stack_params_are_views_of_the_module():
    model = MLP(3, width=4, generator=gen(0))
    params = stack_params(model)
    params["layers.1.weight"].zero_()
    assert float(model(X_of(d=3)).detach().abs().sum()) == 0.0


def test_check_params_rejects_wrong_keys_and_shapes():
    net = StackedMLP(3, width=4)
    params = net.init(2, gen(0))
    assert net.check_params(params) == 2
    with pytest.raises(ValueError, match="must have the keys"):
        net.check_params({"layers.0.weight": params["layers.0.weight"]})
    bad = dict(params, **{"layers.1.weight": torch.zeros(3, 1, 4)})
    with pytest.raises(
        ValueError, match=r"params\['layers.1.weight'\] must have shape"
    ):
        net.check_params(bad)
    with pytest.raises(ValueError, match="width must be an even int"):
        StackedMLP(3, width=5)
    with pytest.raises(ValueError, match="n_members"):
        net.init(0, gen(0))


@pytest.mark.parametrize(
    ("M", "activation", "bias"), [(1, "relu", False), (3, "sigmoid", True)]
)
def test_workspace_reuses_blocks_and_changes_no_value(M, activation, bias):
    net = StackedMLP(4, width=6, activation=activation, bias=bias)
    params = net.init(M, gen(1))
    X = X_of()
    v = torch.randn(M, 7, generator=gen(2), dtype=torch.float64)
    f, vjp = net.forward_vjp(params, X)
    workspace: dict[str, torch.Tensor] = {}
    f_ws, vjp_ws = net.forward_vjp(params, X, workspace=workspace)
    assert torch.equal(f, f_ws)
    for g, g_ws in zip(vjp(v).values(), vjp_ws(v).values(), strict=True):
        assert torch.equal(g, g_ws)
    blocks = {k: t.data_ptr() for k, t in workspace.items()}
    # M = 1: the trainer's pass (its own buffers, none kept); M > 1: the (N, M width)
    # hidden block and one row block of the blocked layout
    assert set(blocks) == (set() if M == 1 else {"h", "c"})
    net.forward_vjp(params, X, workspace=workspace)[1](v)
    assert {k: t.data_ptr() for k, t in workspace.items()} == blocks


@pytest.mark.parametrize(
    ("activation", "bias"),
    [("relu", False), ("relu", True), ("sigmoid", False), ("sigmoid", True)],
)
def test_vjp_of_a_depth2_stack_can_be_called_again(activation, bias):
    # the trainer's relu pass writes the mask over h; forward_vjp keeps h for every call
    net = StackedMLP(4, width=6, activation=activation, bias=bias)
    params = perturbed(net, net.init(3, gen(1)))
    v1, v2 = (torch.randn(3, 7, generator=gen(k), dtype=torch.float64) for k in (2, 3))
    _, vjp = net.forward_vjp(params, X_of())
    first = vjp(v1)
    second, again = vjp(v2), vjp(v1)
    _, vjp_2 = net.forward_vjp(params, X_of())
    for name, g in first.items():
        assert torch.equal(g, again[name]), name
        assert torch.equal(second[name], vjp_2(v2)[name]), name


@pytest.mark.parametrize(
    ("activation", "bias"), [("sigmoid", False), ("sigmoid", True)]
)
@pytest.mark.parametrize("block_elements", [2 * 3 * 6, 3 * 3 * 6, 2**17])
def test_blocked_rows_equal_autograd_and_each_member_alone(
    monkeypatch, activation, bias, block_elements
):
    # 2 or 3 rows per block over N = 7 rows (a ragged last block), or one block
    monkeypatch.setattr(kernels, "ROW_BLOCK_ELEMENTS", block_elements)
    net = StackedMLP(4, width=6, activation=activation, bias=bias)
    params = perturbed(net, net.init(3, gen(1)))
    X = X_of()
    v = torch.randn(3, 7, generator=gen(9), dtype=torch.float64)
    leaves = {k: p.clone().requires_grad_(True) for k, p in params.items()}
    ref = torch.autograd.grad((net.forward(leaves, X) * v).sum(), list(leaves.values()))
    f, vjp = net.forward_vjp(params, X, workspace={})
    torch.testing.assert_close(f, net.forward(params, X), rtol=0, atol=1e-12)
    grads = vjp(v)
    assert list(grads) == list(params)
    for g, r in zip(grads.values(), ref, strict=True):
        assert g.shape == r.shape
        torch.testing.assert_close(g, r, rtol=1e-10, atol=1e-12)
    for k in range(3):  # member k alone takes the dense (M = 1) layout
        f_k, vjp_k = net.forward_vjp({n: p[k : k + 1] for n, p in params.items()}, X)
        torch.testing.assert_close(f[k], f_k[0], rtol=0, atol=1e-12)
        for g, g_k in zip(grads.values(), vjp_k(v[k : k + 1]).values(), strict=True):
            torch.testing.assert_close(g[k], g_k[0], rtol=0, atol=1e-12)
