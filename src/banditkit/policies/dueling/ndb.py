"""Neural dueling bandits (NDB-UCB, NDB-TS) [Verma2025], the full-gradient baseline of [Oh2025].

The same asymmetric pair rules as NVLDB-*-ASYM, with the exploration of the whole network:

    model        NeuralModel: an MLP f(x; theta) (mirrored initialisation, f(x; theta_0) = 0),
                 trained on the duels by the likelihood of f(x_i1) - f(x_i2) under the
                 link g (``link``: BTL by default, or Thurstone / any glm link) with
                 (lam / 2) ||theta - theta_0||^2 on every parameter (``nn.fit``; Adam, sum)
    uncertainty  a p x p Gram V = lam I + sum_i (g_i1 - g_i2)(g_i1 - g_i2)^T / m of the
                 gradients g(x; theta) of all p parameters at selection time, bonuses
                 ||(g_k - g_k') / sqrt(m)||_{V^-1}; no variance weights
    selection    PairRule(ucb | ts, "asym")
    schedule     Periodic(update_every)

Following the recommendation for a like-for-like comparison with NVLDB, the network, the
optimiser and its settings are NVLDB's (the presets of ``network.PRESETS``). ``gram="full"``
keeps the exact p x p matrix (rank-1 updates of V^-1; ``exact_inverse=True`` refactorises V
every round in O(p^3), the per-round inverse of the reference implementation, for the
runtime comparison); ``gram="diagonal"`` keeps diag(V) only, for widths where p x p does not
fit in memory (m = 100 gives p ~ 10^4).

References:
    [Verma2025] A. Verma, Z. Dai, X. Lin, P. Jaillet, B. K. H. Low. Neural dueling bandits:
        preference-based optimization with human feedback. ICLR 2025.
    [Oh2025] Y. Oh, J. Park, T. Paik. Neural variance-aware dueling bandits with deep
        representation and shallow exploration. arXiv:2506.01250 (AISTATS 2026).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from banditkit.core import POLICIES, Context
from banditkit.core.params import Choice, Flag, param
from banditkit.core.types import Action, Feedback
from banditkit.linalg import DiagonalGram, Gram
from banditkit.policies.dueling.network import NeuralDuelingBase
from banditkit.policies.dueling.rules import PairRule
from banditkit.policies.dueling.stacked import DuelOutputs
from banditkit.policies.parts.history import PairHistory
from banditkit.policies.parts.models import NeuralModel
from banditkit.policies.parts.models.compute import DTYPE_FLOAT64
from banditkit.policies.parts.propensity import monte_carlo
from banditkit.policies.parts.schedules import Periodic

if TYPE_CHECKING:
    from banditkit import nn
else:
    from banditkit.core.lazy import lazy_import

    nn = lazy_import("banditkit.nn")  # PyTorch: imported at first use

__all__ = ["NDBTS", "NDBUCB", "NeuralDuelingPolicy"]

GRAMS = ("full", "diagonal")


class NeuralDuelingPolicy(NeuralDuelingBase):
    """NDB [Verma2025]: ASYM pairs with full-gradient bonuses (module docstring).

    Args:
        a: Exploration coefficient nu, >= 0 (1.0).
        lam: Penalty weight and V_0 = lam I, > 0.
        preset: "appendix" (m = 32, lr = 0.01) or "main" (m = 100, lr = 1e-3).
        width: Hidden width m (even; overrides the preset).
        lr: Adam step size (overrides the preset).
        depth: Layers L >= 2 (3 as NVLDB).
        steps: Adam steps per fit, >= 1.
        update_every: Rounds between fits, >= 1.
        distinct_duels: Train on the duels of two different arms only (False: every
            duel), as ``NeuralLinearDuelingPolicy`` (``policies.dueling.nvldb``) does.
        gram: "full" (p x p) or "diagonal".
        exact_inverse: Refactorise V from scratch every round (O(p^3)).
        link: The preference link of the loss: "btl" (alias "logistic", the default),
            "thurstone" (alias "probit") or a ``glm.Link`` / ``DuelLink``.
        dtype: "float64" (default) or "float32": the network, its training and g.
            NDB keeps float64 where the other neural policies default to float32:
            its regret moved in float32 by more than its paired interval
            (docs/performance.md, "The default dtype").
        device: "cpu" (default), "cuda", "cuda:N" or "auto": where the network, its
            training, the duels and V live (a missing device is a ``ValueError``).
        seed: Seed of the policy's streams.
    """

    stack_family: ClassVar[str | None] = "neural-dueling"

    gram: str = param(Choice(GRAMS), default="full")
    exact_inverse: bool = param(Flag(), default=False)
    dtype: str = DTYPE_FLOAT64

    def _resolve(self) -> None:
        super()._resolve()
        if self._m % 2:
            raise ValueError(
                f"width must be even (mirrored initialisation); got {self._m}."
            )

    def _build(self, d: int, generator: Any) -> None:
        trainer = nn.Trainer(
            loss="bce",
            lam=self.lam,
            center="init",
            optimizer="adam",
            lr=self._lr,
            steps=self.steps,
            reduction="sum",
        )
        self.model = NeuralModel(
            d,
            width=self._m,
            depth=self.depth,
            trainer=trainer,
            generator=generator,
            pair_link=self._link.glm,
            distinct_duels=self.distinct_duels,
            dtype=self.dtype,
            device=self.device,
        )
        p = self.model.n_params
        self.design = (
            Gram(p, self.lam, refactor_every=1 if self.exact_inverse else 512)
            if self.gram == "full"
            else DiagonalGram(p, self.lam)
        )
        self.scale = 1.0 / math.sqrt(self._m)
        self.history = PairHistory(d)
        self.selector = PairRule(self.exploration, "asym", a=self.a)
        self.schedule = Periodic(self.update_every)

    def _scores(self, arms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        f, G = self.model.evaluate(np.array(arms))
        return f, self.scale * self.design.pair_norms_unchecked(G)

    def _act(self, ctx: Context) -> Action:
        f, b = self._scores(ctx.arms)
        pair = self.selector.select(f, b, self.t + 1, self.rng)
        self.propose(self.selector.law(f, b, self.t + 1, pair, monte_carlo(self)))
        return pair

    def _record(self, ctx: Context, action: Action, feedback: Feedback) -> np.ndarray:
        """The round's duel; g of the pair (2, p) at theta_{t-1}, for V after the fit."""
        assert isinstance(action, tuple)
        i, j = action
        G = self.model.features(np.array(ctx.arms[[i, j]]))  # at theta_{t-1}
        self.history.append(ctx.arms[i], ctx.arms[j], float(feedback), arms=(i, j))
        return G

    def _after_fit(
        self, recorded: np.ndarray, duels: DuelOutputs | None = None
    ) -> None:
        """V += (g_1 - g_2)(g_1 - g_2)^T / m, the gradients of the pair before the fit.

        The history's duels are not read (``duels`` is None: ``_reads_duels``).
        """
        self.design.update(self.scale * (recorded[0] - recorded[1]))


@POLICIES.register("ndb-ucb")
class NDBUCB(NeuralDuelingPolicy):
    """NDB-UCB [Verma2025]: k2 = argmax_k f_k + a ||(g_k - g_k1) / sqrt(m)||_{V^-1}."""

    exploration = "ucb"


@POLICIES.register("ndb-ts")
class NDBTS(NeuralDuelingPolicy):
    """NDB-TS [Verma2025]: k2 = argmax_k of N(f_k - f_k1, a^2 ||(g_k - g_k1) / sqrt(m)||^2)."""

    exploration = "ts"
