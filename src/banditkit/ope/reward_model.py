"""Cross-fitted reward models q[i, k] ~ E[r | x_i, k] for the direct and doubly robust estimators.

A scikit-learn estimator is fitted on the logged pairs (row i, logged action a_i) -> r_i and
predicts every action of every row. Fitting and predicting on the same rows lets the model's
overfitting leak into the estimate (its residuals on the logged actions are too small), so the
rows are split into ``n_folds`` folds and each fold is predicted by a model fitted on the
others [Chernozhukov2018, Def. 3.1]; with 2 folds each model sees half the log.

The features of a (row, action) pair are given one of two ways:

    contexts   (n, K, d): one feature vector per pair (a contextual bandit's arm features)
    features   (n, d):    one vector per row, shared by its actions; the design is
                          [features_i, onehot_K(k)], so a linear model learns one offset per action

A regressor is used through ``predict``; a classifier (``sklearn.base.is_classifier``, for
binary rewards such as clicks) through ``predict_proba`` of the class 1.

References:
    [Chernozhukov2018] V. Chernozhukov, D. Chetverikov, M. Demirer, E. Duflo, C. Hansen,
        W. Newey, J. Robins. Double/debiased machine learning for treatment and structural
        parameters. The Econometrics Journal 21(1), 2018.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from banditkit.core.validation import check_finite_array, check_int

__all__ = ["cross_fit", "design"]


def _check_features(
    contexts: Any, features: Any, n: int, n_actions: int
) -> tuple[np.ndarray | None, np.ndarray | None]:
    if (contexts is None) == (features is None):
        raise ValueError(
            "give exactly one of contexts ((n, K, d) per row and action) and features "
            "((n, d) per row) to fit the regressor."
        )
    if contexts is not None:
        ctx = check_finite_array("contexts", contexts, ndim=3)
        if ctx.shape[:2] != (n, n_actions):
            raise ValueError(
                f"contexts must have shape ({n}, {n_actions}, d); got {ctx.shape}."
            )
        return ctx, None
    feat = check_finite_array("features", features, ndim=2)
    if feat.shape[0] != n:
        raise ValueError(f"features must have {n} rows; got {feat.shape[0]}.")
    return None, feat


def design(
    rows: np.ndarray,
    actions: np.ndarray,
    n_actions: int,
    *,
    contexts: np.ndarray | None = None,
    features: np.ndarray | None = None,
) -> np.ndarray:
    """The design matrix of the pairs (rows[j], actions[j]), one line each.

    Example:
        >>> design(np.array([0, 1]), np.array([1, 0]), 2, features=np.array([[5.0], [6.0]]))
        array([[5., 0., 1.],
               [6., 1., 0.]])
    """
    if contexts is not None:
        return np.asarray(contexts[rows, actions])
    assert features is not None
    return np.hstack([features[rows], np.eye(n_actions)[actions]])


def _predict(model: Any, x: np.ndarray) -> np.ndarray:
    from sklearn.base import is_classifier

    if is_classifier(model):
        classes = list(model.classes_)
        return np.asarray(model.predict_proba(x)[:, classes.index(1)], dtype=np.float64)
    return np.asarray(model.predict(x), dtype=np.float64)


def cross_fit(
    regressor: Any,
    *,
    rewards: np.ndarray,
    actions: np.ndarray,
    n_actions: int,
    contexts: Any = None,
    features: Any = None,
    n_folds: int = 2,
    seed: int = 0,
) -> np.ndarray:
    """Fit ``regressor`` by cross-fitting and predict q (n, K) for every row and action.

    Each fold's rows are predicted by a clone of ``regressor`` fitted on the other folds'
    logged pairs; the folds are a shuffled ``KFold`` with ``random_state=seed``. Predictions
    are made one action at a time, so memory stays O(n d).

    Args:
        regressor: A scikit-learn estimator: a regressor, or a binary classifier of rewards
            in {0, 1} (``predict_proba`` of class 1 is used).
        rewards: (n,) logged rewards.
        actions: (n,) logged actions in [0, n_actions).
        n_actions: K.
        contexts: (n, K, d) features of each (row, action) pair; or
        features: (n, d) features of each row, with the action one-hot appended.
        n_folds: Number of folds, 2 <= n_folds <= n.
        seed: Seed of the fold shuffle.

    Returns:
        q, an (n, K) array of predicted expected rewards.

    Raises:
        ValueError: Bad features, folds, or a ``regressor`` without ``fit``.

    Example:
        >>> from sklearn.linear_model import LinearRegression
        >>> rng = np.random.default_rng(0)
        >>> a = rng.integers(2, size=40); r = 1.0 + a
        >>> q = cross_fit(LinearRegression(), rewards=r, actions=a, n_actions=2,
        ...               features=np.zeros((40, 1)))
        >>> np.round(q[0], 6)
        array([1., 2.])
    """
    from sklearn.base import clone, is_classifier
    from sklearn.model_selection import KFold

    if not hasattr(regressor, "fit"):
        raise ValueError(
            f"regressor must be a scikit-learn estimator with fit; got {regressor!r}."
        )
    n = rewards.shape[0]
    n_folds = check_int("n_folds", n_folds, low=2, high=n)
    ctx, feat = _check_features(contexts, features, n, n_actions)
    classify = is_classifier(regressor)
    if classify and not np.isin(rewards, (0.0, 1.0)).all():
        raise ValueError(
            "rewards must be 0 or 1 to fit a classifier; use a regressor for other rewards."
        )
    q = np.empty((n, n_actions))
    folds = KFold(n_splits=n_folds, shuffle=True, random_state=seed)
    for train, test in folds.split(np.zeros(n)):
        y = rewards[train].astype(np.int64) if classify else rewards[train]
        if classify and np.unique(y).size == 1:  # a fold of clicks without a click
            q[test] = float(y[0])
            continue
        model = clone(regressor)
        model.fit(
            design(train, actions[train], n_actions, contexts=ctx, features=feat), y
        )
        for k in range(n_actions):
            each = np.full(test.shape[0], k)
            q[test, k] = _predict(
                model, design(test, each, n_actions, contexts=ctx, features=feat)
            )
    return q
