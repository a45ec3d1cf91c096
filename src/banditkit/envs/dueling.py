"""Synthetic contextual dueling bandits with nonlinear utilities [Oh2025, App. E.1.1].

Per run, Theta is drawn from U([-1, 1]^d) (a vector), or U([-1, 1]^{d x d}) (a matrix, for
``utility="quadratic"`` by default). Per round, K contexts are drawn from U([-1, 1]^d) and
scaled to unit L2 norm ([Oh2025, Listing 1]). Utilities:

    cos                  u(x) = cos(3 Theta^T x)
    square               u(x) = 10 (Theta^T x)^2
    quadratic            u(x) = x^T Theta^T Theta x = ||Theta x||^2, Theta a d x d matrix
                         (our reading of the "matrix" task of Sec. 6 and of Fig. E.2's caption)
    quadratic-vector     u(x) = x^T Theta Theta^T x = (Theta^T x)^2, Theta a vector (App. E.1.1
                         literally; equals square / 10)

The first arm of the pair wins with probability g(u_i - u_j), g the link of
``glm.duel_links`` (``"btl"``: the sigmoid, the paper's; ``"thurstone"``: the normal
CDF; or their glm names "logistic" and "probit"), the link the policies' ``link`` names. The outcome is 1[xi < g(u_i - u_j)]
with xi ~ U(0, 1) drawn once per round before the action is known, so policies under one seed
see the same contexts and the same noise (common random numbers).

Regret is the paper's average regret (2 u* - u_i - u_j) / 2 [Oh2025, Sec. 3.1]; weak and strong
regret are recorded too; the reward is (u_i + u_j) / 2.

References:
    [Oh2025] Y. Oh, J. Park, T. Paik. Neural variance-aware dueling bandits with deep
        representation and shallow exploration. arXiv:2506.01250 (AISTATS 2026).
"""

from __future__ import annotations

import numpy as np

from banditkit.core import ENVIRONMENTS, Context, DuelingEnvironment, Step
from banditkit.core.types import Action
from banditkit.core.validation import check_choice, check_int
from banditkit.glm.duel_links import LINK_NAMES, LINKS

__all__ = ["LINKS", "UTILITIES", "DuelingEnv"]

UTILITIES = ("cos", "square", "quadratic", "quadratic-vector")


@ENVIRONMENTS.register("dueling")
class DuelingEnv(DuelingEnvironment):
    """K-armed contextual dueling bandit with a nonlinear utility [Oh2025, App. E.1.1].

    Args:
        utility: "cos", "square", "quadratic" (d x d matrix Theta) or "quadratic-vector".
        d: Context dimension, >= 1 (paper: 5; 10 in Fig. E.3; 20 in Table E.3).
        n_arms: K, >= 2 (paper: 5; 10 in Fig. E.4).
        link: "btl" (paper; alias "logistic") or "thurstone" (alias "probit").

    Raises:
        ValueError: For an unknown utility or link, d < 1 or n_arms < 2.

    Example:
        >>> env = DuelingEnv(utility="square", d=5, n_arms=5)
        >>> env.reset(0); ctx = env.context()
        >>> k = env.best_action()[0]
        >>> env.step((k, k)).regret
        0.0
    """

    def __init__(
        self,
        *,
        utility: str = "cos",
        d: int = 5,
        n_arms: int = 5,
        link: str = "btl",
    ) -> None:
        super().__init__()
        self.utility = check_choice("utility", utility, UTILITIES)
        self.d = check_int("d", d, low=1)
        self.n_arms = check_int("n_arms", n_arms, low=2)
        self.link = check_choice("link", link, tuple(LINK_NAMES))
        self._g = LINKS[self.link].g
        self.theta = np.zeros(self.d)
        self._u = np.zeros(self.n_arms)
        self._xi = 0.5

    @property
    def label(self) -> str:
        """For example "dueling-square-d5-K5"."""
        return f"dueling-{self.utility}-d{self.d}-K{self.n_arms}"

    def _reset(self) -> None:
        shape = (self.d, self.d) if self.utility == "quadratic" else (self.d,)
        self.theta = self.instance_rng.uniform(-1.0, 1.0, size=shape)

    def utilities_of(self, X: np.ndarray) -> np.ndarray:
        """u(x) of each row of X (K, d) -> (K,)."""
        if self.utility == "quadratic":
            z = X @ self.theta.T  # rows Theta x
            return np.sum(z * z, axis=1)
        s = X @ self.theta
        if self.utility == "cos":
            return np.cos(3.0 * s)
        if self.utility == "square":
            return 10.0 * s * s
        return s * s  # quadratic-vector

    def _next_context(self) -> Context:
        x = self.context_rng.uniform(-1.0, 1.0, size=(self.n_arms, self.d))
        norms = np.linalg.norm(x, axis=1, keepdims=True)
        arms = x / np.where(norms > 0.0, norms, 1.0)
        self._u = self.utilities_of(arms)
        self._xi = float(self.noise_rng.random())  # before the action: common noise
        return Context.unchecked(arms)

    def utilities(self) -> np.ndarray:
        """u(x_k) of the current round, (K,)."""
        return self._u.copy()

    def preference_probability(self, first: int, second: int) -> float:
        """P(first beats second) = g(u_first - u_second) in the current round."""
        return float(self._g(self._u[first] - self._u[second]))

    def best_action(self) -> tuple[int, int]:
        """(k*, k*): the best arm duelling itself (zero average regret)."""
        k = int(np.argmax(self._u))
        return (k, k)

    def _step(self, ctx: Context, action: Action) -> Step:
        i, j = int(action[0]), int(action[1])  # type: ignore[index]
        u = self._u
        best, u1, u2 = float(u.max()), float(u[i]), float(u[j])
        return Step(
            feedback=int(self._xi < self.preference_probability(i, j)),
            reward=(u1 + u2) / 2.0,
            regret=(2.0 * best - u1 - u2) / 2.0,
            values={
                "weak_regret": best - max(u1, u2),
                "strong_regret": best - min(u1, u2),
            },
        )
