"""NeuralLinearModel: the Model protocol on the last hidden layer, trained by nn.fit."""

import numpy as np
import pytest
import torch

from banditkit import nn
from banditkit.linalg import Gram
from banditkit.nn import Trainer
from banditkit.policies.parts.history import History, PairHistory, SetHistory
from banditkit.policies.parts.models import (
    Model,
    NeuralLinearModel,
    NeuralModel,
    observations_of,
)
from banditkit.policies.parts.scorer import Scorer


def _model(d: int = 3, **kwargs) -> NeuralLinearModel:
    kwargs.setdefault("width", 8)
    return NeuralLinearModel(d, generator=torch.Generator().manual_seed(0), **kwargs)


def _rows(n: int = 40, d: int = 3, seed: int = 0) -> History:
    rng = np.random.default_rng(seed)
    history = History(d)
    for _ in range(n):
        x = rng.standard_normal(d)
        history.append(
            x, np.sin(x[0]) + 0.1 * rng.standard_normal(), rng.uniform(0.5, 2)
        )
    return history


def _relu(z: np.ndarray) -> np.ndarray:
    return np.maximum(z, 0.0)


def test_the_protocol_is_satisfied():
    model = _model(width=6)
    assert isinstance(model, Model)
    assert model.members == 1 and model.linearised is False and model.n_params == 6
    X = np.random.default_rng(1).standard_normal((5, 3))
    mean, phi = model.evaluate(X)
    assert mean.shape == (5,) and phi.shape == (5, model.n_params)
    np.testing.assert_array_equal(model.predict(X), mean)
    np.testing.assert_array_equal(model.features(X), phi)
    inv = np.linspace(0.5, 1.5, 6)
    mean2, sq = model.evaluate_sq_norms(X, inv)
    np.testing.assert_array_equal(mean2, mean)
    np.testing.assert_allclose(sq, (phi * phi) @ inv, rtol=1e-12)
    assert model.latent(X[2]) == mean[2]


@pytest.mark.parametrize("depth", [2, 3])
def test_features_are_the_last_hidden_layer_by_hand(depth):
    model = _model(width=6, depth=depth)
    p = {k: v[0].numpy() for k, v in model.params.items()}
    X = np.random.default_rng(2).standard_normal((7, 3))
    h = X
    for i in range(depth - 1):
        h = _relu(h @ p[f"layers.{i}.weight"].T + p[f"layers.{i}.bias"])
    head = p[f"layers.{depth - 1}.weight"][0]
    bias = p[f"layers.{depth - 1}.bias"][0]
    np.testing.assert_allclose(model.features(X), h, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(
        model.predict(X), h @ head + bias, rtol=1e-12, atol=1e-14
    )
    net_f = model.net.forward(model.params, torch.from_numpy(X))[0].numpy()
    np.testing.assert_allclose(model.predict(X), net_f, rtol=1e-12, atol=1e-14)
    assert np.any(h == 0.0) and np.any(h > 0.0)  # the relu is active on both sides


def test_fit_on_rows_reduces_the_loss_and_is_nn_fit():
    history = _rows()
    model = _model(lam=0.5, steps=50)
    start = {k: v.clone() for k, v in model.params.items()}
    objective = model.fit(history)
    assert objective[-1] < 0.5 * objective[0]
    direct = nn.fit(
        model.net,
        start,
        nn.Rows(history.X, history.y, history.w),
        nn.MSE(),
        penalties=[nn.L2Penalty(0.5, start)],
        optimizer="adam",
        lr=0.01,
        steps=50,
        reduction="mean",
    )
    for name, value in direct.params.items():
        assert torch.equal(model.params[name], value), name
    # a second fit warm-starts from the trained parameters: J starts lower
    assert model.fit(history)[0] < objective[0]


def test_penalty_options_select_centre_and_group():
    model = _model(lam=2.0, center="zero", penalised="head")
    (penalty,) = model.penalties()
    assert penalty.center is None and penalty.names == model.net.head_names
    (penalty,) = _model(lam=2.0).penalties()
    assert penalty.center is not None and penalty.names is None
    assert _model(lam=0.0).penalties() == []


def _duels(n: int, rng: np.random.Generator) -> tuple[PairHistory, callable]:
    def utility(X):
        return 3.0 * (np.abs(X[:, 0]) - X[:, 1])  # nonlinear in x_0

    pairs = PairHistory(2)
    for _ in range(n):
        x1, x2 = rng.uniform(-1, 1, (2, 2))
        p_win = 1.0 / (1.0 + np.exp(-(utility(x1[None]) - utility(x2[None]))[0]))
        pairs.append(x1, x2, float(rng.random() < p_win))
    return pairs, utility


def _sign_agreement(predict, utility, rng) -> float:
    A, B = rng.uniform(-1, 1, (2, 500, 2))
    true = utility(A) - utility(B)
    keep = np.abs(true) > 0.3  # pairs a preference can tell apart
    return float(np.mean(np.sign(predict(A) - predict(B))[keep] == np.sign(true)[keep]))


def test_fit_on_pairs_learns_a_btl_preference():
    rng = np.random.default_rng(3)
    pairs, utility = _duels(600, rng)
    model = _model(d=2, width=16, loss="btl", lam=1.0, steps=300)
    objective = model.fit(pairs)
    assert objective[-1] < objective[0]
    assert _sign_agreement(model.predict, utility, rng) > 0.9


def test_neural_model_fits_pairs_with_the_btl_loss():
    rng = np.random.default_rng(4)
    pairs, utility = _duels(600, rng)
    trainer = Trainer(
        loss="bce",
        lam=1.0,
        center="init",
        optimizer="adam",
        lr=0.01,
        steps=300,
        reduction="mean",
    )
    model = NeuralModel(
        2,
        width=16,
        depth=2,
        trainer=trainer,
        generator=torch.Generator().manual_seed(0),
    )
    model.fit(pairs)
    assert _sign_agreement(model.predict, utility, rng) > 0.9
    with pytest.raises(TypeError, match="PairHistory"):
        NeuralModel(
            2,
            width=4,
            depth=2,
            trainer=Trainer(loss="mse"),
            generator=torch.Generator().manual_seed(0),
        ).fit(pairs)


def test_weights_of_the_history_enter_the_loss():
    rng = np.random.default_rng(5)
    pairs, _ = _duels(30, rng)
    obs = observations_of(pairs)
    assert torch.equal(obs.weights, torch.ones(30, dtype=torch.float64))
    doubled = PairHistory(2)
    for x1, x2, o in zip(pairs.X1, pairs.X2, pairs.outcome, strict=True):
        doubled.append(x1, x2, o, weight=2.0)
    one, two = _model(d=2, loss="btl", lam=0.0), _model(d=2, loss="btl", lam=0.0)
    j1, j2 = one.fit(pairs)[0], two.fit(doubled)[0]
    assert j2 == pytest.approx(2.0 * j1, rel=1e-12)


def test_fit_on_sets_learns_the_mnl_utility_and_refuses_other_histories():
    rng = np.random.default_rng(6)
    sets = SetHistory(2)
    for _ in range(200):
        items = rng.uniform(-1, 1, (int(rng.integers(1, 4)), 2))
        v = np.exp(3.0 * items[:, 0])
        probs = np.append(v, 1.0) / (v.sum() + 1.0)
        slot = int(rng.choice(len(v) + 1, p=probs))
        sets.append(items, slot if slot < len(v) else -1)
    model = _model(d=2, loss="mnl", steps=200)
    model.fit(sets)
    test = rng.uniform(-1, 1, (200, 2))
    assert np.corrcoef(model.predict(test), test[:, 0])[0, 1] > 0.8
    with pytest.raises(TypeError, match="SetHistory"):
        model.fit(History(2))
    before = {k: v.clone() for k, v in model.params.items()}
    assert model.fit(SetHistory(2)) == []  # nothing to fit on: unchanged
    assert all(torch.equal(before[k], model.params[k]) for k in before)


def test_state_round_trip_is_bit_identical():
    history = _rows()
    model = _model(steps=10)
    model.fit(history)
    state = model.state_dict()
    assert all(isinstance(v, np.ndarray) for v in state.values())
    other = NeuralLinearModel(
        3, width=8, steps=10, generator=torch.Generator().manual_seed(9)
    )
    other.load_state_dict(state)
    X = np.random.default_rng(7).standard_normal((4, 3))
    np.testing.assert_array_equal(other.predict(X), model.predict(X))
    np.testing.assert_array_equal(other.features(X), model.features(X))
    model.fit(history)
    other.fit(history)  # same centre params_0 restored: the same next fit
    for name in model.params:
        assert torch.equal(model.params[name], other.params[name])
    with pytest.raises(ValueError, match="state params"):
        _model(width=4).load_state_dict(state)


def test_scorer_widths_shrink_along_played_directions():
    model = _model(width=8)
    scorer = Scorer(model, Gram(model.n_params, 1.0), nu=1.0)
    rng = np.random.default_rng(8)
    arms = rng.standard_normal((6, 3))
    _, before = scorer.score(arms)
    for _ in range(20):
        scorer.score(arms)
        _, _, z = scorer.played(arms, 0)
        scorer.add(z)
    _, after = scorer.score(arms)
    assert after[0] < 0.3 * before[0]
    live = before > 0  # an arm with phi(x) = 0 (all relus off) has width 0 throughout
    assert np.all(after[~live] == 0.0)
    ratios = after[live] / before[live]
    assert ratios[0] == ratios.min() and ratios.max() > 10 * ratios[0]
    assert np.all(after <= before + 1e-12)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"loss": "hinge"}, "loss"),
        ({"lam": -1.0}, "lam"),
        ({"center": "prior"}, "center"),
        ({"penalised": "body"}, "penalised"),
        ({"lr": 0.0}, "lr"),
        ({"steps": 0}, "steps"),
        ({"optimizer": "sgd"}, "optimizer"),
        ({"reduction": "max"}, "reduction"),
        ({"depth": 1}, "depth"),
    ],
)
def test_bad_arguments_name_themselves(kwargs, match):
    with pytest.raises(ValueError, match=match):
        _model(**kwargs)
