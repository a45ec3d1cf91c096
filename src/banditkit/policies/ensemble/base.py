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
model of ``policies.ensemble.members``, the member-sampling greedy rule and a
``Periodic`` schedule. A subclass supplies ``_make_model(members)``.

References:
    [Sun2025] J. Sun, W. Wang, P. Xu. Provable anytime ensemble sampling algorithms in
        nonlinear contextual bandits. arXiv:2510.10730.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from banditkit.core import Context, ContextualPolicy
from banditkit.core.types import Action, Feedback
from banditkit.core.validation import check_bool, check_choice, check_int, check_scalar
from banditkit.policies.ensemble.anytime import (
    check_anytime,
    phase_end,
    phase_parameters,
)
from banditkit.policies.ensemble.history import PerturbedHistory
from banditkit.policies.parts.schedules import Periodic
from banditkit.policies.parts.selection import argmax_random_tie
from banditkit.policies.parts.warmup import ROUNDINGS, WARMUPS, design_plan

__all__ = ["EnsemblePolicy"]


class EnsemblePolicy(ContextualPolicy):
    """Shared loop of Lin-ES, GLM-ES and Neural-ES (module docstring).

    Subclasses call ``_set_common`` from their ``__init__`` and implement ``_make_model``.
    ``self.members`` and ``self.sigma`` are the (m, sigma_R) of the current phase.
    """

    #: True for perturbed-history exploration: one model, all perturbations redrawn.
    fresh_perturbations: ClassVar[bool] = False
    m: int
    sigma_r: float
    warmup: int
    warmup_strategy: str
    anytime: dict[str, float] | None
    perturb_warmup: bool
    update_every: int
    design_a: float
    rounding: str
    enforce_min_pulls: bool

    def _set_common(
        self,
        *,
        m: int,
        sigma_r: float,
        warmup: int,
        warmup_strategy: str,
        anytime: Any,
        perturb_warmup: bool,
        update_every: int,
        design_a: float = 0.5,
        rounding: str = "paper",
        enforce_min_pulls: bool = False,
    ) -> None:
        self.m = check_int("m", m, low=1)
        self.sigma_r = check_scalar("sigma_r", sigma_r, low=0.0)
        self.warmup = check_int("warmup", warmup, low=0)
        self.warmup_strategy = check_choice("warmup_strategy", warmup_strategy, WARMUPS)
        checked = check_anytime(anytime)
        self.anytime = None if checked is None else dict(anytime)
        self._anytime = checked
        self.perturb_warmup = check_bool("perturb_warmup", perturb_warmup)
        self.update_every = check_int("update_every", update_every, low=1)
        self.design_a = check_scalar(
            "design_a", design_a, low=0.0, high=1.0, low_open=True, high_open=True
        )
        self.rounding = check_choice("rounding", rounding, ROUNDINGS)
        self.enforce_min_pulls = check_bool("enforce_min_pulls", enforce_min_pulls)

    # ------------------------------------------------------------------ hooks
    def _make_model(self, members: int, *, restoring: bool = False) -> Any:
        """The ensemble model of ``members`` members (``restoring``: no draws from rng)."""
        raise NotImplementedError

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
        return (1 if self.fresh_perturbations else m), sigma, min(self.warmup, tau)

    def _start_phase(self, phase: int, *, restoring: bool = False) -> None:
        """A full restart: new ensemble, new (empty) perturbed history, new warm-up."""
        assert self.d is not None
        self.phase = phase
        self.members, self.sigma, self.warm_len = self._phase_members(phase)
        stored = 0 if self.fresh_perturbations else self.members
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
        K, i = ctx.n_arms, self.history.n
        if self.warmup_strategy == "round-robin":
            return i % K
        if self.warmup_strategy == "design":
            if self.plan is None:
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
            same = self.plan_arms is not None and np.array_equal(
                self.plan_arms, ctx.arms
            )
            if same and i < self.plan.size:
                return int(self.plan[i])
        return int(
            self.rng.integers(K)
        )  # "random", or an arm set the plan was not made on

    def _greedy_action(self, ctx: Context) -> int:
        # j_t ~ Uniform{1..m}; X_t = argmax_x f(x; theta^{j_t}) [Sun2025, Alg. 1, lines 4-5]
        j = int(self.rng.integers(self.members))
        return argmax_random_tie(self.model.predict_member(ctx.arms, j), self.rng)

    def _act(self, ctx: Context) -> Action:
        if self._in_warmup():
            return self._warmup_action(ctx)
        return self._greedy_action(ctx)

    def _draw(self) -> np.ndarray | None:
        """This round's stored perturbations Z_t (M,), drawn once [Sun2025, Alg. 1, l. 7]."""
        if self.fresh_perturbations:
            return None
        if self._in_warmup() and not self.perturb_warmup:
            return np.zeros(self.members)
        return self.rng.normal(0.0, self.sigma, self.members)

    def _refit(self) -> None:
        self.model.fit(self.history)

    def _update(self, ctx: Context, action: Action, feedback: Feedback) -> None:
        assert isinstance(action, int)
        self.history.append(ctx.arms[action], float(feedback), self._draw())
        if not self.warmup_done and self.history.n >= self.warm_len:
            self.warmup_done = True
        if self.warmup_done:
            since = self.history.n - self.warm_len
            if since <= 0 or self.schedule.due(since):
                self._refit()
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
