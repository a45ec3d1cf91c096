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
optimiser and its settings are NVLDB's (the presets of ``nvldb.PRESETS``). ``gram="full"``
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

from banditkit.core import POLICIES, Context, DuelingPolicy
from banditkit.core.types import Action, Feedback
from banditkit.core.validation import check_bool, check_choice, check_int, check_scalar
from banditkit.glm.duel_links import get_duel_link
from banditkit.linalg import DiagonalGram, Gram, GramLike
from banditkit.policies.dueling.nvldb import resolve_preset
from banditkit.policies.dueling.rules import PairRule
from banditkit.policies.parts.history import PairHistory
from banditkit.policies.parts.schedules import Periodic

if TYPE_CHECKING:
    from banditkit.policies.parts.models import NeuralModel

__all__ = ["NDBTS", "NDBUCB", "NeuralDuelingPolicy"]

GRAMS = ("full", "diagonal")


class NeuralDuelingPolicy(DuelingPolicy):
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
        gram: "full" (p x p) or "diagonal".
        exact_inverse: Refactorise V from scratch every round (O(p^3)).
        link: The preference link of the loss: "btl" (alias "logistic", the default),
            "thurstone" (alias "probit") or a ``glm.Link`` / ``DuelLink``.
        seed: Seed of the policy's streams.
    """

    needs_torch = True
    exploration: ClassVar[str] = "ucb"
    contract_params: ClassVar[dict[str, Any]] = {"width": 4, "steps": 2}

    def __init__(
        self,
        *,
        a: float = 1.0,
        lam: float = 1.0,
        preset: str = "appendix",
        width: int | None = None,
        lr: float | None = None,
        depth: int = 3,
        steps: int = 20,
        update_every: int = 1,
        gram: str = "full",
        exact_inverse: bool = False,
        link: Any = "btl",
        seed: int = 0,
    ) -> None:
        super().__init__(seed=seed)
        self.a = check_scalar("a", a, low=0.0)
        self.lam = check_scalar("lam", lam, low=0.0, low_open=True)
        self.preset = preset
        self.width = width
        self.lr = lr
        self._m, self._lr = resolve_preset(preset, width, lr)
        if self._m % 2:
            raise ValueError(
                f"width must be even (mirrored initialisation); got {self._m}."
            )
        self.depth = check_int("depth", depth, low=2)
        self.steps = check_int("steps", steps, low=1)
        self.update_every = check_int("update_every", update_every, low=1)
        self.gram = check_choice("gram", gram, GRAMS)
        self.exact_inverse = check_bool("exact_inverse", exact_inverse)
        self._link = get_duel_link(link)
        self.link = link

    def _setup(self, ctx: Context) -> None:
        from banditkit.nn import make_generator

        assert self.d is not None
        self._build(self.d, make_generator(self.rng))

    def _build(self, d: int, generator: Any) -> None:
        from banditkit.nn import Trainer
        from banditkit.policies.parts.models import NeuralModel

        trainer = Trainer(
            loss="bce",
            lam=self.lam,
            center="init",
            optimizer="adam",
            lr=self._lr,
            steps=self.steps,
            reduction="sum",
        )
        self.model: NeuralModel = NeuralModel(
            d,
            width=self._m,
            depth=self.depth,
            trainer=trainer,
            generator=generator,
            pair_link=self._link.glm,
        )
        p = self.model.n_params
        self.design: GramLike = (
            Gram(p, self.lam, refactor_every=1 if self.exact_inverse else 512)
            if self.gram == "full"
            else DiagonalGram(p, self.lam)
        )
        self.scale = 1.0 / math.sqrt(self._m)
        self.history = PairHistory(d)
        self.selector = PairRule(self.exploration, "asym", a=self.a)
        self.schedule = Periodic(self.update_every)

    def pair_scores(self, ctx: Context) -> tuple[np.ndarray, np.ndarray]:
        """Return f (K,) and the bonuses ||(g_k - g_k') / sqrt(m)||_{V^-1} (K, K) (without a)."""
        self._check_context(ctx)
        return self._scores(ctx.arms)

    def _scores(self, arms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        f, G = self.model.evaluate(np.array(arms))
        return f, self.scale * self.design.pair_norms_unchecked(G)

    def _act(self, ctx: Context) -> Action:
        f, b = self._scores(ctx.arms)
        return self.selector.select(f, b, self.t + 1, self.rng)

    def _update(self, ctx: Context, action: Action, feedback: Feedback) -> None:
        assert isinstance(action, tuple)
        i, j = action
        G = self.model.features(np.array(ctx.arms[[i, j]]))  # at theta_{t-1}
        self.history.append(ctx.arms[i], ctx.arms[j], float(feedback), arms=(i, j))
        if self.schedule.due(self.history.n, self.design):
            self.model.fit(self.history)
            self._n_updates += 1
        self.design.update(self.scale * (G[0] - G[1]))

    def _state(self) -> dict[str, Any]:
        return {
            "history": self.history.state_dict(),
            "schedule": self.schedule.state_dict(),
            "model": self.model.state_dict(),
            "design": self.design.state_dict(),
        }

    def _load_state(self, state: dict[str, Any]) -> None:
        assert self.d is not None
        from banditkit.nn import make_generator

        self._build(self.d, make_generator(np.random.default_rng(0)))
        self.history.load_state_dict(state["history"])
        self.schedule.load_state_dict(state["schedule"])
        self.model.load_state_dict(state["model"])
        self.design.load_state_dict(state["design"])


@POLICIES.register("ndb-ucb")
class NDBUCB(NeuralDuelingPolicy):
    """NDB-UCB [Verma2025]: k2 = argmax_k f_k + a ||(g_k - g_k1) / sqrt(m)||_{V^-1}."""

    exploration = "ucb"


@POLICIES.register("ndb-ts")
class NDBTS(NeuralDuelingPolicy):
    """NDB-TS [Verma2025]: k2 = argmax_k of N(f_k - f_k1, a^2 ||(g_k - g_k1) / sqrt(m)||^2)."""

    exploration = "ts"
