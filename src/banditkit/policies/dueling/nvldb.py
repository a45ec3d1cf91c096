"""NVLDB and NLDB [Oh2025]: deep representation, shallow exploration, six pair rules.

One composition of shared parts ([Oh2025, Algorithm 1]):

    history      PairHistory of the duels (x_i1, x_i2, o_i) with weights w_i = 1 / zeta_i^2
    model        NeuralLinearModel, loss "btl": f(x) = theta^T phi(x; W) (+ a bias that
                 cancels in every difference), trained by ``nn.fit`` (Adam, summed loss)
                 on the weighted likelihood of Eq. 4 under the link g (``link``: BTL by
                 default, or Thurstone / any glm link) with (lam / 2) ||params - params_0||^2
                 on every layer (``penalised="all"``; Eq. 4's theta-only penalty: "head")
    uncertainty  a D x D ``linalg.Gram`` V = lam I + sum_i dphi_i dphi_i^T / zeta_i^2 (Eq. 6)
                 of the feature differences dphi_i = s (phi(x_i1) - phi(x_i2)); bonuses
                 b[k, k'] = s ||phi_k - phi_k'||_{V^-1} by ``Gram.pair_norms_unchecked``, where
                 s = sqrt(m) is the factor of Eq. 2's phi(x; W) = sqrt(m) ReLU(...) (the
                 network's own last hidden layer carries no such factor; ``feature_scale``)
    selection    ``rules.PairRule``: UCB or TS x ASYM, OSYM or CSYM (Sec. 4.2)
    schedule     ``Periodic(update_every)`` (the episode length H)

The link g (``glm.duel_links``) is the one of the loss, of sigma_hat below and hence of the
weights 1 / zeta_i^2 of V and of the bonuses. The weights (Eq. 5) are
zeta_i = max(sigma_hat_i, eps) with sigma_hat_i^2 = g(df_i)(1 - g(df_i)) at the current network (``variance_mode="estimated"``), the true Bernoulli standard deviation
of the duel floored at eps (``"oracle"``, read from the environment), or 1 (``"agnostic"``:
NLDB). They are constants of the loss (no gradient flows through them).

``gram_mode``: "rebuild" (default; [Oh2025, App. E.2.1], V re-initialised every round and
rebuilt from the whole history with the current features phi(.; W_t)) or "incremental"
([Oh2025, Alg. 1, line 13]: V_t = V_{t-1} + dphi_t dphi_t^T / zeta_t^2, dphi_t with the
features W_{t-1} of the round's selection). ``zeta_mode``: "recompute" (every zeta_i from the
current network after each fit) or "frozen" (zeta_t set once after round t's fit).

References:
    [Oh2025] Y. Oh, J. Park, T. Paik. Neural variance-aware dueling bandits with deep
        representation and shallow exploration. arXiv:2506.01250 (AISTATS 2026).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from banditkit.core import POLICIES, Context, Environment
from banditkit.core.params import POSITIVE, AsGiven, Choice, Flag, Maybe, fixed, param
from banditkit.core.types import Action, Feedback
from banditkit.policies.dueling.network import (
    PRESETS,
    NeuralDuelingBase,
    resolve_preset,
)
from banditkit.policies.dueling.rules import RULES, TSCSYM_FORMS, PairRule
from banditkit.policies.dueling.stacked import DuelOutputs
from banditkit.policies.parts.history import PairHistory
from banditkit.policies.parts.models import NeuralLinearModel
from banditkit.policies.parts.models.device_gram import DeviceGram, gram_for, to_host
from banditkit.policies.parts.propensity import monte_carlo
from banditkit.policies.parts.schedules import Periodic

__all__ = [
    "GRAM_MODES",
    "NLDBTS",
    "NLDBUCB",
    "NVLDBTS",
    "NVLDBUCB",
    "PRESETS",
    "VARIANCE_MODES",
    "ZETA_MODES",
    "NeuralLinearDuelingPolicy",
    "resolve_preset",
]

VARIANCE_MODES = ("estimated", "oracle", "agnostic")
GRAM_MODES = ("rebuild", "incremental")
ZETA_MODES = ("recompute", "frozen")


class NeuralLinearDuelingPolicy(NeuralDuelingBase):
    """NVLDB / NLDB [Oh2025, Alg. 1] (module docstring); subclasses fix UCB or TS.

    Round t, with (theta_{t-1}, W_{t-1}) and V_{t-1}:

        f_k = f(x_k),  phi_k = phi(x_k; W_{t-1}),  b[k, k'] = ||phi_k - phi_k'||_{V^-1}
        (k1, k2) = rule(f, b, a, t)                                   (Sec. 4.2)
        observe o_t; append (x_k1, x_k2, o_t) with w = 1 / zeta^2
        every ``update_every`` rounds: ``steps`` Adam steps at ``lr`` on Eq. 4 (all rounds
        1..t, full batch, summed, warm-started)
        set zeta (Eq. 5) and V_t (Eq. 6; rebuilt or incremental)

    Args:
        rule: "asym", "osym" or "csym".
        a: Confidence coefficient a_t (constant), >= 0 (paper: 1.0).
        variance_mode: "estimated" (NVLDB), "oracle" (true variance from the environment,
            which must expose ``preference_probability(i, j)``) or "agnostic" (NLDB).
        eps: Floor of zeta (Eq. 5), > 0; None: 1 / sqrt(d) (the order of [Oh2025, Thm. 1]).
        lam: lambda of the penalty on theta and of V_0 = lam I, > 0 (paper: 1.0).
        preset: "appendix" (m = 32, lr = 0.01) or "main" (m = 100, lr = 1e-3).
        width: Hidden width m = feature dimension D (overrides the preset), >= 1.
        lr: Adam step size (overrides the preset), > 0.
        depth: Linear layers including the head, >= 2 (3: two hidden layers, L = 3).
        steps: Adam steps per fit n, >= 1 (paper: 20).
        update_every: Episode length H, >= 1 (paper: 1).
        distinct_duels: Train on the duels of two different arms only (True, the
            default since 2026-12-06; False: every duel, as before). A duel of an arm
            with itself adds the constant loss(0) to the objective whatever the
            parameters (its margin f(x) - f(x) is 0) and nothing to its gradient, nor
            to V (its dphi is 0), so the fits are the same up to rounding (not bit for
            bit) at the cost of the distinct duels: at T = 400 on the synthetic tasks
            68-83 % of the duels are an arm against itself, 94 % of 2,000
            (docs/dueling.md, "Training on the distinct duels"; "The defaults: float32
            and the distinct duels" for the evidence). Seeds with it do not stack on
            the CPU in float64 (the stack is exact there).
        gram_mode: "rebuild" or "incremental".
        zeta_mode: "recompute" or "frozen".
        tscsym_form: "listing" or "paper" (TS-CSYM only; ``rules.ts_csym``).
        link: The preference link g of the loss (Eq. 4) and of sigma_hat (Eq. 5): "btl"
            (alias "logistic", g = sigmoid, the paper's), "thurstone" (alias "probit",
            g = Phi) or a ``glm.Link`` / ``DuelLink`` (``glm.get_duel_link``).
        penalised: "all" (default: (lam / 2) ||params - params_0||^2 on every layer, as
            NDB's loss) or "head" (Eq. 4 literally: (lam / 2) ||theta - theta_0||^2 only).
            With "head", Eq. 4 has no minimiser on separable duels: W grows, the margins
            of f run far past the bonuses and the rules duel the greedy arm with itself
            (docs/dueling.md, "Investigation").
        feature_scale: s > 0, the features s phi(x) of V and of the bonuses; None: sqrt(m),
            the factor of Eq. 2 (phi(x; W) = sqrt(m) ReLU(...)).
        dtype: "float32" (the default since 2026-12-06, the dtype of the paper's GPU
            code) or "float64" (the default before): the network, its training and
            phi; V and the rule stay float64 on the CPU. The regrets of the two agree
            within their paired intervals on the paper's tasks (docs/dueling.md, "The
            defaults: float32 and the distinct duels").
        device: "cpu" (default), "cuda", "cuda:N" or "auto": where the network, its
            training, the duels and V live (a missing device is a ``ValueError``).
        seed: Seed of the policy's streams.
    """

    stack_family: ClassVar[str | None] = "neural-linear-dueling"

    # The default changed on 2026-12-06 (``before``: what stored runs and states computed).
    distinct_duels: bool = param(Flag(), default=True, before=False)
    rule: str = param(Choice(RULES), default="asym")
    variance_mode: str = param(Choice(VARIANCE_MODES), default="estimated")
    eps: float | None = param(Maybe(POSITIVE), default=None)
    gram_mode: str = param(Choice(GRAM_MODES), default="rebuild")
    zeta_mode: str = param(Choice(ZETA_MODES), default="recompute")
    tscsym_form: str = param(Choice(TSCSYM_FORMS), default="listing")
    penalised: str = param(Choice("head", "all"), default="all")
    feature_scale: float | None = param(AsGiven(Maybe(POSITIVE)), default=None)

    def _resolve(self) -> None:
        super()._resolve()
        self._scale = (
            math.sqrt(self._m)
            if self.feature_scale is None
            else float(self.feature_scale)
        )
        self._env: Environment | None = None
        self._oracle_sigma: float | None = None
        #: f (K,) and phi (K, D) of the round's arms at the network in force, when a
        #: seed stack evaluated its members' arms at once (``given_arm_outputs``).
        self._given: tuple[np.ndarray, np.ndarray] | None = None

    # ------------------------------------------------------------------ parts
    @property
    def floor(self) -> float:
        """The eps of Eq. 5 in force (1 / sqrt(d) when ``eps`` is None)."""
        assert self.d is not None
        return self.eps if self.eps is not None else 1.0 / math.sqrt(self.d)

    def attach(self, env: Environment) -> None:
        """Keep the environment for ``variance_mode="oracle"`` (its true duel variances).

        Raises:
            ValueError: In oracle mode, for an environment without
                ``preference_probability(i, j)``.
        """
        if self.variance_mode != "oracle":
            return
        if not callable(getattr(env, "preference_probability", None)):
            raise ValueError(
                "variance_mode='oracle' needs an environment with "
                f"preference_probability(i, j); {type(env).__name__} has none."
            )
        self._env = env

    def _build(self, d: int, generator: Any) -> None:
        self.model: NeuralLinearModel = NeuralLinearModel(
            d,
            width=self._m,
            depth=self.depth,
            loss="btl",
            link=self._link.glm,
            lam=self.lam,
            center="init",
            penalised=self.penalised,
            lr=self._lr,
            steps=self.steps,
            optimizer="adam",
            reduction="sum",
            distinct_duels=self.distinct_duels,
            generator=generator,
            dtype=self.dtype,
            device=self.device,
        )
        self.history = PairHistory(d)
        self.design = gram_for(self.model, self.model.n_params, self.lam)
        self.selector = PairRule(
            self.exploration, self.rule, a=self.a, tscsym_form=self.tscsym_form
        )
        self.schedule = Periodic(self.update_every)
        self._sigma_true: list[float] = []  # oracle mode: sigma_t of each duel

    # ------------------------------------------------------------------ loop
    def _scores(self, arms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if isinstance(self.design, DeviceGram):  # phi and V on the device: one transfer
            f_t, phi_t = self.model.evaluate_tensors(arms)
            return to_host(f_t, self.design.pair_norms_tensor(self._scale * phi_t))
        if self._given is not None:
            f, phi = self._given
        else:
            f, phi = self.model.evaluate(np.array(arms))  # a writable copy for torch
        return f, self.design.pair_norms_unchecked(self._scale * phi)

    def given_arm_outputs(self, f: np.ndarray, phi: np.ndarray) -> None:
        """Hand in f (K,) and phi (K, D) of the next round's arms at the network in force.

        A seed stack evaluates its members' arms in one batched pass
        (``dueling.stacked``, float32 on the CPU); the round's act then scores from
        them and its update reads the chosen pair's rows instead of a second pass.
        Equal to the member's own pass up to rounding: a separate run never calls it.
        """
        self._given = (f, phi)

    def _act(self, ctx: Context) -> Action:
        f, b = self._scores(ctx.arms)
        pair = self.selector.select(f, b, self.t + 1, self.rng)
        self.propose(self.selector.law(f, b, self.t + 1, pair, monte_carlo(self)))
        if self.variance_mode == "oracle":
            if self._env is None:
                raise ValueError(
                    "variance_mode='oracle' needs attach(env) before the first round "
                    "(simulate does it)."
                )
            p = float(self._env.preference_probability(*pair))  # type: ignore[attr-defined]
            self._oracle_sigma = math.sqrt(max(p * (1.0 - p), 0.0))
        return pair

    def _zeta(self, df: np.ndarray) -> np.ndarray:
        """The zeta of Eq. 5 for estimated margins df (estimated mode)."""
        sigma = np.sqrt(self._link.variance(df))
        return np.maximum(sigma, self.floor)

    def _record(self, ctx: Context, action: Action, feedback: Feedback) -> np.ndarray:
        """The round's duel, weighted at the network in force; phi of the pair (2, D)."""
        assert isinstance(action, tuple)
        i, j = action
        x1, x2 = ctx.arms[i], ctx.arms[j]
        if self._given is not None:  # the act's pass (given_arm_outputs)
            f_sel, phi_sel = self._given[0][[i, j]], self._given[1][[i, j]]
            self._given = None
        else:
            f_sel, phi_sel = self.model.evaluate(ctx.arms[[i, j]])  # at W_{t-1}
        if self.variance_mode == "oracle":
            if self._oracle_sigma is None:
                raise ValueError(
                    "variance_mode='oracle' needs act() before update() in each round."
                )
            self._sigma_true.append(self._oracle_sigma)
            self._oracle_sigma = None
        weight = self._new_weight(float(f_sel[0] - f_sel[1]))
        self.history.append(x1, x2, float(feedback), weight=weight, arms=(i, j))
        return phi_sel

    def _after_fit(self, phi_sel: np.ndarray, duels: DuelOutputs | None = None) -> None:
        """Eq. 5's weights and V (Eq. 6) at the network after the round's fit.

        ``duels``: the margins and feature differences of every duel at that network
        (:meth:`duel_outputs`), when a seed stack computed its members' at once
        (``dueling.stacked``); otherwise computed here when the weights or V read them,
        one pass over each side of the history for both.
        """
        if duels is None and self._reads_duels():
            duels = self.duel_outputs()
        self._set_weights(duels)
        if self.gram_mode == "incremental":
            dphi = self._scale * (phi_sel[0] - phi_sel[1])
            self.design.update(dphi, float(self.history.w[-1]))
        else:
            self._rebuild_design(duels)

    def _reads_duels(self) -> bool:
        """Whether :meth:`_after_fit` reads every duel at the new network on the host.

        It does for the weights when every zeta_i is recomputed (estimated variances), V when it is
        rebuilt on the host (a ``DeviceGram`` reads the duels' device mirror instead).
        """
        recompute = self.variance_mode == "estimated" and self.zeta_mode == "recompute"
        host_rebuild = self.gram_mode == "rebuild" and not isinstance(
            self.design, DeviceGram
        )
        return recompute or host_rebuild

    def duel_outputs(self) -> DuelOutputs:
        """Every duel's margin and feature difference at the current network.

        Returns:
            df_i = f(x_i1) - f(x_i2) (n,) and dphi_i = phi(x_i1) - phi(x_i2) (n, D),
            float64, from one pass over each side of the history (the weights of Eq. 5
            read df, V of Eq. 6 reads dphi). With a ``DeviceGram`` (whose V reads the
            duels' device mirror) only df crosses to the host; dphi is None.
        """
        X1, X2 = self.history.X1, self.history.X2
        if isinstance(self.design, DeviceGram):
            return DuelOutputs(self.model.predict(X1) - self.model.predict(X2), None)
        f1, phi1 = self.model.evaluate(X1)
        f2, phi2 = self.model.evaluate(X2)
        return DuelOutputs(f1 - f2, phi1 - phi2)

    def _new_weight(self, df: float) -> float:
        """1 / zeta_t^2 of the new duel, from the network in force (before the fit)."""
        if self.variance_mode == "agnostic":
            return 1.0
        if self.variance_mode == "oracle":
            zeta = max(self._sigma_true[-1], self.floor)
        else:
            zeta = float(self._zeta(np.array([df]))[0])
        return 1.0 / (zeta * zeta)

    def _set_weights(self, duels: DuelOutputs | None) -> None:
        """Eq. 5 after the fit: every zeta_i ("recompute", from ``duels``) or the new one ("frozen").

        The weights live in the history (``PairHistory.w``, written in place), which both
        the loss (Eq. 4) and the Gram (Eq. 6) read.
        """
        if self.variance_mode != "estimated":
            return  # 1 (agnostic) or the true sigma (oracle): fixed at append
        w = self.history.w  # a view: assignments write into the history
        if self.zeta_mode == "recompute":
            assert duels is not None
            zeta = self._zeta(duels.df)
            w[:] = 1.0 / (zeta * zeta)
        else:
            x1, x2 = self.history.X1[-1:], self.history.X2[-1:]
            zeta = self._zeta(self.model.predict(x1) - self.model.predict(x2))
            w[-1] = 1.0 / float(zeta[0] * zeta[0])

    def _rebuild_design(self, duels: DuelOutputs | None) -> None:
        """V = lam I + s^2 sum_i w_i dphi_i dphi_i^T with the current features (Eq. 6)."""
        design = gram_for(self.model, self.model.n_params, self.lam)
        if isinstance(design, DeviceGram):  # from the duels' device mirror
            n, phi = self.history.n, self.model.observed_features(self.history)
            dphi: Any = phi[:n] - phi[n:]
        else:
            assert duels is not None and duels.dphi is not None
            dphi = duels.dphi
        design.update_batch(self._scale * dphi, self.history.w)
        self.design = design

    # ------------------------------------------------------------------ state
    def _state(self) -> dict[str, Any]:
        sigma_true = np.array(self._sigma_true, dtype=float)
        return {**super()._state(), "sigma_true": sigma_true}

    def _load_state(self, state: dict[str, Any]) -> None:
        super()._load_state(state)
        self._sigma_true = [float(s) for s in np.asarray(state["sigma_true"])]


@POLICIES.register("nvldb-ucb")
class NVLDBUCB(NeuralLinearDuelingPolicy):
    """NVLDB-UCB-{ASYM, OSYM, CSYM} [Oh2025, Sec. 4.2.1] (``NeuralLinearDuelingPolicy``).

    Example:
        >>> from banditkit.core import Context
        >>> policy = NVLDBUCB(rule="osym", width=4, steps=2, seed=0)
        >>> i, j = policy.act(Context(arms=np.eye(3)))
        >>> 0 <= i < 3 and 0 <= j < 3
        True
    """

    exploration = "ucb"


@POLICIES.register("nvldb-ts")
class NVLDBTS(NeuralLinearDuelingPolicy):
    """NVLDB-TS-{ASYM, OSYM, CSYM} [Oh2025, Sec. 4.2.2] (``NeuralLinearDuelingPolicy``)."""

    exploration = "ts"


@POLICIES.register("nldb-ucb")
class NLDBUCB(NeuralLinearDuelingPolicy):
    """NLDB-UCB-{ASYM, OSYM, CSYM}: NVLDB-UCB with zeta = 1 [Oh2025, App. E.3]."""

    exploration = "ucb"
    # zeta_i = 1 in the loss and in V [Oh2025, Eq. 5, Corollaries C.1, D.1]
    variance_mode = fixed("agnostic")
    eps = fixed(None)
    zeta_mode = fixed("recompute")


@POLICIES.register("nldb-ts")
class NLDBTS(NeuralLinearDuelingPolicy):
    """NLDB-TS-{ASYM, OSYM, CSYM}: NVLDB-TS with zeta = 1 [Oh2025, App. E.3]."""

    exploration = "ts"
    variance_mode = fixed("agnostic")  # as NLDB-UCB
    eps = fixed(None)
    zeta_mode = fixed("recompute")
