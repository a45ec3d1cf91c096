"""nn.ArmPass (the per-round depth-2 passes in NumPy) against torch.func gradients."""

import numpy as np
import pytest
import torch

from banditkit.nn import MLP, ArmPass, Trainer, per_sample_grads
from banditkit.policies.parts.models import NeuralModel


def trained(init: str, activation: str = "relu", d: int = 6, width: int = 8) -> MLP:
    """A network away from its initialisation (the mirrored halves differ)."""
    gen = torch.Generator().manual_seed(3)
    model = MLP(d, width=width, init=init, activation=activation, generator=gen)
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


@pytest.mark.parametrize(
    ("init", "activation"),
    [("mirrored", "relu"), ("standard", "relu"), ("mirrored", "sigmoid")],
)
def test_pass_equals_torch_func(init, activation):
    model = trained(init, activation)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((5, model.d))
    u = rng.random(model.n_params)
    arms = ArmPass(model)
    f, q = arms.sq_norms(X, u)
    f_ref, G = independent(model, X)
    np.testing.assert_allclose(f, f_ref, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(q, (G * G) @ u, rtol=1e-12)
    for k in range(X.shape[0]):
        np.testing.assert_allclose(arms.grad(k), G[k], rtol=1e-12, atol=1e-14)


def test_mirrored_init_gives_exactly_zero():
    model = MLP(7, width=10, generator=torch.Generator().manual_seed(1))
    X = np.random.default_rng(1).standard_normal((6, 7))
    f, _ = ArmPass(model).sq_norms(X, np.ones(model.n_params))
    assert np.array_equal(f, np.zeros(6))


def test_grad_needs_an_unchanged_network():
    model = trained("mirrored")
    arms = ArmPass(model)
    assert arms.grad(0) is None  # no pass yet
    X = np.random.default_rng(2).standard_normal((3, model.d))
    arms.sq_norms(X, np.ones(model.n_params))
    assert arms.grad(1) is not None
    with torch.no_grad():
        model.layer(1)[0].mul_(0.5)  # trained in place: the kept pass is stale
    assert arms.grad(1) is None
    f, _ = arms.sq_norms(X, np.ones(model.n_params))  # reads the new theta
    np.testing.assert_allclose(f, independent(model, X)[0], rtol=1e-12)


def test_supports_only_depth_two_without_biases():
    gen = torch.Generator().manual_seed(0)
    assert ArmPass.supports(MLP(4, width=4, generator=gen))
    assert not ArmPass.supports(MLP(4, width=4, depth=3, generator=gen))
    assert not ArmPass.supports(MLP(4, width=4, bias=True, generator=gen))
    assert not ArmPass.supports(MLP(4, width=4, init="mirrored-blockdiag"))
    with pytest.raises(ValueError, match="depth-2"):
        ArmPass(MLP(4, width=4, depth=3, generator=gen))


def test_neural_model_arm_pass_option():
    def model(arm_pass: str) -> NeuralModel:
        return NeuralModel(
            5,
            width=6,
            depth=2,
            trainer=Trainer(),
            generator=torch.Generator().manual_seed(4),
            arm_pass=arm_pass,
        )

    fast, slow = model("numpy"), model("torch")
    rng = np.random.default_rng(5)
    X, u = rng.standard_normal((4, 5)), rng.random(fast.n_params)
    for m in (fast, slow):
        with torch.no_grad():
            for p in m.mlp.parameters():
                p.add_(0.2)
    f1, q1 = fast.evaluate_sq_norms(X, u)
    f2, q2 = slow.evaluate_sq_norms(X, u)
    np.testing.assert_allclose(f1, f2, rtol=1e-12)
    np.testing.assert_allclose(q1, q2, rtol=1e-12)
    np.testing.assert_allclose(fast.scored_features(2), slow.features(X)[2], rtol=1e-12)
    assert slow.scored_features(2) is None  # the torch pass keeps nothing
    with pytest.raises(ValueError, match="arm_pass"):
        model("jax")
