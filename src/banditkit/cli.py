"""The ``banditkit`` command (docs/architecture.md section 6).

    banditkit run CONFIG.yaml --out DIR [--jobs N] [--backend auto|serial|process|ray]
                                        [--address A] [--seeds N] [--horizon T]
    banditkit reproduce PAPER [--figure ID] [--quick] [--seeds N] [--horizon T] --out DIR
    banditkit tune CONFIG.yaml --out DIR
    banditkit plot DIR
    banditkit list [policies|envs|datasets|papers|metrics]
    banditkit datasets [list|verify|path|fetch] [NAME...] [--all] [--mirror URL]
    banditkit bench [--quick] --out DIR
    banditkit --version

Exit status: 0 success; 1 some runs (or benchmarks, or dataset checks) failed, with their
errors recorded; 2 invalid input (config, option, unwritable ``--out``, a dataset that is
missing and cannot be downloaded), with nothing written; 130 interrupted (finished runs are kept: re-run to resume). ``reproduce`` exits 0
when claims FAIL (they are results, reported in report.md) unless ``--strict`` is given, in
which case a FAIL gives 3.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

__all__ = ["app", "main"]

app = typer.Typer(
    name="banditkit",
    help="Nonlinear contextual bandits: run, tune and reproduce experiments.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

EXIT_FAILED = 1
EXIT_INVALID = 2
EXIT_CLAIMS = 3
EXIT_INTERRUPTED = 130


class Backend(str, Enum):
    """Where runs are computed."""

    auto = "auto"
    serial = "serial"
    process = "process"
    ray = "ray"


class ProgressMode(str, Enum):
    """How progress is shown."""

    auto = "auto"
    bar = "bar"
    log = "log"
    none = "none"


OutOption = Annotated[
    Path,
    typer.Option(
        "--out",
        "-o",
        help="Output directory; reusing it resumes (finished runs are kept).",
    ),
]
JobsOption = Annotated[
    int | None,
    typer.Option(
        "--jobs", "-j", min=1, help="Parallel workers [default: CPUs available]."
    ),
]
BackendOption = Annotated[
    Backend,
    typer.Option(
        "--backend",
        "-b",
        help="serial, process (a local process pool) or ray; auto: process when --jobs > 1 "
        "and more than one run is left, else serial.",
    ),
]
AddressOption = Annotated[
    str | None,
    typer.Option(
        "--address",
        help="Ray cluster address for --backend ray ('auto', 'ray://head:10001'); "
        "default: start a local Ray with --jobs CPUs.",
    ),
]
ProgressOption = Annotated[
    ProgressMode,
    typer.Option(
        "--progress",
        help="auto: a progress bar on a terminal, plain log lines otherwise.",
    ),
]
ImportOption = Annotated[
    list[str] | None,
    typer.Option(
        "--import",
        help="Module or .py file registering your own policies or environments "
        "(repeatable; see docs/own-policy.md).",
    ),
]


def _load_imports(imports: list[str] | None) -> None:
    """Import the ``--import`` plugins; a bad one exits with status 2."""
    if not imports:
        return
    from banditkit.plugins import PluginError, import_plugins

    try:
        import_plugins(imports)
    except PluginError as exc:
        raise _invalid(exc) from None


def _print_version(value: bool) -> None:
    if value:
        from banditkit import __version__

        typer.echo(f"banditkit {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print banditkit's version and exit.",
        ),
    ] = False,
) -> None:
    """Nonlinear contextual bandits: run, tune and reproduce experiments."""


def _error(message: str) -> None:
    typer.echo(f"error: {message}", err=True)


def _invalid(exc: BaseException) -> typer.Exit:
    from banditkit.datasets.storage import DatasetNotFoundError, data_home

    if isinstance(exc, DatasetNotFoundError):
        # The full message lists every file and URL; two lines are enough here.
        first = str(exc).splitlines()[0] if str(exc) else "a dataset is missing"
        _error(
            f"{first}\n  its files go under {data_home()} (`banditkit datasets list` "
            "shows which are missing); set BANDITKIT_DATA to read them from elsewhere."
        )
    else:
        _error(str(exc))
    return typer.Exit(EXIT_INVALID)


def _input_errors() -> tuple[type[BaseException], ...]:
    from banditkit.datasets.storage import DatasetNotFoundError
    from banditkit.experiments import ConfigError, OutputDirError

    return (ConfigError, OutputDirError, DatasetNotFoundError)


def _report_experiment(result: Any, out: Path) -> None:
    from banditkit.experiments.reports import claims_lines, results_lines

    # fits a 100-column terminal; summary.json has every number and parameter
    for line in results_lines(result.summary):
        typer.echo(line)
    if result.summary.get("claims"):
        typer.echo("")
        for line in claims_lines(result.summary["claims"], str(out / "summary.json")):
            typer.echo(line)
    typer.echo("")
    typer.echo(
        f"{result.n_runs} runs: {result.computed - len(result.failed)} computed, "
        f"{result.skipped} already finished, {len(result.failed)} failed."
    )
    typer.echo(f"summary: {out / 'summary.json'}")
    pngs = [p for p in result.figures if p.suffix == ".png"]
    if pngs:
        typer.echo(f"figures: {pngs[0].parent}")
        for png in pngs:
            typer.echo(f"  {png.name}")
    _report_failures(result.failed, out)


def _report_failures(failed: dict[str, str], out: Path) -> None:
    for run_id, message in failed.items():
        typer.echo(
            f"FAILED {run_id}: {message} (traceback in {out / 'runs' / (run_id + '.error.json')})",
            err=True,
        )
    if failed:
        typer.echo("re-run the same command to retry the failed runs only.", err=True)


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
) -> None:
    """Run an experiment: every environment x policy x seed, into DIR (resumable)."""
    _load_imports(imports)
    from banditkit.experiments import run_experiment

    try:
        result = run_experiment(
            config,
            out,
            backend=backend.value,
            jobs=jobs,
            address=address,
            seeds=seeds,
            horizon=horizon,
            progress=progress.value,
        )
    except _input_errors() as exc:
        raise _invalid(exc) from None
    except KeyboardInterrupt:
        _error(f"interrupted; finished runs are kept in {out}: re-run to resume.")
        raise typer.Exit(EXIT_INTERRUPTED) from None
    _report_experiment(result, out)
    if not result.ok:
        raise typer.Exit(EXIT_FAILED)


@app.command()
def reproduce(
    paper: Annotated[
        str,
        typer.Argument(help="Paper name (see `banditkit list papers`) or a folder."),
    ],
    out: OutOption,
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
) -> None:
    """Reproduce a paper's figures and tables; writes DIR/report.md with its claims.

    --quick takes each figure's quick seeds and horizon; --seeds and --horizon, given
    with or without it, replace those.
    """
    _load_imports(imports)
    from banditkit.experiments.papers import reproduce as run_paper
    from banditkit.experiments.reports import claims_lines

    try:
        result = run_paper(
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
        )
    except _input_errors() as exc:
        raise _invalid(exc) from None
    except KeyboardInterrupt:
        _error(f"interrupted; finished runs are kept in {out}: re-run to resume.")
        raise typer.Exit(EXIT_INTERRUPTED) from None
    claims = result.summary.get("claims", [])
    if claims:
        # fits a 100-column terminal; report.md has the statements and evidence in full
        for line in claims_lines(claims, str(result.report)):
            typer.echo(line)
        passed = sum(c["passed"] for c in claims)
        typer.echo(f"\nclaims: {passed} of {len(claims)} PASS")
    typer.echo(f"report: {result.report}")
    typer.echo(f"summary: {out / 'summary.json'}")
    for fid, res in result.figures.items():
        _report_failures(res.failed, out / fid)
    if not result.ok:
        raise typer.Exit(EXIT_FAILED)
    if strict and not result.claims_passed:
        raise typer.Exit(EXIT_CLAIMS)


def _report_tuning(result: Any) -> None:
    """The grid's scores, the chosen values and a warning per optimum on a grid edge."""
    from banditkit.experiments.reports import TERMINAL_WIDTH, shorten

    for env, per_policy in result.tuned.items():
        for label, params in per_policy.items():
            typer.echo(
                f"{env} / {label}: {', '.join(f'{k}={v}' for k, v in params.items())}"
            )
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
    from banditkit.experiments.tuning import tune as run_tune

    try:
        result = run_tune(
            config,
            out,
            backend=backend.value,
            jobs=jobs,
            address=address,
            seeds=seeds,
            horizon=horizon,
            progress=progress.value,
        )
    except _input_errors() as exc:
        raise _invalid(exc) from None
    except KeyboardInterrupt:
        _error(f"interrupted; finished runs are kept in {out}: re-run to resume.")
        raise typer.Exit(EXIT_INTERRUPTED) from None
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
    import yaml

    from banditkit.experiments.papers import build_report
    from banditkit.experiments.runner import redraw

    config_path = directory / "config.yaml"
    if not config_path.is_file():
        _error(
            f"{config_path}: not found; is {directory} an output of `banditkit run`?"
        )
        raise typer.Exit(EXIT_INVALID)
    try:
        doc = yaml.safe_load(config_path.read_text())
        if isinstance(doc, dict) and isinstance(doc.get("figures"), dict):
            written = []
            for fid in doc["figures"]:
                if (directory / fid / "config.yaml").is_file():
                    written += redraw(directory / fid)
            _, report = build_report(
                directory,
                str(doc.get("paper", directory.name)),
                command=f"banditkit plot {directory}",
                quick=bool(doc.get("quick")),
            )
            typer.echo(f"report: {report}")
        else:
            written = redraw(directory)
    except _input_errors() as exc:
        raise _invalid(exc) from None
    for path in written:
        if path.suffix == ".png":
            typer.echo(str(path))


def _families(names: list[str], registry: Any) -> list[str]:
    width = max((len(n) for n in names), default=0)
    return [f"{n:<{width}}  {registry.get(n).family}" for n in names]


@app.command("list")
def list_(
    what: Annotated[
        str | None,
        typer.Argument(
            help="policies, envs, datasets, papers or metrics (default: all)."
        ),
    ] = None,
) -> None:
    """List registered policies, environments, datasets, papers or metrics."""
    import banditkit
    from banditkit.core import ENVIRONMENTS, POLICIES
    from banditkit.experiments import METRICS
    from banditkit.experiments.papers import list_papers

    sections = {
        "policies": lambda: _families(banditkit.list_policies(), POLICIES),
        "envs": lambda: _families(banditkit.list_envs(), ENVIRONMENTS),
        "datasets": lambda: list(banditkit.list_datasets()),
        "papers": list_papers,
        # declared by the registered environments' records, plus registered figures
        "metrics": lambda: sorted(
            {
                m
                for name in ENVIRONMENTS.names()
                for r in ENVIRONMENTS.get(name).declared_records()
                for m in r.metrics
            }
            | set(METRICS)
        ),
    }
    if what is not None and what not in sections:
        from banditkit.core.validation import suggest

        _error(
            f"unknown list {what!r}.{suggest(what, list(sections))} Choose: "
            f"{', '.join(sections)}."
        )
        raise typer.Exit(EXIT_INVALID)
    for name, lines in sections.items():
        if what is not None and name != what:
            continue
        if what is None:
            typer.echo(f"{name}:")
        for line in lines():
            typer.echo(f"  {line}" if what is None else line)


@app.command()
def datasets(
    action: Annotated[
        str,
        typer.Argument(
            help="list (availability), verify (checksums), path, or fetch (download)."
        ),
    ] = "list",
    name: Annotated[
        list[str] | None,
        typer.Argument(
            help="Dataset(s) (default: all, or the data home; fetch: several, or --all)."
        ),
    ] = None,
    all_: Annotated[
        bool, typer.Option("--all", help="fetch: every dataset of the registry.")
    ] = False,
    mirror: Annotated[
        str | None,
        typer.Option(
            "--mirror",
            help="fetch: base URL laid out like the data home that replaces the official "
            "sources (default: $BANDITKIT_MIRROR), e.g. file:///srv/datasets.",
        ),
    ] = None,
) -> None:
    """List datasets, verify their checksums, print their paths, or fetch (download) them."""
    from banditkit import datasets as ds

    known = ds.list_datasets()
    if action not in ("list", "verify", "path", "fetch"):
        _error(f"unknown action {action!r}; choose list, verify, path or fetch.")
        raise typer.Exit(EXIT_INVALID)
    for n in name or []:
        if n not in known:
            from banditkit.core.validation import suggest

            _error(
                f"unknown dataset {n!r}.{suggest(n, known)} Known: {', '.join(known)}."
            )
            raise typer.Exit(EXIT_INVALID)
    if action == "fetch":
        if bool(name) == all_:
            _error("fetch: name one or more datasets, or give --all (not both).")
            raise typer.Exit(EXIT_INVALID)
        failed: dict[str, str] = {}
        for n in name or known:  # one failure does not stop the other datasets
            try:
                ds.fetch(n, mirror=mirror, echo=typer.echo)
            except (ds.DatasetNotFoundError, ds.ChecksumError, PermissionError) as exc:
                failed[n] = (str(exc).splitlines() or ["the download failed"])[0]
        if failed:
            first = next(iter(failed.values()))
            more = f"\n  (and {len(failed) - 1} more)" if len(failed) > 1 else ""
            _error(f"could not fetch {', '.join(failed)}: {first}{more}")
            raise typer.Exit(EXIT_INVALID)
        return
    if name is not None and len(name) > 1:
        _error(f"{action}: one dataset at most (got {len(name)}).")
        raise typer.Exit(EXIT_INVALID)
    name_ = name[0] if name else None
    names = [name_] if name_ else known
    if action == "path":
        fn = getattr(ds, "dataset_path", None)
        home = getattr(ds, "data_home", None)
        if name_ is None and home is not None:
            typer.echo(str(home()))
        elif fn is not None:
            for n in names:
                typer.echo(f"{n}  {fn(n)}" if name_ is None else str(fn(n)))
        else:
            _error("dataset paths are not available in this version.")
            raise typer.Exit(EXIT_INVALID)
        return
    if action == "list":
        status = getattr(ds, "dataset_status", None)
        if status is None:
            for n in names:
                typer.echo(n)
            return
        by_name = {st.name: st for st in status()}
        for n in names:  # the same datasets, in the same order, as `datasets verify`
            st = by_name[n]
            state = "available" if st.available else "missing"
            have, total = st.files_present
            typer.echo(f"{st.name:<14} {state:<9} files {have}/{total}  {st.path}")
        return
    verify = getattr(ds, "verify_dataset", None)
    if verify is None:
        _error("dataset verification is not available in this version.")
        raise typer.Exit(EXIT_INVALID)
    bad = 0
    for n in names:
        try:
            files = verify(n)
        except Exception as exc:
            bad += 1
            typer.echo(f"{n:<14} FAILED    ({exc})")
            continue
        files = list(files or [])
        states = [getattr(f, "state", "ok") for f in files]
        mismatched = [f for f in files if getattr(f, "verified", None) is False]
        bad += bool(mismatched)
        # "files" counts required files present / known, as `datasets list` does; the
        # states count every file checked, optional description files included
        required = [f for f in files if not getattr(f, "optional", False)]
        present = sum(bool(getattr(f, "present", True)) for f in required)
        summary = ", ".join(f"{s} {states.count(s)}" for s in dict.fromkeys(states))
        typer.echo(
            f"{n:<14} {'MISMATCH' if mismatched else 'ok':<9} files "
            f"{present}/{len(required)}  ({summary or 'embedded'})"
        )
        for f in mismatched:
            typer.echo(f"  checksum mismatch: {f.path}")
    if bad:
        raise typer.Exit(EXIT_FAILED)


@app.command()
def bench(
    out: OutOption,
    quick: Annotated[
        bool, typer.Option("--quick", help="Small sizes (seconds).")
    ] = False,
    directory: Annotated[
        Path, typer.Option("--dir", help="Folder of benchmark scripts.")
    ] = Path("benchmarks"),
    only: Annotated[
        list[str] | None,
        typer.Option("--only", help="Run only these benchmarks (file stems)."),
    ] = None,
) -> None:
    """Run the speed benchmarks: every benchmarks/*.py with a main(quick, out) function.

    Each script's ``main(quick: bool, out: Path)`` writes what it likes under
    ``DIR/<script>/`` and may return a JSON-able dict; DIR/bench.json collects the returns,
    wall times and errors.
    """
    from banditkit.experiments.bench import discover, run_benchmarks

    scripts = discover(directory, only)
    if not scripts:
        _error(f"no benchmark scripts (*.py with main(quick, out)) in {directory}.")
        raise typer.Exit(EXIT_INVALID)
    try:
        document = run_benchmarks(
            scripts, out, quick=quick, log=lambda line: typer.echo(line, err=True)
        )
    except _input_errors() as exc:
        raise _invalid(exc) from None
    typer.echo(f"bench: {out / 'bench.json'}")
    if any(e["status"] != "ok" for e in document["benchmarks"].values()):
        raise typer.Exit(EXIT_FAILED)


@app.command()
def evaluate(
    log: Annotated[
        Path | None,
        typer.Argument(
            help="A CSV or Parquet log; the Open Bandit Dataset when left out."
        ),
    ] = None,
    target: Annotated[
        str,
        typer.Option(
            "--target", help='"uniform" or a .npy file of (n, K) action probabilities.'
        ),
    ] = "uniform",
    campaign: Annotated[
        str, typer.Option("--campaign", help="OBD campaign: all, men or women.")
    ] = "all",
    reward: Annotated[str, typer.Option("--reward", help="Reward column.")] = "reward",
    action: Annotated[str, typer.Option("--action", help="Action column.")] = "action",
    propensity: Annotated[
        str, typer.Option("--propensity", help="Logged propensity column.")
    ] = "propensity",
    features: Annotated[
        list[str] | None,
        typer.Option("--feature", help="Feature column of the reward model (repeat)."),
    ] = None,
    methods: Annotated[
        list[str] | None,
        typer.Option(
            "--method", help="ips, snips, dm or dr (repeat; default ips snips dr)."
        ),
    ] = None,
    level: Annotated[
        float, typer.Option("--level", min=0.5, max=0.999, help="Interval coverage.")
    ] = 0.95,
    seed: Annotated[int, typer.Option("--seed", min=0, help="Cross-fitting seed.")] = 0,
) -> None:
    """Off-policy evaluation of a target policy on a logged bandit dataset (docs/ope.md)."""
    from banditkit.ope import evaluate_command

    try:
        table = evaluate_command(
            log=log,
            campaign=campaign,
            target=target,
            reward=reward,
            action=action,
            propensity=propensity,
            features=features,
            methods=tuple(methods) if methods else ("ips", "snips", "dr"),
            level=level,
            seed=seed,
        )
    except (
        ValueError,
        OSError,
    ) as exc:  # a bad log, target or column: the user's to fix
        raise _invalid(exc) from None
    typer.echo(table)


def main() -> None:
    """Entry point of the ``banditkit`` console script."""
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
