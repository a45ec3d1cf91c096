"""A log of bandit feedback: the rewards, actions and propensities an off-policy estimator reads.

:class:`BanditLog` is data, not evaluation: the replay environments (``banditkit.envs``) hand
their log out as one, and the estimators of ``banditkit.ope`` (which re-exports it) read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["BanditLog"]


@dataclass(frozen=True)
class BanditLog:
    """A log of n rounds of bandit feedback over ``n_actions`` actions.

    Attributes:
        rewards: (n,) float rewards.
        actions: (n,) int logged actions in [0, n_actions).
        propensities: (n,) logging probabilities of the logged actions, in (0, 1].
        n_actions: K.
        features: (n, d) per-row features for a reward model (shared by the actions), or None.
        positions: (n,) display positions (OBD: 1..3), or None.
        meta: Where the log came from.
    """

    rewards: np.ndarray
    actions: np.ndarray
    propensities: np.ndarray
    n_actions: int
    features: np.ndarray | None = None
    positions: np.ndarray | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def n(self) -> int:
        """Logged rounds."""
        return int(self.rewards.shape[0])

    def uniform_target(self) -> np.ndarray:
        """(n, K) action probabilities of the uniform-random policy, 1 / K everywhere."""
        return np.full((self.n, self.n_actions), 1.0 / self.n_actions)
