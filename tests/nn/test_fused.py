"""The fused GD loop of nn.fit (nn.fused) against the generic step, bitwise."""

import pytest
import torch

from banditkit.nn import BCE, MSE, L2Penalty, Rows, StackedMLP, fit
from banditkit.nn._fused import fusable
from banditkit.nn.fit import objective_and_grads
from banditkit.nn.network import NeuralLinear


def generic_gd(net, params, obs, loss, penalties, step, steps):
    """The generic loop of nn.fit written out: objective_and_grads, then the update."""
    params = {k: v.clone() for k, v in params.items()}
    history = []
    workspace: dict[str, torch.Tensor] = {}
    with torch.no_grad():
        for _ in range(steps):
            value, grads = objective_and_grads(
                net, params, obs, loss, penalties, workspace=workspace
            )
            history.append(value)
            for name, p in params.items():
                p.sub_(grads[name], alpha=step)
    return params, torch.stack(history)


def problem(n, d, width, dtype, loss, center):
    gen = torch.Generator().manual_seed(n + width)
    net = StackedMLP(d, width=width)
    params = net.init(1, gen, dtype=dtype)
    X = torch.randn(n, d, generator=gen, dtype=torch.float64) / d**0.5
    y = (torch.rand(n, generator=gen, dtype=torch.float64) < 0.5).double()
    if loss == "mse":
        y = y + 0.3 * torch.randn(n, generator=gen, dtype=torch.float64)
    obs = Rows(X, y, dtype=dtype)
    c = None if center == "zero" else {k: v.clone() for k, v in params.items()}
    penalties = [L2Penalty(0.7, c), L2Penalty(0.0)]
    return net, params, obs, BCE() if loss == "bce" else MSE(), penalties


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize(
    ("n", "d", "width", "loss", "center"),
    [
        (1, 3, 4, "bce", "zero"),
        (37, 5, 8, "mse", "init"),
        (400, 20, 20, "bce", "init"),
        # relu, BCE, one L2 term without a centre, record="ends": the plain steps
        (400, 20, 20, "bce", "zero"),
    ],
)
def test_fused_equals_the_generic_loop_bitwise(n, d, width, loss, center, dtype):
    net, params, obs, loss_fn, penalties = problem(n, d, width, dtype, loss, center)
    assert fusable(net, params, obs, loss_fn, penalties, "auto")
    for reduction, steps in (("sum", 1), ("mean", 25)):
        scale = 1.0 / n if reduction == "mean" else 1.0
        want, history = generic_gd(
            net, params, obs, loss_fn, penalties, 0.05 * scale, steps
        )
        got = fit(
            net,
            params,
            obs,
            loss_fn,
            penalties=penalties,
            lr=0.05,
            steps=steps,
            reduction=reduction,
        )
        for name in params:
            assert torch.equal(got.params[name], want[name]), name
        assert torch.equal(got.history, history * scale)
        ends = fit(
            net,
            params,
            obs,
            loss_fn,
            penalties=penalties,
            lr=0.05,
            steps=steps,
            reduction=reduction,
            record="ends",
        )
        # relu, BCE, one L2 term without a centre and unrecorded steps: the units
        # layout, equal up to rounding; every other case is the rows layout, bitwise
        units = loss == "bce" and center == "zero" and steps > 2
        kept = [0, steps - 1] if steps > 1 else [0]
        tol = (1e-12 if dtype == torch.float64 else 1e-5) if units else 0.0
        for name in params:
            torch.testing.assert_close(
                ends.params[name], want[name], rtol=tol, atol=tol
            )
        torch.testing.assert_close(
            ends.history, history[kept] * scale, rtol=tol, atol=tol
        )


def test_fusable_only_for_the_fused_case():
    net, params, obs, loss_fn, penalties = problem(
        10, 3, 4, torch.float64, "bce", "zero"
    )
    assert fusable(net, params, obs, loss_fn, penalties, "auto")
    assert not fusable(net, params, obs, loss_fn, penalties, "torch.func")
    two = StackedMLP(3, width=4).init(2, torch.Generator().manual_seed(0))
    assert not fusable(net, two, obs, loss_fn, penalties, "auto")
    weighted = Rows(obs.X, obs.y, torch.ones(10, dtype=torch.float64))
    assert not fusable(net, params, weighted, loss_fn, penalties, "auto")
    deep = StackedMLP(3, width=4, depth=3)
    deep_params = deep.init(1, torch.Generator().manual_seed(0))
    assert not fusable(deep, deep_params, obs, loss_fn, [], "auto")
    linear = NeuralLinear(3, width=4)
    lin_params = linear.init(1, torch.Generator().manual_seed(0))
    assert not fusable(linear, lin_params, obs, loss_fn, [], "auto")
    group = L2Penalty(1.0, names=["layers.1.weight"])
    assert not fusable(net, params, obs, loss_fn, [group], "auto")


def test_record_is_validated():
    net, params, obs, loss_fn, _ = problem(10, 3, 4, torch.float64, "bce", "zero")
    with pytest.raises(ValueError, match="record"):
        fit(net, params, obs, loss_fn, record="some")


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_units_layout_equals_the_generic_loop_up_to_rounding(dtype):
    # relu, BCE, one L2 term without a centre, record="ends": the (m, N) steps
    net, params, obs, loss_fn, penalties = problem(400, 20, 20, dtype, "bce", "zero")
    want, history = generic_gd(net, params, obs, loss_fn, penalties, 0.05 / 400, 30)
    got = fit(
        net,
        params,
        obs,
        loss_fn,
        penalties=penalties,
        lr=0.05,
        steps=30,
        reduction="mean",
        record="ends",
    )
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    for name in params:
        torch.testing.assert_close(got.params[name], want[name], rtol=tol, atol=tol)
    torch.testing.assert_close(got.history, history[[0, 29]] / 400, rtol=tol, atol=tol)


def test_units_layout_is_chosen_where_it_applies():
    net, params, obs, loss_fn, penalties = problem(
        50, 4, 6, torch.float64, "bce", "zero"
    )
    want, _ = generic_gd(net, params, obs, loss_fn, penalties, 0.05, 5)
    for record, steps in (("all", 5), ("ends", 2)):  # nothing unrecorded: rows, bitwise
        got = fit(
            net,
            params,
            obs,
            loss_fn,
            penalties=penalties,
            lr=0.05,
            steps=steps,
            record=record,
        )
        ref, _ = generic_gd(net, params, obs, loss_fn, penalties, 0.05, steps)
        for name in params:
            assert torch.equal(got.params[name], ref[name]), name
    units = fit(
        net, params, obs, loss_fn, penalties=penalties, lr=0.05, steps=5, record="ends"
    )
    for name in params:
        torch.testing.assert_close(
            units.params[name], want[name], rtol=1e-12, atol=1e-13
        )
