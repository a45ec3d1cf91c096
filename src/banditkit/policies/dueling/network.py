"""The neural dueling policies' shared options and round: the network, its fits, the pair rule.

NDB [Verma2025] and NVLDB / NLDB [Oh2025] compose the same pieces around different
uncertainties (``policies.dueling.ndb``: the gradients of every parameter;
``policies.dueling.nvldb``: the last hidden layer):

    network      the presets of [Oh2025] (width m and Adam's step), depth, steps per fit,
                 the penalty lam and the preference link of the loss
    rule         ``rules.PairRule`` (UCB or TS, by the algorithm's ``exploration``) with
                 the confidence coefficient ``a``
    schedule     ``Periodic(update_every)`` (the episode length H)

``NeuralDuelingBase`` declares those options once and keeps the learned state (history,
schedule, model, design); an algorithm builds its parts in ``_build`` and states its
bonuses in ``_scores``.

References:
    [Oh2025] Y. Oh, J. Park, T. Paik. Neural variance-aware dueling bandits with deep
        representation and shallow exploration. arXiv:2506.01250 (AISTATS 2026).
    [Verma2025] A. Verma, Z. Dai, X. Lin, P. Jaillet, B. K. H. Low. Neural dueling
        bandits: preference-based optimization with human feedback. ICLR 2025.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from banditkit.core import Context, DuelingPolicy, Policy
from banditkit.core.params import (
    POSITIVE,
    AsGiven,
    Check,
    Choice,
    Flag,
    Int,
    Maybe,
    Real,
    learned,
    param,
)
from banditkit.core.types import Action, Feedback
from banditkit.core.validation import check_choice, check_int, check_scalar
from banditkit.glm.duel_links import DuelLink, get_duel_link
from banditkit.linalg import GramLike
from banditkit.policies.dueling.rules import PairRule
from banditkit.policies.dueling.stacked import DuelOutputs, StackedDuels
from banditkit.policies.parts.history import PairHistory
from banditkit.policies.parts.models.compute import DEVICE, DTYPE
from banditkit.policies.parts.schedules import Periodic

if TYPE_CHECKING:
    from banditkit import nn
else:
    from banditkit.core.lazy import lazy_import

    nn = lazy_import("banditkit.nn")  # PyTorch: imported at first use

__all__ = ["DUEL_LINK", "PRESETS", "NeuralDuelingBase", "resolve_preset"]

#: Network presets (width m, learning rate) [Oh2025]: "appendix" = App. E.2.1 (m = 32,
#: lr = 0.01, the "standard" network of App. E.3), "main" = Sec. 6 (m = 100, lr = 1e-3).
PRESETS: dict[str, tuple[int, float]] = {"appendix": (32, 0.01), "main": (100, 1e-3)}


def resolve_preset(
    preset: str, width: int | None, lr: float | None
) -> tuple[int, float]:
    """(width, lr) of a preset, each overridden when given.

    Example:
        >>> resolve_preset("main", None, None), resolve_preset("appendix", 500, 1e-3)
        ((100, 0.001), (500, 0.001))
    """
    m, eta = PRESETS[check_choice("preset", preset, tuple(PRESETS))]
    if width is not None:
        m = check_int("width", width, low=1)
    if lr is not None:
        eta = check_scalar("lr", lr, low=0.0, low_open=True)
    return m, eta


def _duel_link(name: str, value: Any) -> Any:
    """A preference link as given, once ``glm.get_duel_link`` accepts it."""
    get_duel_link(value)
    return value


#: The ``link`` option: "btl", "thurstone" (or their aliases), a glm Link or a DuelLink.
DUEL_LINK = Check(_duel_link)


class NeuralDuelingBase(DuelingPolicy):
    """Options and learned state of the neural dueling policies (module docstring).

    The options are documented on ``NeuralLinearDuelingPolicy`` and
    ``NeuralDuelingPolicy``; ``dtype`` ("float64" or "float32") and ``device`` ("cpu",
    "cuda", "cuda:N" or "auto") go to the model, which keeps the network, its training,
    the duels and the Gram there (``policies.parts.models.compute``). After ``_resolve``, ``self._m`` and ``self._lr`` are the
    width and step in force, ``self._link`` the ``DuelLink``.
    """

    needs_torch = True
    #: The family of the pair rule: "ucb" or "ts" (``rules.PairRule``).
    exploration: ClassVar[str] = "ucb"
    #: What members of one stack may differ in (``dueling.stacked``): the pair rule and
    #: its coefficient, and what shapes the weights and the design but not the fit (the
    #: stack trains the networks, with each member's own weights). The UCB and TS
    #: classes of one model share a ``stack_family``: the six pair rules of one network
    #: (and NLDB beside NVLDB) train as one stack.
    stack_free: ClassVar[frozenset[str]] = frozenset(
        {
            "a",
            "rule",
            "tscsym_form",
            "variance_mode",
            "eps",
            "gram_mode",
            "zeta_mode",
            "feature_scale",
            "gram",
            "exact_inverse",
        }
    )
    contract_params: ClassVar[dict[str, Any]] = {"width": 4, "steps": 2}

    a: float = param(Real(low=0.0), default=1.0)
    lam: float = param(POSITIVE, default=1.0)
    preset: str = param(Choice(PRESETS), default="appendix")
    width: int | None = param(AsGiven(Maybe(Int(low=1))), default=None)
    lr: float | None = param(AsGiven(Maybe(POSITIVE)), default=None)
    depth: int = param(Int(low=2), default=3)
    steps: int = param(Int(low=1), default=20)
    update_every: int = param(Int(low=1), default=1)
    distinct_duels: bool = param(Flag(), default=False, quiet=True)
    link: Any = param(DUEL_LINK, default="btl")
    dtype: str = DTYPE
    device: str = DEVICE

    history: PairHistory = learned()
    model: Any = learned()
    design: GramLike = learned()
    selector: PairRule = learned()
    schedule: Periodic = learned()

    def _resolve(self) -> None:
        self._m, self._lr = resolve_preset(self.preset, self.width, self.lr)
        self._link: DuelLink = get_duel_link(self.link)

    # ------------------------------------------------------------------ parts
    def _build(self, d: int, generator: Any) -> None:
        """Compose the parts: history, model, design, rule (``selector``), schedule."""
        raise NotImplementedError

    def _scores(self, arms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The utilities f (K,) and the pair bonuses b (K, K), without a."""
        raise NotImplementedError

    def _setup(self, ctx: Context) -> None:
        assert self.d is not None
        self._build(self.d, nn.make_generator(self.rng))

    def pair_scores(self, ctx: Context) -> tuple[np.ndarray, np.ndarray]:
        """Return f (K,) and the bonuses b (K, K) of the pair rule (without a)."""
        self._check_context(ctx)
        return self._scores(ctx.arms)

    def _refit(self) -> None:
        """Fit the network when the schedule is due (after the round's duel)."""
        if self.schedule.due(self.history.n, self.design):
            self.model.fit(self.history)
            self._n_updates += 1

    def _update(self, ctx: Context, action: Action, feedback: Feedback) -> None:
        recorded = self._record(ctx, action, feedback)
        self._refit()
        self._after_fit(recorded)

    def _record(self, ctx: Context, action: Action, feedback: Feedback) -> np.ndarray:
        """The round's duel into the history; what ``_after_fit`` needs of the pair.

        The round is split at the fit so that seeds can fit as one stack in between
        (``dueling.stacked``).
        """
        raise NotImplementedError

    def _after_fit(
        self, recorded: np.ndarray, duels: DuelOutputs | None = None
    ) -> None:
        """The rest of the round after the (possible) fit: the design's update.

        ``duels``: every duel's margin and feature difference at the network after the
        fit, when a seed stack computed them for its members at once and
        :meth:`_reads_duels` says the round reads them; None: computed as needed.
        """
        raise NotImplementedError

    def _reads_duels(self) -> bool:
        """Whether :meth:`_after_fit` reads every duel at the new network (NDB: never)."""
        return False

    def given_arm_outputs(self, f: np.ndarray, phi: np.ndarray) -> None:
        """Hand in the next round's arm outputs from a seed stack's batched pass.

        Only where :meth:`_reads_duels` (NVLDB / NLDB; NDB scores by its own gradients).
        """
        raise NotImplementedError

    @classmethod
    def stack(cls, members: Sequence[Policy]) -> StackedDuels | None:
        """S fresh members as one stack whose networks train together (``dueling.stacked``).

        With ``distinct_duels`` on the CPU in float64, None (one by one): there the
        stack computes each member as its separate run, bit for bit, on tables of one
        length, which the members' distinct duels are not (elsewhere the batched kernels
        agree with the separate runs up to rounding anyway, and the tables are padded).
        """
        first = members[0]
        assert isinstance(first, NeuralDuelingBase)
        if (
            first.distinct_duels
            and first.dtype == "float64"
            and nn.resolve_device(first.device).type == "cpu"
        ):
            return None
        return StackedDuels(members)  # type: ignore[arg-type]

    # ------------------------------------------------------------------ state
    def _state(self) -> dict[str, Any]:
        return {
            "history": self.history.state_dict(),
            "schedule": self.schedule.state_dict(),
            "model": self.model.state_dict(),
            "design": self.design.state_dict(),
        }

    def _load_state(self, state: dict[str, Any]) -> None:
        assert self.d is not None
        # the parameters come from the state: a throw-away stream for the initial draw
        self._build(self.d, nn.make_generator(np.random.default_rng(0)))
        self.history.load_state_dict(state["history"])
        self.schedule.load_state_dict(state["schedule"])
        self.model.load_state_dict(state["model"])
        self.design.load_state_dict(state["design"])
