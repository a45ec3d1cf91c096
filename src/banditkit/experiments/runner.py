"""The runner: config -> runs -> store -> summary and figures (what ``banditkit run`` does).

    1. validate and resolve the config (nothing is written before it is valid);
    2. open the output directory (create, check writable, lock, drop stale temporary files)
       and write the resolved ``config.yaml``;
    3. expand runs (environments x policies x seeds), skip those already finished;
    4. compute the rest on the chosen backend (the seeds of one configuration as one
       batch where its policy offers it, ``batch_seeds``), writing each run as soon as it arrives (a
       run that raises is written as ``runs/<id>.error.json`` and the others go on);
    5. summarise everything stored (``summaries``), decide the claims (``claims``), write
       ``summary.json``, and draw the figures (``plots``).

Re-running with the same output directory therefore resumes: finished runs are kept, failed
or missing ones are computed.
"""

from __future__ import annotations

import json
import multiprocessing
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from banditkit.core.errors import RunsFailedError
from banditkit.experiments.backends import (
    BACKENDS,
    ProcessBackend,
    fork_is_safe,
    make_backend,
)
from banditkit.experiments.claims import evaluate_claims
from banditkit.experiments.execute import BATCH_SEEDS, group_seeds
from banditkit.experiments.progress import Progress, RunKind, make_progress
from banditkit.experiments.resolve import ResolvedExperiment, RunSpec, resolve
from banditkit.experiments.schema import (
    ConfigError,
    ExperimentConfig,
    apply_overrides,
    load_config,
)
from banditkit.experiments.store import RunStore
from banditkit.experiments.summaries import (
    CellRuns,
    collect,
    regret_halves,
    summarize,
)

__all__ = [
    "ExperimentResult",
    "default_jobs",
    "early_pool",
    "execute_experiment",
    "prepare_experiment",
    "run_experiment",
    "summary_with_claims",
]


@dataclass
class ExperimentResult:
    """What a finished ``run`` produced.

    Attributes:
        out: The output directory.
        summary: The ``summary.json`` mapping.
        n_runs: Distinct runs of the experiment.
        computed: Runs computed by this call (successfully or not).
        skipped: Runs found finished and not recomputed.
        failed: Run id -> one-line error, for runs without a result.
        figures: Figure files written.
    """

    out: Path
    summary: dict[str, Any]
    n_runs: int
    computed: int
    skipped: int
    failed: dict[str, str] = field(default_factory=dict)
    figures: list[Path] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when every run has a result."""
        return not self.failed


def default_jobs() -> int:
    """CPUs available to this process."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


def prepare_experiment(
    config: str | Path | Mapping[str, Any] | ExperimentConfig,
    *,
    seeds: int | list[int] | None = None,
    horizon: int | None = None,
    quick: bool = False,
    base_dir: str | Path | None = None,
) -> ResolvedExperiment:
    """Load, override (``--quick``, ``--seeds``, ``--horizon``) and resolve a config.

    Raises:
        ConfigError: For an invalid config, naming the file and the field.
    """
    source = str(config) if isinstance(config, str | Path) else None
    if isinstance(config, str | Path) and base_dir is None:
        base_dir = Path(config).parent
    cfg = load_config(config, source=source)
    try:
        cfg = apply_overrides(cfg, seeds=seeds, horizon=horizon, quick=quick)
    except ConfigError as exc:
        raise ConfigError(str(exc), source=source) from None
    return resolve(cfg, base_dir=base_dir, source=source)


def summary_with_claims(
    resolved: ResolvedExperiment, cells: list[CellRuns]
) -> dict[str, Any]:
    """The ``summary.json`` mapping: the summary, then its claims decided on it."""
    summary = summarize(resolved, cells)
    if resolved.config.claims:
        summary["claims"] = evaluate_claims(
            resolved.config.claims,
            summary["results"],
            regret_halves(cells),
            level=resolved.config.ci_level,
        )
    return summary


def run_kind(spec: RunSpec) -> RunKind:
    """The kind of a run for the ETA: everything but the seed, then coarser levels."""
    full = json.dumps(
        [spec.env_name, spec.env_params, spec.policy_name, spec.policy_params],
        sort_keys=True,
        default=str,
    )
    return ((full, (spec.env_name, spec.policy_name), spec.policy_name), spec.horizon)


def _unique(specs: list[RunSpec]) -> list[RunSpec]:
    seen: set[str] = set()
    out = []
    for spec in specs:
        rid = spec.id
        if rid not in seen:
            seen.add(rid)
            out.append(spec)
    return out


def _refuse_in_starting_worker() -> None:
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        # A spawned worker re-importing the user's script, which calls us at module level:
        # fail at once (waiting for the driver's lock would hang both).
        raise RuntimeError(
            "banditkit was asked to run an experiment while a worker process was starting: "
            'the script calling it needs `if __name__ == "__main__":` around the call '
            "(workers re-import the script), or use jobs=1."
        )


def _check_backend(backend: str) -> None:
    if backend not in (*BACKENDS, "auto"):
        raise ValueError(
            f"backend must be one of auto, {', '.join(BACKENDS)}; got {backend!r}."
        )


def early_pool(
    backend: str, jobs: int | None, start_method: str = "spawn"
) -> ProcessBackend | None:
    """A process pool started now, if ``backend`` and ``jobs`` ask for one; else None.

    ``run_experiment`` starts the workers before the runs are handed out: forked once
    the config is resolved (when ``backends.fork_is_safe``: the workers are copies of a
    driver that has imported and loaded what the runs need, so they start at once), or
    else spawned before the config is resolved, so that their start-up (a fresh
    interpreter importing banditkit) overlaps the driver's. With ``backend="auto"`` the
    pool is started when ``jobs`` > 1 and closed unused if at most one run is left.
    """
    _refuse_in_starting_worker()
    _check_backend(backend)
    if jobs is None or jobs < 2 or backend not in ("auto", "process"):
        return None
    pool = ProcessBackend(jobs, start_method)
    pool.start()
    return pool


def execute_experiment(
    resolved: ResolvedExperiment,
    out: str | Path,
    *,
    backend: str = "auto",
    jobs: int | None = None,
    address: str | None = None,
    progress: str | Progress | None = "auto",
    figures: bool = True,
    title: str | None = None,
    colours: dict[str, tuple[float, ...]] | None = None,
    pool: ProcessBackend | None = None,
    batch_seeds: str = "auto",
) -> ExperimentResult:
    """Run a resolved experiment into ``out`` (steps 2-5 of the module docstring).

    ``colours`` (policy label -> colour) is passed to the figures (a paper gives one
    mapping for all its configs). ``pool``: a process backend already started (see
    :func:`early_pool`), used when the runs go to a process pool and closed in any case.
    ``batch_seeds`` ("auto", "on" or "off") computes the seeds of a configuration as one
    batch where its policy offers it (``execute.group_seeds``; docs/experiments.md, "Seed
    batching").

    Raises:
        OutputDirError: If ``out`` cannot be written or another process uses it.
    """
    try:
        _refuse_in_starting_worker()
        _check_backend(backend)
        jobs = default_jobs() if jobs is None else jobs
        if jobs < 1:
            raise ValueError(f"jobs must be an int >= 1; got {jobs!r}.")
        if batch_seeds not in BATCH_SEEDS:
            raise ValueError(
                f"batch_seeds must be one of {', '.join(BATCH_SEEDS)}; "
                f"got {batch_seeds!r}."
            )
        return _execute(
            resolved,
            out,
            backend,
            jobs,
            address,
            progress,
            figures,
            title,
            colours,
            pool,
            batch_seeds,
        )
    finally:
        if pool is not None:  # unused (a pool that ran the runs is closed already)
            pool.close(wait=False)


def _execute(
    resolved: ResolvedExperiment,
    out: str | Path,
    backend: str,
    jobs: int,
    address: str | None,
    progress: str | Progress | None,
    figures: bool,
    title: str | None,
    colours: dict[str, tuple[float, ...]] | None,
    pool: ProcessBackend | None,
    batch_seeds: str,
) -> ExperimentResult:
    store = RunStore(out)
    store.prepare()
    reporter = make_progress(progress)
    with store.lock():
        store.write_text("config.yaml", resolved.to_yaml())
        specs = _unique(resolved.runs())
        todo = [s for s in specs if not store.is_finished(s.id)]
        if backend == "auto":
            backend = "process" if jobs > 1 and len(todo) > 1 else "serial"
        runner: Any = (
            pool
            if pool is not None and backend == "process"
            else make_backend(backend, jobs, address)
        )
        failed: dict[str, str] = {}
        reporter.start(title or resolved.config.name, len(todo), len(specs) - len(todo))
        plan = getattr(reporter, "plan", None)
        measured = getattr(reporter, "measured", None)
        if plan is not None:
            plan([run_kind(s) for s in todo], 1 if backend == "serial" else jobs)
        records = runner.map(
            group_seeds(todo, batch_seeds, 1 if backend == "serial" else jobs)
        )
        try:
            for record in records:
                if record.ok:
                    assert record.columns is not None
                    store.write_run(
                        record.run_id, record.columns, record.meta, record.records
                    )
                else:
                    failed[record.run_id] = str(record.meta.get("error", "failed"))
                    store.write_error(
                        record.run_id, {**record.meta, "traceback": record.error}
                    )
                if measured is not None:
                    seconds = record.meta.get("wall_seconds") if record.ok else None
                    measured(run_kind(record.spec), seconds)
                reporter.advance(record.spec.describe(), record.ok)
        finally:
            records.close()
            reporter.stop()
        cells = collect(resolved, store)
        summary = summary_with_claims(resolved, cells)
        store.write_json("summary.json", summary)
        written = []
        if figures:
            from banditkit.experiments.plots import plot_experiment

            written = plot_experiment(
                resolved, cells, store.figures_dir, colours=colours
            )
    return ExperimentResult(
        out=Path(out),
        summary=summary,
        n_runs=len(specs),
        computed=len(todo),
        skipped=len(specs) - len(todo),
        failed=failed,
        figures=written,
    )


def run_experiment(
    config: str | Path | Mapping[str, Any] | ExperimentConfig,
    out: str | Path,
    *,
    backend: str = "auto",
    jobs: int | None = None,
    address: str | None = None,
    seeds: int | list[int] | None = None,
    horizon: int | None = None,
    quick: bool = False,
    progress: str | Progress | None = "auto",
    figures: bool = True,
    check: bool = True,
    start_method: str = "spawn",
    batch_seeds: str = "auto",
) -> ExperimentResult:
    """Run the experiment of ``config`` into ``out``; the Python side of ``banditkit run``.

    Runs are computed one after the other in this process unless ``jobs`` > 1 (or
    ``backend="process"``/``"ray"``) is asked for, so a plain script calling this needs no
    ``if __name__ == "__main__":`` guard. Worker processes are started with ``spawn``
    (safe with PyTorch and threads) before the config is resolved, so that their start-up
    overlaps it; ``spawn`` re-imports the calling script in each worker, so a script
    asking for ``jobs`` > 1 must put the call under that guard (docs/experiments.md).
    With ``start_method="auto"`` (what ``banditkit run`` uses) they are instead forked once
    the config is resolved, where that is safe (``backends.fork_is_safe``: Linux, no
    other thread, PyTorch not imported): copies of this process, they start at once.

    Args:
        config: A YAML path, a mapping or an :class:`ExperimentConfig`.
        out: Output directory; reusing it resumes (finished runs are skipped).
        backend: "serial", "process", "ray" or "auto" (process when ``jobs`` > 1 and more
            than one run is left, else serial).
        jobs: Parallel workers (default 1: serial; the command line's default is the CPUs
            available).
        address: Ray cluster address for ``backend="ray"`` (None: local Ray).
        seeds: Override the config's seeds (a count or a list).
        horizon: Override the config's horizon.
        quick: Use the config's ``quick:`` settings.
        progress: "auto", "bar", "log", "none" or a :class:`Progress` object.
        figures: Draw figures.
        check: Raise :class:`~banditkit.errors.RunsFailedError` when some runs failed
            (after storing and summarising the others); False returns the result with
            ``result.ok`` False instead.
        start_method: How process-pool workers start: "spawn" (default, on every
            platform) or "auto" (fork where ``backends.fork_is_safe``, else spawn).
        batch_seeds: "auto" (default) or "on": compute the seeds of each configuration
            whose policy offers it as one stacked computation (the practical NeuralLog
            policies; the same results up to floating-point order, docs/experiments.md,
            "Seed batching"); "auto" splits the batches over ``jobs`` workers when
            there are fewer batches than workers. "off": every run on its own.

    Returns:
        An :class:`ExperimentResult`.

    Raises:
        ConfigError: For an invalid config (nothing is written).
        OutputDirError: If ``out`` cannot be written.
        MissingDatasetsError: If datasets the config needs are missing (all are listed).
        RunsFailedError: If ``check`` and some runs failed; it lists them, and re-running
            the same call retries those only. Its ``result`` is the experiment's result.

    Example:
        >>> import tempfile, banditkit as bk
        >>> cfg = {"name": "doc", "horizon": 20, "seeds": 2, "env": {"name": "linear", "d": 3},
        ...        "policies": [{"name": "random"}, {"name": "linucb"}]}
        >>> res = bk.run_experiment(cfg, tempfile.mkdtemp(), backend="serial",
        ...                        progress="none", figures=False)
        >>> res.ok, res.n_runs, [r["n_seeds"] for r in res.summary["results"]]
        (True, 4, [2, 2])
    """
    if start_method not in ("spawn", "auto"):
        raise ValueError(
            f"start_method must be 'spawn' or 'auto'; got {start_method!r}."
        )
    forks = start_method == "auto"
    # spawned workers start now, to overlap the resolving; forked ones once it is done
    # (checked again then) and before the store's lock is taken, which they must not hold
    pool = None if forks and fork_is_safe() else early_pool(backend, jobs)
    try:
        resolved = prepare_experiment(config, seeds=seeds, horizon=horizon, quick=quick)
        if pool is None:
            method = "fork" if forks and fork_is_safe() else "spawn"
            pool = early_pool(backend, jobs, method)
    except BaseException:
        if pool is not None:
            pool.close(wait=False)
        raise
    result = execute_experiment(
        resolved,
        out,
        backend=backend,
        jobs=1 if jobs is None else jobs,
        address=address,
        progress=progress,
        figures=figures,
        pool=pool,
        batch_seeds=batch_seeds,
    )
    if check and not result.ok:
        raise RunsFailedError(result.failed, out, result)
    return result


def redraw(
    out: str | Path, *, colours: dict[str, tuple[float, ...]] | None = None
) -> list[Path]:
    """Rewrite ``summary.json`` and the figures of ``out`` from its stored runs.

    Nothing is computed and no environment is built (``tidy.stored_experiment``), so the
    datasets of the runs are not needed: runs missing from the store are reported as failed
    in the summary.

    Raises:
        ConfigError: If ``out/config.yaml`` is missing or invalid.
    """
    from banditkit.experiments.tidy import stored_experiment

    out = Path(out)
    resolved = stored_experiment(out)
    store = RunStore(out)
    store.prepare()
    with store.lock():
        cells = collect(resolved, store)
        store.write_json("summary.json", summary_with_claims(resolved, cells))
        from banditkit.experiments.plots import plot_experiment

        return plot_experiment(resolved, cells, store.figures_dir, colours=colours)
