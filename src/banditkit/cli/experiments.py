"""The experiment commands: run, reproduce, tune, plot, bench."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from banditkit.cli.common import (
    EXIT_CLAIMS,
    EXIT_FAILED,
    EXIT_INVALID,
    AddressOption,
    Backend,
    BackendOption,
    BatchSeeds,
    DeviceOption,
    DtypeOption,
    ImportOption,
    JobsOption,
    OutOption,
    ProgressMode,
    ProgressOption,
    _check_device,
    _error,
    _guarded,
    _input_errors,
    _invalid,
    _load_imports,
    _report_experiment,
    _report_failures,
    app,
)
from banditkit.core.files import atomic_write_text
from banditkit.experiments import run_experiment
from banditkit.experiments.bench import discover, run_benchmarks
from banditkit.experiments.config.errors import ConfigError
from banditkit.experiments.config.papers import paper_dir
from banditkit.experiments.config.yaml_io import read_yaml
from banditkit.experiments.plan.costs import (
    UPPER,
    paper_costs,
    plan_record,
    plan_table,
)
from banditkit.experiments.report.console import TERMINAL_WIDTH, claims_lines, shorten
from banditkit.experiments.reproduce import build_report, paper_colours
from banditkit.experiments.reproduce import reproduce as run_paper
from banditkit.experiments.runner import default_jobs, redraw
from banditkit.experiments.tuning import tune as run_tune


@app.command()
def run(
    config: Annotated[Path, typer.Argument(help="Experiment config (YAML).")],
    out: OutOption,
    jobs: JobsOption = None,
    backend: BackendOption = Backend.auto,
    address: AddressOption = None,
    seeds: Annotated[
        int | None, typer.Option("--seeds", min=1, help="Use seeds 0..N-1 instead.")
    ] = None,
    horizon: Annotated[
        int | None, typer.Option("--horizon", min=1, help="Override the horizon.")
    ] = None,
    progress: ProgressOption = ProgressMode.auto,
    imports: ImportOption = None,
    batch_seeds: Annotated[
        BatchSeeds,
        typer.Option(
            "--batch-seeds",
            help="auto/on: compute the seeds of a configuration as one stacked batch "
            "where its policy offers it (practical NeuralLog; same results up to "
            "floating-point order); off: each run on its own.",
        ),
    ] = BatchSeeds.auto,
    device: DeviceOption = None,
    dtype: DtypeOption = None,
) -> None:
    """Run an experiment: every environment x policy x seed, into DIR (resumable)."""
    _load_imports(imports)
    _check_device(device, address)

    result = _guarded(
        out,
        run_experiment,
        config,
        out,
        backend=backend.value,
        jobs=default_jobs() if jobs is None else jobs,
        address=address,
        seeds=seeds,
        horizon=horizon,
        progress=progress.value,
        check=False,  # failed runs are reported below, then exit 1
        batch_seeds=batch_seeds.value,
        start_method="auto",  # fork the workers where safe: they start at once
        device=device,
        dtype=None if dtype is None else dtype.value,
    )
    _report_experiment(result, out)
    if not result.ok:
        raise typer.Exit(EXIT_FAILED)


@app.command()
def reproduce(
    paper: Annotated[
        str,
        typer.Argument(help="Paper name (see `banditkit list papers`) or a folder."),
    ],
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="Output directory; reusing it resumes (finished runs are kept). "
            "Required unless --plan (which writes DIR/plan.json and plan.md there).",
        ),
    ] = None,
    figure: Annotated[
        str | None,
        typer.Option("--figure", "-f", help="Only the figure/table with this id."),
    ] = None,
    quick: Annotated[
        bool,
        typer.Option("--quick", help="Fewer seeds and shorter horizons (minutes)."),
    ] = False,
    jobs: JobsOption = None,
    backend: BackendOption = Backend.auto,
    address: AddressOption = None,
    strict: Annotated[
        bool, typer.Option("--strict", help="Exit with status 3 when a claim FAILs.")
    ] = False,
    progress: ProgressOption = ProgressMode.auto,
    imports: ImportOption = None,
    seeds: Annotated[
        int | None,
        typer.Option(
            "--seeds",
            min=1,
            help="Use seeds 0..N-1 in every figure (after --quick, which it overrides).",
        ),
    ] = None,
    horizon: Annotated[
        int | None,
        typer.Option(
            "--horizon",
            min=1,
            help="Horizon of every figure (after --quick, which it overrides).",
        ),
    ] = None,
    plan: Annotated[
        bool,
        typer.Option(
            "--plan",
            help="Run nothing: print each figure's cost in CPU-hours and (estimated) "
            "GPU-hours, from a few seconds of probes on this machine, and its wall time "
            "with --jobs, a GPU and a cluster of --nodes.",
        ),
    ] = False,
    nodes: Annotated[
        int,
        typer.Option("--nodes", min=1, help="Nodes of the cluster that --plan prices."),
    ] = 8,
    node_cpus: Annotated[
        int | None,
        typer.Option(
            "--node-cpus",
            min=1,
            help="CPUs per node for --plan [default: this machine's].",
        ),
    ] = None,
    device: DeviceOption = None,
    dtype: DtypeOption = None,
) -> None:
    """Reproduce a paper's figures and tables; writes DIR/report.md with its claims.

    --quick takes each figure's quick seeds and horizon; --seeds and --horizon, given
    with or without it, replace those. --device and --dtype set those of every neural
    policy. --plan prices the protocol instead of running it (on this machine's CPU, as
    configured: --device and --dtype are not priced).
    """
    _load_imports(imports)
    if plan:
        _print_plan(paper, figure, quick, seeds, horizon, jobs, nodes, node_cpus, out)
        return
    if out is None:
        _error("reproduce needs --out DIR (or --plan, which runs nothing).")
        raise typer.Exit(EXIT_INVALID)
    _check_device(device, address)

    result = _guarded(
        out,
        run_paper,
        paper,
        out,
        figure=figure,
        quick=quick,
        backend=backend.value,
        jobs=jobs,
        address=address,
        progress=progress.value,
        seeds=seeds,
        horizon=horizon,
        device=device,
        dtype=None if dtype is None else dtype.value,
    )
    claims = result.summary.get("claims", [])
    if claims:
        # wrapped to a 100-column terminal, with a tally; report.md has the evidence
        for line in claims_lines(claims, str(result.report)):
            typer.echo(line)
    typer.echo(f"report: {result.report}")
    typer.echo(f"summary: {out / 'summary.json'}")
    for fid, res in result.figures.items():
        _report_failures(res.failed, out / fid)
    if not result.ok:
        raise typer.Exit(EXIT_FAILED)
    if strict and not result.claims_passed:
        raise typer.Exit(EXIT_CLAIMS)


def _print_plan(
    paper: str,
    figure: str | None,
    quick: bool,
    seeds: int | None,
    horizon: int | None,
    jobs: int | None,
    nodes: int,
    node_cpus: int | None,
    out: Path | None = None,
) -> None:
    """``reproduce --plan``: the cost table of the paper's figures.

    With ``out``, also DIR/plan.md (the table) and DIR/plan.json (each kind's measured
    costs, ``plan.costs.plan_record``); nothing else is run or written.
    """
    typer.echo(
        f"probing each kind of run of {paper} on this machine (past each warm-up, "
        "about a second of CPU a kind) ..."
    )
    costs = _guarded(
        Path.cwd(),
        paper_costs,
        paper,
        figure,
        quick=quick,
        seeds=seeds,
        horizon=horizon,
    )
    cpus = default_jobs()
    table = plan_table(costs, jobs or cpus, nodes, node_cpus or cpus)
    typer.echo(table)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        atomic_write_text(out / "plan.md", table + "\n")
        record = json.dumps(plan_record(costs), indent=1, allow_nan=False)
        atomic_write_text(out / "plan.json", record + "\n")
        typer.echo(f"plan: {out / 'plan.json'} (each kind's measured costs), plan.md")
    typer.echo(
        "\nCPU-hours: one thread per run, each run alone, priced from each kind's warm-up "
        "and the rounds after it (per-round cost a + b t, fitted); runs that `run` and "
        "`reproduce` stack (seeds, NVLDB's pair rules) cost less. GPU-hours are an "
        "estimate from FLOPs (PyTorch policies only; see docs/performance.md, 'What a "
        "paper costs')."
    )
    if any(cost.upper for cost in costs):
        typer.echo(
            f"{UPPER.strip()}: an upper bound. Runs with distinct_duels train on a share "
            "of their duels that shrinks as the policy settles, and runs that fit on "
            "their distinct rows meet new arms more and more rarely, which the probe's "
            "first rounds overstate (docs/performance.md, 'What a paper costs')."
        )
    for cost in costs:
        for error in sorted(set(cost.errors.values()))[:3]:
            typer.echo(f"{cost.figure}: some runs not priced: {error}")


def _report_tuning(result: Any) -> None:
    """The grid's scores, the chosen values and a warning per optimum on a grid edge."""
    for env, per_policy in result.tuned.items():
        for label, params in per_policy.items():
            chosen = ", ".join(f"{k}={v}" for k, v in params.items())
            typer.echo(shorten(f"{env} / {label}: {chosen}", TERMINAL_WIDTH))
            rows = [
                s for s in result.scores if s["env"] == env and s["policy"] == label
            ]
            if rows:
                typer.echo("    mean final regret  grid point  (* chosen)")
            for score in rows:
                mark = "*" if score["params"] == params else " "
                point = ", ".join(f"{k}={v}" for k, v in score["params"].items())
                value = score["final_regret_mean"]
                text = "n/a" if value is None else f"{value:.4g}"
                typer.echo(shorten(f"  {mark} {text:>17}  {point}", TERMINAL_WIDTH))
            for name in result.on_edge.get(env, {}).get(label, []):
                typer.echo(
                    shorten(
                        f"  warning: {name}={params[name]} is on the edge of its grid: extend "
                        f"the grid of {name}.",
                        TERMINAL_WIDTH,
                    )
                )


@app.command()
def tune(
    config: Annotated[
        Path, typer.Argument(help="Experiment config with a `grid:` section.")
    ],
    out: OutOption,
    jobs: JobsOption = None,
    backend: BackendOption = Backend.auto,
    address: AddressOption = None,
    seeds: Annotated[
        int | None,
        typer.Option(
            "--seeds", min=1, help="Number of tuning seeds (from tuning.seed_offset)."
        ),
    ] = None,
    horizon: Annotated[
        int | None, typer.Option("--horizon", min=1, help="Horizon of the tuning runs.")
    ] = None,
    progress: ProgressOption = ProgressMode.auto,
    imports: ImportOption = None,
) -> None:
    """Grid-search `grid:` on tuning seeds; writes DIR/tuned.yaml for configs to use."""
    _load_imports(imports)

    result = _guarded(
        out,
        run_tune,
        config,
        out,
        backend=backend.value,
        jobs=jobs,
        address=address,
        seeds=seeds,
        horizon=horizon,
        progress=progress.value,
    )
    _report_tuning(result)
    typer.echo(f"tuned: {result.tuned_path}")
    typer.echo("(use it from a config with `tuned: <path>`)")
    _report_failures(result.failed, out)
    if not result.ok:
        raise typer.Exit(EXIT_FAILED)


@app.command()
def plot(
    directory: Annotated[
        Path, typer.Argument(help="Output directory of run or reproduce.")
    ],
    imports: ImportOption = None,
) -> None:
    """(Re)draw figures, summary.json (and report.md) from the stored runs of DIR."""
    _load_imports(imports)

    config_path = directory / "config.yaml"
    if not config_path.is_file():
        _error(
            f"{config_path}: not found; is {directory} an output of `banditkit run`?"
        )
        raise typer.Exit(EXIT_INVALID)
    try:
        doc = read_yaml(config_path)
        if isinstance(doc, dict) and isinstance(doc.get("figures"), dict):
            try:
                folder: Path | None = paper_dir(str(doc.get("paper")))
            except ConfigError:
                folder = None
            colours = paper_colours(folder, directory)
            written = []
            for fid in doc["figures"]:
                if (directory / fid / "config.yaml").is_file():
                    written += redraw(directory / fid, colours=colours)
            _, report = build_report(
                directory,
                str(doc.get("paper", directory.name)),
                command=f"banditkit plot {directory}",
                quick=bool(doc.get("quick")),
            )
            written += sorted(
                p for p in (directory / "figures").glob("*.png") if "--" not in p.name
            )
            typer.echo(f"report: {report}")
        else:
            written = redraw(directory)
    except _input_errors() as exc:
        raise _invalid(exc) from None
    for path in written:
        if path.suffix == ".png":
            typer.echo(str(path))


@app.command()
def bench(
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            "-o",
            help="Output directory; reusing it resumes (benchmarks already ok are kept).",
        ),
    ],
    quick: Annotated[
        bool, typer.Option("--quick", help="Small sizes (seconds).")
    ] = False,
    directory: Annotated[
        Path | None,
        typer.Option(
            "--dir",
            help="Folder of your own benchmark scripts [default: benchmarks/ of the "
            "repository, when banditkit runs from a checkout].",
        ),
    ] = None,
    only: Annotated[
        list[str] | None,
        typer.Option("--only", help="Run only these benchmarks (repeatable)."),
    ] = None,
    rerun: Annotated[
        bool,
        typer.Option("--rerun", help="Compute every benchmark again, even those kept."),
    ] = False,
) -> None:
    """Run the speed benchmarks of the repository's benchmarks/ (or the scripts of --dir).

    Each benchmark's ``main(quick: bool, out: Path)`` writes what it likes under
    ``DIR/<name>/`` and may return a JSON-able dict; DIR/bench.json collects the returns,
    wall times and errors. Re-running into the same DIR keeps the benchmarks already ok.
    The benchmarks are not in the installed package: from a wheel, give --dir (or run
    from a clone of the repository).
    """
    benchmarks = _guarded(out, discover, directory, only)
    if not benchmarks:
        _error(f"no benchmark scripts (*.py with main(quick, out)) in {directory}.")
        raise typer.Exit(EXIT_INVALID)
    document = _guarded(
        out,
        run_benchmarks,
        benchmarks,
        out,
        quick=quick,
        rerun=rerun,
        log=lambda line: typer.echo(line, err=True),
    )
    typer.echo(f"bench: {out / 'bench.json'}")
    if any(e["status"] != "ok" for e in document["benchmarks"].values()):
        raise typer.Exit(EXIT_FAILED)
