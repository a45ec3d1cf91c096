"""Cross-fitted reward models of banditkit.ope."""

import numpy as np
import pytest
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.neighbors import KNeighborsRegressor

from banditkit.ope import cross_fit


def test_shared_features_get_the_action_one_hot_and_recover_an_additive_model():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 2))
    a = rng.integers(3, size=200)
    offsets = np.array([0.0, 1.0, -2.0])
    r = x @ [0.5, -1.0] + offsets[a]
    q = cross_fit(LinearRegression(), rewards=r, actions=a, n_actions=3, features=x)
    expected = (x @ [0.5, -1.0])[:, None] + offsets
    np.testing.assert_allclose(q, expected, atol=1e-8)


def test_contexts_give_one_feature_vector_per_row_and_action():
    rng = np.random.default_rng(1)
    ctx = rng.normal(size=(100, 4, 3))
    a = rng.integers(4, size=100)
    r = ctx[np.arange(100), a] @ [1.0, 2.0, 3.0]
    q = cross_fit(LinearRegression(), rewards=r, actions=a, n_actions=4, contexts=ctx)
    np.testing.assert_allclose(q, ctx @ [1.0, 2.0, 3.0], atol=1e-8)


def test_no_row_is_predicted_by_a_model_that_saw_it():
    # 1-nearest-neighbour memorises: fitted on its own rows it would return r_i exactly.
    rng = np.random.default_rng(2)
    x = rng.normal(size=(50, 2))
    a = np.zeros(50, dtype=int)
    r = rng.normal(size=50)
    q = cross_fit(
        KNeighborsRegressor(n_neighbors=1),
        rewards=r,
        actions=a,
        n_actions=1,
        features=x,
    )
    assert not np.any(np.isclose(q[:, 0], r))


def test_a_classifier_predicts_click_probabilities_and_folds_without_clicks_are_constant():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(300, 1))
    a = rng.integers(2, size=300)
    r = (rng.random(300) < 0.2 + 0.6 * a).astype(float)
    q = cross_fit(LogisticRegression(), rewards=r, actions=a, n_actions=2, features=x)
    assert np.all((q > 0) & (q < 1))
    assert q[:, 1].mean() > q[:, 0].mean() + 0.4
    r_one_click = np.zeros(300)
    r_one_click[0] = 1.0
    q = cross_fit(
        LogisticRegression(), rewards=r_one_click, actions=a, n_actions=2, features=x
    )
    assert np.all(np.isfinite(q)) and q.max() < 0.5


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        (
            {"features": np.zeros((10, 1)), "contexts": np.zeros((10, 2, 1))},
            "exactly one",
        ),
        ({"features": np.zeros((9, 1))}, "features"),
        ({"contexts": np.zeros((10, 3, 1))}, "contexts"),
        ({"features": np.zeros((10, 1)), "n_folds": 1}, "n_folds"),
    ],
)
def test_bad_arguments_name_themselves(kwargs, name):
    with pytest.raises(ValueError, match=name):
        cross_fit(
            LinearRegression(),
            rewards=np.zeros(10),
            actions=np.zeros(10, dtype=int),
            n_actions=2,
            **kwargs,
        )


def test_a_classifier_needs_binary_rewards_and_a_regressor_needs_fit():
    args = {
        "actions": np.zeros(4, dtype=int),
        "n_actions": 1,
        "features": np.zeros((4, 1)),
    }
    with pytest.raises(ValueError, match="rewards must be 0 or 1"):
        cross_fit(LogisticRegression(), rewards=np.full(4, 0.5), **args)
    with pytest.raises(ValueError, match="regressor"):
        cross_fit(object(), rewards=np.zeros(4), **args)
