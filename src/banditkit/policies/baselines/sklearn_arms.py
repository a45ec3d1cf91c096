"""A scikit-learn estimator per arm as the learner: bootstrapped UCB / TS, epsilon-greedy, softmax.

Each arm a keeps ``n_bootstrap`` clones of the user's estimator (a classifier for rewards in
{0, 1}, scored by ``predict_proba``; a regressor for real rewards, scored by ``predict``), each
trained on the arm's rounds weighted by its own Poisson(1) draws (the online bootstrap); the
score of an arm is then

    bootstrap-ucb   the ``ucb_quantile`` quantile of its members' predictions
    bootstrap-ts    the prediction of one member drawn at random
    eps-greedy      the mean prediction; a uniform arm with probability ``epsilon``
    softmax         an arm drawn with probability proportional to exp(mean / temperature)

and an arm that has never been played is played first. An estimator with ``partial_fit``
learns each round as it comes; any other is refitted from scratch on its arm's rows every
``refit_every`` observations (only the arms played since the last refit).

The estimator is named by its class path and parameters (``estimator="sklearn.linear_model.
SGDClassifier"``, ``estimator_params={"loss": "log_loss"}``), or given as an instance whose
parameters are JSON-able, so the policy saves without pickle. The class must be one of
:data:`ALLOWED_ESTIMATORS` or offered by an installed package under the entry-point group
:data:`ESTIMATOR_ENTRY_POINTS`: a policy file or config can name no other callable. The
policy's state is the rounds it learned from and the bootstrap weights, and restoring replays the same fits. That reproduces the models
exactly when the estimator's fits are deterministic (fix ``random_state`` in the parameters for
those that draw random numbers); an estimator whose fit is not deterministic is restored to a
refitted model, not the same one.

References:
    [Riquelme2018] C. Riquelme, G. Tucker, J. Snoek. Deep Bayesian bandits showdown. ICLR 2018
        (bootstrapped Thompson sampling).
    [Cortes2018] D. Cortes. Adapting multi-armed bandits policies to contextual bandits
        scenarios. arXiv:1811.04383 (bootstrapped UCB / TS, softmax explorers over any
        classifier).
"""

from __future__ import annotations

import importlib
import inspect
import json
from importlib.metadata import entry_points
from typing import Any, ClassVar

import numpy as np

from banditkit.core import POLICIES, Context
from banditkit.core.policy import PROPENSITY_SAMPLES
from banditkit.core.types import Action
from banditkit.core.validation import (
    check_choice,
    check_int,
    check_scalar,
    check_state_array,
)
from banditkit.policies.baselines.catalogue import PerArmPolicy, drop_logged_arm
from banditkit.policies.parts.history import Buffers, BufferView
from banditkit.policies.parts.propensity import ArrayLaw, monte_carlo, tie_law
from banditkit.policies.parts.selection import (
    TIE_RTOL,
    argmax_random_tie,
    epsilon_greedy,
    epsilon_greedy_law,
    sampled_arm_law,
)

__all__ = ["ALLOWED_ESTIMATORS", "ESTIMATOR_ENTRY_POINTS", "EXPLORERS", "SklearnArms"]

EXPLORERS = ("bootstrap-ts", "bootstrap-ucb", "eps-greedy", "softmax")


#: scikit-learn estimators a policy file or config may name, by their public class path.
#: Each is a plain classifier (with ``predict_proba``) or regressor whose parameters are
#: numbers, strings and flags; meta-estimators (which take other estimators), searches over
#: parameters and anything taking a callable or a cache folder are left out. A class path
#: is only ever looked up in this set (or :data:`ESTIMATOR_ENTRY_POINTS`): no other module
#: is imported and no other callable is called, whatever a file or config says.
ALLOWED_ESTIMATORS: frozenset[str] = frozenset(
    {
        f"sklearn.{path}"
        for path in (
            "discriminant_analysis.LinearDiscriminantAnalysis",
            "discriminant_analysis.QuadraticDiscriminantAnalysis",
            "dummy.DummyClassifier",
            "dummy.DummyRegressor",
            "ensemble.ExtraTreesClassifier",
            "ensemble.ExtraTreesRegressor",
            "ensemble.GradientBoostingClassifier",
            "ensemble.GradientBoostingRegressor",
            "ensemble.HistGradientBoostingClassifier",
            "ensemble.HistGradientBoostingRegressor",
            "ensemble.RandomForestClassifier",
            "ensemble.RandomForestRegressor",
            "gaussian_process.GaussianProcessClassifier",
            "gaussian_process.GaussianProcessRegressor",
            "kernel_ridge.KernelRidge",
            "linear_model.ARDRegression",
            "linear_model.BayesianRidge",
            "linear_model.ElasticNet",
            "linear_model.GammaRegressor",
            "linear_model.HuberRegressor",
            "linear_model.Lasso",
            "linear_model.LinearRegression",
            "linear_model.LogisticRegression",
            "linear_model.PoissonRegressor",
            "linear_model.QuantileRegressor",
            "linear_model.Ridge",
            "linear_model.SGDClassifier",
            "linear_model.SGDRegressor",
            "linear_model.TweedieRegressor",
            "naive_bayes.BernoulliNB",
            "naive_bayes.ComplementNB",
            "naive_bayes.GaussianNB",
            "naive_bayes.MultinomialNB",
            "neighbors.KNeighborsClassifier",
            "neighbors.KNeighborsRegressor",
            "neural_network.MLPClassifier",
            "neural_network.MLPRegressor",
            "svm.LinearSVR",
            "svm.NuSVR",
            "svm.SVC",
            "svm.SVR",
            "tree.DecisionTreeClassifier",
            "tree.DecisionTreeRegressor",
            "tree.ExtraTreeClassifier",
            "tree.ExtraTreeRegressor",
        )
    }
)

#: Entry-point group through which an installed package offers its own estimator classes:
#: ``[project.entry-points."banditkit.estimators"]`` with ``"my_pkg.MyRegressor" =
#: "my_pkg.models:MyRegressor"``; the entry point's name is then a valid ``estimator``.
ESTIMATOR_ENTRY_POINTS = "banditkit.estimators"


def _installed_estimators() -> dict[str, Any]:
    """The entry points of :data:`ESTIMATOR_ENTRY_POINTS`, by name (not loaded)."""
    return {ep.name: ep for ep in entry_points(group=ESTIMATOR_ENTRY_POINTS)}


def _not_allowed(what: str) -> ValueError:
    return ValueError(
        f"estimator must be one of the scikit-learn estimators in "
        "banditkit.policies.baselines.sklearn_arms.ALLOWED_ESTIMATORS (e.g. "
        "'sklearn.linear_model.Ridge') or a class an installed package offers under the "
        f"entry-point group {ESTIMATOR_ENTRY_POINTS!r}; got {what}."
    )


def _estimator_class(path: str) -> type:
    """The class ``path`` names, looked up in the allow-list or the installed entry points.

    A private module path of an allowed class (``sklearn.linear_model._ridge.Ridge``, as
    files of earlier versions hold) names the same class; only the public module of the
    allow-list is imported.
    """
    public = path
    module, _, name = path.rpartition(".")
    if path not in ALLOWED_ESTIMATORS and "._" in module:
        public = f"{module.split('._', 1)[0]}.{name}"
    if public in ALLOWED_ESTIMATORS:
        module, _, name = public.rpartition(".")
        cls: type = getattr(importlib.import_module(module), name)
        return cls
    installed = _installed_estimators().get(path)
    if installed is None:
        raise _not_allowed(repr(path))
    try:
        cls = installed.load()
    except Exception as exc:
        raise ValueError(
            f"estimator {path!r} (entry point {installed.value}) cannot be imported: {exc}."
        ) from exc
    if not isinstance(cls, type):
        raise ValueError(
            f"estimator {path!r}: its entry point {installed.value} is not a class."
        )
    return cls


def _path_of(cls: type) -> str:
    """The allow-list or entry-point name of an estimator class (refused if it has none)."""
    public = f"{cls.__module__.split('._', 1)[0]}.{cls.__qualname__}"
    if public in ALLOWED_ESTIMATORS and _estimator_class(public) is cls:
        return public
    for name, ep in _installed_estimators().items():
        if ep.value == f"{cls.__module__}:{cls.__qualname__}":
            return name
    raise _not_allowed(f"an instance of {cls.__module__}.{cls.__qualname__}")


def _resolve_estimator(estimator: Any, params: Any) -> tuple[str, dict[str, Any]]:
    """(allowed class path, parameters) of ``estimator``, a path or an estimator instance."""
    if not isinstance(estimator, str):
        if not hasattr(estimator, "get_params"):
            raise ValueError(
                "estimator must be a scikit-learn estimator or its class path; got "
                f"{type(estimator).__name__}."
            )
        if params:
            raise ValueError("estimator_params go with a class path, not an instance.")
        params = estimator.get_params(deep=False)
        _check_json("estimator's parameters", params)
        return _path_of(type(estimator)), params
    if params is not None and not isinstance(params, dict):
        raise ValueError(
            f"estimator_params must be a dict of parameters; got {type(params).__name__}."
        )
    params = {} if params is None else dict(params)
    _check_json("estimator_params", params)
    _estimator_class(estimator)
    return estimator, params


def _check_json(what: str, params: dict[str, Any]) -> None:
    try:
        json.dumps(params, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"{what} must be JSON-able to save the policy without pickle: {exc}."
        ) from exc


def _build(path: str, params: dict[str, Any]) -> Any:
    cls = _estimator_class(path)
    try:
        return cls(**params)
    except TypeError as exc:
        raise ValueError(f"estimator_params do not fit {path}: {exc}.") from exc


@POLICIES.register("sklearn")
class SklearnArms(PerArmPolicy):
    """One scikit-learn estimator (times ``n_bootstrap``) per arm; see the module docstring.

    Args:
        estimator: A class path of :data:`ALLOWED_ESTIMATORS` ("sklearn.linear_model.Ridge")
            or of an installed :data:`ESTIMATOR_ENTRY_POINTS` entry point, or an instance of
            such a class with JSON-able parameters. A classifier takes rewards in [0, 1] (labels 0 / 1, a
            reward in between counts as 1 when >= 0.5) and is scored by P(reward = 1).
        estimator_params: Parameters of the class path.
        explorer: One of :data:`EXPLORERS`.
        n_bootstrap: Members per arm, >= 1 (the bootstrap explorers need >= 2).
        epsilon: Exploration rate of "eps-greedy", in [0, 1].
        temperature: Softmax temperature, > 0.
        ucb_quantile: Quantile of the members' predictions for "bootstrap-ucb", in (0, 1).
        refit_every: Observations between refits of estimators without ``partial_fit``, >= 1.
        use_partial_fit: Learn through ``partial_fit`` when the estimator has it.
        explore_floor: Probability of a uniform arm instead of the policy's (``Policy``).
        propensity_samples: Monte Carlo draws of "bootstrap-ts"'s propensity (``Policy``).
        seed: Seed of the policy's stream (bootstrap weights, members, exploration).

    Raises:
        ValueError: An estimator that cannot be built, has no ``fit`` / ``predict`` (no
            ``predict_proba`` for a classifier), or does not take ``sample_weight`` while
            ``n_bootstrap`` > 1; bad hyper-parameters. The message names the argument.

    Example:
        >>> p = SklearnArms(estimator="sklearn.linear_model.Ridge", n_bootstrap=2)
        >>> p.act(Context.from_shared(np.ones(2), n_arms=3)) in range(3)
        True
    """

    contract_params: ClassVar[dict[str, Any]] = {
        "estimator": "sklearn.linear_model.Ridge",
        "n_bootstrap": 2,
    }
    setup_grows_with_d: ClassVar[bool] = False  # empty (0, d) logs until rounds come

    def __init__(
        self,
        *,
        estimator: Any = "sklearn.linear_model.SGDClassifier",
        estimator_params: dict[str, Any] | None = None,
        explorer: str = "bootstrap-ts",
        n_bootstrap: int = 5,
        epsilon: float = 0.1,
        temperature: float = 0.1,
        ucb_quantile: float = 0.8,
        refit_every: int = 10,
        use_partial_fit: bool = True,
        explore_floor: float = 0.0,
        propensity_samples: int = PROPENSITY_SAMPLES,
        seed: int = 0,
    ) -> None:
        super().__init__(
            seed=seed,
            explore_floor=explore_floor,
            propensity_samples=propensity_samples,
        )
        path, params = _resolve_estimator(estimator, estimator_params)
        if (
            estimator == "sklearn.linear_model.SGDClassifier"
            and estimator_params is None
        ):
            params = {
                "loss": "log_loss",
                "random_state": 0,
            }  # the default: probabilities
        self.estimator = path
        self.estimator_params = params
        self.explorer = check_choice("explorer", explorer, EXPLORERS)
        low = 2 if explorer.startswith("bootstrap") else 1
        self.n_bootstrap = check_int("n_bootstrap", n_bootstrap, low=low)
        self.epsilon = check_scalar("epsilon", epsilon, low=0.0, high=1.0)
        self.temperature = check_scalar(
            "temperature", temperature, low=0.0, low_open=True
        )
        self.ucb_quantile = check_scalar(
            "ucb_quantile",
            ucb_quantile,
            low=0.0,
            high=1.0,
            low_open=True,
            high_open=True,
        )
        self.refit_every = check_int("refit_every", refit_every, low=1)
        if not isinstance(use_partial_fit, bool):
            raise ValueError(
                f"use_partial_fit must be True or False; got {use_partial_fit!r}."
            )
        self.use_partial_fit = use_partial_fit
        template = _build(path, params)
        from sklearn.base import is_classifier

        self._classifier = bool(is_classifier(template))
        needed = ["fit", "predict_proba" if self._classifier else "predict"]
        missing = [m for m in needed if not hasattr(template, m)]
        if missing:
            raise ValueError(f"estimator {path} has no {', '.join(missing)}.")
        self._partial = use_partial_fit and hasattr(template, "partial_fit")
        fit = template.partial_fit if self._partial else template.fit
        if (
            self.n_bootstrap > 1
            and "sample_weight" not in inspect.signature(fit).parameters
        ):
            raise ValueError(
                f"estimator {path} does not take sample_weight, which the bootstrap needs; "
                "use n_bootstrap=1 with explorer 'eps-greedy' or 'softmax'."
            )
        self._template = template
        self.reward_kind = "binary" if self._classifier else "real"
        self.n_arms = None

    # ------------------------------------------------------------------ state
    def _allocate(self, n_arms: int) -> None:
        assert self.d is not None
        self.n_arms = n_arms
        #: The log of learned rounds, in order (buffers that grow by doubling).
        self._log = Buffers(
            {
                "rows": ((self.d,), float),
                "targets": ((), float),
                "row_arms": ((), np.int64),
                "weights": ((self.n_bootstrap,), float),
            }
        )
        self.n_fit = np.zeros(
            n_arms, dtype=np.int64
        )  # rows of each arm fitted (refit mode)
        self._models: list[list[Any] | None] = [None] * n_arms

    rows = BufferView(
        "rows", "(n, d) features of the rounds learned from, in order", "_log"
    )
    targets = BufferView("targets", "(n,) their rewards", "_log")
    row_arms = BufferView("row_arms", "(n,) the arm of each", "_log")
    weights = BufferView(
        "weights", "(n, n_bootstrap) the members' Poisson(1) bootstrap weights", "_log"
    )

    def _state(self) -> dict[str, Any]:
        return {**self._log.state_dict(), "n_fit": self.n_fit}

    def _load_state(self, state: dict[str, Any]) -> None:
        """Restore the log, checked against the shapes and ranges the policy keeps.

        Rows (n, d), targets (n,), arms (n,) in [0, K), weights (n, n_bootstrap) >= 0
        and the fitted rows of each arm (K,), at most its rows.
        """
        assert self.d is not None
        rows = check_state_array("rows", state["rows"], (None, self.d))
        n = rows.shape[0]
        targets = check_state_array("targets", state["targets"], (n,))
        row_arms = check_state_array(
            "row_arms", state["row_arms"], (n,), dtype=np.int64
        )
        weights = check_state_array(
            "weights", state["weights"], (n, self.n_bootstrap), low=0.0
        )
        n_fit = check_state_array(
            "n_fit", state["n_fit"], (None,), dtype=np.int64, low=0
        )
        K = n_fit.shape[0]
        if n and (row_arms.min() < 0 or row_arms.max() >= K):
            raise ValueError(f"row_arms must be arms in [0, {K}).")
        if np.any(n_fit > np.bincount(row_arms, minlength=K)):
            raise ValueError("n_fit must not exceed each arm's rows.")
        self._allocate(K)
        self._log.load(
            {"rows": rows, "targets": targets, "row_arms": row_arms, "weights": weights}
        )
        self.n_fit = n_fit
        if self._partial:  # replay the per-round partial fits in order
            for i in range(self.row_arms.shape[0]):
                self._partial_fit(int(self.row_arms[i]), i)
        else:
            for a in np.flatnonzero(n_fit):
                self._refit(int(a), int(n_fit[a]))

    # ------------------------------------------------------------------ learning
    def _label(self, y: np.ndarray) -> np.ndarray:
        return (y >= 0.5).astype(np.int64) if self._classifier else y

    def _partial_fit(self, arm: int, i: int) -> None:
        from sklearn.base import clone

        if self._models[arm] is None:
            self._models[arm] = [clone(self._template) for _ in range(self.n_bootstrap)]
        members = self._models[arm]
        assert members is not None
        x, y = self.rows[i : i + 1], self._label(self.targets[i : i + 1])
        extra = {"classes": np.array([0, 1])} if self._classifier else {}
        for m, est in enumerate(members):
            w = self.weights[i, m]
            if w > 0:
                kw = {"sample_weight": np.array([w])} if self.n_bootstrap > 1 else {}
                est.partial_fit(x, y, **kw, **extra)

    def _refit(self, arm: int, n_rows: int) -> None:
        """Fit the arm's members from scratch on its first ``n_rows`` rows."""
        from sklearn.base import clone

        mine = np.flatnonzero(self.row_arms == arm)[:n_rows]
        X, y = self.rows[mine], self._label(self.targets[mine])
        members = []
        for m in range(self.n_bootstrap):
            w = self.weights[mine, m]
            keep = w > 0
            if (
                not keep.any()
            ):  # no row drawn for this member: unfitted, scored by a prior
                members.append(clone(self._template))
                continue
            if self._classifier and np.unique(y[keep]).size < 2:
                members.append(float(y[keep].mean()))
                continue  # one class only: the probability is that class
            est = clone(self._template)
            kw = {"sample_weight": w[keep]} if self.n_bootstrap > 1 else {}
            est.fit(X[keep], y[keep], **kw)
            members.append(est)
        self._models[arm] = members

    def _learn(self, action: int, x: np.ndarray, reward: float) -> None:
        """Log the round with its bootstrap weights; partial fit, or refit when due."""
        B = self.n_bootstrap
        w = self.rng.poisson(1.0, size=B).astype(float) if B > 1 else np.ones(1)
        self._log.push(rows=x, targets=reward, row_arms=action, weights=w)
        n = self._log.n
        if self._partial:
            self._partial_fit(action, n - 1)
            self._n_updates += 1
        elif n % self.refit_every == 0:
            assert self.n_arms is not None
            counts = np.bincount(self.row_arms, minlength=self.n_arms)
            for a in np.flatnonzero(counts != self.n_fit):
                self._refit(int(a), int(counts[a]))
            self.n_fit = counts
            self._n_updates += 1

    # ------------------------------------------------------------------ catalogue
    def _add_arm(self) -> None:
        """Add an arm never played: no estimator, no rows (it is played first)."""
        self.n_fit = np.append(self.n_fit, 0)
        self._models.append(None)

    def _drop_arm(self, arm: int) -> None:
        """Drop the arm's estimators and rows.

        The other arms keep their estimators as they are (no refit) and their rows, so their
        predictions do not change, and a restored copy replays the same fits.
        """
        drop_logged_arm(self._log, arm)
        self.n_fit = np.delete(self.n_fit, arm)
        del self._models[arm]

    # ------------------------------------------------------------------ acting
    def predictions(self, ctx: Context) -> np.ndarray:
        """The members' predictions for the arms of ``ctx``: (K, n_bootstrap).

        P(reward = 1) for a classifier, the predicted reward for a regressor; NaN for an arm
        never played. The policy's state does not change.

        Raises:
            ValueError: A ``ctx`` of another dimension or number of arms (after round 1).
        """
        if self.d is None:
            return np.full((ctx.n_arms, self.n_bootstrap), np.nan)
        self._check_context(ctx)
        return self._predictions(ctx.arms)

    def _predictions(self, X: np.ndarray) -> np.ndarray:
        """(K, B) member predictions; NaN for an arm without a model yet."""
        K = X.shape[0]
        out = np.full((K, self.n_bootstrap), np.nan)
        for a in range(
            K
        ):  # one estimator object per arm and member: no batching across
            members = self._models[a]
            if members is None:
                continue
            for m, est in enumerate(members):
                if isinstance(est, float):
                    out[a, m] = est
                elif not hasattr(
                    est, "n_features_in_"
                ):  # a member never fitted (weight 0)
                    out[a, m] = 0.5 if self._classifier else 0.0
                elif self._classifier:
                    out[a, m] = est.predict_proba(X[a : a + 1])[0, 1]
                else:
                    out[a, m] = est.predict(X[a : a + 1])[0]
        return out

    def _act(self, ctx: Context) -> Action:
        preds = self._predictions(ctx.arms)
        fresh = np.isnan(preds[:, 0])
        if fresh.any():  # play every arm once first
            self.propose(tie_law(fresh.astype(float), TIE_RTOL))
            return argmax_random_tie(fresh.astype(float), self.rng, TIE_RTOL)
        K = ctx.n_arms
        if self.explorer == "bootstrap-ts":
            pick = self.rng.integers(self.n_bootstrap, size=K)
            action = argmax_random_tie(preds[np.arange(K), pick], self.rng, TIE_RTOL)

            def draw(rng: np.random.Generator, n: int) -> np.ndarray:
                # each arm's score: one of its members' predictions, uniformly
                return preds[np.arange(K), rng.integers(self.n_bootstrap, size=(n, K))]

            self.propose(sampled_arm_law(draw, action, monte_carlo(self), TIE_RTOL))
            return action
        if self.explorer == "bootstrap-ucb":
            scores = np.quantile(preds, self.ucb_quantile, axis=1)
            self.propose(tie_law(scores, TIE_RTOL))
            return argmax_random_tie(scores, self.rng, TIE_RTOL)
        mean = preds.mean(axis=1)
        if self.explorer == "softmax":
            z = (mean - mean.max()) / self.temperature
            p = np.exp(z) / np.exp(z).sum()
            self.propose(ArrayLaw(p))
            return int(self.rng.choice(K, p=p))
        action, _ = epsilon_greedy(mean, self.epsilon, self.rng)
        self.propose(epsilon_greedy_law(mean, self.epsilon))
        return action
