"""The runner: ``banditkit run`` as the pipeline's stages, one after the other.

    config     the config loaded, checked and resolved (nothing is written before it is
               valid): ``config.prepare_experiment`` -> ResolvedExperiment
    store      the output directory opened (created, checked writable, locked, stale
               temporary files dropped); the resolved experiment written (``config.yaml``,
               ``cells.json``)
    plan       the distinct runs, those not finished, as tasks (the seeds of one
               configuration as one batch where its policy offers it): ``plan.make_plan``
    compute    the tasks on the chosen backend; each run written as soon as it arrives (a
               run that raises is written as ``runs/<id>.error.json``, the others go on)
    store      every finished run of every cell read back: ``store.runs.collect``
    summarise  statistics over seeds and the claims decided: ``summary.json``
    report     the figures: ``report.figures.plot_experiment``

Re-running with the same output directory therefore resumes: finished runs are kept, failed
or missing ones are computed.

Worker processes (``jobs`` > 1) start with ``spawn`` (safe with PyTorch and threads) before
the config is resolved, so that their start-up overlaps it; ``spawn`` re-imports the calling
script in each worker, so a script asking for ``jobs`` > 1 must put the call under ``if
__name__ == "__main__":`` (docs/experiments.md). With ``start_method="auto"`` (what
``banditkit run`` uses) they are forked instead once the config is resolved, where that is
safe (``compute.backends.fork_is_safe``: Linux, no other thread, PyTorch not imported).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from banditkit.core.errors import RunsFailedError
from banditkit.experiments.compute.backends import (
    BACKENDS,
    ProcessBackend,
    RayBackend,
    fork_is_safe,
    make_backend,
)
from banditkit.experiments.compute.progress import Progress, make_progress, run_kind
from banditkit.experiments.compute.resources import TaskSettings
from banditkit.experiments.config.resolve import prepare_experiment
from banditkit.experiments.config.resolved import ResolvedExperiment
from banditkit.experiments.config.schema import ExperimentConfig
from banditkit.experiments.plan.plan import Plan, make_plan
from banditkit.experiments.plan.tasks import BATCH_SEEDS
from banditkit.experiments.report.figures import plot_experiment
from banditkit.experiments.store.runs import collect
from banditkit.experiments.store.store import RunStore
from banditkit.experiments.store.stored import stored_experiment, write_experiment
from banditkit.experiments.summarise.summary import summarise

__all__ = [
    "ExperimentResult",
    "RunOptions",
    "default_jobs",
    "early_pool",
    "execute_experiment",
    "redraw",
    "run_experiment",
]

Colours = dict[str, tuple[float, ...]]
"""Policy label -> colour of its curves (a paper gives one mapping for all its configs)."""


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


@dataclass(frozen=True)
class RunOptions:
    """How an experiment is computed and shown (the options of :func:`execute_experiment`).

    Raises:
        ValueError: For an unknown ``backend`` or ``batch_seeds``, or ``jobs`` < 1.
    """

    backend: str = "auto"
    jobs: int = 1
    address: str | None = None
    batch_seeds: str = "auto"
    progress: str | Progress | None = "auto"
    figures: bool = True
    title: str | None = None
    colours: Colours | None = None

    def __post_init__(self) -> None:
        _check_backend(self.backend)
        if self.jobs < 1:
            raise ValueError(f"jobs must be an int >= 1; got {self.jobs!r}.")
        if self.batch_seeds not in BATCH_SEEDS:
            raise ValueError(
                f"batch_seeds must be one of {', '.join(BATCH_SEEDS)}; "
                f"got {self.batch_seeds!r}."
            )


def default_jobs() -> int:
    """CPUs available to this process."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


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
    the config is resolved (when ``compute.backends.fork_is_safe``: the workers are copies
    of a driver that has imported and loaded what the runs need, so they start at once),
    or else spawned before the config is resolved, so that their start-up (a fresh
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
    colours: Colours | None = None,
    pool: ProcessBackend | None = None,
    batch_seeds: str = "auto",
) -> ExperimentResult:
    """Run a resolved experiment into ``out``: the stages after ``config`` (module docstring).

    ``colours`` (policy label -> colour) is passed to the figures. ``pool``: a process
    backend already started (:func:`early_pool`), used when the runs go to a process pool
    and closed in any case. ``batch_seeds`` ("auto", "on" or "off") computes the seeds of a
    configuration as one batch where its policy offers it (``plan.tasks``;
    docs/experiments.md, "Seed batching"). ``jobs`` defaults to the CPUs available.

    Raises:
        OutputDirError: If ``out`` cannot be written or another process uses it.
    """
    try:
        _refuse_in_starting_worker()
        options = RunOptions(
            backend=backend,
            jobs=default_jobs() if jobs is None else jobs,
            address=address,
            batch_seeds=batch_seeds,
            progress=progress,
            figures=figures,
            title=title,
            colours=colours,
        )
        return _execute(resolved, Path(out), options, pool)
    finally:
        if pool is not None:  # unused (a pool that ran the runs is closed already)
            pool.close(wait=False)


def _execute(
    resolved: ResolvedExperiment,
    out: Path,
    options: RunOptions,
    pool: ProcessBackend | None,
) -> ExperimentResult:
    store = RunStore(out)
    store.prepare()
    with store.lock():
        write_experiment(store, resolved)
        config = resolved.config
        settings = TaskSettings(
            resources=config.resources,
            checkpoint_every=config.checkpoint_every,
            checkpoint_dir=store.checkpoints.folder,
        )
        ray = None
        jobs = options.jobs
        if options.backend == "ray":  # seeds are grouped for the cluster's CPUs
            ray = RayBackend(options.jobs, options.address, settings)
            jobs = ray.connect()
        plan = make_plan(
            resolved,
            store.is_finished,
            backend=options.backend,
            jobs=jobs,
            batch_seeds=options.batch_seeds,
        )
        if pool is not None:
            pool.settings = settings
        try:
            backend = ray or (
                pool
                if pool is not None and plan.backend == "process"
                else make_backend(plan.backend, options.jobs, settings=settings)
            )
            failed = _compute(plan, store, options, backend)
        finally:
            if ray is not None:
                ray.close()
        cells = collect(resolved, store)
        summary = summarise(resolved, cells)
        store.write_json("summary.json", summary)
        written = []
        if options.figures:
            written = plot_experiment(
                resolved, cells, store.figures_dir, colours=options.colours
            )
    return ExperimentResult(
        out=out,
        summary=summary,
        n_runs=len(plan.runs),
        computed=len(plan.todo),
        skipped=plan.skipped,
        failed=failed,
        figures=written,
    )


def _compute(
    plan: Plan, store: RunStore, options: RunOptions, backend: Any
) -> dict[str, str]:
    """Compute the plan's tasks, writing each run as it arrives; run id -> error of each failed."""
    reporter = make_progress(options.progress)
    reporter.start(
        options.title or plan.resolved.config.name, len(plan.todo), plan.skipped
    )
    estimate = getattr(reporter, "plan", None)
    measured = getattr(reporter, "measured", None)
    if estimate is not None:
        estimate([run_kind(s) for s in plan.todo], plan.workers)
    failed: dict[str, str] = {}
    records = backend.map(plan.tasks)
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
    return failed


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
    device: str | None = None,
    dtype: str | None = None,
) -> ExperimentResult:
    """Run the experiment of ``config`` into ``out``; the Python side of ``banditkit run``.

    Serial unless asked otherwise; a script asking for ``jobs`` > 1 needs a ``__main__``
    guard (module docstring).

    Args:
        config: A YAML path, a mapping or an :class:`ExperimentConfig`.
        out: Output directory; reusing it resumes (finished runs are skipped).
        backend: "serial", "process", "ray" or "auto" (process when ``jobs`` > 1 and more
            than one run is left, else serial).
        jobs: Parallel workers (default 1; the command line's default: the CPUs).
        address: Ray cluster address for ``backend="ray"`` (None: local Ray).
        seeds: Override the config's seeds (a count or a list).
        horizon: Override the config's horizon.
        quick: Use the config's ``quick:`` settings.
        progress: "auto", "bar", "log", "none" or a :class:`Progress` object.
        figures: Draw figures.
        check: Raise :class:`~banditkit.errors.RunsFailedError` when some runs failed
            (after storing the others); False returns the result, ``result.ok`` False.
        start_method: Process-pool workers: "spawn" (default) or "auto" (fork where safe).
        batch_seeds: "auto" (default), "on" or "off": the seeds of a configuration as one
            stacked computation where its policy offers it (docs/experiments.md, "Seed
            batching"; "auto" splits batches over idle workers).
        device: Run every policy that has a ``device`` parameter (the neural ones)
            there: "cpu", "cuda", "cuda:N" or "auto" (None: the config's).
        dtype: Likewise ``dtype``: "float32" or "float64".

    Raises:
        ConfigError: For an invalid config (nothing is written).
        OutputDirError: If ``out`` cannot be written.
        MissingDatasetsError: If datasets the config needs are missing (all are listed).
        RunsFailedError: If ``check`` and some runs failed (re-running retries those);
            its ``result`` is the experiment's result.

    Example:
        >>> import tempfile, banditkit as bk
        >>> cfg = {"name": "doc", "horizon": 20, "seeds": 2, "env": {"name": "linear", "d": 3},
        ...        "policies": [{"name": "random"}, {"name": "linucb"}]}
        >>> res = bk.run_experiment(cfg, tempfile.mkdtemp(), backend="serial",
        ...                        progress="none", figures=False)
        >>> res.ok, res.n_runs, [r["n_seeds"] for r in res.summary["results"]]
        (True, 4, [2, 2])
    """
    resolved, pool = _prepared_with_pool(
        config,
        backend,
        jobs,
        start_method,
        seeds=seeds,
        horizon=horizon,
        quick=quick,
        device=device,
        dtype=dtype,
    )
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


def _prepared_with_pool(
    config: str | Path | Mapping[str, Any] | ExperimentConfig,
    backend: str,
    jobs: int | None,
    start_method: str,
    **overrides: Any,
) -> tuple[ResolvedExperiment, ProcessBackend | None]:
    """The config stage (``overrides``: ``prepare_experiment``'s), with the workers started.

    Spawned workers start before it, to overlap the resolving; forked ones once it is done
    (and before the store's lock is taken, which they must not hold).
    """
    if start_method not in ("spawn", "auto"):
        raise ValueError(
            f"start_method must be 'spawn' or 'auto'; got {start_method!r}."
        )
    forks = start_method == "auto"
    pool = None if forks and fork_is_safe() else early_pool(backend, jobs)
    try:
        resolved = prepare_experiment(config, **overrides)
        if pool is None:
            method = "fork" if forks and fork_is_safe() else "spawn"
            pool = early_pool(backend, jobs, method)
    except BaseException:
        if pool is not None:
            pool.close(wait=False)
        raise
    return resolved, pool


def redraw(out: str | Path, *, colours: Colours | None = None) -> list[Path]:
    """Rewrite ``summary.json`` and the figures of ``out`` from its stored runs.

    The stages after ``compute``, on what the directory holds: nothing is computed and no
    environment or policy is built (``store.stored``), so neither their classes nor the
    datasets of the runs are needed; runs missing from the store are reported as failed in
    the summary.

    Raises:
        ConfigError: If ``out/config.yaml`` is missing or invalid.
    """
    out = Path(out)
    resolved = stored_experiment(out)
    store = RunStore(out)
    store.prepare()
    with store.lock():
        cells = collect(resolved, store)
        store.write_json("summary.json", summarise(resolved, cells))
        return plot_experiment(resolved, cells, store.figures_dir, colours=colours)
