"""A 2-worker process grid against serial (issue 16: at least 1.8x faster on 2 cores).

Workload: the shipped demo config (``banditkit/examples/demo.yaml``: digits with the block
encoding, d = 640, and the logistic bandit h1; Random, eps-greedy, LinUCB, LinTS and
GLM-UCB; 3 seeds: 30 runs) at ``HORIZON`` rounds (``QUICK_HORIZON`` with ``--quick``). Each
variant is a whole ``banditkit run`` in a fresh subprocess writing to a fresh directory, so
the imports, the worker start-up, the store writes, the summary and the figures count:
``--jobs 1`` and ``--jobs 2``, interleaved, ``REPEATS`` times (medians).

Reported per variant: wall seconds, CPU seconds (the subprocess and its workers), the
ratio serial / parallel and the CPU utilisation CPU / (wall x jobs).

Diagnosis, independent of the machine's load (``diagnosis`` in ``result.json``), from the
stored metadata of the runs (``cpu_seconds``, ``started``, ``finished``, ``pid``):

* the CPU seconds of every run and of every kind of run (cell), the longest run;
* the serial parts: from the start of the command to the first run started (imports,
  config expansion, worker start-up) and from the last run finished to the exit (summary,
  figures), in wall seconds;
* per worker: its busy time (its runs) and idle time within the runs phase;
* replays of the grid on idle workers with the measured per-run CPU times: in the config's
  order (what the pool did before ``experiments.schedule``), longest expected first (what
  it does now) and the critical path (``critical_path``: a lower bound for any order);
* the speed-up an idle machine would give: the serial command's CPU seconds over the
  driver's own CPU seconds + the worker start-up + the replayed makespan (``replay``);
  and the same for ``WHAT_IF_SEEDS`` seeds of every cell (each run at its cell's mean
  time), which tells whether the grid's shape or the runner limits the ratio.

The diagnosis says whether the grid can reach the bar at all: a grid whose longest runs
cannot be spread over the workers (three GLM-UCB runs on digits, each a third of the work,
on two workers) is bounded by its critical path whatever the runner does.

    banditkit bench --only process_grid --out results/bench
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

from banditkit.experiments.schedule import simulate_schedule
from benchmarks._common import host, write_outputs

HORIZON = 3000
QUICK_HORIZON = 500
REPEATS = 2
QUICK_REPEATS = 1
JOBS = 2
BAR = 1.8
WHAT_IF_SEEDS = 4


def demo_config() -> Path:
    """The path of the shipped demo config."""
    return Path(str(resources.files("banditkit.examples") / "demo.yaml"))


def run_command(config: Path, out: Path, jobs: int, horizon: int) -> dict[str, Any]:
    """Run ``banditkit run`` in a subprocess; its wall and CPU seconds (workers included)."""
    cmd = [
        sys.executable,
        "-m",
        "banditkit",
        "run",
        str(config),
        "--out",
        str(out),
        "--jobs",
        str(jobs),
        "--horizon",
        str(horizon),
        "--progress",
        "none",
    ]
    env = dict(os.environ)
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[name] = "1"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.time()
    clock = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - clock
    ended = time.time()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"banditkit run failed ({done.returncode}):\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "jobs": jobs,
        "wall": wall,
        "cpu": cpu,
        "utilisation": cpu / (wall * jobs),
        "started": started,
        "ended": ended,
    }


def _stamp(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def stored_runs(out: Path, order: dict[str, int]) -> list[dict[str, Any]]:
    """The metadata of the stored runs, with ``_order``: the run's place in the config."""
    metas = [json.loads(p.read_text()) for p in sorted((out / "runs").glob("*.json"))]
    metas = [m for m in metas if "cpu_seconds" in m]
    for m in metas:
        m["_order"] = order[m["id"]]
    return metas


def diagnose(
    timing: dict[str, Any], metas: list[dict[str, Any]], jobs: int
) -> dict[str, Any]:
    """Per-run CPU, serial parts, per-worker idle time and replayed schedules (docstring)."""
    starts = [_stamp(m["started"]) for m in metas]
    ends = [_stamp(m["finished"]) for m in metas]
    first, last = min(starts), max(ends)
    span = last - first
    workers: dict[int, dict[str, float]] = {}
    for m, s, e in zip(metas, starts, ends, strict=True):
        w = workers.setdefault(m["pid"], {"busy": 0.0, "runs": 0.0})
        w["busy"] += e - s
        w["runs"] += 1
    per_worker = [
        {
            "pid": pid,
            "runs": int(w["runs"]),
            "busy": w["busy"],
            "idle": span - w["busy"],
        }
        for pid, w in sorted(workers.items())
    ]
    return {
        "before_runs": first - timing["started"],
        "runs_phase": span,
        "after_runs": timing["ended"] - last,
        "workers": per_worker,
        "run_cpu_total": sum(m["cpu_seconds"] for m in metas),
    }


def _kind(m: dict[str, Any]) -> str:
    return json.dumps(
        [
            m["env"]["name"],
            m["env"]["params"],
            m["policy"]["name"],
            m["policy"]["params"],
        ],
        sort_keys=True,
    )


def critical_path(seconds: list[float], jobs: int) -> float:
    """A lower bound on the wall time of runs of these durations on ``jobs`` workers.

    max(longest run, total / jobs, p_jobs + p_(jobs+1)): of the jobs + 1 longest runs,
    two share a worker (p_i is the i-th longest).
    """
    ranked = sorted(seconds, reverse=True)
    pair = ranked[jobs - 1] + ranked[jobs] if len(ranked) > jobs else 0.0
    return max(ranked[0], sum(ranked) / jobs, pair)


def replay(
    metas: list[dict[str, Any]],
    serial_cpu: float,
    parallel_cpu: float,
    jobs: int,
    parallel_runs_cpu: float | None = None,
) -> dict[str, Any]:
    """Schedules of the grid on idle workers with the measured per-run CPU seconds.

    The serial command's CPU time is its idle-machine wall time; the parallel one's is
    predicted as the driver's own CPU (the serial command's CPU outside the runs), plus
    the extra CPU of the parallel command outside its runs (worker start-up; its runs'
    own CPU, ``parallel_runs_cpu``, is left out, as it varies with the load) spread over
    the workers, plus the makespan of the replayed order.
    """
    ordered = sorted(metas, key=lambda m: m["_order"])
    seconds = [m["cpu_seconds"] for m in ordered]
    kinds = [_kind(m) for m in ordered]
    total = sum(seconds)
    config_order = simulate_schedule(seconds, None, jobs).makespan
    scheduled = simulate_schedule(seconds, kinds, jobs).makespan
    bound = critical_path(seconds, jobs)
    cells: dict[str, float] = {}
    for m in ordered:
        label = f"{m['env']['label']} / {m['policy']['label']}"
        cells[label] = cells.get(label, 0.0) + m["cpu_seconds"]
    driver = serial_cpu - total
    outside = parallel_cpu - (total if parallel_runs_cpu is None else parallel_runs_cpu)
    start_up = max(outside - driver, 0.0) / jobs
    # what-if: WHAT_IF_SEEDS seeds of every cell, each run at its cell's mean CPU time
    mean: dict[str, list[float]] = {}
    for kind, sec in zip(kinds, seconds, strict=True):
        mean.setdefault(kind, []).append(sec)
    w_kinds = [k for k in mean for _ in range(WHAT_IF_SEEDS)]
    w_seconds = [sum(mean[k]) / len(mean[k]) for k in w_kinds]
    w_total = sum(w_seconds)
    w_scheduled = simulate_schedule(w_seconds, w_kinds, jobs).makespan
    return {
        "run_cpu_total": total,
        "longest_run": max(seconds),
        "driver_cpu": driver,
        "worker_start_up": start_up,
        "cell_cpu": dict(sorted(cells.items(), key=lambda kv: -kv[1])),
        "makespan_config_order": config_order,
        "makespan_scheduled": scheduled,
        "makespan_bound": bound,
        "idle_ratio_config_order": serial_cpu / (driver + start_up + config_order),
        "idle_ratio_scheduled": serial_cpu / (driver + start_up + scheduled),
        "idle_ratio_bound": serial_cpu / (driver + start_up + bound),
        "idle_ratio_bound_no_overheads": total / bound,
        "what_if_seeds": WHAT_IF_SEEDS,
        "what_if_idle_ratio_scheduled": (driver + w_total)
        / (driver + start_up + w_scheduled),
    }


def main(quick: bool, out: Path) -> dict[str, Any]:
    """Run the grid serially and on 2 workers, interleaved; diagnose; write out/."""
    from banditkit.experiments.runner import prepare_experiment

    horizon = QUICK_HORIZON if quick else HORIZON
    repeats = QUICK_REPEATS if quick else REPEATS
    config = demo_config()
    specs = prepare_experiment(config, horizon=horizon).runs()
    order = {spec.id: i for i, spec in enumerate(specs)}
    times: dict[int, list[dict[str, Any]]] = {1: [], JOBS: []}
    diagnosis: dict[int, dict[str, Any]] = {}
    metas_by_jobs: dict[int, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="banditkit-grid-") as tmp:
        for rep in range(repeats):
            for jobs in (1, JOBS):
                where = Path(tmp) / f"jobs{jobs}-{rep}"
                timing = run_command(config, where, jobs, horizon)
                times[jobs].append(timing)
                metas = stored_runs(where, order)
                diagnosis[jobs] = diagnose(timing, metas, jobs)
                metas_by_jobs[jobs] = metas
    wall = {j: statistics.median(t["wall"] for t in times[j]) for j in times}
    cpu = {j: statistics.median(t["cpu"] for t in times[j]) for j in times}
    ratio = wall[1] / wall[JOBS]
    result = {
        "workload": {
            "config": "banditkit/examples/demo.yaml",
            "horizon": horizon,
            "runs": len(metas_by_jobs[1]),
            "repeats": repeats,
            "jobs": JOBS,
        },
        "host": host(),
        "wall": {str(j): wall[j] for j in wall},
        "cpu": {str(j): cpu[j] for j in cpu},
        "utilisation": {
            str(j): statistics.median(t["utilisation"] for t in times[j]) for j in times
        },
        "repetitions": {str(j): times[j] for j in times},
        "ratio": ratio,
        "bar": BAR,
        "meets_bar": ratio >= BAR,
        "diagnosis": {
            "serial": diagnosis[1],
            "parallel": diagnosis[JOBS],
            "replay": replay(  # the last repetition's runs and CPU times
                metas_by_jobs[1],
                times[1][-1]["cpu"],
                times[JOBS][-1]["cpu"],
                JOBS,
                diagnosis[JOBS]["run_cpu_total"],
            ),
        },
    }
    write_outputs(out, result, table(result))
    return result


def table(result: dict[str, Any]) -> str:
    """result.md: the timings, the ratio and the diagnosis."""
    w, c, u = result["wall"], result["cpu"], result["utilisation"]
    j = str(result["workload"]["jobs"])
    d = result["diagnosis"]
    r = d["replay"]
    lines = [
        f"# process grid: demo, T = {result['workload']['horizon']}, "
        f"{result['workload']['runs']} runs (load {result['host']['loadavg']})",
        "",
        "| jobs | wall s | CPU s | utilisation |",
        "|---|---|---|---|",
        f"| 1 | {w['1']:.2f} | {c['1']:.2f} | {u['1']:.2f} |",
        f"| {j} | {w[j]:.2f} | {c[j]:.2f} | {u[j]:.2f} |",
        "",
        f"ratio {result['ratio']:.2f}x (bar {result['bar']}x: "
        f"{'met' if result['meets_bar'] else 'NOT met'})",
        "",
        "Serial parts (wall s): before the first run "
        f"{d['serial']['before_runs']:.2f} (1 job) / {d['parallel']['before_runs']:.2f} "
        f"({j} jobs); after the last run {d['serial']['after_runs']:.2f} / "
        f"{d['parallel']['after_runs']:.2f}.",
        "",
        f"Runs: {r['run_cpu_total']:.2f} CPU s in all, longest {r['longest_run']:.2f} s; "
        f"driver outside the runs {r['driver_cpu']:.2f} CPU s, worker start-up "
        f"{r['worker_start_up']:.2f} CPU s per worker. "
        f"Replayed on {j} idle workers: config order {r['makespan_config_order']:.2f} s, "
        f"scheduled {r['makespan_scheduled']:.2f} s, bound {r['makespan_bound']:.2f} s; "
        f"idle-machine ratio {r['idle_ratio_config_order']:.2f}x / "
        f"{r['idle_ratio_scheduled']:.2f}x / {r['idle_ratio_bound']:.2f}x "
        f"(runs alone at the bound: {r['idle_ratio_bound_no_overheads']:.2f}x). "
        f"The same grid with {r['what_if_seeds']} seeds (each run at its cell's mean): "
        f"{r['what_if_idle_ratio_scheduled']:.2f}x scheduled.",
        "",
        "| worker (pid) | runs | busy s | idle s |",
        "|---|---|---|---|",
    ]
    for wk in d["parallel"]["workers"]:
        lines.append(
            f"| {wk['pid']} | {wk['runs']} | {wk['busy']:.2f} | {wk['idle']:.2f} |"
        )
    lines += ["", "| cell | CPU s (all seeds) |", "|---|---|"]
    lines += [f"| {k} | {v:.2f} |" for k, v in r["cell_cpu"].items()]
    return "\n".join(lines) + "\n"
