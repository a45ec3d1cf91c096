"""The explicit reverse pass of ``nn.StackedMLP`` against torch.func (any depth)."""

from __future__ import annotations

import pytest
import torch

from banditkit import nn
from banditkit.nn.fit import objective_and_grads


@pytest.mark.parametrize(
    ("depth", "bias", "activation"),
    [(2, False, "relu"), (3, False, "relu"), (4, True, "relu"), (3, True, "sigmoid")],
)
def test_backprop_vjp_equals_torch_func(depth, bias, activation):
    g = torch.Generator().manual_seed(depth)
    net = nn.StackedMLP(5, width=6, depth=depth, bias=bias, activation=activation)
    params = net.init(3, g)
    X = torch.randn(7, 5, generator=g, dtype=torch.float64)
    v = torch.randn(3, 7, generator=g, dtype=torch.float64)
    f_ref, vjp_ref = net.forward_vjp(params, X, method="torch.func")
    f, vjp = net.forward_vjp(params, X, method="backprop")
    torch.testing.assert_close(f, f_ref, rtol=0, atol=1e-12)
    ref, mine = vjp_ref(v), vjp(v)
    assert list(mine) == list(ref)
    for name in ref:
        torch.testing.assert_close(mine[name], ref[name], rtol=0, atol=1e-12)
    rows = nn.Rows(X, torch.randn(3, 7, generator=g, dtype=torch.float64))
    a = nn.fit(net, params, rows, nn.MSE(), steps=5).params
    b = {k: p.clone() for k, p in params.items()}  # GD on torch.func's gradient
    for _ in range(5):
        _, grads = objective_and_grads(net, b, rows, nn.MSE(), method="torch.func")
        for name in b:
            b[name] -= 0.01 * grads[name]
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=0, atol=1e-12)
