"""Contextual MNL assortment environments of [Hwang2025, Sec. 4 and App. G].

Each round shows N items with fresh features x_ti (drawn i.i.d.), the revenues r_ti and the
capacity K. Offered S, the customer picks i in S with probability
e^{f*(x_ti)} / (1 + sum_{j in S} e^{f*(x_tj)}) and nothing (-1) otherwise (outside weight 1).
Regret is the expected-revenue gap R_t(S*_t) - R_t(S_t) with R_t(S) = sum_{i in S} r_ti p_i(S),
S*_t the exact optimum (``banditkit.assortment.optimal_assortment``): top-K utilities under
equal revenues, Dinkelbach's fixed point under item revenues [Hwang2025, Sec. 2.1].

    mnl   utility "realizable": f*(x) = a^T sigmoid(W x + b) + c, a two-layer network with
          ``width`` hidden units, every parameter U[-1, 1];
          utility "misspecified": f*(x) = cos(2 pi x^T w) - x^T w / 2, w ~ U[-1, 1]^d;
          utility "linear": f*(x) = x^T theta, theta ~ U[-1/sqrt(d), 1/sqrt(d)]^d (the setting
          of the public code of Lee & Oh 2024);
          features "gaussian" N(0, I_d), "uniform" U[-3, 3]^d or "clipped-normal" (N(0, 1)
          clipped to [-1/sqrt(d), 1/sqrt(d)], Lee & Oh's code); revenues "uniform" (all 1,
          the paper's experiments) or "item" (r_ti ~ U[0.1, 1] each round).

The true parameters are drawn once per seed from the instance stream; features and
revenues from the context stream; the customer's choice from one uniform draw per round of
the noise stream, taken before the offer is known, so that all policies of one seed see the
same items and the same draws (common random numbers).

References:
    [Hwang2025] T. Hwang, D. Kim, M. Oh. Tractable multinomial logit contextual bandits with
        non-linear utilities. NeurIPS 2025 (arXiv 2601.06913).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import expit

from banditkit.assortment import optimal_assortment
from banditkit.assortment.solvers import top_k
from banditkit.core import ENVIRONMENTS, Context, Step
from banditkit.core.environment import AssortmentEnvironment
from banditkit.core.params import Choice, Int, param
from banditkit.core.types import Action
from banditkit.core.validation import check_choice, check_int

__all__ = ["MNLChoiceEnv", "MNLEnv", "sigmoid_network"]

UTILITIES = ("realizable", "misspecified", "linear")
FEATURES = ("gaussian", "uniform", "clipped-normal")
REVENUES = ("uniform", "item")


def sigmoid_network(params: dict[str, np.ndarray], X: np.ndarray) -> np.ndarray:
    """f(x) = a^T sigmoid(W x + b) + c for every row of X (n, d)."""
    return expit(X @ params["W"].T + params["b"]) @ params["a"] + params["c"]


class MNLChoiceEnv(AssortmentEnvironment):
    """Shared round logic: true utilities, choice draw, expected revenues and regret.

    Subclasses draw the round's features in ``_features`` and define ``utility(X)``.
    """

    n_items: int = param(Int(low=1), default=100)
    capacity: int = param(Int(low=1), default=5)
    revenues: str = param(Choice(REVENUES), default="uniform")

    def _resolve(self) -> None:
        self._u = np.zeros(0)
        self._r: np.ndarray | None = None
        self._draw = 0.0

    def utility(self, X: np.ndarray) -> np.ndarray:
        """True utilities f*(x) of the rows of X (n, d) -> (n,)."""
        raise NotImplementedError

    def _features(self) -> np.ndarray:
        raise NotImplementedError

    def _round_utilities(self, X: np.ndarray) -> np.ndarray:
        """The true utilities of the round's items (``utility(X)`` by default)."""
        return self.utility(X)

    def _next_context(self) -> Context:
        X = self._features()
        self._u = self._round_utilities(X)
        if self.revenues == "item":
            self._r = np.asarray(self.context_rng.uniform(0.1, 1.0, size=X.shape[0]))
        self._draw = float(self.noise_rng.random())
        self._best: tuple[int, ...] | None = None
        return Context(arms=X, revenues=self._r, max_size=self.capacity)

    def expected_revenue(self, items: tuple[int, ...]) -> float:
        """R_t(S) under the true utilities of the current round."""
        idx = list(items)
        u = self._u[idx]
        m = max(0.0, float(u.max()))
        w = np.exp(u - m)
        r = np.ones(len(idx)) if self._r is None else self._r[idx]
        return float(w @ r / (np.exp(-m) + w.sum()))

    def best_action(self) -> Action:
        """The exact revenue-maximising assortment of the current round."""
        if self.current is None:
            raise RuntimeError("best_action() needs a current context.")
        if self._best is None:
            if self._r is None:  # equal revenues: the top-K utilities
                k = min(self.capacity, self._u.size)
                self._best = tuple(int(i) for i in top_k(self._u, k, positive=False))
            else:
                items = optimal_assortment(
                    self._u, self._r, capacity=self.capacity
                ).items
                self._best = items or (int(np.argmax(self._u)),)
        return self._best

    def _step(self, ctx: Context, action: Action) -> Step:
        assert isinstance(action, tuple)
        u = self._u[list(action)]
        m = max(0.0, float(u.max()))
        w = np.exp(u - m)
        cumulative = np.cumsum(w) / (np.exp(-m) + w.sum())
        pick = int(np.searchsorted(cumulative, self._draw, side="right"))
        chosen = action[pick] if pick < len(action) else -1
        revenue = self.expected_revenue(action)
        best = self.expected_revenue(self.best_action())  # type: ignore[arg-type]
        reward = (
            0.0 if chosen < 0 else 1.0 if self._r is None else float(self._r[chosen])
        )
        return Step(
            feedback=chosen,
            reward=reward,
            regret=max(best - revenue, 0.0),
            values={"revenue": revenue, "chosen": chosen},
        )


@ENVIRONMENTS.register("mnl")
class MNLEnv(MNLChoiceEnv):
    """The synthetic MNL environments of [Hwang2025, Sec. 4, Figs. 2-4, 6, 7] (module docstring).

    Args:
        utility: "realizable" (two-layer sigmoid network), "misspecified" (cosine) or
            "linear" (x^T theta).
        features: "gaussian" (N(0, I_d)), "uniform" (U[-3, 3]^d) or "clipped-normal".
        d: Feature dimension.
        n_items: N, items shown per round.
        capacity: K, the largest assortment.
        width: Hidden units of the realizable truth (3; 10 in Fig. 3).
        revenues: "uniform" (all 1) or "item" (U[0.1, 1] per item and round).

    Example:
        >>> env = MNLEnv(d=3, n_items=10, capacity=3)
        >>> env.reset(0); ctx = env.context()
        >>> env.step(env.best_action()).regret
        0.0
    """

    def __init__(
        self,
        *,
        utility: str = "realizable",
        features: str = "gaussian",
        d: int = 3,
        n_items: int = 100,
        capacity: int = 5,
        width: int = 3,
        revenues: str = "uniform",
    ) -> None:
        super().__init__(n_items=n_items, capacity=capacity, revenues=revenues)
        self.utility_kind = check_choice("utility", utility, UTILITIES)
        self.features = check_choice("features", features, FEATURES)
        self.d = check_int("d", d, low=1)
        self.width = check_int("width", width, low=1)
        self.params: dict[str, np.ndarray] = {}

    def get_params(self) -> dict[str, Any]:
        """The parameters this environment was built with."""
        params = super().get_params()
        params["utility"] = self.utility_kind
        return params

    @property
    def label(self) -> str:
        """For example "mnl-realizable-gaussian"."""
        return f"mnl-{self.utility_kind}-{self.features}"

    def _reset(self) -> None:
        rng, d, m = self.instance_rng, self.d, self.width
        if self.utility_kind == "realizable":
            self.params = {
                "W": rng.uniform(-1, 1, (m, d)),
                "b": rng.uniform(-1, 1, m),
                "a": rng.uniform(-1, 1, m),
                "c": rng.uniform(-1, 1, 1),
            }
        elif self.utility_kind == "misspecified":
            self.params = {"w": rng.uniform(-1, 1, d)}
        else:
            bound = 1 / np.sqrt(d)
            self.params = {"theta": rng.uniform(-bound, bound, d)}

    def utility(self, X: np.ndarray) -> np.ndarray:
        """True utilities f*(x) (module docstring)."""
        if self.utility_kind == "realizable":
            return sigmoid_network(self.params, X)
        if self.utility_kind == "linear":
            return X @ self.params["theta"]
        s = X @ self.params["w"]
        return np.cos(2 * np.pi * s) - 0.5 * s

    def _features(self) -> np.ndarray:
        if self.features == "gaussian":
            return self.context_rng.standard_normal((self.n_items, self.d))
        if self.features == "clipped-normal":
            bound = 1 / np.sqrt(self.d)
            X = self.context_rng.standard_normal((self.n_items, self.d))
            return np.clip(X, -bound, bound)
        return self.context_rng.uniform(-3.0, 3.0, (self.n_items, self.d))
