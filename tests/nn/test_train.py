import math

import numpy as np
import pytest
import torch
from scipy.optimize import minimize

from banditkit.nn import MLP, Trainer, flat_params, set_flat_params, train


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def data(n: int = 20, d: int = 3, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (rng.random(n) < 1 / (1 + np.exp(-X[:, 0] + X[:, 1]))).astype(float)
    return X, y


def mnl_data(n: int = 12, S: int = 4, d: int = 3, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, S, d))
    mask = rng.random((n, S)) < 0.75
    mask[:, 0] = True
    y = np.array(
        [rng.choice(np.flatnonzero(row)) if rng.random() < 0.7 else -1 for row in mask]
    )
    return X, y, mask


@pytest.mark.parametrize("optimizer", ["gd", "adam"])
@pytest.mark.parametrize("loss", ["bce", "weighted-bce", "mse", "mnl"])
def test_loss_decreases(loss, optimizer):
    model = MLP(3, width=8, generator=gen(0))
    kwargs = {}
    if loss == "mnl":
        X, y, kwargs["mask"] = mnl_data()
    else:
        X, y = data()
    if loss == "weighted-bce":
        kwargs["weights"] = np.linspace(0.1, 2.0, len(y))
    history = train(
        model,
        X,
        y,
        loss=loss,
        optimizer=optimizer,
        lr=0.05,
        steps=50,
        lam=0.1,
        reduction="mean",
        **kwargs,
    )
    assert len(history) == 50 and all(isinstance(v, float) for v in history)
    assert all(math.isfinite(v) for v in history)
    assert history[-1] < history[0]


def reference_objective(
    theta: np.ndarray, X: np.ndarray, y: np.ndarray, loss: str, lam: float
) -> tuple[float, np.ndarray]:
    """Independent J(theta) for depth 2, width 4, sigmoid, no bias, with sqrt(m) scaling."""
    t = torch.tensor(theta, requires_grad=True)
    m, d = 4, X.shape[1]
    W, v = t[: m * d].reshape(m, d), t[m * d :]
    f = math.sqrt(m) * torch.sigmoid(torch.tensor(X) @ W.T) @ v
    yt = torch.tensor(y)
    if loss == "bce":
        # log(1 + e^f) - y f; logaddexp keeps the right derivative at f = 0 exactly,
        # which is where the mirrored init starts.
        data_term = (torch.logaddexp(torch.zeros_like(f), f) - yt * f).sum()
    else:
        data_term = 0.5 * ((f - yt) ** 2).sum()
    J = data_term + 0.5 * lam * (t * t).sum()
    (g,) = torch.autograd.grad(J, t)
    return J.item(), g.numpy()


@pytest.mark.parametrize(
    ("loss", "lr", "steps"), [("bce", 0.05, 3000), ("mse", 0.03, 6000)]
)
def test_gd_reaches_the_lbfgs_optimum(loss, lr, steps):
    X, y = data(n=15)
    model = MLP(3, width=4, activation="sigmoid", generator=gen(1))
    theta0 = flat_params(model).numpy()
    history = train(model, X, y, loss=loss, lam=1.0, lr=lr, steps=steps)
    # Our objective at the start agrees with the independent one.
    assert history[0] == pytest.approx(
        reference_objective(theta0, X, y, loss, 1.0)[0], rel=1e-12
    )
    result = minimize(
        reference_objective,
        theta0,
        args=(X, y, loss, 1.0),
        jac=True,
        method="L-BFGS-B",
        options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 10_000},
    )
    J_gd, g_gd = reference_objective(flat_params(model).numpy(), X, y, loss, 1.0)
    assert np.linalg.norm(g_gd) < 1e-6  # GD stopped at a stationary point
    assert J_gd == pytest.approx(result.fun, rel=1e-6)
    np.testing.assert_allclose(flat_params(model).numpy(), result.x, atol=1e-4)


def test_mean_reduction_is_sum_over_n():
    X, y = data(n=10)
    a, b = MLP(3, width=4, generator=gen(0)), MLP(3, width=4, generator=gen(0))
    h_sum = train(a, X, y, lam=2.0, steps=1, reduction="sum")
    h_mean = train(b, X, y, lam=2.0, steps=1, reduction="mean")
    assert h_mean[0] == pytest.approx(h_sum[0] / 10, rel=1e-14)


@pytest.mark.parametrize("center", ["zero", "init"])
def test_huge_lam_pulls_to_the_center(center):
    X, y = data()
    model = MLP(3, width=6, generator=gen(0))
    theta0 = model.theta0.clone()
    start = theta0 + torch.randn(theta0.shape, generator=gen(5), dtype=theta0.dtype)
    set_flat_params(model, start)
    train(model, X, y, lam=1e6, lr=1e-6, steps=5, center=center)
    target = theta0 if center == "init" else torch.zeros_like(theta0)
    moved = (flat_params(model) - target).norm()
    assert moved < 1e-3 * (start - target).norm()
    assert torch.equal(model.theta0, theta0)


def test_weighted_bce_ignores_zero_weight_points():
    X, y = data(n=20)
    a, b = MLP(3, width=6, generator=gen(2)), MLP(3, width=6, generator=gen(2))
    weights = np.r_[np.ones(12), np.zeros(8)]
    junk_y = 1.0 - y[12:]  # flipped labels on the ignored rows
    h_w = train(
        a, X, np.r_[y[:12], junk_y], loss="weighted-bce", weights=weights, steps=30
    )
    h_b = train(b, X[:12], y[:12], loss="bce", steps=30)
    np.testing.assert_allclose(h_w, h_b, rtol=1e-12)
    torch.testing.assert_close(flat_params(a), flat_params(b), rtol=0, atol=1e-12)


def test_weighted_bce_with_unit_weights_is_bce():
    X, y = data()
    a, b = MLP(3, width=6, generator=gen(2)), MLP(3, width=6, generator=gen(2))
    h_w = train(a, X, y, loss="weighted-bce", weights=np.ones(len(y)), steps=5)
    h_b = train(b, X, y, loss="bce", steps=5)
    assert h_w == h_b


def identity_model() -> MLP:
    """d = 1, width 2, relu, no scaling, W_1 = (1, -1)^T, W_2 = (1, -1): f(x) = x."""
    model = MLP(1, width=2, init="standard", scale_output=False)
    set_flat_params(model, torch.tensor([1.0, -1.0, 1.0, -1.0], dtype=torch.float64))
    return model


def test_mnl_loss_matches_hand_computation():
    """u = x since f is the identity. Two assortments over S = 3 slots:

    row 0: offered slots 0, 1 with u = (0, ln 2); slot 2 (u = 5) is padding; y = 1:
        nll = -ln 2 + log(1 + 1 + 2) = ln 2
    row 1: offered slots 0, 2 with u = (ln 3, 0); slot 1 (u = 7) not offered; y = -1:
        nll = log(1 + 3 + 1) = ln 5
    total = ln 10
    """
    model = identity_model()
    X = np.array([[0.0, math.log(2.0), 5.0], [math.log(3.0), 7.0, 0.0]])[:, :, None]
    mask = np.array([[True, True, False], [True, False, True]])
    history = train(model, X, [1, -1], loss="mnl", mask=mask, lam=0.0, steps=1)
    assert history[0] == pytest.approx(math.log(10.0), rel=1e-14)
    # The outside option alone (nothing offered, no purchase) costs log(1) = 0.
    empty = train(
        identity_model(),
        X[:1],
        [-1],
        loss="mnl",
        mask=np.zeros((1, 3), bool),
        lam=0.0,
        steps=1,
    )
    assert empty[0] == 0.0


def test_bce_matches_hand_computation():
    """f = x: loss = log(1 + e^2) - 2 (y = 1 at x = 2) + log(1 + e^-1) (y = 0 at x = -1)."""
    X = np.array([[2.0], [-1.0]])
    history = train(identity_model(), X, [1.0, 0.0], lam=0.0, steps=1)
    expected = math.log1p(math.exp(2.0)) - 2.0 + math.log1p(math.exp(-1.0))
    assert history[0] == pytest.approx(expected, rel=1e-14)
    # Penalty (lam / 2) * ||theta||^2 with ||theta||^2 = 4.
    history = train(identity_model(), X, [1.0, 0.0], lam=0.5, steps=1)
    assert history[0] == pytest.approx(expected + 1.0, rel=1e-14)


def test_training_is_deterministic_and_follows_dtype():
    X, y = data()
    runs = []
    for _ in range(2):
        model = MLP(3, width=6, generator=gen(9), dtype=torch.float32)
        runs.append(
            (train(model, X, y, optimizer="adam", steps=10), flat_params(model))
        )
    assert runs[0][0] == runs[1][0]
    assert torch.equal(runs[0][1], runs[1][1]) and runs[0][1].dtype == torch.float32


def test_trainer_matches_train():
    X, y = data()
    a, b = MLP(3, width=6, generator=gen(3)), MLP(3, width=6, generator=gen(3))
    trainer = Trainer(loss="mse", lam=0.5, lr=0.005, steps=7, center="init")
    assert trainer.fit(a, X, y) == train(
        b, X, y, loss="mse", lam=0.5, lr=0.005, steps=7, center="init"
    )
    with pytest.raises(ValueError, match="lr must be a float in"):
        Trainer(lr=0.0)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(lr=0.0), r"lr must be a float in \(0, inf\)"),
        (dict(lr=-1.0), r"lr must be a float in \(0, inf\)"),
        (dict(steps=0), r"steps must be an int in \[1, inf\)"),
        (dict(lam=-1.0), r"lam must be a float in \[0, inf\)"),
        (dict(loss="hinge"), "loss must be one of"),
        (dict(optimizer="sgd"), "optimizer must be one of"),
        (dict(center="origin"), "center must be one of"),
        (dict(reduction="avg"), "reduction must be one of"),
        (dict(loss="weighted-bce"), "needs weights"),
        (dict(weights=np.ones(20)), "weights is only used by loss='weighted-bce'"),
        (dict(mask=np.ones((20, 3), bool)), "mask is only used by loss='mnl'"),
        (dict(loss="weighted-bce", weights=-np.ones(20)), "weights must be >= 0"),
        (
            dict(loss="weighted-bce", weights=np.ones(19)),
            r"weights must have shape \(20,\)",
        ),
    ],
)
def test_bad_hyperparameters(kwargs, match):
    X, y = data()
    model = MLP(3, width=4)
    before = flat_params(model)
    with pytest.raises(ValueError, match=match):
        train(model, X, y, **kwargs)
    assert torch.equal(flat_params(model), before)


def test_bad_data():
    X, y = data()
    model = MLP(3, width=4)
    X_nan = X.copy()
    X_nan[3, 1] = np.nan
    with pytest.raises(ValueError, match="X contains NaN"):
        train(model, X_nan, y)
    with pytest.raises(ValueError, match=r"X must have shape \(n, d\)"):
        train(model, X[:, :2], y)
    with pytest.raises(ValueError, match=r"y must have shape \(20,\)"):
        train(model, X, y[:-1])
    with pytest.raises(ValueError, match="y contains NaN"):
        train(model, X, np.full(20, np.nan))
    with pytest.raises(ValueError, match=r"y must lie in \[0, 1\]"):
        train(model, X, 2.0 * y)


def test_bad_mnl_data():
    X, y, mask = mnl_data()
    model = MLP(3, width=4)
    with pytest.raises(ValueError, match=r"X must have shape \(n, S, d\)"):
        train(model, X[:, 0], y, loss="mnl")
    with pytest.raises(ValueError, match="mask must be a bool array"):
        train(model, X, y, loss="mnl", mask=mask[:, :2])
    with pytest.raises(ValueError, match=r"y must hold integers in \[-1, 4\)"):
        train(model, X, np.full(12, 4), loss="mnl", mask=mask)
    with pytest.raises(ValueError, match=r"y must hold integers"):
        train(model, X, np.full(12, 0.5), loss="mnl", mask=mask)
    not_offered = mask.copy()
    not_offered[0, y[0]] = False
    if y[0] >= 0:
        with pytest.raises(ValueError, match="offered slot"):
            train(model, X, y, loss="mnl", mask=not_offered)


def autograd_objective(model, X, y, loss, lam, center, reduction, w=None, mask=None):
    """J(theta) built from the loss functions and model.forward, for torch.autograd."""
    from banditkit.nn.losses import bce_loss, mnl_nll, mse_loss

    X = torch.as_tensor(X, dtype=torch.float64)
    y = torch.as_tensor(y)
    if loss == "mnl":
        n, S, d = X.shape
        total = mnl_nll(model(X.reshape(n * S, d)).reshape(n, S), y, mask).sum()
    elif loss == "mse":
        total = mse_loss(model(X), y.double()).sum()
    else:
        total = bce_loss(model(X), y.double(), w).sum()
    theta = torch.cat([p.reshape(-1) for p in model.parameters()])
    diff = theta if center == "zero" else theta - model.theta0
    total = total + 0.5 * lam * (diff * diff).sum()
    return total / X.shape[0] if reduction == "mean" else total


@pytest.mark.parametrize("loss", ["bce", "weighted-bce", "mse", "mnl"])
@pytest.mark.parametrize(
    ("depth", "bias", "center", "reduction"),
    [(2, False, "zero", "sum"), (2, True, "init", "mean"), (3, False, "init", "sum")],
)
def test_closed_form_gradient_equals_autograd(loss, depth, bias, center, reduction):
    """One GD step of train() moves theta by exactly -lr * grad J (autograd)."""
    model = MLP(3, width=6, depth=depth, bias=bias, generator=gen(2))
    # move away from theta_0 so that no hidden unit sits at its kink
    set_flat_params(
        model,
        model.theta0
        + 0.3 * torch.randn(model.n_params, generator=gen(3), dtype=torch.float64),
    )
    w = mask = None
    kwargs = {}
    if loss == "mnl":
        X, y, mask = mnl_data()
        kwargs["mask"] = mask = torch.as_tensor(mask)
        y = torch.as_tensor(y)
    else:
        X, y = data()
    if loss == "weighted-bce":
        kwargs["weights"] = w = torch.linspace(0.1, 2.0, len(y), dtype=torch.float64)
    ref = autograd_objective(model, X, y, loss, 0.7, center, reduction, w, mask)
    ref_grads = torch.autograd.grad(ref, list(model.parameters()))
    before = flat_params(model)
    lr = 1e-3
    history = train(
        model,
        X,
        y,
        loss=loss,
        lam=0.7,
        center=center,
        reduction=reduction,
        lr=lr,
        steps=1,
        **kwargs,
    )
    assert history[0] == pytest.approx(float(ref.detach()), rel=1e-12)
    step = (before - flat_params(model)) / lr
    ref_flat = torch.cat([g.reshape(-1) for g in ref_grads])
    torch.testing.assert_close(step, ref_flat, rtol=1e-8, atol=1e-10)
