import math

import numpy as np
import pytest
import torch

from banditkit.nn import MLP, flat_params, make_generator, set_flat_params


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("depth", [2, 3])
@pytest.mark.parametrize("d", [1, 3, 20])
@pytest.mark.parametrize("activation", ["relu", "sigmoid"])
@pytest.mark.parametrize("bias", [False, True])
def test_mirrored_init_output_is_exactly_zero(dtype, depth, d, activation, bias):
    model = MLP(
        d,
        width=10,
        depth=depth,
        activation=activation,
        bias=bias,
        generator=gen(d),
        dtype=dtype,
    )
    x = 3.0 * torch.randn(64, d, generator=gen(100 + d), dtype=dtype)
    f = model(x)
    assert f.shape == (64,) and f.dtype == dtype
    assert torch.equal(f, torch.zeros_like(f))  # bitwise 0.0, not merely small
    # The hidden units are not trivially dead: the first layer is non-zero.
    assert model.layers[0].weight.abs().sum() > 0


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("depth", [2, 3])
@pytest.mark.parametrize("d", [2, 20, 64])
def test_blockdiag_init_zero_on_symmetrised_inputs(dtype, depth, d):
    model = MLP(
        d,
        width=12,
        depth=depth,
        init="mirrored-blockdiag",
        generator=gen(d),
        dtype=dtype,
    )
    w1 = model.layers[0].weight.detach()
    h, half = 6, d // 2
    assert torch.equal(w1[:h, half:], torch.zeros(h, half, dtype=dtype))
    assert torch.equal(w1[:h, :half], w1[h:, half:])
    u = torch.randn(30, half, generator=gen(7), dtype=dtype)
    x = torch.cat([u, u], dim=1) / math.sqrt(2.0)  # [Bae2025, Assumption 4.2]
    assert torch.equal(model(x), torch.zeros(30, dtype=dtype))
    # Without the symmetry the output is generically non-zero.
    assert model(torch.randn(30, d, generator=gen(8), dtype=dtype)).abs().max() > 0


def test_mirrored_structure_and_variances():
    m, d = 400, 50
    model = MLP(d, width=m, depth=3, generator=gen(0))
    w1, w2, w3 = (layer.weight.detach() for layer in model.layers)
    h = m // 2
    assert torch.equal(w1[:h], w1[h:])  # W_1 = [W; W]
    assert torch.equal(w2[:h, :h], w2[h:, h:])  # [[W, 0], [0, W]]
    assert torch.count_nonzero(w2[:h, h:]) == 0 and torch.count_nonzero(w2[h:, :h]) == 0
    assert torch.equal(w3[0, :h], -w3[0, h:])  # [w, -w]
    # Entries N(0, 4/m) and N(0, 2/m) [Zhou2020, Sec. 3]; relative tolerance ~5 std errors.
    assert w1[:h].var().item() == pytest.approx(4.0 / m, rel=0.03)  # 10,000 draws
    assert w2[:h, :h].var().item() == pytest.approx(4.0 / m, rel=0.03)  # 40,000 draws
    assert w3[0, :h].var().item() == pytest.approx(2.0 / m, rel=0.5)  # 200 draws


def test_standard_init_is_not_symmetric_and_has_he_scale():
    model = MLP(300, width=300, init="standard", bias=True, generator=gen(0))
    w1 = model.layers[0].weight.detach()
    assert w1.var().item() == pytest.approx(2.0 / 300, rel=0.03)
    b1 = model.layers[0].bias.detach()
    assert b1.abs().max() <= 1 / math.sqrt(300) and b1.abs().max() > 0
    x = torch.randn(5, 300, generator=gen(1), dtype=torch.float64)
    assert model(x).abs().min() > 0


def test_odd_width_allowed_for_standard_init():
    model = MLP(3, width=5, init="standard")
    assert model(torch.zeros(2, 3, dtype=torch.float64)).shape == (2,)


@pytest.mark.parametrize(
    ("depth", "bias", "expected"),
    [
        (2, False, 20 * 7 + 20),
        (3, False, 20 * 7 + 400 + 20),
        (3, True, 20 * 7 + 400 + 20 + 41),
    ],
)
def test_n_params_and_flat_order(depth, bias, expected):
    model = MLP(7, width=20, depth=depth, bias=bias, init="standard", generator=gen(3))
    assert model.n_params == expected
    theta = flat_params(model)
    assert theta.shape == (expected,)
    # Documented order: vec(W_1) row-major, [b_1], vec(W_2), [b_2], ...
    pieces = []
    for layer in model.layers:
        pieces.append(layer.weight.detach().reshape(-1))
        if bias:
            pieces.append(layer.bias.detach())
    assert torch.equal(theta, torch.cat(pieces))
    assert theta[1].item() == model.layers[0].weight[0, 1].item()
    assert theta[7].item() == model.layers[0].weight[1, 0].item()
    assert torch.equal(model.theta0, theta)


def test_set_flat_params_round_trip_and_theta0_is_kept():
    model = MLP(4, width=6, depth=3, bias=True, generator=gen(0))
    theta0 = flat_params(model)
    new = torch.arange(model.n_params, dtype=torch.float64) / 100.0
    set_flat_params(model, new)
    assert torch.equal(flat_params(model), new)
    assert model.layers[0].weight[0, 1].item() == pytest.approx(0.01)
    assert torch.equal(model.theta0, theta0)  # theta_0 stays the construction point
    with pytest.raises(ValueError, match="theta must have shape"):
        set_flat_params(model, new[:-1])
    with pytest.raises(ValueError, match="NaN"):
        set_flat_params(model, torch.full_like(new, float("nan")))


def test_same_seed_same_parameters_different_seed_different():
    a = MLP(5, width=8, depth=3, generator=make_generator(np.random.default_rng(1)))
    b = MLP(5, width=8, depth=3, generator=make_generator(np.random.default_rng(1)))
    c = MLP(5, width=8, depth=3, generator=make_generator(np.random.default_rng(2)))
    assert torch.equal(flat_params(a), flat_params(b))
    assert not torch.equal(flat_params(a), flat_params(c))
    # Default generator is deterministic too, and the global RNG is not touched.
    state = torch.random.get_rng_state()
    assert torch.equal(flat_params(MLP(5, width=8)), flat_params(MLP(5, width=8)))
    assert torch.equal(torch.random.get_rng_state(), state)


def test_float32_and_float64_share_the_draws():
    a = MLP(5, width=8, generator=gen(4), dtype=torch.float64)
    b = MLP(5, width=8, generator=gen(4), dtype=torch.float32)
    assert torch.equal(flat_params(a).to(torch.float32), flat_params(b))


def test_make_generator_draws_once_from_numpy_stream():
    rng = np.random.default_rng(0)
    g = make_generator(rng)
    expected = int(np.random.default_rng(0).integers(0, 2**63 - 1))
    assert g.initial_seed() == expected
    assert make_generator(rng).initial_seed() != expected  # the stream advanced
    with pytest.raises(TypeError, match=r"numpy\.random\.Generator"):
        make_generator(0)  # type: ignore[arg-type]


def test_scale_output_multiplies_by_sqrt_width():
    kwargs = dict(width=6, init="standard", generator=None)
    x = torch.randn(4, 3, generator=gen(0), dtype=torch.float64)
    scaled = MLP(3, scale_output=True, **kwargs)(x)
    plain = MLP(3, scale_output=False, **kwargs)(x)
    torch.testing.assert_close(scaled, math.sqrt(6) * plain, rtol=1e-14, atol=0)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(d=3, width=0), "width must be an int"),
        (dict(d=3, width=5), "width must be an even int"),
        (dict(d=3, width=5, init="mirrored-blockdiag"), "width must be an even int"),
        (dict(d=3, width=4, init="mirrored-blockdiag"), "d must be even"),
        (dict(d=3, depth=1), "depth must be an int"),
        (dict(d=0), "d must be an int"),
        (dict(d=3, activation="tanh"), "activation must be one of"),
        (dict(d=3, init="mirored"), "Did you mean 'mirrored'"),
        (dict(d=3, dtype=torch.int64), "dtype must be a floating"),
    ],
)
def test_bad_constructor_arguments(kwargs, match):
    d = kwargs.pop("d")
    with pytest.raises(ValueError, match=match):
        MLP(d, **kwargs)


def test_forward_rejects_wrong_shape():
    with pytest.raises(ValueError, match=r"x must have shape \(n, 3\)"):
        MLP(3, width=4)(torch.zeros(2, 4, dtype=torch.float64))
