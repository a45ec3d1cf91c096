"""What a paper's full protocol costs, before anything runs (``banditkit reproduce --plan``).

Each kind of run (everything but the seed) is probed on this machine: the environment is
built and reset (its set-up, paid once per run), then the policy plays the first rounds, up
to a time budget (:data:`PROBE_SECONDS`; at least :data:`MIN_ROUNDS`, :data:`TORCH_ROUNDS`
for a PyTorch policy, and two updates of a policy that re-trains every ``update_every``
rounds). A policy's per-round cost often grows
with the history it keeps (a network trained on every stored duel: c(t) = a + b t), so the
probe's per-round times are fitted with a line (b >= 0) and a run of T rounds is priced at

    setup + a T + b T^2 / 2     CPU-seconds (one thread, as ``banditkit run`` computes).

A GPU's time is an estimate from FLOPs: for a policy that computes with PyTorch, the probe
is played again under ``torch.utils.flop_counter.FlopCounterMode``, its FLOPs per round
fitted the same way, and a run priced at FLOPs / :data:`GPU_FLOPS` plus
:data:`GPU_ROUND_SECONDS` a round (kernel launches and the one copy of the action to the
host); NumPy parts are not counted. Other policies gain nothing from a GPU (they stay on
CPUs). Wall times for ``--jobs J`` and for a cluster are the longest-first schedule of the
runs on that many CPUs (``compute.schedule.simulate_schedule``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
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
]

#: CPU-seconds a kind is probed for (after its set-up).
PROBE_SECONDS = 0.05
#: Seconds the kinds of a plan are probed for, about (then kinds are priced as alike ones).
BUDGET_SECONDS = 10.0
#: Fewest rounds a probe plays (fewer when the horizon is shorter).
MIN_ROUNDS = 12
#: Fewest rounds of a PyTorch policy's probe: enough to see its cost grow with the history
#: through the noise (a network trained on every stored round).
TORCH_ROUNDS = 40
#: Rounds whose FLOPs are counted (PyTorch policies; more for one re-training every k).
FLOP_ROUNDS = 5
#: Sustained FLOP/s assumed for a GPU on the papers' small networks: about 15 % of a
#: current datacenter GPU's float32 peak (an assumption, not a measurement).
GPU_FLOPS = 1e13
#: GPU seconds assumed per round of a PyTorch policy besides its FLOPs (launches, the copy
#: of the action to the host).
GPU_ROUND_SECONDS = 2e-4


@dataclass(frozen=True)
class KindCost:
    """The measured costs of one kind of run.

    Attributes:
        setup: Seconds to build and reset the environment and build the policy.
        a: Per-round CPU-seconds at round 0.
        b: Growth of the per-round CPU-seconds per round (>= 0).
        flops_a: Per-round PyTorch FLOPs at round 0 (None: no PyTorch).
        flops_b: Their growth per round.
        rounds: Rounds the probe played.
        error: Why the kind could not be probed (a missing dataset), else None.
    """

    setup: float
    a: float
    b: float
    flops_a: float | None = None
    flops_b: float = 0.0
    rounds: int = 0
    error: str | None = None

    def cpu_seconds(self, horizon: int) -> float:
        """CPU-seconds of a run of ``horizon`` rounds."""
        return self.setup + self.a * horizon + self.b * horizon**2 / 2

    def gpu_seconds(self, horizon: int) -> float | None:
        """Estimated GPU-seconds of a run (None: a policy without PyTorch)."""
        if self.flops_a is None:
            return None
        flops = self.flops_a * horizon + self.flops_b * horizon**2 / 2
        return self.setup + flops / GPU_FLOPS + GPU_ROUND_SECONDS * horizon


def _line(values: Sequence[float]) -> tuple[float, float]:
    """Intercept and slope (>= 0) of per-round values fitted against the round."""
    y = np.asarray(values, dtype=np.float64)
    if y.size < 3:
        return float(y.mean()), 0.0
    t = np.arange(y.size, dtype=np.float64)
    slope, intercept = np.polyfit(t, y, 1)
    if slope <= 0:
        return float(y.mean()), 0.0
    if intercept < 0:  # spiky costs (a re-training every k rounds): through the origin
        return 0.0, float(t @ y / (t @ t))
    return float(intercept), float(slope)


def _retrainings(spec: RunSpec) -> int:
    """Rounds up to the second re-training of a policy that re-trains every k > 1 rounds."""
    every = spec.policy_params.get("update_every")
    return 2 * every + 1 if isinstance(every, int) and every > 1 else 0


def _least(spec: RunSpec, torch: bool) -> int:
    """Fewest rounds of a probe: the minimum, or two re-trainings of the policy."""
    least = TORCH_ROUNDS if torch else MIN_ROUNDS
    return min(spec.horizon, max(least, _retrainings(spec)))


def _play(
    spec: RunSpec, rounds: int | None, tick: Callable[[], float]
) -> tuple[float, list[float], bool]:
    """Set-up seconds and the per-round ``tick`` differences of a probe (and torch?).

    ``rounds`` None: until :data:`PROBE_SECONDS` have passed (at least :func:`_least`).
    """
    policy = core.make_policy(spec.policy_name, **spec.policy_params, seed=spec.seed)
    if policy.needs_torch:  # the one-time import, outside the clock
        import_module("torch")
    t0 = time.perf_counter()
    env = core.make_env(spec.env_name, **spec.env_params)
    env.reset(spec.seed)
    policy.begin(spec.horizon)
    policy.attach(env)
    setup = time.perf_counter() - t0
    least = _least(spec, policy.needs_torch)
    per_round: list[float] = []
    start = time.perf_counter()
    last = tick()
    while len(per_round) < spec.horizon:
        if rounds is not None and len(per_round) >= rounds:
            break
        if (
            rounds is None
            and len(per_round) >= least
            and (time.perf_counter() - start > PROBE_SECONDS)
        ):
            break
        ctx = env.context()
        if ctx is None:
            break
        step = env.step(action := policy.act(ctx))
        if step.accepted:
            policy.update(ctx, action, step.feedback)
        now = tick()
        per_round.append(now - last)
        last = now
    return setup, per_round, policy.needs_torch


def probe_kind(spec: RunSpec) -> KindCost:
    """Measure the costs of ``spec``'s kind (module docstring); never raises."""
    try:
        with limit_threads(1):
            setup, times, torch = _play(spec, None, time.perf_counter)
            a, b = _line(times)
            if not torch:
                return KindCost(setup, a, b, rounds=len(times))
            counter = import_module("torch.utils.flop_counter").FlopCounterMode(
                display=False
            )
            with counter:  # slow: only as many rounds as the fit needs
                _, flops, _ = _play(
                    spec,
                    min(len(times), max(FLOP_ROUNDS, _retrainings(spec))),
                    lambda: float(counter.get_total_flops()),
                )
            fa, fb = _line(flops)
            return KindCost(setup, a, b, fa, fb, rounds=len(times))
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
    "update_every",
    "ensemble_size",
)


def _sizes(params: dict[str, Any]) -> str:
    return repr(sorted((k, params[k]) for k in SIZES if k in params))


def price(
    specs: Sequence[RunSpec],
    budget: float = BUDGET_SECONDS,
    probe: Callable[[RunSpec], KindCost] = probe_kind,
) -> dict[str, KindCost]:
    """The cost of each kind of ``specs``, probing for at most about ``budget`` seconds.

    The kinds with the most rounds in all are probed first; once the budget is spent, a
    kind is priced as a probed kind of the same environment and policy of the same sizes
    (:data:`SIZES`: widths, dimensions, steps; other parameters may differ), else of the
    same policy of the same sizes, and probed only when there is none.
    """
    rounds: dict[str, int] = {}
    first: dict[str, RunSpec] = {}
    for spec in specs:
        rounds[spec.kind] = rounds.get(spec.kind, 0) + spec.horizon
        first.setdefault(spec.kind, spec)
    prices: dict[str, KindCost] = {}
    alike: dict[tuple[Any, ...], KindCost] = {}
    start = time.perf_counter()
    for kind in sorted(rounds, key=lambda k: -rounds[k]):
        spec = first[kind]
        env, policy = _sizes(spec.env_params), _sizes(spec.policy_params)
        keys = (
            (spec.env_name, env, spec.policy_name, policy),
            (spec.policy_name, policy),
        )
        found = [alike[k] for k in keys if k in alike]
        if found and time.perf_counter() - start > budget:
            prices[kind] = found[0]
            continue
        prices[kind] = cost = probe(spec)
        if cost.error is None:
            for key in keys:
                alike.setdefault(key, cost)
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
