"""Classification datasets as contextual dueling bandits [Oh2025, App. E.1.2].

Each round one labelled row (x, y) is shown as K arms (one per class, block encoding by
default: d = K * d0). The learner picks an ordered pair (i, j) and observes o = 1 if arm i
won the duel, else 0. The utility of arm k is u_k = 1[k = y] (our reconstruction; [Oh2025,
App. E.1.2] calls u_k the true utility of category k without giving its values), and
the preference is

    btl            P(i beats j) = sigmoid(u_i - u_j)      (Magic, Covertype: the correct arm
                                                          beats a wrong one w.p. 0.731)
    thurstone      P(i beats j) = Phi(u_i - u_j)          (0.841; not in the paper)
    deterministic  P(i beats j) = 1 if u_i > u_j, 0 if u_i < u_j, 1/2 on ties
                                                          (Statlog/shuttle: "P = 1 for i > j",
                                                          read as u_i > u_j, our reading of
                                                          [Oh2025, App. E.1.2])

``preference="auto"`` picks "deterministic" for shuttle and "btl" for every other dataset.
The outcome is o = 1[xi < P(i beats j)] with xi ~ Unif(0, 1) drawn once per round before the
action is known (common random numbers), so a duel of an arm against itself, or of two wrong
classes, is a fair coin (our choice; the paper's "P = 1 for i > j" leaves ties open).

Regret is the paper's average regret r = (2 u* - u_i - u_j) / 2 in {0, 1/2, 1} [Oh2025, Sec. 3.1];
the reward is the mean utility (u_i + u_j) / 2. Weak regret u* - max(u_i, u_j) is available
from :meth:`DuelingClassificationEnv.regrets`.

Contexts default to rows scaled to unit L2 norm (our choice, as the paper's synthetic contexts
[Oh2025, App. E.1.1]; it does not state a scaling for the real-world data),
drawn uniformly with replacement.

References:
    [Oh2025] Y. Oh, J. Park, T. Paik. Neural variance-aware dueling bandits with deep
        representation and shallow exploration. arXiv:2506.01250 (AISTATS 2026).
"""

from __future__ import annotations

import numpy as np

from banditkit.core import ENVIRONMENTS, Context, DuelingEnvironment, Step
from banditkit.core.params import Choice, param
from banditkit.core.types import Action
from banditkit.datasets import SCALINGS
from banditkit.envs.classification import DatasetEnv
from banditkit.glm.duel_links import LINKS

__all__ = ["PREFERENCES", "TIES", "DuelingClassificationEnv"]

PREFERENCES = ("auto", "btl", "thurstone", "deterministic")
#: How a deterministic preference settles two different arms of equal utility (two wrong
#: classes): "coin" (P = 1/2) or "index" (the higher index wins, App. E.1.2's literal
#: "P(i beats j) = 1 for i > j" applied among the wrong classes).
TIES = ("coin", "index")
_DETERMINISTIC_DATASETS = ("shuttle",)


@ENVIRONMENTS.register("dueling-classification")
class DuelingClassificationEnv(DatasetEnv, DuelingEnvironment):
    """K-class classification as a K-armed contextual dueling bandit [Oh2025, App. E.1.2].

    Args:
        dataset: A name from ``banditkit.datasets.list_datasets("classification")``
            (paper: shuttle, magic, covertype; default "digits", embedded); not with
            ``data``.
        pool: Rows sampled without replacement per run to form the pool (None: all rows).
        encoding: "block" (disjoint, d*K) or "onehot-id" ([x, e_k]).
        scale: Feature scaling (default "l2": unit-norm rows; "zscore-l2" standardises first).
        shuffle: Walk through permutations of the pool instead of drawing with replacement.
        preference: "btl", "thurstone" (the link g of ``glm.duel_links``),
            "deterministic" or "auto" (deterministic for shuttle only, else btl).
        ties: Deterministic preferences only: two different arms of equal utility (two
            wrong classes) duel as a fair coin ("coin", default) or the higher index wins
            ("index"). An arm against itself is always a fair coin.
        categorical, image_size, subset, split, data_seed: As in ``ClassificationEnv``.
        data, label_column, features: The user's table instead of ``dataset``, as in
            ``ClassificationEnv`` (docs/own-data.md).

    Example:
        >>> env = DuelingClassificationEnv(pool=50)
        >>> env.reset(0); ctx = env.context()
        >>> y = env.best_action()[0]
        >>> env.step((y, y)).regret
        0.0
    """

    preference: str = param(Choice(PREFERENCES), default="auto")
    ties: str = param(Choice(TIES), default="coin")
    scale: str = param(Choice(*SCALINGS, "auto"), default="l2")

    def _resolve(self) -> None:
        super()._resolve()
        self._xi = 0.5

    @property
    def preference_model(self) -> str:
        """The resolved preference: "btl", "thurstone" or "deterministic"."""
        if self.preference != "auto":
            return self.preference
        return "deterministic" if self.dataset in _DETERMINISTIC_DATASETS else "btl"

    @property
    def label(self) -> str:
        """For example "dueling-classification-shuttle" (a user table: its file stem)."""
        return f"dueling-classification-{self.source_name}"

    def _next_context(self) -> Context:
        arms = self._next_row_arms()
        self._xi = float(
            self.noise_rng.random()
        )  # before the action: common random numbers
        return Context(arms=arms)

    def utilities(self) -> np.ndarray:
        """u_k = 1[k = y] for the current round, (K,)."""
        u = np.zeros(self.n_arms)
        u[self._label] = 1.0
        return u

    def preference_probability(self, first: int, second: int) -> float:
        """P(first beats second) in the current round."""
        u = self.utilities()
        diff = u[first] - u[second]
        model = self.preference_model
        if model != "deterministic":
            return float(LINKS[model].g(np.array(diff)))
        if diff != 0:
            return 1.0 if diff > 0 else 0.0
        if self.ties == "index" and first != second:
            return 1.0 if first > second else 0.0
        return 0.5

    def best_action(self) -> tuple[int, int]:
        """The pair (y, y): both arms of the true class (zero average regret)."""
        return (self._label, self._label)

    def regrets(self, action: tuple[int, int]) -> dict[str, float]:
        """Average, weak and strong regret of a pair in the current round.

        Average and weak regret as defined in [Oh2025, Sec. 3.1].
        """
        u = self.utilities()
        best, u1, u2 = u.max(), u[action[0]], u[action[1]]
        return {
            "average": float((2 * best - u1 - u2) / 2),
            "weak": float(best - max(u1, u2)),
            "strong": float(best - min(u1, u2)),
        }

    def _step(self, ctx: Context, action: Action) -> Step:
        first, second = int(action[0]), int(action[1])  # type: ignore[index]
        won = int(self._xi < self.preference_probability(first, second))
        u = self.utilities()
        regrets = self.regrets((first, second))
        return Step(
            feedback=won,
            reward=float((u[first] + u[second]) / 2),
            regret=regrets["average"],
            values={"weak_regret": regrets["weak"], "strong_regret": regrets["strong"]},
        )
