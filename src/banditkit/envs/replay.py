"""Open Bandit Dataset replay with rejection sampling [Bae2025, App. J.1] (logistic spec 4.4).

Each logged event of the uniform-random log becomes one candidate round:

1. Candidates (K = 5): the logged item plus the K - 1 other items with the highest user-item
   affinity for that event (ties broken at random), shown in a random order so that the
   position in the list does not reveal the logged item [spec 4.4, Assumption].
2. Arm features (d = user_dim + item_dim + 1 + 1 + user_dim = 42 by default):

       [user embedding (16), item embedding (8), position, affinity, user embedding * affinity]

   built by ``banditkit.datasets.obd_features`` (truncated SVD of one-hot features, position
   and log1p affinity scaled to [-1, 1], all fitted on the whole log before replay).
3. Rejection sampling [Li2011]: the event counts only if the policy picks the logged item. It
   is then *accepted*: the reward is the logged click and the policy learns from it. Otherwise
   the step is returned with ``accepted=False``; ``simulate`` neither records nor learns from
   it and reads the next event. A run ends after T accepted events or when the log is exhausted.

The metrics are cumulative clicks and CTR = clicks / accepted events; counterfactual rewards
are unknown, so there is no regret (``Step.regret`` is 0.0, and the declared ``regret``
record is not drawn); the figures show the clicks and the click-through rate instead.
``simulate``'s ``events_read`` and ``acceptance_rate`` (about 1/K for uniform play) record
how many events were read.

Event order (Assumption): a seeded random permutation of the log per run (``shuffle=True``,
the exchangeable-events reading of replay), or the logged time order (``shuffle=False``).

References:
    [Bae2025] S. Bae, D. Lee. Neural logistic bandits. arXiv:2505.02069.
    [Li2011] L. Li, W. Chu, J. Langford, X. Wang. Unbiased offline evaluation of
        contextual-bandit-based news article recommendation algorithms. WSDM 2011.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from banditkit.core import ENVIRONMENTS, Context, ContextualEnvironment, Record, Step
from banditkit.core.types import Action
from banditkit.core.validation import check_choice, check_int
from banditkit.datasets import OBDFeatures, OBDLog, data_home, load_obd, obd_features
from banditkit.datasets.obd import BEHAVIOR_POLICIES, CAMPAIGNS, VARIANTS

__all__ = ["OBDReplayEnv"]

_PREPARED: dict[tuple[Any, ...], tuple[OBDLog, OBDFeatures]] = {}


def _prepare(
    behavior_policy: str, campaign: str, variant: str, user_dim: int, item_dim: int
) -> tuple[OBDLog, OBDFeatures]:
    key = (behavior_policy, campaign, variant, user_dim, item_dim, str(data_home()))
    if key not in _PREPARED:
        log = load_obd(behavior_policy, campaign, variant=variant)
        _PREPARED.clear()  # keep one log in memory: the complete dataset is large
        _PREPARED[key] = (log, obd_features(log, user_dim=user_dim, item_dim=item_dim))
    return _PREPARED[key]


@ENVIRONMENTS.register("obd-replay")
class OBDReplayEnv(ContextualEnvironment):
    """Replay of the Open Bandit Dataset with rejection sampling (see the module docstring).

    Args:
        behavior_policy: The log to replay: "random" (uniform logging; replay is only unbiased
            for it) or "bts".
        campaign: "all" (80 items, the paper's), "men" or "women".
        n_arms: K, candidates per event (paper: 5), in [2, number of items].
        user_dim: SVD dimension of the user features (paper: 16).
        item_dim: SVD dimension of the item features (paper: 8).
        shuffle: Replay the events in a seeded random order (True) or in time order.
        variant: "sample" (10,000 rows), "full" (the complete dataset) or "auto" (full when
            present in the data home, else the sample).

    Example:
        >>> env = OBDReplayEnv()  # doctest: +SKIP
        >>> env.reset(0); env.context().arms.shape  # doctest: +SKIP
        (5, 42)
    """

    records: ClassVar[tuple[Record, ...]] = (
        Record(
            "regret",
            description="always 0: a log has no counterfactual outcomes",
            running_mean=True,
        ),
        Record(
            "reward",
            description="click of the accepted event (1 or 0)",
            running_mean=True,
            higher_is_better=True,
            plot=("reward", "average_reward"),
        ),
    )

    def __init__(
        self,
        *,
        behavior_policy: str = "random",
        campaign: str = "all",
        n_arms: int = 5,
        user_dim: int = 16,
        item_dim: int = 8,
        shuffle: bool = True,
        variant: str = "auto",
    ) -> None:
        super().__init__()
        self.behavior_policy = check_choice(
            "behavior_policy", behavior_policy, BEHAVIOR_POLICIES
        )
        self.campaign = check_choice("campaign", campaign, CAMPAIGNS)
        self.variant = check_choice("variant", variant, VARIANTS)
        self.user_dim = check_int("user_dim", user_dim, low=1)
        self.item_dim = check_int("item_dim", item_dim, low=1)
        if not isinstance(shuffle, bool | np.bool_):
            raise TypeError(f"shuffle must be a bool; got {shuffle!r}.")
        self.shuffle = bool(shuffle)
        self._log, self._features = _prepare(
            self.behavior_policy,
            self.campaign,
            self.variant,
            self.user_dim,
            self.item_dim,
        )
        self.n_arms = check_int("n_arms", n_arms, low=2, high=self._log.n_items)
        self._order = np.arange(self._log.n_events)
        self._next = 0
        self._event = -1
        self._candidates = np.empty(0, dtype=np.int64)

    @property
    def label(self) -> str:
        """For example "obd-replay-random-all"."""
        return f"obd-replay-{self.behavior_policy}-{self.campaign}"

    @property
    def log(self) -> OBDLog:
        """The replayed log."""
        return self._log

    @property
    def d(self) -> int:
        """Arm feature dimension: 2 * user_dim + item_dim + 2."""
        return 2 * self.user_dim + self.item_dim + 2

    def meta(self) -> dict[str, Any]:
        """The log's metadata (variant, paths, verification)."""
        return dict(self._log.meta)

    def _reset(self) -> None:
        n = self._log.n_events
        self._order = self.instance_rng.permutation(n) if self.shuffle else np.arange(n)
        self._next = 0
        self._event = -1

    def candidates_for(self, event: int, rng: np.random.Generator) -> np.ndarray:
        """The K candidate items of logged event ``event`` (logged item included), shuffled."""
        logged = int(self._log.item_id[event])
        affinity = self._log.affinity[event]
        ties = rng.random(affinity.shape[0])
        ranked = np.lexsort((ties, -affinity))  # highest affinity first, ties at random
        others = ranked[ranked != logged][: self.n_arms - 1]
        items = np.concatenate([[logged], others]).astype(np.int64)
        return items[rng.permutation(self.n_arms)]

    def _next_context(self) -> Context | None:
        if self._next >= self._order.shape[0]:
            return None
        self._event = int(self._order[self._next])
        self._next += 1
        self._candidates = self.candidates_for(self._event, self.context_rng)
        f, e, items = self._features, self._event, self._candidates
        user = np.broadcast_to(f.user[e], (self.n_arms, self.user_dim))
        affinity = f.affinity[e, items].astype(np.float64)[:, None]
        position = np.full((self.n_arms, 1), f.position[e])
        arms = np.hstack([user, f.item[items], position, affinity, user * affinity])
        return Context(arms=arms)

    @property
    def candidates(self) -> np.ndarray:
        """Item ids of the current round's arms."""
        return self._candidates.copy()

    @property
    def events_read(self) -> int:
        """Log events read so far in this run."""
        return self._next

    def logged_action(self) -> int:
        """The arm index of the logged item in the current round (the only acceptable one)."""
        return int(
            np.flatnonzero(self._candidates == self._log.item_id[self._event])[0]
        )

    def _step(self, ctx: Context, action: Action) -> Step:
        if int(self._candidates[int(action)]) != int(self._log.item_id[self._event]):  # type: ignore[arg-type]
            return Step(feedback=0.0, reward=0.0, regret=0.0, accepted=False)
        click = float(self._log.click[self._event])
        return Step(feedback=click, reward=click, regret=0.0, accepted=True)
