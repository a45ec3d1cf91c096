"""Scored parts with a member axis: S seeds of one configuration through one round.

Seed batching plays S runs of one policy configuration (the same hyper-parameters, their
own seeds) in lockstep (``core.members``). A scored policy's round (``parts.scored``)
reads its parts only through their methods, so S members play through the same round
when each part holds the S members' state along a leading axis:

    Streams          the members' random streams, in order (the policy's ``rng``)
    StackedHistory   rows (S, n, d) and rewards (S, n), as the training reads them
    StackedNetwork   the S networks (``parts.stacked_network``)
    StackedScorer    means and norms (S, K) on the members' arms (S, K, d), the diagonal
                     A (S, p), each member's own d_eff tracker, radius and mean
    StackedRule      each member's choice by the rule, with its own stream
    MemberLambdas    each member's regulariser, moved to the round's n

``parts.scored.stack_parts`` builds them from the S members' own parts (composed as for
separate runs, so the initial networks and every random draw are the separate runs'), or
raises for a part it cannot stack. The actions are those of the separate runs up to the order
of floating-point operations in the batched products.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from banditkit.core.lazy import torch  # imported at first use
from banditkit.linalg import EffectiveDimension
from banditkit.policies.parts.propensity import Law, MonteCarlo
from banditkit.policies.parts.scorer import Scorer
from banditkit.policies.parts.selection import ArmRule, RadiusRange
from banditkit.policies.parts.stacked_network import StackedNetwork
from banditkit.policies.parts.weights import FixedLambda

__all__ = [
    "MemberLambdas",
    "StackedHistory",
    "StackedRule",
    "StackedScorer",
    "Streams",
]


class Streams(tuple[np.random.Generator, ...]):
    """The random streams of S stacked members, in member order."""


@dataclass(frozen=True)
class StackedRule:
    """A rule over arms applied to each member with its own stream: actions (S,)."""

    rule: ArmRule

    def select_bracketed(
        self,
        mean: np.ndarray,
        norms: np.ndarray,
        radius: Sequence[RadiusRange],
        rng: Streams,
    ) -> np.ndarray:
        """Each member's ``rule.select_bracketed`` on its row of the (S, K) arrays."""
        return np.array(
            [
                self.rule.select_bracketed(mean[s], norms[s], radius[s], stream)
                for s, stream in enumerate(rng)
            ],
            dtype=np.int64,
        )

    def laws(
        self,
        mean: np.ndarray,
        norms: np.ndarray,
        radius: Sequence[RadiusRange],
        chosen: Sequence[int],
        mcs: Sequence[MonteCarlo | None],
    ) -> list[Law | None]:
        """Each member's ``rule.law_bracketed`` at its choice, with its Monte Carlo budget."""
        return [
            self.rule.law_bracketed(mean[s], norms[s], radius[s], int(a), mcs[s])
            for s, a in enumerate(chosen)
        ]


class StackedHistory:
    """The members' rows (S, n, d) and rewards (S, n), in the dtype of their training.

    Args:
        members: S.
        d: Feature dimension.
        dtype: "float64" or "float32".
        capacity: Rows to allocate (doubled when exceeded).
    """

    def __init__(self, members: int, d: int, dtype: str, capacity: int) -> None:
        self._dtype = getattr(torch, dtype)
        self._X = torch.empty((members, capacity, d), dtype=self._dtype)
        self._y = torch.empty((members, capacity), dtype=self._dtype)
        self.n = 0

    def append(self, x: np.ndarray, y: np.ndarray) -> None:
        """Add one row (S, d) and one reward (S,) per member."""
        n = self.n
        if n == self._X.shape[1]:  # grow (no horizon given)
            self._X = torch.cat([self._X, torch.empty_like(self._X)], dim=1)
            self._y = torch.cat([self._y, torch.empty_like(self._y)], dim=1)
        self._X.numpy()[:, n] = x
        self._y.numpy()[:, n] = y
        self.n = n + 1

    def tensors(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The rows (S, n, d) and rewards (S, n) so far, contiguous."""
        return self._X[:, : self.n].contiguous(), self._y[:, : self.n].contiguous()


@dataclass
class MemberLambdas:
    """The members' regularisers, all moved to the round's n (fixed lam only)."""

    members: list[FixedLambda]

    @property
    def lam(self) -> float:
        """lam_t (one configuration: the members share it)."""
        return self.members[0].lam

    @property
    def n(self) -> int:
        """Observations so far (the members share it)."""
        return self.members[0].n

    def advance(self, n: int) -> None:
        """Each member's lam_n and n."""
        for member in self.members:
            member.advance(n)


class StackedScorer:
    """Means and norms of S members on their arms, with a diagonal A (S, p).

    Args:
        scorers: The members' own scorers (diagonal designs; their radius, mean,
            effective-dimension tracker and feature scale are read from them).
        model: Their models, stacked.
    """

    def __init__(self, scorers: Sequence[Scorer], model: StackedNetwork) -> None:
        first = scorers[0]
        if not all(s.design.is_diagonal for s in scorers):
            raise ValueError("scorers must have diagonal designs to be stacked.")
        self.model = model
        self.nu = first.nu
        self.feature_scale = first.feature_scale
        self.mean = first.mean
        self.design = _StackedDiagonal(np.stack([s.design.diagonal for s in scorers]))
        self._radii = [s.radius for s in scorers]
        self._effdims: list[EffectiveDimension] | None = (
            None if first.effdim is None else [s.effdim for s in scorers]  # type: ignore[misc]
        )

    @property
    def effdim(self) -> None:
        """No single tracker: each member has its own (``radius_range``)."""
        return None

    def score_parts(self, arms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """mean(f) (S, K) and ||scale * z_k||_{A^-1} (S, K) on the members' arms (S, K, d)."""
        scale = self.feature_scale
        inv_diag = (scale * scale) / self.design.diagonal
        latent, sq = self.model.evaluate_sq_norms(arms, inv_diag)
        return self.mean(latent), np.sqrt(sq)

    def radius_range(self) -> list[RadiusRange]:
        """Each member's nu and B(d_eff), on the bounds of its pending d_eff."""
        if self._effdims is None:
            return [RadiusRange.known(self.nu, radius(0.0)) for radius in self._radii]
        ranges = []
        for radius, tracker in zip(self._radii, self._effdims, strict=True):
            low, high = tracker.bounds()
            if low != high:
                ranges.append(
                    RadiusRange(
                        self.nu,
                        radius(low),
                        radius(high),
                        True,
                        _exact(radius, tracker),
                    )
                )
            else:
                ranges.append(RadiusRange.known(self.nu, radius(tracker.value)))
        return ranges

    def played(
        self, arms: np.ndarray, actions: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The rows (S, d), latents (S,) and features (S, p) of the members' actions."""
        return self.model.played(actions)

    def track(self, z: np.ndarray) -> None:
        """Each member's d_eff += its row of z (S, p)."""
        if self._effdims is not None:
            for tracker, row in zip(self._effdims, z, strict=True):
                tracker.update_unchecked(row)

    def add(self, z: np.ndarray, weight: Any = 1.0) -> None:
        """A_s += w_s (scale z_s)^2 for each member (diagonal)."""
        scaled = self.feature_scale * z
        scaled *= scaled
        scaled *= np.reshape(weight, (-1, 1))
        self.design.diagonal += scaled


@dataclass
class _StackedDiagonal:
    """The members' diagonal Grams, (S, p)."""

    diagonal: np.ndarray
    is_diagonal: bool = True


def _exact(radius: Any, tracker: EffectiveDimension) -> Any:
    return lambda: radius(tracker.value)
