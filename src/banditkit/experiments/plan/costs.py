"""What a paper's full protocol costs, before anything runs (``banditkit reproduce --plan``).

Each kind of run (everything but the seed) is probed on this machine, one thread, in CPU
time of this process (``time.process_time``: a busy machine slows the probe's wall clock,
not what it reads). The environment is built and reset (its set-up, paid once per run),
then the policy plays from round 0:

- through its warm-up (``Policy.warmup_rounds``: GLM-ES's design pulls, the warm-up of
  every restart of an anytime schedule), whose rounds cost little and are priced at their
  measured mean ``warm``; at most :data:`WARMUP_SECONDS` of it;
- then past it, until :data:`PROBE_SECONDS` of rounds after the warm-up are spent (at
  least :data:`MIN_ROUNDS`, :data:`TORCH_ROUNDS` for a PyTorch policy, and two re-trainings
  of a policy that re-trains every ``update_every`` rounds).

No policy's state can be advanced to a late round for less than playing the rounds before
it (its re-fit is what a round costs), so the probe reads the horizon's first rounds after
the warm-up, and the cost's growth is fitted on them: the rounds are averaged in
:data:`BINS` bins of whole re-training periods (a re-fit every k rounds costs in spikes),
and a line c(t) = a + b t is fitted to the bins' means. Its slope b is kept only when it
is positive and at least twice its standard error (a network trained on every stored duel
costs more each round; noise and a cost that falls as a fit settles give b = 0 and the
mean). A run of T rounds of which W are warm-up rounds is priced at

    setup + warm W + sum over the other rounds t of (a + b t)     CPU-seconds,

about setup + warm W + a (T - W) + b (T^2 - W^2) / 2 for a warm-up at the start.

A GPU's time is an estimate from FLOPs: for a policy that computes with PyTorch, the probe
is played again under ``torch.utils.flop_counter.FlopCounterMode``, its FLOPs per round
after the warm-up fitted the same way, and a run priced at FLOPs / :data:`GPU_FLOPS` plus
:data:`GPU_ROUND_SECONDS` a round (kernel launches and the one copy of the action to the
host); NumPy parts are not counted. Other policies gain nothing from a GPU (they stay on
CPUs). Wall times for ``--jobs J`` and for a cluster are the longest-first schedule of the
runs on that many CPUs (``compute.schedule.simulate_schedule``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from importlib import import_module
from typing import Any

import numpy as np

from banditkit import core
from banditkit.core.threads import limit_threads
from banditkit.experiments.compute.schedule import simulate_schedule
from banditkit.experiments.config.papers import select_figures
from banditkit.experiments.config.resolve import prepare_experiment
from banditkit.experiments.config.resolved import ResolvedExperiment, RunSpec

__all__ = [
    "GPU_FLOPS",
    "GPU_ROUND_SECONDS",
    "FigureCost",
    "KindCost",
    "duration",
    "figure_cost",
    "paper_costs",
    "plan_table",
    "price",
    "probe_kind",
    "wall_seconds",
    "warmup_spans",
]

#: CPU-seconds of rounds after the warm-up that a kind is probed for (after its set-up).
PROBE_SECONDS = 0.4
#: Most CPU-seconds of warm-up rounds a probe plays (then the rest is priced as warm-up).
WARMUP_SECONDS = 2.0
#: CPU-seconds of probes after which kinds are priced as alike ones (:func:`price`).
BUDGET_SECONDS = 60.0
#: Fewest rounds after the warm-up a probe plays (fewer when the horizon is shorter).
MIN_ROUNDS = 24
#: Fewest rounds of a PyTorch policy's probe: enough to see its cost grow with the history
#: (a network trained on every stored round).
TORCH_ROUNDS = 24
#: Bins the probed rounds are averaged in before the line is fitted.
BINS = 8
#: Rounds after the warm-up whose FLOPs are counted (PyTorch policies; more for one
#: re-training every k).
FLOP_ROUNDS = 5
#: Sustained FLOP/s assumed for a GPU on the papers' small networks: about 15 % of a
#: current datacenter GPU's float32 peak (an assumption, not a measurement).
GPU_FLOPS = 1e13
#: GPU seconds assumed per round of a PyTorch policy besides its FLOPs (launches, the copy
#: of the action to the host).
GPU_ROUND_SECONDS = 2e-4

Spans = tuple[tuple[int, int], ...]


def _line_sum(a: float, b: float, horizon: int, warmup: Spans) -> tuple[float, int]:
    """Sum of a + b t over the rounds t < ``horizon`` outside ``warmup``; warm-up rounds."""
    total, warm = a * horizon + b * horizon**2 / 2, 0
    for start, stop in warmup:
        stop = min(stop, horizon)
        if start >= stop:
            continue
        total -= a * (stop - start) + b * (stop**2 - start**2) / 2
        warm += stop - start
    return total, warm


@dataclass(frozen=True)
class KindCost:
    """The measured costs of one kind of run.

    Attributes:
        setup: Seconds to build and reset the environment and build the policy.
        a: Per-round CPU-seconds at round 0, after the warm-up.
        b: Growth of the per-round CPU-seconds per round (>= 0).
        flops_a: Per-round PyTorch FLOPs at round 0 (None: no PyTorch).
        flops_b: Their growth per round.
        rounds: Rounds the probe played.
        error: Why the kind could not be probed (a missing dataset), else None.
        warm: CPU-seconds of a warm-up round.
        warmup: The warm-up rounds, as [start, stop) spans (:func:`warmup_spans`).
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

    def cpu_seconds(self, horizon: int) -> float:
        """CPU-seconds of a run of ``horizon`` rounds."""
        rounds, warm = _line_sum(self.a, self.b, horizon, self.warmup)
        return self.setup + self.warm * warm + rounds

    def gpu_seconds(self, horizon: int) -> float | None:
        """Estimated GPU-seconds of a run (None: a policy without PyTorch)."""
        if self.flops_a is None:
            return None
        flops, _ = _line_sum(self.flops_a, self.flops_b, horizon, self.warmup)
        return self.setup + flops / GPU_FLOPS + GPU_ROUND_SECONDS * horizon


def _line(
    rounds: Sequence[int], values: Sequence[float], period: int = 1
) -> tuple[float, float]:
    """Intercept and slope (>= 0) of per-round ``values`` against their ``rounds``.

    The values are averaged in up to :data:`BINS` bins of whole ``period`` s; the slope of
    the line through the bins' means is kept when it is at least twice its standard error.
    """
    t = np.asarray(rounds, dtype=np.float64)
    y = np.asarray(values, dtype=np.float64)
    bins = min(BINS, y.size // max(period, 1))
    if bins < 3:
        return float(y.mean()) if y.size else 0.0, 0.0
    size = y.size // bins // period * period
    tb = t[: bins * size].reshape(bins, size).mean(axis=1)
    yb = y[: bins * size].reshape(bins, size).mean(axis=1)
    (slope, intercept), cov = np.polyfit(tb, yb, 1, cov="unscaled")
    residual = yb - (intercept + slope * tb)
    stderr = np.sqrt(cov[0, 0] * (residual @ residual) / (bins - 2))
    if slope <= 0 or slope < 2 * stderr:
        return float(y.mean()), 0.0
    if intercept < 0:  # through the origin (a cost that grows from nothing)
        return 0.0, float(tb @ yb / (tb @ tb))
    return float(intercept), float(slope)


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


def _retrainings(spec: RunSpec) -> int:
    """Rounds up to the second re-training of a policy that re-trains every k > 1 rounds."""
    every = spec.policy_params.get("update_every")
    return 2 * every + 1 if isinstance(every, int) and every > 1 else 0


def _period(spec: RunSpec) -> int:
    """Rounds between two re-trainings (1: every round)."""
    every = spec.policy_params.get("update_every")
    return every if isinstance(every, int) and every > 1 else 1


@dataclass
class _Probe:
    """What one play of a probe read: set-up, and per round its index, tick and warm-up."""

    setup: float
    rounds: list[int]
    values: list[float]
    warm: list[bool]
    warmup: Spans


def _in_spans(t: int, spans: Spans) -> bool:
    return any(start <= t < stop for start, stop in spans)


def _play(
    spec: RunSpec, least: int, seconds: float, tick: Callable[[], float]
) -> _Probe:
    """Play a probe: through the warm-up, then ``least`` rounds and ``seconds`` CPU-s more.

    ``tick`` is read after every round (CPU time, or FLOPs counted so far); the probe
    also stops after :data:`WARMUP_SECONDS` of warm-up rounds, at the horizon or when the
    environment runs out of contexts.
    """
    policy = core.make_policy(spec.policy_name, **spec.policy_params, seed=spec.seed)
    t0 = time.process_time()
    env = core.make_env(spec.env_name, **spec.env_params)
    env.reset(spec.seed)
    policy.begin(spec.horizon)
    policy.attach(env)
    probe = _Probe(
        time.process_time() - t0, [], [], [], warmup_spans(policy, spec.horizon)
    )
    spent = {True: 0.0, False: 0.0}
    after = 0
    last = tick()
    for t in range(spec.horizon):
        warm = _in_spans(t, probe.warmup)
        if after >= least and spent[False] > seconds:
            break
        if warm and spent[True] > WARMUP_SECONDS:
            break
        ctx = env.context()
        if ctx is None:
            break
        clock = time.process_time()
        step = env.step(action := policy.act(ctx))
        if step.accepted:
            policy.update(ctx, action, step.feedback)
        spent[warm] += time.process_time() - clock
        after += not warm
        now = tick()
        probe.rounds.append(t)
        probe.values.append(now - last)
        probe.warm.append(warm)
        last = now
    return probe


def _fit(probe: _Probe, period: int) -> tuple[float, float, float]:
    """(warm, a, b) of a probe: the warm-up rounds' mean, the line of the others."""
    warm = [v for v, w in zip(probe.values, probe.warm, strict=True) if w]
    after = [
        (t, v)
        for t, v, w in zip(probe.rounds, probe.values, probe.warm, strict=True)
        if not w
    ]
    mean_warm = float(np.mean(warm)) if warm else 0.0
    if not after:  # the probe never left the warm-up: price the rest alike
        return mean_warm, mean_warm, 0.0
    a, b = _line([t for t, _ in after], [v for _, v in after], period)
    return mean_warm, a, b


def probe_kind(spec: RunSpec) -> KindCost:
    """Measure the costs of ``spec``'s kind (module docstring); never raises."""
    try:
        torch = core.make_policy(spec.policy_name, **spec.policy_params).needs_torch
        with limit_threads(1, torch=torch):
            least = max(TORCH_ROUNDS if torch else MIN_ROUNDS, _retrainings(spec))
            probe = _play(spec, least, PROBE_SECONDS, time.process_time)
            warm, a, b = _fit(probe, _period(spec))
            cost = KindCost(
                probe.setup,
                a,
                b,
                rounds=len(probe.rounds),
                warm=warm,
                warmup=probe.warmup,
            )
            if not torch:
                return cost
            counter = import_module("torch.utils.flop_counter").FlopCounterMode(
                display=False
            )
            with counter:  # slow: only as many rounds as the fit needs
                flops = _play(
                    spec,
                    max(FLOP_ROUNDS, _retrainings(spec)),
                    0.0,
                    lambda: float(counter.get_total_flops()),
                )
            _, fa, fb = _fit(flops, _period(spec))
            return replace(cost, flops_a=fa, flops_b=fb)
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
    """

    figure: str
    runs: int
    rounds: int
    cpu_seconds: list[float]
    gpu_seconds: list[float | None]
    kinds: list[str]
    errors: dict[str, str]

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
    )


#: Parameters that set a run's size, and so its cost (a kind is priced as one alike in them).
SIZES = (
    "width",
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


def price(
    specs: Sequence[RunSpec],
    budget: float = BUDGET_SECONDS,
    probe: Callable[[RunSpec], KindCost] = probe_kind,
) -> dict[str, KindCost]:
    """The cost of each kind of ``specs``, probing for about ``budget`` CPU-seconds.

    Kinds of the same environment and policy of the same sizes (:data:`SIZES`: widths,
    dimensions, steps, schedules), with a warm-up or both without one, share one probe
    (other parameters, the horizon and the warm-up's length may differ), the kinds with
    the most rounds probed first. Once the budget
    is spent, a kind is priced as a probed one whose environment and policy have the same
    sizes (the environment's name aside), and probed only when there is none.
    """
    rounds: dict[str, int] = {}
    first: dict[str, RunSpec] = {}
    for spec in specs:
        rounds[spec.kind] = rounds.get(spec.kind, 0) + spec.horizon
        first.setdefault(spec.kind, spec)
    prices: dict[str, KindCost] = {}
    alike: dict[tuple[Any, ...], KindCost] = {}
    start = time.process_time()
    for kind in sorted(rounds, key=lambda k: -rounds[k]):
        spec = first[kind]
        warmup = _warmup_of(spec)
        env, policy = _sizes(spec.env_params), _sizes(spec.policy_params)
        sized = (env, spec.policy_name, policy, bool(warmup))
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
        )
    if len(costs) > 1:  # one after the other, as reproduce runs them
        gpu = total.gpu_hours
        lines.append(
            f"| {total.figure} | {total.runs:,} | {total.rounds:,} "
            f"| {total.cpu_hours:,.1f} | {'-' if gpu is None else f'{gpu:,.1f}'} "
            + "".join(
                f"| {duration(sum(wall_seconds(c, w, g) for c in costs))} "
                for w, g in ((jobs, False), (jobs, True), (nodes * node_cpus, False))
            )
            + "|"
        )
    return "\n".join(lines)


def _row(cost: FigureCost, jobs: int, cluster_cpus: int) -> str:
    gpu = cost.gpu_hours
    missing = " (some runs not priced: see below)" if cost.errors else ""
    return (
        f"| {cost.figure}{missing} | {cost.runs:,} | {cost.rounds:,} "
        f"| {cost.cpu_hours:,.1f} | {'-' if gpu is None else f'{gpu:,.1f}'} "
        f"| {duration(wall_seconds(cost, jobs))} "
        f"| {duration(wall_seconds(cost, jobs, gpu=True))} "
        f"| {duration(wall_seconds(cost, cluster_cpus))} |"
    )
