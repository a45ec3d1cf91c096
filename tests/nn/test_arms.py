"""nn.ArmPass (the per-round passes, either kernel) against torch.func gradients."""

import numpy as np
import pytest
import torch

from banditkit.nn import MLP, ArmPass, Trainer, per_sample_grads
from banditkit.nn._arms import supports
from banditkit.policies.parts.models import NeuralModel


def trained(
    init: str,
    activation: str = "relu",
    d: int = 6,
    width: int = 8,
    depth: int = 2,
    bias: bool = False,
) -> MLP:
    """A network away from its initialisation (the mirrored halves differ)."""
    gen = torch.Generator().manual_seed(3)
    model = MLP(
        d,
        width=width,
        depth=depth,
        bias=bias,
        init=init,
        activation=activation,
        generator=gen,
    )
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.3 * torch.randn(p.shape, generator=gen, dtype=p.dtype))
    return model


def independent(model: MLP, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """f by the module's forward and G by torch.func (vmap of grad), per arm."""
    Xt = torch.from_numpy(X)
    with torch.no_grad():
        f = model(Xt).numpy()
    G = per_sample_grads(model, Xt, method="torch.func").numpy()
    return f, G


NETWORKS = [
    # the NumPy kernel
    ("mirrored", "relu", 2, False),
    ("standard", "relu", 2, False),
    ("mirrored", "sigmoid", 2, False),
    # the explicit torch pass: biases, deeper networks
    ("standard", "sigmoid", 2, True),
    ("mirrored", "relu", 3, False),
    ("mirrored-blockdiag", "sigmoid", 4, True),
]


@pytest.mark.parametrize(("init", "activation", "depth", "bias"), NETWORKS)
def test_pass_equals_torch_func(init, activation, depth, bias):
    model = trained(init, activation, depth=depth, bias=bias)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((5, model.d))
    u = rng.random(model.n_params)
    arms = ArmPass(model)
    assert (arms._numpy is not None) == (depth == 2 and not bias)
    f_ref, G = independent(model, X)
    f, q = arms.sq_norms(X, u)
    np.testing.assert_allclose(f.numpy(), f_ref, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(q.numpy(), (G * G) @ u, rtol=1e-12)
    for k in range(X.shape[0]):
        np.testing.assert_allclose(arms.grad(k), G[k], rtol=1e-12, atol=1e-14)
    f2, G2 = arms.grads(X)
    np.testing.assert_allclose(f2.numpy(), f_ref, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(G2.numpy(), G, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(arms.forward(X).numpy(), f_ref, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("depth", [2, 3])
def test_mirrored_init_gives_exactly_zero(depth):
    model = MLP(7, width=10, depth=depth, generator=torch.Generator().manual_seed(1))
    X = np.random.default_rng(1).standard_normal((6, 7))
    arms = ArmPass(model)
    f, _ = arms.sq_norms(X, np.ones(model.n_params))
    assert np.array_equal(f.numpy(), np.zeros(6))
    assert np.array_equal(arms.grads(X)[0].numpy(), np.zeros(6))
    assert np.array_equal(arms.forward(X).numpy(), np.zeros(6))


@pytest.mark.parametrize("bias", [False, True])
def test_grad_needs_an_unchanged_network(bias):
    model = trained("standard", bias=bias)
    arms = ArmPass(model)
    assert arms.grad(0) is None  # no pass yet
    X = np.random.default_rng(2).standard_normal((3, model.d))
    arms.sq_norms(X, np.ones(model.n_params))
    assert arms.grad(1) is not None
    with torch.no_grad():
        model.layer(1)[0].mul_(0.5)  # trained in place: the kept pass is stale
    assert arms.grad(1) is None
    f, _ = arms.sq_norms(X, np.ones(model.n_params))  # reads the new theta
    np.testing.assert_allclose(f.numpy(), independent(model, X)[0], rtol=1e-12)


def test_the_kernel_follows_the_network():
    gen = torch.Generator().manual_seed(0)
    assert supports(MLP(4, width=4, generator=gen))
    assert not supports(MLP(4, width=4, depth=3, generator=gen))
    assert not supports(MLP(4, width=4, bias=True, generator=gen))
    assert not supports(MLP(4, width=4, init="mirrored-blockdiag"))
    model = MLP(4, width=4, generator=gen)
    assert ArmPass.of(model) is ArmPass.of(model)
    with pytest.raises(TypeError, match=r"nn\.MLP"):
        ArmPass(torch.nn.Linear(2, 1))  # type: ignore[arg-type]


def test_inputs_are_checked():
    model = trained("standard")
    arms = ArmPass(model)
    with pytest.raises(ValueError, match="shape"):
        arms.forward(np.ones((3, model.d + 1)))
    with pytest.raises(ValueError, match="NaN"):
        arms.forward(np.full((2, model.d), np.nan))
    with pytest.raises(ValueError, match="weights"):
        arms.sq_norms(np.ones((2, model.d)), np.ones(3))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_neural_model_scores_and_keeps_the_played_features(dtype):
    model = NeuralModel(
        5,
        width=6,
        depth=2,
        trainer=Trainer(),
        generator=torch.Generator().manual_seed(4),
        dtype=dtype,
    )
    rng = np.random.default_rng(5)
    X, u = rng.standard_normal((4, 5)), rng.random(model.n_params)
    with torch.no_grad():
        for p in model.mlp.parameters():
            p.add_(0.2)
    f, q = model.evaluate_sq_norms(X, u)
    assert f.dtype == q.dtype == np.float64
    f_ref, G = model.evaluate(X)
    tol = 1e-12 if dtype == "float64" else 1e-5
    np.testing.assert_allclose(f, f_ref, rtol=tol)
    np.testing.assert_allclose(q, (G * G) @ u, rtol=tol)
    model.evaluate_sq_norms(X, u)
    np.testing.assert_allclose(model.scored_features(2), G[2], rtol=tol)
    np.testing.assert_allclose(model.predict(X), f_ref, rtol=tol)
    assert model.latent(X[1]) == pytest.approx(f_ref[1], rel=tol)
