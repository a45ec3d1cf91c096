"""The loop of ensemble sampling (Algorithm 1 of [Sun2025]) and its anytime restarts.

    warm-up    tau pulls chosen by the family's strategy (G-optimal design, each arm in
               turn, or uniform), recorded like every other round
    round t    j_t ~ Uniform{1..m};  X_t = argmax_x f(x; theta_{t-1}^{j_t})  (ties at random)
    update     draw Z_t^j ~ N(0, sigma_R^2) once for each member j and store it; refit all
               m members on their perturbed histories (one vectorised fit)
    anytime    with ``anytime = {t0, base}``: full restart at t = T_i (doubling schedule of
               ``policies.ensemble.anytime``), phase i with m_i = ceil(2 ln tau_i) and
               sigma_R,i = 0.02 ln tau_i, a new ensemble, new perturbations, an empty
               history and a new warm-up of min(warmup, tau_i) rounds

The parts are the ``PerturbedHistory`` (rows, rewards, stored perturbations), an ensemble
model of ``policies.ensemble.members``, the perturbations (``StoredPerturbations`` of
ensemble sampling, or ``FreshPerturbations`` redrawn at every refit: perturbed-history
exploration), the member-sampling greedy rule and a ``Periodic`` schedule. A named
algorithm declares its hyper-parameters and hands in its model (``_make_model(members)``)
and, if not the stored ones, its perturbations (``_perturbations()``).

References:
    In the package's docstring (``banditkit.policies.ensemble``): [Sun2025], [Jia2022].
    [Kveton2020] B. Kveton, M. Zaheer, C. Szepesvari, L. Li, M. Ghavamzadeh,
        C. Boutilier. Randomized exploration in generalized linear bandits. AISTATS 2020.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from banditkit.core import Context, ContextualPolicy
from banditkit.core.params import POSITIVE, Check, Choice, Flag, Int, Real, fixed, param
from banditkit.core.types import Action, Feedback
from banditkit.policies.ensemble.anytime import (
    check_anytime,
    phase_end,
    phase_parameters,
)
from banditkit.policies.ensemble.history import PerturbedHistory
from banditkit.policies.parts.propensity import (
    ArrayLaw,
    tie_shares,
)
from banditkit.policies.parts.schedules import Periodic
from banditkit.policies.parts.selection import argmax_random_tie
from banditkit.policies.parts.warmup import WARMUPS, design_plan, warmup_pull

__all__ = [
    "ANYTIME",
    "EnsemblePolicy",
    "FreshPerturbations",
    "Perturbations",
    "StoredPerturbations",
]


def _anytime(name: str, value: Any) -> dict[str, Any] | None:
    """An ``anytime`` option as given (``anytime.check_anytime`` validates it)."""
    return None if check_anytime(value) is None else dict(value)


#: The ``anytime`` option: None, or {t0, base[, m_scale, sigma_scale]}.
ANYTIME = Check(_anytime)


Rng = np.random.Generator


class Perturbations:
    """How the members' targets are perturbed: drawn per round and kept, or at each refit.

    This base draws nothing per round and keeps no state; ``refit`` is the algorithm's.
    """

    #: Whether each round's draws Z_t (one per member) are kept in the history.
    stored = False

    def draw(self, rng: Rng, sigma: float, members: int, perturb: bool) -> Any:
        """The round's draws to keep (None: nothing is kept).

        ``perturb`` is False in a warm-up whose rewards are not perturbed.
        """
        return None

    def refit(self, model: Any, rows: PerturbedHistory, rng: Rng, sigma: float) -> None:
        """Refit the model on the perturbed rows."""
        raise NotImplementedError

    def state_dict(self) -> dict[str, Any]:
        """Arrays and scalars, merged into the policy's learned state (none here)."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from the policy's learned state (nothing here)."""


class StoredPerturbations(Perturbations):
    """Z_t^j ~ N(0, sigma_R^2) drawn once per round and member, kept [Sun2025, Alg. 1, l. 7]."""

    stored = True

    def draw(self, rng: Rng, sigma: float, members: int, perturb: bool) -> Any:
        """The M draws of the round (zeros when not ``perturb``)."""
        if not perturb:
            return np.zeros(members)
        return rng.normal(0.0, sigma, members)

    def refit(self, model: Any, rows: PerturbedHistory, rng: Rng, sigma: float) -> None:
        """Every member on its own stored targets (one vectorised fit)."""
        model.fit(rows)


class FreshPerturbations(Perturbations):
    """Perturbed-history exploration: every past target redrawn at each refit, none kept.

    z_l ~ N(0, sigma^2) for all l <= t, Theta(t) draws per refit ([Kveton2020, Alg. 2];
    [Jia2022, Alg. 1]); one model.
    """

    def refit(self, model: Any, rows: PerturbedHistory, rng: Rng, sigma: float) -> None:
        """One fit on the targets y_l + z_l, all z_l drawn now."""
        z = rng.normal(0.0, sigma, (rows.n, 1))
        model.fit_grouped(rows.grouped_with(z))


class EnsemblePolicy(ContextualPolicy):
    """Shared loop of Lin-ES, GLM-ES, Neural-ES and their comparators (module docstring).

    Declares the options of the loop (each algorithm documents them); the G-optimal
    design's ``design_a``, ``rounding`` and ``enforce_min_pulls`` are pinned here at
    their defaults and declared by the algorithms that expose them. ``self.members`` and
    ``self.sigma`` are the (m, sigma_R) of the current phase.
    """

    m: int = param(Int(low=1), default=10)
    lam: float = param(POSITIVE, default=1.0)
    sigma_r: float = param(Real(low=0.0), default=0.1)
    warmup: int = param(Int(low=0), default=0)
    warmup_strategy: str = param(Choice(WARMUPS), default="round-robin")
    anytime: dict[str, Any] | None = param(ANYTIME, default=None)
    perturb_warmup: bool = param(Flag(), default=True)
    update_every: int = param(Int(low=1), default=1)
    design_a = fixed(0.5)
    rounding = fixed("paper")
    enforce_min_pulls = fixed(False)

    def _resolve(self) -> None:
        self._anytime = check_anytime(self.anytime)

    # ------------------------------------------------------------------ composition
    def _make_model(self, members: int, *, restoring: bool = False) -> Any:
        """The ensemble model of ``members`` members (``restoring``: no draws from rng)."""
        raise NotImplementedError

    def _perturbations(self) -> Perturbations:
        """The members' perturbations: stored per round, as ensemble sampling."""
        return StoredPerturbations()

    @property
    def reads_distinct_rows(self) -> bool:
        """Whether a round costs in proportion to the distinct rows, not to the rounds.

        True with this loop's stored perturbations (the fits read the grouped history:
        distinct rows, counts and sums); False where a policy perturbs otherwise
        (GLM-FPL / Neural-PHE redraw every past target at each refit, Theta(t) draws a
        round; EVILL, priced without a cap). Read by ``reproduce --plan``
        (``plan.costs``).
        """
        return type(self)._perturbations is EnsemblePolicy._perturbations

    # ------------------------------------------------------------------ phases
    def _setup(self, ctx: Context) -> None:
        self.phase = 0
        self._start_phase(0)

    def _phase_length(self, phase: int) -> int | None:
        """Planned length tau_i of an anytime phase (None without ``anytime``)."""
        if self._anytime is None:
            return None
        t0, base = int(self._anytime["t0"]), self._anytime["base"]
        end = phase_end(t0, base, phase)
        return end if phase == 0 else end - phase_end(t0, base, phase - 1)

    def _phase_members(self, phase: int) -> tuple[int, float, int]:
        """(m_i, sigma_R,i, warm-up length) of a phase."""
        tau = self._phase_length(phase)
        if tau is None or self._anytime is None:
            return self.m, self.sigma_r, self.warmup
        m, sigma = phase_parameters(
            tau,
            m_scale=self._anytime["m_scale"],
            sigma_scale=self._anytime["sigma_scale"],
        )
        return m, sigma, min(self.warmup, tau)

    def warmup_rounds(self, horizon: int) -> int:
        """Warm-up rounds among the first ``horizon`` T.

        min(tau, T), or, with ``anytime``, min(tau, tau_i) at the start of every phase i
        that begins before T (cut at T).
        """
        if self._anytime is None:
            return min(self.warmup, horizon)
        total, start, phase = 0, 0, 0
        while start < horizon:
            length = self._phase_length(phase)
            assert length is not None
            total += min(self.warmup, length, horizon - start)
            start += length
            phase += 1
        return total

    def _start_phase(self, phase: int, *, restoring: bool = False) -> None:
        """A full restart: new ensemble, new (empty) perturbed history, new warm-up."""
        assert self.d is not None
        self.phase = phase
        self.members, self.sigma, self.warm_len = self._phase_members(phase)
        self.perturbations = self._perturbations()
        stored = self.members if self.perturbations.stored else 0
        self.history = PerturbedHistory(self.d, stored)
        self.model = self._make_model(self.members, restoring=restoring)
        self.schedule = Periodic(self.update_every)
        self.plan: np.ndarray | None = None
        self.plan_arms: np.ndarray | None = None
        self.warmup_done = self.warm_len == 0
        self.phase_end: int | None = None
        if self._anytime is not None:
            self.phase_end = phase_end(
                int(self._anytime["t0"]), self._anytime["base"], phase
            )

    # ------------------------------------------------------------------ loop
    def _in_warmup(self) -> bool:
        return not self.warmup_done

    def _warmup_action(self, ctx: Context) -> int:
        """The warm-up pull of this round, its law proposed."""
        drawn_now = self.plan is None
        if self.warmup_strategy == "design" and drawn_now:
            self.plan = design_plan(
                ctx.arms,
                self.warm_len,
                self.rng,
                a=self.design_a,
                rounding=self.rounding,
                enforce_min_pulls=self.enforce_min_pulls,
            )
            self.plan_arms = ctx.arms.copy()
            self.warm_len = int(self.plan.size)  # realised length (line 13)
            if self.warm_len == 0:
                self.warmup_done = True
                return self._greedy_action(ctx)
        return warmup_pull(
            self,
            ctx.arms,
            self.history.n,
            self.warmup_strategy,
            self.plan,
            self.plan_arms,
            drawn_now=drawn_now,
        )

    def _greedy_action(self, ctx: Context) -> int:
        """j_t ~ U{1..m}; X_t = argmax_x f(x; theta^{j_t}) [Sun2025, Alg. 1, lines 4-5].

        Its law is exact: (1/m) sum_j 1[x tied best for member j] / (ties of member j),
        from every member's predictions (the perturbations are the policy's state).
        """
        j = int(self.rng.integers(self.members))
        scores, predictions = self.model.predict_played(ctx.arms, j)
        self.propose(_member_law(predictions, j, scores))
        return argmax_random_tie(scores, self.rng)

    def _act(self, ctx: Context) -> Action:
        if self._in_warmup():
            return self._warmup_action(ctx)
        return self._greedy_action(ctx)

    def _update(self, ctx: Context, action: Action, feedback: Feedback) -> None:
        assert isinstance(action, int)
        perturb = self.perturb_warmup or not self._in_warmup()
        draws = self.perturbations.draw(self.rng, self.sigma, self.members, perturb)
        self.history.append(ctx.arms[action], float(feedback), draws)
        if not self.warmup_done and self.history.n >= self.warm_len:
            self.warmup_done = True
        if self.warmup_done:
            since = self.history.n - self.warm_len
            if since <= 0 or self.schedule.due(since):
                self.perturbations.refit(self.model, self.history, self.rng, self.sigma)
                self._n_updates += 1
        if self.phase_end is not None and self.t + 1 >= self.phase_end:
            self._start_phase(self.phase + 1)  # full restart [Sun2025, Sec. 6]

    # ------------------------------------------------------------------ state
    def _state(self) -> dict[str, Any]:
        return {
            "phase": self.phase,
            "warm_len": self.warm_len,
            "warmup_done": self.warmup_done,
            "plan": None if self.plan is None else self.plan.copy(),
            "plan_arms": None if self.plan_arms is None else self.plan_arms.copy(),
            "history": self.history.state_dict(),
            "model": self.model.state_dict(),
            **self.perturbations.state_dict(),
        }

    def _load_state(self, state: dict[str, Any]) -> None:
        self._start_phase(int(state["phase"]), restoring=True)
        self.warm_len = int(state["warm_len"])
        self.warmup_done = bool(state["warmup_done"])
        plan, arms = state.get("plan"), state.get("plan_arms")
        self.plan = None if plan is None else np.asarray(plan, dtype=np.int64)
        self.plan_arms = None if arms is None else np.asarray(arms, dtype=np.float64)
        self.history.load_state_dict(state["history"])
        self.model.load_state_dict(state["model"])
        self.perturbations.load_state_dict(state)


def _member_law(predictions: np.ndarray, j: int, scores: np.ndarray) -> ArrayLaw:
    """The law of "a uniform member, then its arg-max (ties at random)": exact.

    ``predictions`` (M, K) are every member's scores; member j's row is replaced by the
    ``scores`` it was played on, so that its ties are exactly those of the selection.
    """
    rows = np.array(predictions, dtype=float)
    rows[j] = scores
    return ArrayLaw(tie_shares(rows).mean(axis=0))
