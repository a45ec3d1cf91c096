"""Linear models: ridge regression and the regularised GLM maximum-likelihood estimate.

    RidgeModel   theta = V^-1 b,  V = lam I + sum_s w_s x_s x_s^T,  b = sum_s w_s r_s x_s
                 [Abbasi-Yadkori2011, Eq. (5)], kept current by rank-1 updates of linalg.Gram
                 (or, ``in_place=True``, of linalg.InPlaceGram).
    GLMModel     theta = argmin sum_s w_s nll(x_s^T theta, r_s) + lam/2 ||theta||^2
                 [Filippi2010, Sec. 4] by glm.fit_glm (Newton, warm-started), with the
                 Laplace precision H(theta) for posterior sampling [Kveton2020]; or
                 (``solver="gd"``) a fixed number of warm-started gradient steps on the
                 same objective (glm.fit_glm_stacked with one member).

Both have the features z(x) = x. Fitted on a ``PairHistory``, a GLM is the linear
Bradley-Terry-Luce model of duels: P(x_1 beats x_2) = mu((x_1 - x_2)^T theta).

References:
    [Abbasi-Yadkori2011] Y. Abbasi-Yadkori, D. Pal, C. Szepesvari. Improved algorithms for linear
        stochastic bandits. NeurIPS 2011.
    [Filippi2010] S. Filippi, O. Cappe, A. Garivier, C. Szepesvari. Parametric bandits: the
        generalized linear case. NeurIPS 2010.
    [Faury2020] L. Faury, M. Abeille, C. Calauzenes, O. Fercoq. Improved optimistic algorithms
        for logistic bandits. ICML 2020.
    [Kveton2020] B. Kveton, M. Zaheer, C. Szepesvari, L. Li, M. Ghavamzadeh, C. Boutilier.
        Randomized exploration in generalized linear bandits. AISTATS 2020.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from banditkit.core.lazy import sla  # imported at first use
from banditkit.core.validation import (
    check_choice,
    check_int,
    check_scalar,
    check_state_array,
)
from banditkit.glm import (
    Link,
    LogisticLink,
    fit_glm,
    fit_glm_constrained,
    fit_glm_stacked,
    fit_logistic_unchecked,
    get_link,
    glm_hessian,
)
from banditkit.linalg import Gram, InPlaceGram
from banditkit.linalg._common import check_vector, check_weight
from banditkit.linalg.spans import column_blocks, cross_forms
from banditkit.policies.parts.history import History, PairHistory

__all__ = ["GLM_GD_REDUCTIONS", "GLM_SOLVERS", "GLMModel", "RidgeModel", "rows_of"]

GLM_SOLVERS = ("exact", "gd")
"""How ``GLMModel.fit`` estimates theta: the exact minimiser, or a fixed number of GD steps."""
GLM_GD_REDUCTIONS = ("mean", "sum")
"""The objective the GD steps descend: L / n ("mean", n = sum_i w_i) or L itself ("sum")."""
#: The least d from which a logistic GLM's Newton refit factors a block-diagonal Hessian
#: block by block (block-encoded arms, ``linalg.spans.column_blocks``): below it one
#: factorisation is cheap (d = 640: a few ms) and every pinned run keeps its bits; on
#: mnist's d = 1,960 the full Hessian costs 23 ms to build and 66 ms to factor a step.
BLOCKS_FROM = 1024


def rows_of(
    history: History | PairHistory,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (X, y, w) rows a linear loss reads: the rows, or x_1 - x_2 of each duel.

    Raises:
        TypeError: For a history of sets (an MNL loss, not a linear one).
    """
    if isinstance(history, History):
        return history.X, history.y, history.w
    if isinstance(history, PairHistory):
        return history.diff, history.outcome, history.w
    raise TypeError(
        f"history must be a History or a PairHistory; got {type(history).__name__}."
    )


class RidgeModel:
    """Ridge regression statistics with O(d^2) updates.

    ``fit`` absorbs the rows of the history it has not seen yet (rank-1 updates), so
    refitting every round costs O(d^2). ``gram`` is V, which the linear policies also
    use as their uncertainty.

    With ``in_place=True`` the Gram is a ``linalg.InPlaceGram`` (updated in place, at the
    cost of the coordinates each row touches: O(d_block^2) on block-encoded arms) and
    theta is kept current by the recursive least-squares step of Sherman-Morrison,

        theta <- theta + w u (y - x^T theta) / (1 + w x^T u),   u = V^-1 x  (V before),

    recomputed as V^-1 b whenever the Gram refactorises. Default False keeps a
    ``linalg.Gram`` and theta = V^-1 b by Cholesky solves.

    Args:
        d: Feature dimension.
        lam: Ridge weight, V_0 = lam * I.
        in_place: Keep V in an ``InPlaceGram`` and theta by the recursion above.

    Example:
        >>> model = RidgeModel(2, 1.0)
        >>> history = History(2)
        >>> history.append(np.array([1.0, 0.0]), 2.0)
        >>> model.fit(history)
        >>> model.predict(np.eye(2)).round(12).tolist()  # V = diag(2, 1), b = (2, 0)
        [1.0, 0.0]
    """

    members = 1
    linearised = False
    #: What an update changes inside (``core.transaction``): the Gram; b and theta are
    #: replaced by new arrays, not written into.
    _undo_parts: ClassVar[tuple[str, ...]] = ("gram",)

    def __init__(self, d: int, lam: float, *, in_place: bool = False) -> None:
        self.in_place = bool(in_place)
        self.gram: Gram | InPlaceGram = (
            InPlaceGram(d, lam) if self.in_place else Gram(d, lam)
        )
        self.b = np.zeros(d)
        self._theta: np.ndarray | None = np.zeros(d)
        self._seen = 0

    @property
    def n_params(self) -> int:
        """Feature dimension d."""
        return self.gram.d

    def add(self, x: np.ndarray, y: float, weight: float = 1.0) -> None:
        """Add one observation: V += w x x^T, b += w y x."""
        if self.in_place:
            self._add_in_place(
                check_vector("x", x, self.gram.d), y, check_weight(weight)
            )
            return
        self.gram.update(x, weight)
        self.b = self.b + (y if weight == 1.0 else weight * y) * x  # a new array
        self._theta = None

    def _add_in_place(self, x: np.ndarray, y: float, weight: float) -> None:
        """``add`` on a checked x: the Gram's rank-1 step and theta's recursion."""
        gram = self.gram
        assert isinstance(gram, InPlaceGram)
        theta = self.theta
        u, q = gram.rank1_update(x, weight)
        self.b = self.b + (y if weight == 1.0 else weight * y) * x  # a new array
        if gram.since_refactor == 0:  # refactorised: theta afresh, no drift carried
            self._theta = gram.inverse @ self.b
        else:
            self._theta = theta + (weight * (y - float(x @ theta)) / (1.0 + q)) * u

    def fit(self, history: History | PairHistory) -> None:
        """Absorb the rows added to ``history`` since the last call."""
        X, y, w = rows_of(history)
        if self.in_place:  # the rows of a history are finite float64 (d,)
            for i in range(self._seen, X.shape[0]):
                self._add_in_place(X[i], float(y[i]), float(w[i]))
        else:
            for i in range(self._seen, X.shape[0]):
                self.add(X[i], float(y[i]), float(w[i]))
        self._seen = X.shape[0]

    @property
    def theta(self) -> np.ndarray:
        """The ridge estimate V^-1 b (cached until the next ``add``)."""
        if self._theta is None:
            self._theta = self.gram.solve(self.b)
        return self._theta

    def predict(self, X: np.ndarray) -> np.ndarray:
        """x^T theta for each row of X (K, d)."""
        return np.asarray(X @ self.theta)

    def features(self, X: np.ndarray) -> np.ndarray:
        """The raw features X."""
        return X

    def evaluate(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """x^T theta and x."""
        return self.predict(X), X

    def evaluate_sq_norms(
        self, X: np.ndarray, inv_diag: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """x^T theta and sum_j x_j^2 inv_diag_j."""
        return self.predict(X), (X * X) @ inv_diag

    def latent(self, x: np.ndarray) -> float:
        """x^T theta for one arm."""
        return float(x @ self.theta)

    def sample_theta(self, rng: np.random.Generator, scale: float) -> np.ndarray:
        """Theta + scale * N(0, V^-1) [Agrawal2013, Alg. 1]."""
        return self.theta + scale * self.gram.sample_normal(rng)

    def score_covariance(self, X: np.ndarray) -> np.ndarray:
        """X V^-1 X^T (K, K): the covariance of X theta~ under ``sample_theta``, / scale^2.

        Each row is read on its span (``linalg.spans.cross_forms``): K m d on arms
        block-encoded in blocks of m.
        """
        return cross_forms(X, self.gram.inverse)

    def state_dict(self) -> dict[str, Any]:
        """Arrays and scalars only (with ``in_place``, theta too: it is kept by recursion)."""
        state: dict[str, Any] = {
            "gram": self.gram.state_dict(),
            "b": self.b.copy(),
            "seen": self._seen,
        }
        if self.in_place:
            state["theta"] = self.theta.copy()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from :meth:`state_dict` (an in-place model also reads a ``Gram`` state).

        Raises:
            ValueError: If the Gram is of another d or invalid, or b, theta or seen do not
                fit it; the message names the entry.
        """
        d = self.gram.d
        gram_cls = InPlaceGram if self.in_place else Gram
        gram = gram_cls(d, self.gram.lam)
        gram.load_state_dict(state["gram"])
        b = check_state_array("b", state["b"], (d,))
        seen = check_int("seen", state.get("seen", 0), low=0)
        theta = None
        if self.in_place:
            theta = (
                check_state_array("theta", state["theta"], (d,))
                if "theta" in state
                else gram.solve(b)
            )
        self.gram, self.b, self._seen, self._theta = gram, b, seen, theta


class GLMModel:
    """Regularised (or constrained) maximum-likelihood GLM, refitted by Newton's method.

    theta = argmin sum_i w_i nll(x_i^T theta, y_i) + (lam / 2) ||theta||^2, warm-started
    at the previous estimate (``glm.fit_glm``), or the same minimum over the ball
    ||theta|| <= radius when a radius is given (``glm.fit_glm_constrained``, the
    constrained MLE of [Faury2020]); theta = 0 before the first fit.

    With ``solver="gd"`` each fit instead takes ``steps`` plain gradient steps on
    L(theta) = sum_i w_i nll(x_i^T theta, y_i) + (lam / 2) ||theta||^2 from the previous
    estimate (``glm.fit_glm_stacked``, one member; no projection):

        theta <- theta - lr * grad L(theta) / n     (reduction "mean", n = sum_i w_i)
        theta <- theta - lr * grad L(theta)         (reduction "sum"),
        grad L(theta) = X^T (w * (mu(X theta) - y)) + lam theta.

    Args:
        d: Feature dimension.
        lam: Ridge weight of the MLE, > 0 (>= 0 with the exact solver).
        link: "logistic", "probit" or "identity", or a ``glm.Link``.
        radius: Norm bound S of the constrained MLE, > 0, or None (unconstrained;
            required by ``solver="gd"``).
        solver: "exact" (default: the minimiser, as above) or "gd".
        steps: GD steps per fit, >= 1 (``solver="gd"`` only).
        lr: GD step size, > 0 (``solver="gd"`` only).
        reduction: "mean" or "sum", the scale of the objective GD descends (above).

    Example:
        >>> history = PairHistory(1)  # a linear BTL model: duels of x_1 against x_2
        >>> for _ in range(3):
        ...     history.append(np.array([1.0]), np.array([0.0]), 1.0)
        >>> model = GLMModel(1, lam=1.0, link="logistic")
        >>> model.fit(history)
        >>> bool(model.theta[0] > 0)  # the first arm wins: it has the larger utility
        True
    """

    members = 1
    linearised = False

    #: What an update changes inside (``core.transaction``): nothing; a fit replaces
    #: theta and the cached factor.
    _undo_parts: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self,
        d: int,
        lam: float,
        link: str | Link = "logistic",
        radius: float | None = None,
        *,
        solver: str = "exact",
        steps: int = 100,
        lr: float = 0.01,
        reduction: str = "mean",
    ) -> None:
        self.lam = check_scalar("lam", lam, low=0.0)
        self.link = get_link(link)
        self.radius = (
            None
            if radius is None
            else check_scalar("radius", radius, low=0.0, low_open=True)
        )
        self.solver = check_choice("solver", solver, GLM_SOLVERS)
        self.steps = check_int("steps", steps, low=1)
        self.lr = check_scalar("lr", lr, low=0.0, low_open=True)
        self.reduction = check_choice("reduction", reduction, GLM_GD_REDUCTIONS)
        if self.solver == "gd":
            if self.radius is not None:
                raise ValueError(
                    "radius must be None with solver='gd' (GD takes no projection step); "
                    f"got radius={self.radius}."
                )
            if self.lam <= 0.0:
                raise ValueError(f"lam must be > 0 with solver='gd'; got {self.lam}.")
        self.theta = np.zeros(d)
        self._chol: np.ndarray | None = None
        self._n_fit: int | None = (
            0  # rows theta was fitted on (None: unknown, all rows)
        )

    @property
    def n_params(self) -> int:
        """Feature dimension d."""
        return int(self.theta.shape[0])

    def fit(self, history: History | PairHistory) -> None:
        """Re-estimate theta, warm-started at the previous estimate (Newton, or GD steps)."""
        X, y, w = rows_of(history)
        if self.solver == "gd":
            # the objective on grouped rows with counts c = w and target sums w * y
            theta = fit_glm_stacked(
                X,
                w,
                (w * y)[:, None],
                self.theta[:, None],
                lam=self.lam,
                link=self.link,
                solver="gd",
                steps=self.steps,
                lr=self.lr,
                reduction=self.reduction,
            )
            self.theta = theta[:, 0]
            self._chol = None
            self._n_fit = int(X.shape[0])
            return
        if (
            self.radius is None
            and type(self.link) is LogisticLink
            and X.shape[0] > 0
            and X.dtype == y.dtype == w.dtype == np.float64
        ):
            # the history's own float64 rows: the same solve without re-checking them;
            # from d = BLOCKS_FROM on block-encoded rows, Newton block by block
            blocks = column_blocks(X) if X.shape[1] >= BLOCKS_FROM else None
            fit = fit_logistic_unchecked(
                X, y, w, lam=self.lam, theta0=self.theta, blocks=blocks
            )
        elif self.radius is None:
            fit = fit_glm(
                X, y, link=self.link, lam=self.lam, weights=w, theta0=self.theta
            )
        else:
            fit = fit_glm_constrained(
                X,
                y,
                radius=self.radius,
                link=self.link,
                lam=self.lam,
                weights=w,
                theta0=self.theta,
            )
        self.theta = fit.theta
        self._chol = None
        self._n_fit = int(X.shape[0])

    def predict(self, X: np.ndarray) -> np.ndarray:
        """The linear predictor x^T theta (monotone in the expected reward)."""
        return np.asarray(X @ self.theta)

    def features(self, X: np.ndarray) -> np.ndarray:
        """The raw features X."""
        return X

    def evaluate(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """x^T theta and x."""
        return X @ self.theta, X

    def evaluate_sq_norms(
        self, X: np.ndarray, inv_diag: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """x^T theta and sum_j x_j^2 inv_diag_j."""
        return X @ self.theta, (X * X) @ inv_diag

    def latent(self, x: np.ndarray) -> float:
        """x^T theta for one arm."""
        return float(x @ self.theta)

    def sample_theta(
        self, rng: np.random.Generator, scale: float, history: History | PairHistory
    ) -> np.ndarray:
        """Theta + scale * N(0, H^-1), H the regularised NLL Hessian at theta (Laplace).

        H is built on the rows of ``history`` that the last ``fit`` used (none before the
        first: H = lam I), so a policy refitted every k rounds, or restored between two
        refits, draws from the same posterior.
        """
        z = rng.standard_normal(self.theta.shape[0])
        chol = self._hessian_factor(history)
        return self.theta + scale * sla.solve_triangular(chol.T, z, lower=False)

    def score_covariance(
        self, X: np.ndarray, history: History | PairHistory
    ) -> np.ndarray:
        """X H^-1 X^T (K, K): the covariance of X theta~ under ``sample_theta``, / scale^2."""
        W = sla.solve_triangular(self._hessian_factor(history), X.T, lower=True)
        return np.asarray(W.T @ W)

    def _hessian_factor(self, history: History | PairHistory) -> np.ndarray:
        """The Cholesky factor of the Laplace precision H (cached until the next fit)."""
        if self._chol is None:
            X, _, w = rows_of(
                history
            )  # the rows and weights (inverse variances) fitted
            n = self._n_fit
            h = glm_hessian(
                X[:n], self.theta, link=self.link, lam=self.lam, weights=w[:n]
            )
            self._chol = np.linalg.cholesky(h)
        return self._chol

    def state_dict(self) -> dict[str, Any]:
        """Arrays only (the history belongs to the policy): theta and the rows it fitted."""
        n_fit = -1 if self._n_fit is None else self._n_fit
        return {"theta": self.theta.copy(), "n_fit": np.asarray(n_fit, dtype=np.int64)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from :meth:`state_dict` (states without ``n_fit``: H on every row).

        Raises:
            ValueError: If theta has another shape than this model's, or n_fit < -1.
        """
        theta = check_state_array("theta", state["theta"], self.theta.shape)
        n_fit = check_state_array("n_fit", state.get("n_fit", -1), (), dtype=np.int64)
        if n_fit < -1:
            raise ValueError(f"n_fit must be >= -1 (-1: every row); got {int(n_fit)}.")
        self.theta, self._chol = theta, None
        self._n_fit = None if n_fit < 0 else int(n_fit)
