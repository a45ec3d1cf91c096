import itertools

import numpy as np
import pytest
import torch

from banditkit.nn import (
    MLP,
    flat_params,
    forward_and_grads,
    per_sample_grads,
    set_flat_params,
)


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def loop_grads(model: MLP, X: torch.Tensor) -> torch.Tensor:
    """Reference: one autograd.grad call per row (the pattern the library avoids)."""
    params = list(model.parameters())
    rows = []
    for k in range(X.shape[0]):
        fk = model(X[k : k + 1])[0]
        grads = torch.autograd.grad(fk, params)
        rows.append(torch.cat([g.reshape(-1) for g in grads]))
    return torch.stack(rows)


def perturbed(model: MLP, seed: int) -> MLP:
    """Move away from theta_0 so that no symmetry or zero bias hides an error."""
    theta = flat_params(model)
    set_flat_params(
        model,
        theta + 0.3 * torch.randn(theta.shape, generator=gen(seed), dtype=theta.dtype),
    )
    return model


CONFIGS = list(
    itertools.product(
        [2, 3, 4],
        ["relu", "sigmoid"],
        [False, True],
        [False, True],
        ["mirrored", "standard"],
    )
)


@pytest.mark.parametrize(
    ("depth", "activation", "bias", "scale_output", "init"), CONFIGS
)
def test_per_sample_grads_equal_autograd_loop(
    depth, activation, bias, scale_output, init
):
    model = MLP(
        5,
        width=6,
        depth=depth,
        activation=activation,
        bias=bias,
        scale_output=scale_output,
        init=init,
        generator=gen(depth),
    )
    perturbed(model, seed=11)
    X = torch.randn(7, 5, generator=gen(3), dtype=torch.float64)
    expected = loop_grads(model, X)
    G = per_sample_grads(model, X)
    assert G.shape == (7, model.n_params)
    torch.testing.assert_close(G, expected, rtol=0, atol=1e-10)
    G_func = per_sample_grads(model, X, method="torch.func")
    torch.testing.assert_close(G_func, expected, rtol=0, atol=1e-10)
    G_backprop = per_sample_grads(model, X, method="backprop")
    torch.testing.assert_close(G_backprop, expected, rtol=0, atol=1e-10)
    f, G2 = forward_and_grads(model, X)
    # the kernel may be NumPy's (depth 2, no biases): f equals the module's to rounding
    torch.testing.assert_close(f, model(X).detach(), rtol=1e-13, atol=1e-13)
    torch.testing.assert_close(G2, expected, rtol=0, atol=1e-10)
    assert not G.requires_grad and not f.requires_grad


@pytest.mark.parametrize("depth", [2, 3])
@pytest.mark.parametrize("init", ["mirrored", "mirrored-blockdiag"])
def test_grads_at_init_and_blockdiag(init, depth):
    model = MLP(6, width=8, depth=depth, init=init, generator=gen(0))
    X = torch.randn(4, 6, generator=gen(1), dtype=torch.float64)
    f, G = forward_and_grads(model, X)
    torch.testing.assert_close(G, loop_grads(model, X), rtol=0, atol=1e-10)
    if init == "mirrored":
        assert torch.equal(f, torch.zeros(4, dtype=torch.float64))  # exact at theta_0


def test_closed_form_hand_values():
    """Depth 2, width 2, d 1, relu: f = sqrt(2) * (v1 relu(a x) + v2 relu(b x)).

    With a = 1, b = -1, v = (2, 3) and x = 2: f = sqrt(2) * 4, and
    df/da = sqrt(2) * v1 * x = 2 sqrt(2) * 2, df/db = 0 (dead unit),
    df/dv1 = sqrt(2) * relu(a x) = 2 sqrt(2), df/dv2 = 0.
    """
    model = MLP(1, width=2, init="standard")
    set_flat_params(model, torch.tensor([1.0, -1.0, 2.0, 3.0], dtype=torch.float64))
    f, G = forward_and_grads(model, torch.tensor([[2.0]], dtype=torch.float64))
    r2 = np.sqrt(2.0)
    torch.testing.assert_close(f, torch.tensor([4 * r2], dtype=torch.float64))
    torch.testing.assert_close(
        G, torch.tensor([[4 * r2, 0.0, 2 * r2, 0.0]], dtype=torch.float64)
    )


def test_float32_model_gives_float32_grads_from_numpy_input():
    model = MLP(3, width=4, dtype=torch.float32, generator=gen(0))
    G = per_sample_grads(model, np.ones((2, 3)))
    assert G.dtype == torch.float32 and G.shape == (2, 16)


def test_single_arm():
    model = perturbed(MLP(3, width=4, depth=3, generator=gen(0)), 1)
    X = torch.randn(1, 3, generator=gen(2), dtype=torch.float64)
    torch.testing.assert_close(
        per_sample_grads(model, X), loop_grads(model, X), rtol=0, atol=1e-10
    )


@pytest.mark.parametrize(
    ("X", "match"),
    [
        (torch.tensor([[0.0, float("nan"), 1.0]]), "X contains NaN"),
        (torch.tensor([[0.0, float("inf"), 1.0]]), "X contains inf"),
        (torch.zeros(2, 4), r"X must have shape \(n, d\)"),
        (torch.zeros(3), r"X must have shape \(n, d\)"),
        (torch.zeros(0, 3), r"X must have shape \(n, d\)"),
    ],
)
def test_bad_inputs(X, match):
    model = MLP(3, width=4)
    with pytest.raises(ValueError, match=match):
        per_sample_grads(model, X)


def test_bad_method():
    with pytest.raises(ValueError, match="method must be one of"):
        per_sample_grads(MLP(3, width=4), torch.zeros(1, 3), method="jacrev")
    with pytest.raises(ValueError, match="closed-form' needs depth 2"):
        per_sample_grads(
            MLP(3, width=4, depth=3), torch.zeros(1, 3), method="closed-form"
        )


@pytest.mark.parametrize(
    ("depth", "bias"), [(2, False), (2, True), (3, False), (3, True), (4, True)]
)
def test_vjp_and_sq_norms_equal_the_gradient_block(depth, bias):
    from banditkit.nn import forward_and_sq_norms, forward_vjp, set_flat_params

    g = torch.Generator().manual_seed(4)
    model = MLP(5, width=6, depth=depth, bias=bias, generator=g)
    set_flat_params(
        model,
        model.theta0
        + 0.2 * torch.randn(model.n_params, generator=g, dtype=torch.float64),
    )
    X = torch.randn(7, 5, generator=g, dtype=torch.float64)
    v = torch.randn(7, generator=g, dtype=torch.float64)
    u = torch.rand(model.n_params, generator=g, dtype=torch.float64)
    f_ref, G = forward_and_grads(model, X, method="torch.func")
    for method in ("auto", "backprop", "torch.func"):
        f, vjp = forward_vjp(model, X, method=method)
        torch.testing.assert_close(f, f_ref, rtol=1e-13, atol=1e-13)
        flat = torch.cat([p.reshape(-1) for p in vjp(v)])
        torch.testing.assert_close(flat, v @ G, rtol=1e-12, atol=1e-12)
        f2, q = forward_and_sq_norms(model, X, u, method=method)
        torch.testing.assert_close(f2, f_ref, rtol=1e-13, atol=1e-13)
        torch.testing.assert_close(q, (G * G) @ u, rtol=1e-12, atol=1e-12)


def test_sq_norms_reject_weights_of_the_wrong_length():
    from banditkit.nn import forward_and_sq_norms

    model = MLP(3, width=4)
    with pytest.raises(ValueError, match="weights must have shape"):
        forward_and_sq_norms(
            model, torch.ones(2, 3, dtype=torch.float64), torch.ones(5)
        )
