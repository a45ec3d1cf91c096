"""Replay of logged bandit data with rejection sampling [Li2011]: the OBD and the user's log.

:class:`ReplayEnv` holds the replay loop shared by both: events are read in a seeded random
order (or in log order); an event counts only if the policy picks the logged action.
:class:`LogReplayEnv` (``log-replay``) replays the user's table of (context, action, reward);
:class:`OBDReplayEnv` (``obd-replay``) the Open Bandit Dataset as below.

Open Bandit Dataset replay [Bae2025, App. J.1]. Each logged event of the uniform-random log becomes one candidate round:

1. Candidates (K = 5): the logged item plus the K - 1 other items with the highest user-item
   affinity for that event (ties broken at random), shown in a random order so that the
   position in the list does not reveal the logged item (our choice: [Bae2025, App. J.1]
   does not say how candidates are ordered or ties broken).
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

import os
from abc import abstractmethod
from typing import Any, ClassVar

import numpy as np

from banditkit.core import ENVIRONMENTS, Context, ContextualEnvironment, Record, Step
from banditkit.core.caller import warn
from banditkit.core.params import Choice, Flag, Int, learned, param
from banditkit.core.types import Action
from banditkit.core.validation import check_choice, check_int
from banditkit.datasets import OBDFeatures, OBDLog, data_home, load_obd, obd_features
from banditkit.datasets.logs import BanditLog
from banditkit.datasets.obd import BEHAVIOR_POLICIES, CAMPAIGNS, VARIANTS
from banditkit.datasets.preprocess import SCALINGS, scale_features
from banditkit.datasets.tables import (
    describe_source,
    numeric_columns,
    params_repr,
    read_frame,
    source_stem,
)
from banditkit.envs.classification import ENCODINGS, encode_arms

__all__ = ["LogReplayEnv", "OBDReplayEnv", "ReplayEnv"]

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


class ReplayEnv(ContextualEnvironment):
    """Rejection-sampling replay of a log [Li2011, Alg. 3]: the loop shared by the replays.

    Each round reads the next logged event (a seeded permutation of the log per run with
    ``shuffle=True``, the log order otherwise) and shows its arms. If the policy plays the
    logged action the event is *accepted*: the reward is the logged one and the policy learns
    from it; otherwise the step has ``accepted=False`` and ``simulate`` reads the next event.
    The run ends after T accepted events or when the log is exhausted. The replayed value is
    unbiased for the logging policy's uniform-random play [Li2011, Thm. 1].

    Subclasses declare or set ``self.shuffle`` (and call ``super()._resolve()``), and implement
    ``n_events``, ``_event_arms`` (arms of an event, drawn with ``context_rng``),
    ``logged_action`` and ``_logged_reward``.
    """

    records: ClassVar[tuple[Record, ...]] = (
        Record(
            "regret",
            description="always 0: a log has no counterfactual outcomes",
            running_mean=True,
        ),
        Record(
            "reward",
            description="logged reward of the accepted event",
            running_mean=True,
            higher_is_better=True,
            plot=("reward", "average_reward"),
        ),
    )
    shuffle: bool = learned()  # a subclass declares it, or sets it in its constructor

    def _resolve(self) -> None:
        self._order = np.arange(0)
        self._next = 0
        self._event = -1

    @property
    @abstractmethod
    def n_events(self) -> int:
        """Events in the log."""

    @abstractmethod
    def _event_arms(self, event: int) -> np.ndarray:
        """The (K, d) arms of logged event ``event``."""

    @abstractmethod
    def logged_action(self) -> int:
        """The arm index of the logged action in the current round (the only acceptable one)."""

    @abstractmethod
    def _logged_reward(self, event: int) -> float:
        """The logged reward of event ``event``."""

    def _reset(self) -> None:
        n = self.n_events
        self._order = self.instance_rng.permutation(n) if self.shuffle else np.arange(n)
        self._next = 0
        self._event = -1

    def _next_context(self) -> Context | None:
        if self._next >= self._order.shape[0]:
            return None
        self._event = int(self._order[self._next])
        self._next += 1
        return Context(arms=self._event_arms(self._event))

    def _state(self) -> dict[str, Any]:
        return {"next": self._next, "event": self._event}

    def _load_state(self, state: dict[str, Any]) -> None:
        n = self._order.shape[0]
        self._next = check_int("state['next']", state.get("next"), low=0, high=n)
        self._event = check_int(
            "state['event']", state.get("event"), low=-1, high=n - 1
        )

    @property
    def event(self) -> int:
        """Row of the log shown in the current round (-1 before the first)."""
        return self._event

    @property
    def events_read(self) -> int:
        """Log events read so far in this run."""
        return self._next

    def _step(self, ctx: Context, action: Action) -> Step:
        if int(action) != self.logged_action():  # type: ignore[arg-type]
            return Step(feedback=0.0, reward=0.0, regret=0.0, accepted=False)
        reward = self._logged_reward(self._event)
        return Step(feedback=reward, reward=reward, regret=0.0, accepted=True)


@ENVIRONMENTS.register("obd-replay")
class OBDReplayEnv(ReplayEnv):
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

    #: Registry datasets every instance reads (checked before an experiment's first run).
    required_datasets: ClassVar[tuple[str, ...]] = ("obd",)

    behavior_policy: str = param(Choice(BEHAVIOR_POLICIES), default="random")
    campaign: str = param(Choice(CAMPAIGNS), default="all")
    n_arms: int = param(Int(low=2), default=5)
    user_dim: int = param(Int(low=1), default=16)
    item_dim: int = param(Int(low=1), default=8)
    shuffle: bool = param(Flag(), default=True)
    variant: str = param(Choice(VARIANTS), default="auto")

    def _resolve(self) -> None:
        super()._resolve()
        self._log, self._features = _prepare(
            self.behavior_policy,
            self.campaign,
            self.variant,
            self.user_dim,
            self.item_dim,
        )
        check_int("n_arms", self.n_arms, low=2, high=self._log.n_items)
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

    @property
    def n_events(self) -> int:
        """Events in the log."""
        return self._log.n_events

    def candidates_for(self, event: int, rng: np.random.Generator) -> np.ndarray:
        """The K candidate items of logged event ``event`` (logged item included), shuffled."""
        logged = int(self._log.item_id[event])
        affinity = self._log.affinity[event]
        ties = rng.random(affinity.shape[0])
        ranked = np.lexsort((ties, -affinity))  # highest affinity first, ties at random
        others = ranked[ranked != logged][: self.n_arms - 1]
        items = np.concatenate([[logged], others]).astype(np.int64)
        return items[rng.permutation(self.n_arms)]

    def _event_arms(self, event: int) -> np.ndarray:
        self._candidates = self.candidates_for(event, self.context_rng)
        f, e, items = self._features, event, self._candidates
        user = np.broadcast_to(f.user[e], (self.n_arms, self.user_dim))
        affinity = f.affinity[e, items].astype(np.float64)[:, None]
        position = np.full((self.n_arms, 1), f.position[e])
        return np.hstack([user, f.item[items], position, affinity, user * affinity])

    @property
    def candidates(self) -> np.ndarray:
        """Item ids of the current round's arms."""
        return self._candidates.copy()

    def logged_action(self) -> int:
        """The arm index of the logged item in the current round (the only acceptable one)."""
        return int(
            np.flatnonzero(self._candidates == self._log.item_id[self._event])[0]
        )

    def _logged_reward(self, event: int) -> float:
        return float(self._log.click[event])


@ENVIRONMENTS.register("log-replay")
class LogReplayEnv(ReplayEnv):
    """Replay of the user's log of (context features, action, reward[, propensity]).

    One row of the table is one logged round: numeric context columns x (scaled as the
    classification tables, ``scale="auto"``: per-feature min-max to [-1, 1]), the logged action
    a in 0..K-1 and its reward. The K arms of a row are built from the shared context as in
    the classification bandit: ``encoding="block"`` puts x in block k of a d*K vector for arm
    k, ``"onehot-id"`` gives [x, e_k]. Replay follows :class:`ReplayEnv` [Li2011]: a round
    counts only when the policy plays the logged action. It is unbiased only for a log of
    uniform-random play (propensity 1/K); for another logging policy use the off-policy
    estimators on :meth:`bandit_log` (``banditkit.ope``).

    Args:
        data: A ``.csv`` / ``.parquet`` path or a pandas DataFrame (Python API only: a
            config needs a path, read relative to the config file's folder).
        action: Column of the logged actions, integers in [0, K).
        reward: Column of the logged rewards (numbers).
        propensity: Column of the logging probabilities of the logged actions, in (0, 1]
            (None: no such column, uniform logging, 1/K). Non-uniform values give a
            warning: replay is then biased.
        features: Context columns (None: every column but action, reward and propensity).
        n_arms: K (None: the largest logged action + 1); at least 2.
        encoding: "block", "onehot-id" or "shared" (as ``classification``).
        scale: Feature scaling, one of ``banditkit.datasets.SCALINGS`` or "auto" (minmax).
        shuffle: Replay the rows in a seeded random order per run (True) or in table order.

    Raises:
        ValueError: A missing, non-numeric or incomplete column (named), actions that are not
            integers in [0, K), propensities outside (0, 1].

    Example:
        >>> import pandas as pd
        >>> log = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0], "action": [0, 1, 1, 0],
        ...                     "reward": [1.0, 0.0, 1.0, 0.0]})
        >>> env = LogReplayEnv(data=log, propensity=None)
        >>> env.reset(0); env.context().arms.shape
        (2, 2)
    """

    path_params: ClassVar[tuple[str, ...]] = ("data",)
    """Parameters a config gives as a path relative to itself (see ``experiments.config.resolve``)."""

    def __init__(
        self,
        *,
        data: Any,
        action: str = "action",
        reward: str = "reward",
        propensity: str | None = "propensity",
        features: list[str] | None = None,
        n_arms: int | None = None,
        encoding: str = "block",
        scale: str = "auto",
        shuffle: bool = True,
    ) -> None:
        super().__init__()
        self._source = str(data) if isinstance(data, os.PathLike) else data
        self.action, self.reward, self.propensity = action, reward, propensity
        self.features = None if features is None else list(features)
        self.encoding = check_choice("encoding", encoding, ENCODINGS)
        if scale != "auto":
            check_choice("scale", scale, SCALINGS)
        self.scale = scale
        if not isinstance(shuffle, bool | np.bool_):
            raise TypeError(f"shuffle must be a bool; got {shuffle!r}.")
        self.shuffle = bool(shuffle)
        frame = read_frame(self._source)
        where = describe_source(self._source)
        named = [c for c in (action, reward, propensity) if c is not None]
        for c in named:
            if not isinstance(c, str):
                raise ValueError(f"column names must be strings; got {c!r}.")
        columns = (
            [str(c) for c in frame.columns if c not in named]
            if features is None
            else list(features)
        )
        if not columns:
            raise ValueError(f"{where} has no context column besides {named}.")
        x = numeric_columns(frame, columns, role="feature", source=where)
        self._x = scale_features(x, "minmax" if scale == "auto" else scale)
        actions = numeric_columns(frame, [action], role="action", source=where)[:, 0]
        if not np.array_equal(actions, np.round(actions)) or actions.min() < 0:
            raise ValueError(
                f"action column {action!r} of {where} must hold integers >= 0 (the arm "
                "indices 0..K-1)."
            )
        self._actions = actions.astype(np.int64)
        k = int(self._actions.max()) + 1
        self.n_arms = check_int(
            "n_arms", k if n_arms is None else n_arms, low=max(k, 2)
        )
        self._rewards = numeric_columns(frame, [reward], role="reward", source=where)[
            :, 0
        ]
        if propensity is None:
            self._propensities = np.full(self._rewards.shape[0], 1.0 / self.n_arms)
        else:
            if propensity not in frame.columns:
                raise ValueError(
                    f"propensity column {propensity!r} is not in {where}; its columns: "
                    f"{[str(c) for c in frame.columns]} (propensity=None: a log without "
                    "one, of uniform-random play)."
                )
            p = numeric_columns(frame, [propensity], role="propensity", source=where)
            self._propensities = p[:, 0]
            if not ((self._propensities > 0) & (self._propensities <= 1)).all():
                raise ValueError(
                    f"propensity column {propensity!r} of {where} must be in (0, 1]."
                )
            if not np.allclose(self._propensities, 1.0 / self.n_arms, rtol=1e-3):
                warn(
                    f"{where}: the propensities are not uniform (1/{self.n_arms}); replay "
                    "is unbiased only for uniform logging. Use the estimators of "
                    "banditkit.ope on env.bandit_log() instead."
                )
        self._feature_names = columns

    @property
    def label(self) -> str:
        """For example "log-replay-mylog" (the file stem, or "dataframe")."""
        return f"log-replay-{source_stem(self._source)}"

    @property
    def n_events(self) -> int:
        """Rows in the log."""
        return int(self._actions.shape[0])

    def get_params(self) -> dict[str, Any]:
        """The parameters (``data`` as given: a path or a DataFrame)."""
        return {
            n: self._source if n == "data" else getattr(self, n)
            for n in self.param_names()
        }

    def __repr__(self) -> str:
        return params_repr(type(self).__name__, self.get_params())

    def meta(self) -> dict[str, Any]:
        """Where the log came from and its columns."""
        return {
            "source": describe_source(self._source),
            "n_events": self.n_events,
            "n_arms": self.n_arms,
            "feature_names": list(self._feature_names),
            "scale": "minmax" if self.scale == "auto" else self.scale,
        }

    def _event_arms(self, event: int) -> np.ndarray:
        return encode_arms(self._x[event], self.n_arms, self.encoding)

    def logged_action(self) -> int:
        """The logged action of the current round (the only acceptable one)."""
        return int(self._actions[self._event])

    def _logged_reward(self, event: int) -> float:
        return float(self._rewards[event])

    def bandit_log(self) -> BanditLog:
        """The log as a :class:`banditkit.ope.BanditLog` (``datasets.logs``) for the off-policy estimators.

        Its features are the scaled context columns (for ``dm`` / ``dr`` reward models);
        without a propensity column the propensities are 1/K.
        """
        return BanditLog(
            rewards=self._rewards.copy(),
            actions=self._actions.copy(),
            propensities=self._propensities.copy(),
            n_actions=self.n_arms,
            features=np.array(self._x),
            meta=self.meta(),
        )
