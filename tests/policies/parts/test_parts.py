"""The policy parts: models, scorer, selection rules and schedules, by hand-checked cases."""

import numpy as np
import pytest
import torch

from banditkit.glm import LogisticLink, fit_glm
from banditkit.linalg import DiagonalGram, Gram, ShiftedGram
from banditkit.nn import Trainer, forward_and_grads
from banditkit.policies.parts.history import History, PairHistory, SetHistory
from banditkit.policies.parts.models import (
    GLMModel,
    Model,
    NeuralLinearModel,
    NeuralModel,
    RidgeModel,
    TangentModel,
)
from banditkit.policies.parts.schedules import DeterminantDoubling, Grid, Periodic
from banditkit.policies.parts.scorer import Scorer
from banditkit.policies.parts.selection import (
    Greedy,
    Optimistic,
    OptimisticPair,
    Sampled,
    SampledPair,
    TopK,
    pair_argmax,
    top_k,
)
from banditkit.policies.parts.weights import SlopeWeights, UnitWeights


def _neural(d: int = 3, loss: str = "mse") -> NeuralModel:
    trainer = Trainer(loss=loss, lam=1.0, center="init", lr=0.01, steps=30)
    gen = torch.Generator().manual_seed(0)
    return NeuralModel(d, width=4, depth=2, trainer=trainer, generator=gen)


def _models() -> list:
    gen = torch.Generator().manual_seed(0)
    tangent = TangentModel(
        3,
        width=4,
        depth=2,
        trainer=Trainer(center="init"),
        generator=gen,
        linearised=True,
    )
    neural_linear = NeuralLinearModel(3, width=4, steps=10, generator=gen)
    return [RidgeModel(3, 1.0), GLMModel(3, 1.0), _neural(), tangent, neural_linear]


@pytest.mark.parametrize("model", _models(), ids=lambda m: type(m).__name__)
def test_every_model_answers_the_protocol_consistently(model):
    assert isinstance(model, Model) and model.members == 1
    rng = np.random.default_rng(0)
    history = History(3)
    for _ in range(8):
        history.append(rng.standard_normal(3), float(rng.random() < 0.5))
    model.fit(history)
    X = rng.standard_normal((5, 3))
    mean, feats = model.evaluate(X)
    assert mean.shape == (5,) and feats.shape == (5, model.n_params)
    np.testing.assert_allclose(model.predict(X), mean, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(model.features(X), feats, rtol=1e-12)
    inv = np.linspace(0.5, 1.5, model.n_params)
    mean2, sq = model.evaluate_sq_norms(X, inv)
    np.testing.assert_allclose(mean2, mean, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(sq, (feats * feats) @ inv, rtol=1e-10)


def test_glm_on_pairs_is_the_logistic_mle_on_differences():
    rng = np.random.default_rng(1)
    pairs = PairHistory(2)
    for _ in range(40):
        x1, x2 = rng.standard_normal(2), rng.standard_normal(2)
        pairs.append(x1, x2, float((x1 - x2) @ [1.0, -1.0] + rng.normal() > 0))
    model = GLMModel(2, lam=1.0)
    model.fit(pairs)
    direct = fit_glm(pairs.X1 - pairs.X2, pairs.outcome, lam=1.0).theta
    np.testing.assert_allclose(model.theta, direct, atol=1e-9)
    assert model.theta[0] > 0 > model.theta[1]


def test_ridge_fit_absorbs_only_the_new_rows():
    history, model = History(2), RidgeModel(2, 1.0)
    history.append(np.array([1.0, 0.0]), 1.0)
    model.fit(history)
    history.append(np.array([1.0, 1.0]), 0.0)
    model.fit(history)
    model.fit(history)  # nothing new
    np.testing.assert_allclose(model.theta, [0.4, -0.2])  # V = [[3,1],[1,2]], b = (1,0)
    assert model.gram.n_updates == 2


def test_neural_model_trains_on_sets_with_the_mnl_loss():
    rng = np.random.default_rng(2)
    sets = SetHistory(3)
    for _ in range(30):
        items = rng.standard_normal((3, 3))
        sets.append(items, int(np.argmax(items[:, 0])))  # the item with the largest x_0
    model = _neural(loss="mnl")
    before = model.predict(np.eye(3))
    model.fit(sets)
    after = model.predict(np.eye(3))
    assert not np.allclose(before, after)
    # the utility learnt increases along x_0 relative to the other axes
    assert after[0] - before[0] > max(after[1] - before[1], after[2] - before[2])


def test_scorer_width_is_nu_radius_norm_for_each_gram_kind():
    X = np.array([[1.0, 0.0], [1.0, 1.0]])
    model = RidgeModel(2, 1.0)
    for design in (Gram(2, 2.0), DiagonalGram(2, 2.0), ShiftedGram("full", 2, 2.0)):
        design.update(np.array([1.0, 1.0]))
        scorer = Scorer(model, design, nu=3.0, radius=lambda d_eff: 0.5)
        mean, width = scorer.score(X)
        np.testing.assert_allclose(width, 1.5 * design.norms(X), rtol=1e-12)
        np.testing.assert_array_equal(mean, [0.0, 0.0])


def test_scorer_played_returns_the_features_at_selection_time():
    model = _neural(d=2)
    scorer = Scorer(model, Gram(model.n_params, 1.0))
    arms = np.array([[1.0, 0.0], [0.0, 1.0]])
    f, G = forward_and_grads(model.mlp, torch.from_numpy(arms))
    scorer.score(arms)
    history = History(2)
    history.append(arms[1], 1.0)
    model.fit(history)  # theta moves; the cached z must not
    _, latent, z = scorer.played(arms, 1)
    np.testing.assert_array_equal(z, G.numpy()[1])
    assert latent == float(f[1])
    scorer.add(z, 2.0)
    np.testing.assert_allclose(
        scorer.design.matrix, np.eye(model.n_params) + 2.0 * np.outer(z, z)
    )


def test_pair_scores_are_norms_of_feature_differences():
    model = RidgeModel(2, 1.0)
    design = Gram(2, 1.0)
    design.update(np.array([1.0, 0.0]), 3.0)  # V = diag(4, 1)
    scorer = Scorer(model, design, nu=2.0)
    arms = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    mean, width = scorer.pair_scores(arms)
    # ||x_0 - x_1||^2_{V^-1} = 1/4 + 1 ; ||x_0 - x_2|| = 1 ; diagonal 0
    np.testing.assert_allclose(width[0, 1], 2.0 * np.sqrt(1.25))
    np.testing.assert_allclose(width[0, 2], 2.0)
    np.testing.assert_allclose(np.diag(width), 0.0)
    np.testing.assert_allclose(width, width.T)
    assert OptimisticPair(diagonal=False).select(mean, width, None) in {(0, 1), (1, 0)}


def test_pair_scores_apply_the_feature_scale_once_with_a_diagonal_gram():
    model = RidgeModel(3, 1.0)
    design = DiagonalGram(3, 1.0)
    design.update(np.array([1.0, 2.0, 0.5]), 2.0)
    scorer = Scorer(model, design, nu=1.5, feature_scale=0.25)
    arms = np.random.default_rng(0).standard_normal((4, 3))
    _, width = scorer.pair_scores(arms)
    diffs = 0.25 * (arms[:, None, :] - arms[None, :, :]).reshape(16, 3)
    expected = 1.5 * np.sqrt((diffs**2) @ (1.0 / design.diagonal)).reshape(4, 4)
    np.testing.assert_allclose(width, expected, rtol=1e-10, atol=0.0)


def test_rules_on_hand_numbers():
    rng = np.random.default_rng(0)
    mean, width = np.array([0.5, 0.2, 0.0]), np.array([0.0, 0.5, 0.1])
    assert Greedy().select(mean, width, rng) == 0
    assert Optimistic().select(mean, width, rng) == 1
    assert Sampled().select(mean, np.zeros(3), rng) == 0
    assert TopK(2).select(mean, width, rng) == (0, 1)
    assert TopK(5).select(mean, width, rng) == (0, 1, 2)  # at most K arms
    sets = {TopK(2, sampled=True).select(mean, width, rng) for _ in range(200)}
    assert len(sets) > 1  # sampling explores


def test_top_k_breaks_ties_at_random_and_validates():
    rng = np.random.default_rng(0)
    firsts = {top_k(np.zeros(4), 1, rng)[0] for _ in range(100)}
    assert firsts == {0, 1, 2, 3}
    assert top_k(np.zeros(4), 2) == (0, 1)
    with pytest.raises(ValueError, match="k"):
        top_k(np.zeros(3), 4)
    with pytest.raises(ValueError, match="NaN"):
        top_k(np.array([0.0, np.nan]), 1)


def test_pair_argmax_diagonal_switch_and_shape():
    S = np.array([[5.0, 1.0], [2.0, 0.0]])
    assert pair_argmax(S) == (0, 0)
    assert pair_argmax(S, diagonal=False) == (1, 0)
    with pytest.raises(ValueError, match="square"):
        pair_argmax(np.zeros((2, 3)))


def test_schedules():
    assert [t for t in range(1, 10) if Periodic(4).due(t)] == [4, 8]
    assert [t for t in range(1, 30) if Grid([3, 9, 27]).due(t)] == [3, 9, 27]
    with pytest.raises(ValueError, match="rounds"):
        Grid([3, 3])
    with pytest.raises(ValueError, match="factor"):
        DeterminantDoubling(1.0)
    with pytest.raises(ValueError, match="design"):
        DeterminantDoubling().due(1)


def test_determinant_doubling_refits_o_of_d_log_t_times_and_resumes():
    rng = np.random.default_rng(3)
    V, schedule = Gram(3, 1.0), DeterminantDoubling()
    hits, last = [], V.logdet
    for t in range(1, 501):
        V.update(rng.standard_normal(3))
        if schedule.due(t, V):
            assert V.logdet > last + np.log(2.0)
            hits.append(t)
            last = V.logdet
    assert 3 <= len(hits) <= 3 * np.log2(500) + 3
    clone = DeterminantDoubling()
    clone.load_state_dict(schedule.state_dict())
    V.update(10.0 * np.ones(3))
    assert clone.due(501, V) == DeterminantDoubling.due(schedule, 501, V)


def test_sampled_pair_follows_the_widths():
    rng = np.random.default_rng(4)
    mean = np.array([1.0, 0.0, 0.0])
    assert SampledPair().select(mean, np.zeros((3, 3)), rng) == (0, 0)
    assert SampledPair(diagonal=False).select(mean, np.zeros((3, 3)), rng) in {
        (0, 1),
        (0, 2),
        (1, 0),
        (2, 0),
    }
    wide = np.full((3, 3), 10.0)
    picks = {SampledPair().select(mean, wide, rng) for _ in range(200)}
    assert len(picks) > 3


def test_neural_model_refuses_pairs_under_a_rows_loss():
    with pytest.raises(TypeError, match="history"):
        _neural(d=2).fit(PairHistory(2))


def test_constrained_glm_stays_in_its_ball():
    rng = np.random.default_rng(5)
    history = History(2)
    for _ in range(60):
        x = rng.standard_normal(2)
        history.append(x, float(x @ [3.0, 0.0] + rng.normal() > 0))
    free, ball = GLMModel(2, lam=0.1), GLMModel(2, lam=0.1, radius=0.5)
    free.fit(history)
    ball.fit(history)
    assert np.linalg.norm(free.theta) > 0.5
    assert np.linalg.norm(ball.theta) == pytest.approx(0.5, rel=1e-6)
    with pytest.raises(ValueError, match="radius"):
        GLMModel(2, lam=1.0, radius=0.0)


def test_slope_weights_read_the_latent_after_a_refit():
    """w = mu'(f) for the logistic link: 1/4 at f = 0, e^2 / (1 + e^2)^2 at f = 2."""

    class Scripted:  # a model whose refitted latent is 0
        linearised = False

        def latent(self, x):
            return 0.0

    weights, model = SlopeWeights(LogisticLink()), Scripted()
    slope_2 = np.exp(2.0) / (1.0 + np.exp(2.0)) ** 2
    assert weights(model, None, 2.0, False) == pytest.approx(slope_2, rel=1e-12)
    assert weights(model, None, 2.0, True) == 0.25
    assert UnitWeights()(model, None, 2.0, True) == 1.0
