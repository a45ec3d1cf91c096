"""What a paper's full protocol costs, before anything runs (``banditkit reproduce --plan``).

Each kind of run (everything but the seed) is probed on this machine, one thread, in CPU
time of this process (``time.process_time``: a busy machine slows the probe's wall clock,
not what it reads). The environment is built and reset (its set-up, paid once per run),
then the policy plays from round 0:

- through its warm-up (``Policy.warmup_rounds``: GLM-ES's design pulls, the warm-up of
  every restart of an anytime schedule), whose rounds cost little and are priced at their
  measured mean ``warm``; at most :data:`WARMUP_SECONDS` of it;
- then past it, until :data:`PROBE_SECONDS` of rounds after the warm-up are spent
  (:data:`TORCH_PROBE_SECONDS` for a PyTorch policy, whose cost grows with its history; at
  least :data:`MIN_ROUNDS`, :data:`TORCH_ROUNDS` for a PyTorch policy, and three
  re-trainings of a policy that re-trains every ``update_every`` rounds).

No policy's state can be advanced to a late round for less than playing the rounds before
it (its re-fit is what a round costs), so the probe reads the horizon's first rounds after
the warm-up, and the cost's growth is fitted on them: the rounds are summarised in
:data:`BINS` bins (medians, so that a first round's one-time cost is no trend; means of
whole periods where a re-fit every k rounds costs in spikes) and a line c(t) = a + b t
fitted to them, its slope kept when it is at least
twice its standard error and the line rises by :data:`MIN_RISE` of its level over the
probed rounds, else b = 0 and a the mean (noise, a cost that falls as a fit settles, or a
local rise of a few per cent that would be extrapolated to T). On a shared machine a load that drifts during the probe looks like growth, so
growth is also checked side by side: the policy is deep-copied before a round early after
the warm-up and before the probe's last round, the two rounds are replayed
:data:`REPLAYS` times each, interleaved, and where the late round's replays do not beat
the early one's in at least 21 of the 25 pairs, b = 0. Where the FLOPs per round grow (a
network trained on every stored duel: their line rises by a FLOP or more over the counted
rounds, :func:`_flops_grow`), the growth is real and b is measured, not tested: the slope
between the fastest replays of the early and the late round, at least the FLOPs' growth at
this machine's GEMM rate (:func:`_growth`). A run of T rounds of
which W are warm-up rounds is priced at

    setup + warm W + sum over the other rounds t of (a + b t)     CPU-seconds,

the set-up including the first round after the warm-up, whose one-time costs (a fit from
scratch, PyTorch's first calls in a process) are no per-round cost,

about setup + warm W + a (T - W) + b (T^2 - W^2) / 2 for a warm-up at the start.

A policy whose rounds cost in proportion to the distinct arm vectors it has played
(``reads_distinct_rows``: fits on distinct rows with counts) stops growing once it has
played the K arms of a fixed arm set: where every context of the probe showed the same
arms, the line is a + b min(t, K n / u) (u distinct vectors played in the probe's n
rounds; :func:`growth_cap`).

A kind whose fits read a share of its history that shrinks as the policy settles
(:data:`SHRINKING`: NVLDB / NDB with ``distinct_duels``, whose fits skip the duels of an arm
with itself, a share that rises from the first rounds to about 94 % of 2,000) is priced on
the same line, which its first rounds overstate: its price is an upper bound
(``KindCost.upper``), marked "<=" in the plan. So is a capped kind whose cost grows: its
distinct rows come more slowly after the probe than at the probe's rate (fewer new arms
as it settles), so that a + b min(t, K n / u) overstates them (Neural-ES on Fig. 4(b)'s
K = 500 task: 215-485 s a run of T = 10,000 priced, 25 ms a round measured at T = 1,500
where the probe's line reads 20 ms + 25-43 us t).

A GPU's time is an estimate from FLOPs: for a policy that computes with PyTorch, the probe
plays :data:`FLOP_ROUNDS` more rounds under ``torch.utils.flop_counter.FlopCounterMode``
(three re-trainings of one that re-trains every k), their FLOPs fitted the same way, and
a run priced at FLOPs / :data:`GPU_FLOPS` plus :data:`GPU_ROUND_SECONDS` a round (kernel
launches and the one copy of the action to the host); NumPy parts are not counted. Other
policies gain nothing from a GPU (they stay on CPUs). Wall times for ``--jobs J`` and for
a cluster are the longest-first schedule of the runs on that many CPUs
(``compute.schedule.simulate_schedule``).
"""

from __future__ import annotations

import copy
import json
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from importlib import import_module
from typing import Any

import numpy as np

from banditkit import core
from banditkit.core.threads import limit_threads
from banditkit.core.types import Action, Step
from banditkit.experiments.compute.schedule import simulate_schedule
from banditkit.experiments.config.papers import select_figures
from banditkit.experiments.config.resolve import prepare_experiment
from banditkit.experiments.config.resolved import ResolvedExperiment, RunSpec
from banditkit.policies.parts.models.compute import compute_options

__all__ = [
    "GPU_FLOPS",
    "GPU_ROUND_SECONDS",
    "SHRINKING",
    "UPPER",
    "FigureCost",
    "KindCost",
    "duration",
    "figure_cost",
    "gemm_seconds_per_flop",
    "paper_costs",
    "plan_record",
    "plan_table",
    "price",
    "probe_kind",
    "wall_seconds",
    "warmup_spans",
]

#: CPU-seconds of rounds after the warm-up that a kind is probed for (after its set-up).
PROBE_SECONDS = 0.4
#: The same for a PyTorch policy, whose round grows with the history it trains on: the
#: growth is read over three times the rounds (NVLDB on Fig. E.3's task of the dueling
#: paper: 13-16 s a run of T = 2,000 priced so, 35-42 s from 0.4 s of rounds, about 15 s
#: measured in the runs of Figs. E.5-E.7).
TORCH_PROBE_SECONDS = 1.2
#: Most CPU-seconds of warm-up rounds a probe plays (then the rest is priced as warm-up).
WARMUP_SECONDS = 2.0
#: CPU-seconds of probes after which kinds are priced as alike ones (:func:`price`).
BUDGET_SECONDS = 120.0
#: Fewest rounds after the warm-up a probe plays (fewer when the horizon is shorter).
MIN_ROUNDS = 24
#: Fewest rounds of a PyTorch policy's probe: enough to see its cost grow with the history
#: (a network trained on every stored round).
TORCH_ROUNDS = 24
#: Replays of a round early after the warm-up and of the last one, interleaved.
REPLAYS = 5
#: Least rise of a fitted line over the probed rounds, relative to its level there, for
#: its slope to be extrapolated to the horizon (a few per cent is how a fit settles or
#: the cache warms, not a cost that grows with the history).
MIN_RISE = 0.1
#: Bins the probed rounds are averaged in before the line is fitted.
BINS = 8
#: Rounds whose FLOPs are counted after the timed ones (PyTorch policies; more for one
#: re-training every k).
FLOP_ROUNDS = 3
#: Sustained FLOP/s assumed for a GPU on the papers' small networks: about 15 % of a
#: current datacenter GPU's float32 peak (an assumption, not a measurement).
GPU_FLOPS = 1e13
#: GPU seconds assumed per round of a PyTorch policy besides its FLOPs (launches, the copy
#: of the action to the host).
GPU_ROUND_SECONDS = 2e-4

#: Parameter values under which a policy's fits read a share of its history that its first
#: rounds overstate, so that the line fitted on them prices an upper bound
#: (``distinct_duels``: the fits of NVLDB / NLDB / NDB skip the duels of an arm with itself,
#: 68-83 % of the first 400 duels on the synthetic tasks and 94 % of 2,000; one such run
#: of Figs. E.5-E.7 at T = 2,000 took about a sixth of its price).
SHRINKING: dict[str, Any] = {"distinct_duels": True}

Spans = tuple[tuple[int, int], ...]


def _line_sum(
    a: float, b: float, horizon: int, warmup: Spans, cap: int | None = None
) -> tuple[float, int]:
    """Sum of a + b min(t, cap) over the rounds t < ``horizon`` outside ``warmup``.

    Returns the sum and the number of warm-up rounds. ``cap`` None: no cap (a + b t).
    """

    def integral(stop: int) -> float:  # of a + b min(t, cap) over [0, stop)
        if cap is None or stop <= cap:
            return a * stop + b * stop**2 / 2
        return a * stop + b * (cap**2 / 2 + cap * (stop - cap))

    total, warm = integral(horizon), 0
    for start, stop in warmup:
        stop = min(stop, horizon)
        if start >= stop:
            continue
        total -= integral(stop) - integral(start)
        warm += stop - start
    return total, warm


@dataclass(frozen=True)
class KindCost:
    """The measured costs of one kind of run.

    Attributes:
        setup: Seconds to build and reset the environment and build the policy, and of
            the first round after the warm-up (:func:`_first_round`).
        a: Per-round CPU-seconds at round 0, after the warm-up.
        b: Growth of the per-round CPU-seconds per round (>= 0).
        flops_a: Per-round PyTorch FLOPs at round 0 (None: no PyTorch).
        flops_b: Their growth per round.
        rounds: Rounds the probe played.
        error: Why the kind could not be probed (a missing dataset), else None.
        warm: CPU-seconds of a warm-up round.
        warmup: The warm-up rounds, as [start, stop) spans (:func:`warmup_spans`).
        upper: Whether the price is an upper bound (:data:`SHRINKING`, or a capped
            growth: module docstring).
        cap: The round from which the per-round cost stops growing (None: it grows to
            the horizon): a fit on its distinct rows over a fixed set of arms
            (:func:`growth_cap`).
    """

    setup: float
    a: float
    b: float
    flops_a: float | None = None
    flops_b: float = 0.0
    rounds: int = 0
    error: str | None = None
    warm: float = 0.0
    warmup: Spans = ()
    upper: bool = False
    cap: int | None = None

    def cpu_seconds(self, horizon: int) -> float:
        """CPU-seconds of a run of ``horizon`` rounds."""
        rounds, warm = _line_sum(self.a, self.b, horizon, self.warmup, self.cap)
        return self.setup + self.warm * warm + rounds

    def gpu_seconds(self, horizon: int) -> float | None:
        """Estimated GPU-seconds of a run (None: a policy without PyTorch)."""
        if self.flops_a is None:
            return None
        flops, _ = _line_sum(self.flops_a, self.flops_b, horizon, self.warmup, self.cap)
        return self.setup + flops / GPU_FLOPS + GPU_ROUND_SECONDS * horizon


#: How the slope of :func:`_line` is kept: any positive one, or one at least twice its
#: standard error.
KEEP = ("any", "significant")


def _line(
    rounds: Sequence[int],
    values: Sequence[float],
    period: int = 1,
    keep: str = "significant",
) -> tuple[float, float]:
    """Intercept and slope (>= 0) of per-round ``values`` against their ``rounds``.

    The values are summarised in up to :data:`BINS` bins (medians; means of whole
    ``period`` s for a policy that re-trains every k > 1 rounds) and a line fitted
    through them; its slope is kept as ``keep`` says (:data:`KEEP`;
    "significant" also asks the line to rise by :data:`MIN_RISE` of its level over the
    bins), else 0 (and the intercept the mean). A kept slope's intercept makes the line's mean
    the values' (through the origin where that would be negative).
    """
    t = np.asarray(rounds, dtype=np.float64)
    y = np.asarray(values, dtype=np.float64)
    bins = min(BINS, y.size // max(period, 1))
    if bins < 3:
        return float(y.mean()) if y.size else 0.0, 0.0
    size = y.size // bins // period * period
    tb = t[: bins * size].reshape(bins, size).mean(axis=1)
    # medians where every round re-fits (a first round's one-time cost is no trend);
    # means of whole periods where a re-fit comes every k rounds (its spikes are the cost)
    center = np.median if period == 1 else np.mean
    yb = center(y[: bins * size].reshape(bins, size), axis=1)
    (slope, intercept), cov = np.polyfit(tb, yb, 1, cov="unscaled")
    residual = yb - (intercept + slope * tb)
    stderr = float(np.sqrt(cov[0, 0] * (residual @ residual) / (bins - 2)))
    level = float(y[: bins * size].mean() - slope * tb.mean())
    rise = slope * (tb[-1] - tb[0]) / max(level + slope * tb[0], 1e-300)
    if slope <= 0 or (keep != "any" and (slope < 2 * stderr or rise < MIN_RISE)):
        return float(y.mean()), 0.0
    if level < 0:  # through the origin (a cost that grows from nothing)
        return 0.0, float(tb @ yb / (tb @ tb))
    return level, float(slope)


def warmup_spans(policy: core.Policy, horizon: int) -> Spans:
    """The warm-up rounds among ``policy``'s first ``horizon``, as [start, stop) spans.

    Read from ``Policy.warmup_rounds`` (the warm-up rounds among the first h), halving
    each interval that is neither all warm-up nor none.

    Example:
        >>> from banditkit.core import make_policy
        >>> warmup_spans(make_policy("glm-es", warmup=30), 100)
        ((0, 30),)
    """
    spans: list[tuple[int, int]] = []

    def split(lo: int, hi: int, w_lo: int, w_hi: int) -> None:
        if w_hi == w_lo:
            return
        if w_hi - w_lo == hi - lo:
            if spans and spans[-1][1] == lo:
                spans[-1] = (spans[-1][0], hi)
            else:
                spans.append((lo, hi))
            return
        mid = (lo + hi) // 2
        w_mid = policy.warmup_rounds(mid)
        split(lo, mid, w_lo, w_mid)
        split(mid, hi, w_mid, w_hi)

    split(0, horizon, 0, policy.warmup_rounds(horizon))
    return tuple(spans)


def _period(spec: RunSpec) -> int:
    """Rounds between two re-trainings (1: every round)."""
    every = spec.policy_params.get("update_every")
    return every if isinstance(every, int) and every > 1 else 1


def _least(spec: RunSpec, rounds: int) -> int:
    """``rounds``, or three re-trainings of a policy that re-trains every k > 1 rounds."""
    period = _period(spec)
    return max(rounds, 3 * period + 1) if period > 1 else rounds


@dataclass
class _Snapshot:
    """A policy just before round ``t``, with what the round showed it (to replay it)."""

    t: int
    policy: core.Policy
    ctx: core.Context
    action: Action
    step: Step

    def replay(self, share: dict[int, Any]) -> float:
        """CPU-seconds of the round played again by a copy (``share``: not copied)."""
        policy = copy.deepcopy(self.policy, dict(share))
        clock = time.process_time()
        policy.act(self.ctx)
        if self.step.accepted:
            policy.update(self.ctx, self.action, self.step.feedback)
        return time.process_time() - clock


@dataclass
class _Probe:
    """What a probe read: its set-up seconds and warm-up spans, and per round.

    Per round: its CPU-seconds, whether it was a warm-up round, and (PyTorch policies,
    the rounds after the timed ones) its FLOPs. ``early`` and ``late``: a round early
    after the warm-up and the last one, with the CPU-seconds of their interleaved replays.
    """

    setup: float
    warmup: Spans
    seconds: dict[int, float] = field(default_factory=dict)
    warm: dict[int, bool] = field(default_factory=dict)
    flops: dict[int, float] = field(default_factory=dict)
    early: tuple[int, list[float]] | None = None
    late: tuple[int, list[float]] | None = None
    #: the arms of the first context, while every context showed the same (else None)
    arms: np.ndarray | None = None
    #: the distinct arm vectors played (bytes), and the rounds they were played in
    played: set[bytes] = field(default_factory=set)
    played_rounds: int = 0
    #: the policy's ``reads_distinct_rows`` (:func:`growth_cap`)
    distinct_rows: bool = False

    def saw(self, ctx: core.Context, action: Action) -> None:
        """Record a round's context and action (:func:`growth_cap`)."""
        arms = getattr(ctx, "arms", None)
        if not isinstance(arms, np.ndarray) or not isinstance(action, int | np.integer):
            self.played_rounds = -1  # not a choice among a context's arm vectors
            return
        if self.played_rounds == 0:
            self.arms = arms.copy()
        elif self.arms is not None and not np.array_equal(arms, self.arms):
            self.arms = None
        if self.played_rounds >= 0:
            self.played.add(arms[int(action)].tobytes())
            self.played_rounds += 1


def _in_spans(t: int, spans: Spans) -> bool:
    return any(start <= t < stop for start, stop in spans)


def _round(
    policy: core.Policy, env: core.Environment, ctx: core.Context
) -> tuple[Action, Step]:
    step = env.step(action := policy.act(ctx))
    if step.accepted:
        policy.update(ctx, action, step.feedback)
    return action, step


def _play(
    spec: RunSpec, least: int, flop_rounds: int, seconds: float | None = None
) -> _Probe:
    """Play a probe: through the warm-up, then ``least`` rounds and ``seconds`` more.

    ``seconds`` None: :data:`PROBE_SECONDS`.

    The probe also stops after WARMUP_SECONDS of warm-up rounds, at the horizon or when
    the environment runs out of contexts. The second round after the warm-up (the first
    may fit from scratch) and the last are kept and replayed (:func:`_replay`); then
    ``flop_rounds`` more rounds are played with their PyTorch FLOPs counted.
    """
    policy = core.make_policy(spec.policy_name, **spec.policy_params, seed=spec.seed)
    clock = time.process_time()
    env = core.make_env(spec.env_name, **spec.env_params)
    env.reset(spec.seed)
    policy.begin(spec.horizon)
    policy.attach(env)
    probe = _Probe(time.process_time() - clock, warmup_spans(policy, spec.horizon))
    probe.distinct_rows = getattr(policy, "reads_distinct_rows", False) is True
    seconds = PROBE_SECONDS if seconds is None else seconds
    share = {id(env): env}  # a policy that reads the environment shares it
    spent = {True: 0.0, False: 0.0}
    after = 0  # rounds played after the warm-up
    snaps: list[_Snapshot] = []
    for t in range(max(1, spec.horizon - flop_rounds)):  # rounds left to count FLOPs
        warm = _in_spans(t, probe.warmup)
        last = after >= least and spent[False] > seconds
        if (warm and spent[True] > WARMUP_SECONDS) or (ctx := env.context()) is None:
            break
        keep = not warm and (after == 1 or last)
        kept = _copy(policy, share) if keep else None
        clock = time.process_time()
        action, step = _round(policy, env, ctx)
        probe.seconds[t] = time.process_time() - clock
        probe.saw(ctx, action)
        probe.warm[t] = warm
        spent[warm] += probe.seconds[t]
        after += not warm
        if kept is not None:
            snaps.append(_Snapshot(t, kept, ctx, action, step))
        if last:
            break
    if len(snaps) == 2 and _period(spec) == 1:
        _replay(probe, snaps, share)
    if flop_rounds:
        _count_flops(
            probe, policy, env, range(len(probe.seconds), spec.horizon)[:flop_rounds]
        )
    return probe


def _copy(policy: core.Policy, share: dict[int, Any]) -> core.Policy | None:
    """A deep copy of ``policy`` (None: it cannot be copied; then nothing is replayed)."""
    try:
        return copy.deepcopy(policy, dict(share))
    except Exception:  # a state that does not copy: the rounds' line is fitted instead
        return None


def _replay(probe: _Probe, snaps: list[_Snapshot], share: dict[int, Any]) -> None:
    """Replay the early and the late round :data:`REPLAYS` times, interleaved.

    Three times each where a round costs more than a tenth of PROBE_SECONDS; none where
    a replay fails (the rounds' line is fitted instead).
    """
    times: list[list[float]] = [[], []]
    costly = probe.seconds[snaps[1].t] > PROBE_SECONDS / (2 * REPLAYS)
    try:
        for _ in range(3 if costly else REPLAYS):
            for snap, read in zip(snaps, times, strict=True):
                read.append(snap.replay(share))
    except Exception:
        return
    probe.early, probe.late = (snaps[0].t, times[0]), (snaps[1].t, times[1])


def _count_flops(
    probe: _Probe, policy: core.Policy, env: core.Environment, rounds: range
) -> None:
    """Play ``rounds`` with their PyTorch FLOPs counted into ``probe.flops``."""
    counter = import_module("torch.utils.flop_counter").FlopCounterMode(display=False)
    with counter:  # slow: only as many rounds as the fit needs
        for t in rounds:
            if (ctx := env.context()) is None:
                return
            _round(policy, env, ctx)
            probe.flops[t] = float(counter.get_total_flops()) - sum(
                probe.flops.values()
            )


def _grows(probe: _Probe) -> bool | None:
    """Whether the interleaved replays say the cost grows (None: none were played).

    Yes when the late round's replays beat the early one's in at least 21 of the 25
    pairs (9 of 9 for three of a costly round): a chance under 1 in 20 if the cost did
    not grow, which a load that drifts during the probe cannot fake.
    """
    if probe.early is None or probe.late is None:
        return None
    early, late = probe.early[1], probe.late[1]
    wins = sum(x > y for x in late for y in early)
    return wins >= (21 if len(late) >= 5 else len(late) * len(early))


def _fit(
    spec: RunSpec,
    values: dict[int, float],
    warm: dict[int, bool],
    keep: str = "significant",
    slope: float | None = None,
) -> tuple[float, float, float]:
    """(warm, a, b) of a probe's ``values``: the warm-up rounds' mean, the others' line.

    ``keep``: how the line's slope is kept (:func:`_line`); "none": b = 0. ``slope``: a
    slope known otherwise (:func:`_growth`), the line then through the values' mean.
    """
    cold = {t: v for t, v in values.items() if not warm.get(t, False)}
    warmed = [v for t, v in values.items() if warm.get(t, False)]
    mean_warm = float(np.mean(warmed)) if warmed else 0.0
    if not cold:  # the probe never left the warm-up: price the rest alike
        return mean_warm, mean_warm, 0.0
    if keep == "none":
        return mean_warm, float(np.mean(list(cold.values()))), 0.0
    if slope is not None:
        level = np.mean(list(cold.values())) - slope * np.mean(list(cold))
        return mean_warm, max(float(level), 0.0), slope
    a, b = _line(list(cold), list(cold.values()), _period(spec), keep)
    return mean_warm, a, b


def _flops_grow(probe: _Probe, slope: float) -> bool:
    """Whether the FLOPs counted per round grow: their line rises by a FLOP or more.

    A count is exact, so a constant one fits a slope of its rounding error alone
    (1e-12 to 1e-9 FLOPs a round over Neural-PHE's 2e7): no growth. Taken for growth,
    it let a drift of the load over a probe through as the growth of the rounds'
    CPU-seconds, and priced one Neural-PHE run of T = 10,000 at 70 s or 7,400 s.
    """
    if len(probe.flops) < 2:
        return False
    return slope * (max(probe.flops) - min(probe.flops)) >= 1.0


def _keep(probe: _Probe) -> str:
    """How the growth of the CPU-seconds is kept where the FLOPs do not grow.

    None where the replays say the cost does not grow (a slope of a load that drifted);
    else a slope at least twice its standard error (module docstring).
    """
    return "none" if _grows(probe) is False else "significant"


@cache
def gemm_seconds_per_flop(dtype: str = "float32") -> float:
    """CPU-seconds per FLOP of a 256 x 256 GEMM here, one thread (the least a FLOP costs).

    The fastest of three timings of ten products, in this process's CPU time, once per
    process. About 1.0e-11 (float32) and 2.2e-11 (float64) on the AMD EPYC of this
    project's measurements.
    """
    torch = import_module("torch")
    n = 256
    x = torch.rand(n, n, dtype=getattr(torch, dtype))
    y = torch.rand(n, n, dtype=x.dtype)
    with limit_threads(1, torch=True):
        torch.mm(x, y)
        best = float("inf")
        for _ in range(3):
            clock = time.process_time()
            for _ in range(10):
                torch.mm(x, y)
            best = min(best, time.process_time() - clock)
    return max(best, 1e-9) / (10 * 2 * n**3)


def _growth(probe: _Probe, flops_slope: float, dtype: str) -> float:
    """The growth of a round's CPU-seconds per round where its FLOPs grow.

    The slope between the fastest replays of the early and the late round: measured
    side by side, so a load that drifts cannot fake it, where a line through a few
    dozen rounds moved by 10x between probes (Neural-ES on covertype: 0.27-0.85 ms a
    round per round fitted). At least the FLOPs' growth at this machine's GEMM rate
    (:func:`gemm_seconds_per_flop`: the least it can cost), which is the price where
    nothing was replayed or the early round cost more than the late one (a first fit).
    """
    least = flops_slope * gemm_seconds_per_flop(dtype)
    if probe.early is None or probe.late is None:
        return least
    (early_t, early), (late_t, late) = probe.early, probe.late
    return max((min(late) - min(early)) / max(late_t - early_t, 1), least)


def growth_cap(probe: _Probe) -> int | None:
    """The round from which a kind's per-round cost stops growing, if the probe shows one.

    A policy whose round costs in proportion to the distinct arm vectors it has played,
    not to the rounds (its ``reads_distinct_rows`` is True: Neural-UCB / Neural-TS with
    ``grouped``, the ensemble policies with stored perturbations, which fit on distinct
    rows with their counts), has at most K of them where every context of the probe
    showed the same K arms. At the probe's rate of u distinct vectors in n rounds, K are
    reached by round K n / u, where the growth fitted on the probe's rounds stops.
    Without the cap a probe of a few dozen rounds, each adding a row, extrapolates that
    growth to the horizon (Neural-ES on the ensemble paper's K = 50 bandits: 1.2
    CPU-hours a run priced, 133 s measured). None for any other kind. (The cap is an
    upper bound's: u grows more slowly after the probe than at its rate.)
    """
    if not probe.distinct_rows:
        return None
    if probe.arms is None or probe.played_rounds <= 0 or not probe.played:
        return None
    k, distinct = len(probe.arms), len(probe.played)
    return max(probe.played_rounds, int(np.ceil(k * probe.played_rounds / distinct)))


def _first_round(probe: _Probe) -> float:
    """Take the first round after the warm-up out of ``probe.seconds``; its CPU-seconds.

    It pays once what no later round pays: a fit from scratch, and in a process's first
    PyTorch policy the first calls of its operators (about 40 ms on a round that then
    costs 2 ms). As a round of a few dozen it is a mean's outlier that a run of
    T rounds would pay T times; as part of the set-up it is paid once. Kept where fewer
    than :data:`MIN_ROUNDS` rounds followed it.
    """
    cold = [t for t in probe.seconds if not probe.warm.get(t, False)]
    if len(cold) <= MIN_ROUNDS:
        return 0.0
    probe.warm.pop(cold[0], None)
    return probe.seconds.pop(cold[0])


def _shrinking(spec: RunSpec) -> bool:
    """Whether ``spec``'s fits read a share of its history that shrinks (:data:`SHRINKING`)."""
    return any(spec.policy_params.get(k) == v for k, v in SHRINKING.items())


def probe_kind(spec: RunSpec) -> KindCost:
    """Measure the costs of ``spec``'s kind (module docstring); never raises."""
    try:
        built = core.make_policy(spec.policy_name, **spec.policy_params)
        torch, dtype = built.needs_torch, compute_options(built)["dtype"]
        with limit_threads(1, torch=torch):
            least = _least(spec, TORCH_ROUNDS if torch else MIN_ROUNDS)
            if torch:
                flop_rounds = _least(spec, FLOP_ROUNDS)
                probe = _play(spec, least, flop_rounds, TORCH_PROBE_SECONDS)
            else:
                probe = _play(spec, least, 0)
        flops = _fit(spec, probe.flops, {}, "any") if torch else None
        if flops is not None and not _flops_grow(probe, flops[2]):
            flops = (flops[0], float(np.mean(list(probe.flops.values()))), 0.0)
        rounds = len(probe.seconds)
        once = _first_round(probe)
        if flops is not None and flops[2] > 0:
            growth = _growth(probe, flops[2], dtype)
            warm, a, b = _fit(spec, probe.seconds, probe.warm, slope=growth)
        else:
            warm, a, b = _fit(spec, probe.seconds, probe.warm, _keep(probe))
        cap = growth_cap(probe)
        cost = KindCost(
            probe.setup + once,
            a,
            b,
            rounds=rounds,
            warm=warm,
            warmup=probe.warmup,
            upper=_shrinking(spec) or (b > 0 and cap is not None),
            cap=cap,
        )
        if flops is None:
            return cost
        return replace(cost, flops_a=flops[1], flops_b=flops[2])
    except Exception as exc:  # a missing dataset, a policy that cannot start
        return KindCost(0.0, 0.0, 0.0, error=f"{type(exc).__name__}: {exc}")


@dataclass(frozen=True)
class FigureCost:
    """The cost of one figure or table of the full protocol.

    Attributes:
        figure: Its id.
        runs: Its distinct runs.
        rounds: Their rounds.
        cpu_seconds: Per run, CPU-seconds (in the order of ``kinds``).
        gpu_seconds: Per run, estimated GPU-seconds (None: no PyTorch).
        kinds: Per run, its kind.
        errors: Kinds that could not be probed: kind -> why (their runs count 0).
        upper: Whether some of its runs are priced as upper bounds (``KindCost.upper``).
        prices: Each kind's measured costs (:func:`plan_record` writes them out).
    """

    figure: str
    runs: int
    rounds: int
    cpu_seconds: list[float]
    gpu_seconds: list[float | None]
    kinds: list[str]
    errors: dict[str, str]
    upper: bool = False
    prices: dict[str, KindCost] = field(default_factory=dict)

    @property
    def cpu_hours(self) -> float:
        """CPU-hours of the whole figure."""
        return sum(self.cpu_seconds) / 3600

    @property
    def gpu_hours(self) -> float | None:
        """Estimated GPU-hours of its PyTorch runs (None: it has none)."""
        gpu = [s for s in self.gpu_seconds if s is not None]
        return sum(gpu) / 3600 if gpu else None


def figure_cost(
    figure: str, resolved: ResolvedExperiment, prices: dict[str, KindCost]
) -> FigureCost:
    """The cost of ``resolved`` (one figure) from the costs of its kinds (:func:`price`)."""
    first: dict[str, RunSpec] = {}
    for spec in resolved.runs():
        first.setdefault(spec.id, spec)
    specs = list(first.values())
    costs = [prices[spec.kind] for spec in specs]
    return FigureCost(
        figure,
        len(specs),
        sum(s.horizon for s in specs),
        [c.cpu_seconds(s.horizon) for c, s in zip(costs, specs, strict=True)],
        [c.gpu_seconds(s.horizon) for c, s in zip(costs, specs, strict=True)],
        [s.kind for s in specs],
        {s.kind: c.error for c, s in zip(costs, specs, strict=True) if c.error},
        any(c.upper for c in costs),
        {s.kind: c for c, s in zip(costs, specs, strict=True)},
    )


def plan_record(costs: Sequence[FigureCost]) -> dict[str, Any]:
    """The plan as JSON-ready data: per figure its totals and each kind's measured costs.

    Per kind: its environment, policy, parameters and horizon, its runs, what one run is
    priced at (CPU- and GPU-seconds) and the probe's reading it rests on (set-up, a, b,
    the growth cap, the warm-up round's cost, rounds probed, FLOPs a + b t), so that a
    price can be checked against a run and two plans compared kind by kind.
    """
    figures = []
    for cost in costs:
        runs = Counter(cost.kinds)
        kinds = []
        for kind, n in runs.items():
            env, env_params, policy, policy_params, horizon = json.loads(kind)
            price = cost.prices[kind]
            kinds.append(
                {
                    "env": env,
                    "env_params": env_params,
                    "policy": policy,
                    "policy_params": policy_params,
                    "horizon": horizon,
                    "runs": n,
                    "cpu_seconds_per_run": price.cpu_seconds(horizon),
                    "gpu_seconds_per_run": price.gpu_seconds(horizon),
                    **{
                        name: getattr(price, name)
                        for name in ("setup", "a", "b", "cap", "warm", "rounds")
                    },
                    "warmup_rounds": _warm_rounds(price.warmup),
                    "flops_a": price.flops_a,
                    "flops_b": price.flops_b,
                    "upper": price.upper,
                    "error": price.error,
                }
            )
        figures.append(
            {
                "figure": cost.figure,
                "runs": cost.runs,
                "rounds": cost.rounds,
                "cpu_hours": cost.cpu_hours,
                "gpu_hours": cost.gpu_hours,
                "upper": cost.upper,
                "kinds": kinds,
            }
        )
    return {"figures": figures}


#: Parameters that set a run's size, and so its cost (a kind is priced as one alike in them).
#: A ``preset`` is one: the dueling policies' sets the width when none is given
#: ("appendix" m = 32, "main" m = 100), and Fig. 2's main-preset runs priced as the
#: appendix-preset runs of Fig. E.1 came out at 0.31-0.44x of their measured time.
SIZES = (
    "width",
    "preset",
    "depth",
    "hidden",
    "m",
    "d",
    "n_arms",
    "n_items",
    "capacity",
    "pool",
    "dataset",
    "steps",
    "solver",
    "update_every",
    "ensemble_size",
    "anytime",
    *SHRINKING,
)


def _sizes(params: dict[str, Any]) -> str:
    return repr(sorted((k, params[k]) for k in SIZES if k in params))


def _warmup_of(spec: RunSpec) -> Spans | None:
    """The warm-up spans of ``spec``'s policy (None: it cannot be built)."""
    try:
        policy = core.make_policy(spec.policy_name, **spec.policy_params)
        return warmup_spans(policy, spec.horizon)
    except Exception:  # the probe reports why
        return None


def _warm_rounds(spans: Spans | None) -> int:
    return sum(stop - start for start, stop in spans or ())


def price(
    specs: Sequence[RunSpec],
    budget: float = BUDGET_SECONDS,
    probe: Callable[[RunSpec], KindCost] = probe_kind,
) -> dict[str, KindCost]:
    """The cost of each kind of ``specs``, probing for about ``budget`` CPU-seconds.

    Kinds of the same environment and policy of the same sizes (:data:`SIZES`: widths,
    dimensions, steps, schedules) share one probe (other parameters, the horizon and the
    warm-up may differ: each kind is priced with its own warm-up rounds, at the probed
    kind's cost of one, 0 where it had none), the kinds with the most rounds probed
    first, and of those the one with the shortest warm-up (its probe sees the most
    rounds after it). Once the budget
    is spent, a kind is priced as a probed one whose environment and policy have the same
    sizes (the environment's name aside), and probed only when there is none.
    """
    rounds: dict[str, int] = {}
    first: dict[str, RunSpec] = {}
    for spec in specs:
        rounds[spec.kind] = rounds.get(spec.kind, 0) + spec.horizon
        first.setdefault(spec.kind, spec)
    warmups = {kind: _warmup_of(spec) for kind, spec in first.items()}
    prices: dict[str, KindCost] = {}
    alike: dict[tuple[Any, ...], KindCost] = {}
    start = time.process_time()
    for kind in sorted(rounds, key=lambda k: (-rounds[k], _warm_rounds(warmups[k]))):
        spec, warmup = first[kind], warmups[kind]
        env, policy = _sizes(spec.env_params), _sizes(spec.policy_params)
        sized = (env, spec.policy_name, policy)
        same = (spec.env_name, *sized)
        found = alike.get(same)
        if found is None and time.process_time() - start > budget:
            found = alike.get(sized)
        if found is not None:
            prices[kind] = found if warmup is None else replace(found, warmup=warmup)
            continue
        cost = probe(spec)
        if cost.error is None and warmup is not None:
            cost = replace(cost, warmup=warmup)
        prices[kind] = cost
        if cost.error is None:
            alike[same] = cost
            alike.setdefault(sized, cost)
    return prices


def wall_seconds(cost: FigureCost, workers: int, gpu: bool = False) -> float:
    """The figure's wall time on ``workers`` CPUs, runs longest first.

    With ``gpu``, its PyTorch runs go to one GPU one after another while the others
    share the CPUs.
    """
    if not gpu:
        return simulate_schedule(cost.cpu_seconds, cost.kinds, workers).makespan
    on_gpu = sum(s for s in cost.gpu_seconds if s is not None)
    rest = [
        c for c, g in zip(cost.cpu_seconds, cost.gpu_seconds, strict=True) if g is None
    ]
    kinds = [k for k, g in zip(cost.kinds, cost.gpu_seconds, strict=True) if g is None]
    cpus = simulate_schedule(rest, kinds, workers).makespan if rest else 0.0
    return max(on_gpu, cpus)


def paper_costs(
    paper: str,
    figure: str | None = None,
    *,
    budget: float = BUDGET_SECONDS,
    probe: Callable[[RunSpec], KindCost] = probe_kind,
    **overrides: Any,
) -> list[FigureCost]:
    """The cost of each figure of ``paper``'s protocol (``overrides``: quick, seeds, horizon).

    The kinds are probed for about ``budget`` seconds in all (:func:`price`).

    Raises:
        ConfigError: Unknown paper or figure, or an invalid config.
    """
    _, ids = select_figures(paper, figure)
    resolved = {fid: prepare_experiment(path, **overrides) for fid, path in ids.items()}
    specs = [spec for r in resolved.values() for spec in r.runs()]
    prices = price(specs, budget, probe)
    return [figure_cost(fid, r, prices) for fid, r in resolved.items()]


def duration(seconds: float) -> str:
    """A duration for tables: seconds, minutes, hours or days, two significant digits.

    Example:
        >>> duration(42), duration(420), duration(42_000), duration(4_200_000)
        ('42 s', '7 min', '12 h', '49 d')
    """
    unit, size = next(
        (u, z) for u, z, below in _UNITS if below is None or seconds < below
    )
    value = seconds / size
    return f"{value:.2g} {unit}" if value < 10 else f"{value:,.0f} {unit}"


#: (unit, its seconds, the duration it is used below).
_UNITS = (
    ("s", 1.0, 100.0),
    ("min", 60.0, 7200.0),
    ("h", 3600.0, 172_800.0),
    ("d", 86400.0, None),
)


def plan_table(
    costs: Sequence[FigureCost], jobs: int, nodes: int, node_cpus: int
) -> str:
    """The plan as a Markdown table: hours, and wall times on this machine, a GPU, a cluster."""
    cluster = f"{nodes} nodes x {node_cpus} CPUs"
    lines = [
        f"| Figure | Runs | Rounds | CPU-hours | GPU-hours (est.) | --jobs {jobs} "
        f"| 1 GPU + {jobs} CPUs (est.) | {cluster} |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    total = FigureCost("**all**", 0, 0, [], [], [], {})
    for cost in costs:
        lines.append(_row(cost, jobs, nodes * node_cpus))
        total = FigureCost(
            total.figure,
            total.runs + cost.runs,
            total.rounds + cost.rounds,
            total.cpu_seconds + cost.cpu_seconds,
            total.gpu_seconds + cost.gpu_seconds,
            total.kinds + [f"{cost.figure}/{k}" for k in cost.kinds],
            {**total.errors, **cost.errors},
            total.upper or cost.upper,
        )
    if len(costs) > 1:  # one after the other, as reproduce runs them
        gpu, at_most = total.gpu_hours, UPPER if total.upper else ""
        lines.append(
            f"| {total.figure} | {total.runs:,} | {total.rounds:,} "
            f"| {at_most}{total.cpu_hours:,.1f} "
            f"| {'-' if gpu is None else f'{at_most}{gpu:,.1f}'} "
            + "".join(
                f"| {at_most}{duration(sum(wall_seconds(c, w, g) for c in costs))} "
                for w, g in ((jobs, False), (jobs, True), (nodes * node_cpus, False))
            )
            + "|"
        )
    return "\n".join(lines)


#: The mark of an upper bound in the plan's table (``FigureCost.upper``).
UPPER = "<= "


def _row(cost: FigureCost, jobs: int, cluster_cpus: int) -> str:
    gpu, at_most = cost.gpu_hours, UPPER if cost.upper else ""
    missing = " (some runs not priced: see below)" if cost.errors else ""
    return (
        f"| {cost.figure}{missing} | {cost.runs:,} | {cost.rounds:,} "
        f"| {at_most}{cost.cpu_hours:,.1f} "
        f"| {'-' if gpu is None else f'{at_most}{gpu:,.1f}'} "
        f"| {at_most}{duration(wall_seconds(cost, jobs))} "
        f"| {at_most}{duration(wall_seconds(cost, jobs, gpu=True))} "
        f"| {at_most}{duration(wall_seconds(cost, cluster_cpus))} |"
    )
