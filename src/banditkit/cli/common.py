"""The ``banditkit`` app, its exit codes, shared options and error reporting."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from typer.core import TyperGroup

from banditkit._version import __version__
from banditkit.core.errors import BanditkitError
from banditkit.datasets.storage import DatasetNotFoundError, data_home
from banditkit.experiments.report.console import (
    TERMINAL_WIDTH,
    claims_lines,
    results_lines,
    shorten,
)
from banditkit.plugins import PluginError, import_plugins
from banditkit.policies.parts.models.compute import check_device

T = TypeVar("T")

STORAGE_ERRNOS = frozenset(
    {
        errno.ENOSPC,
        errno.EDQUOT,
        errno.EFBIG,
        errno.EROFS,
        errno.EACCES,
        errno.EPERM,
        errno.EISDIR,
        errno.ENOTDIR,
        errno.ENAMETOOLONG,
        errno.ELOOP,
    }
)
"""Errors of a file the user can fix (space, permissions, what is in its place): exit 2."""

DEBUG_VARIABLE = "BANDITKIT_DEBUG"
"""Environment variable: ``1`` shows the traceback of a user's error (as ``--debug``)."""

_debug = False


def debugging() -> bool:
    """True when ``--debug`` was given or ``BANDITKIT_DEBUG`` is set to a true value."""
    value = os.environ.get(DEBUG_VARIABLE, "").strip().lower()
    return _debug or value not in ("", "0", "false", "no", "off")


class _Guarded(TyperGroup):
    """The command group, reporting a user's error in one place.

    A ``banditkit.errors.BanditkitError`` raised by any command ends as its message on
    stderr and the error's exit code (2, or 1 for failed runs), without a traceback unless
    debugging; so does a file that cannot be written for a reason the user fixes (a full
    disk, a read-only or forbidden folder, a directory in a file's place: exit 2,
    :data:`STORAGE_ERRNOS`). Ctrl-C exits 130. Bugs keep their traceback.
    """

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except BanditkitError as exc:
            if debugging():
                raise
            raise _invalid(exc) from None
        except OSError as exc:
            if debugging() or exc.errno not in STORAGE_ERRNOS:
                raise
            files = " -> ".join(
                repr(str(f)) for f in (exc.filename, exc.filename2) if f is not None
            )
            _error(f"{exc.strerror or exc}" + (f": {files}" if files else ""))
            raise typer.Exit(EXIT_INVALID) from None
        except KeyboardInterrupt:
            if debugging():
                raise
            _error("interrupted.")
            raise typer.Exit(EXIT_INTERRUPTED) from None


app = typer.Typer(
    name="banditkit",
    help="Nonlinear contextual bandits: run, tune and reproduce experiments.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=_Guarded,
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


class BatchSeeds(str, Enum):
    """Whether the seeds of a configuration run as one batch (``--batch-seeds``)."""

    auto = "auto"
    on = "on"
    off = "off"


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
DeviceOption = Annotated[
    str | None,
    typer.Option(
        "--device",
        help="Run every neural policy on this device: cpu, cuda, cuda:N or auto "
        "(a GPU if there is one); the others as configured [default: the config's].",
    ),
]


class Dtype(str, Enum):
    """The dtype of the neural policies (``--dtype``)."""

    float32 = "float32"
    float64 = "float64"


DtypeOption = Annotated[
    Dtype | None,
    typer.Option(
        "--dtype",
        help="Compute every neural policy in this dtype [default: the config's, else "
        "each policy's own].",
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

    try:
        import_plugins(imports)
    except PluginError as exc:
        raise _invalid(exc) from None


def _print_version(value: bool) -> None:
    if value:
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
    debug: Annotated[
        bool,
        typer.Option(
            "--debug",
            help="Show the traceback of an error in your input (also BANDITKIT_DEBUG=1).",
        ),
    ] = False,
) -> None:
    """Nonlinear contextual bandits: run, tune and reproduce experiments."""
    global _debug
    _debug = debug


def _check_device(device: str | None, address: str | None) -> None:
    """Exit 2 naming a ``--device`` this machine does not have (before anything runs).

    Not for a Ray cluster given by ``--address``: its workers may have GPUs this machine
    lacks (a policy built where its device is not there fails with the same message).
    """
    if device is None or address is not None:
        return
    try:
        check_device("--device", device)
    except ValueError as exc:
        raise _invalid(exc) from None


def _error(message: str) -> None:
    typer.echo(f"error: {message}", err=True)


def _invalid(exc: BaseException) -> typer.Exit:
    """Print a user's error (two lines for a missing file); its exit code, 2 by default."""
    if isinstance(exc, DatasetNotFoundError):
        # The full message lists every file and URL; two lines are enough here.
        first = str(exc).splitlines()[0] if str(exc) else "a dataset is missing"
        _error(
            f"{first}\n  its files go under {data_home()} (`banditkit datasets list` "
            "shows which are missing); set BANDITKIT_DATA to read them from elsewhere."
        )
    else:
        _error(str(exc))
    return typer.Exit(getattr(exc, "exit_code", EXIT_INVALID))


def _input_errors() -> tuple[type[BaseException], ...]:
    """The errors a command reports as a user's (every ``BanditkitError``)."""
    return (BanditkitError,)


def _guarded(out: Path, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``call(*args, **kwargs)`` for a command writing into ``out``.

    A user's error exits 2 with its message; Ctrl-C exits 130 saying the finished runs
    in ``out`` are kept.
    """
    try:
        return call(*args, **kwargs)
    except _input_errors() as exc:
        if debugging():
            raise
        raise _invalid(exc) from None
    except KeyboardInterrupt:
        if debugging():
            raise
        _error(f"interrupted; finished runs are kept in {out}: re-run to resume.")
        raise typer.Exit(EXIT_INTERRUPTED) from None


def _report_experiment(result: Any, out: Path) -> None:

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

    if failed:
        typer.echo(f"tracebacks: {out / 'runs'}/<run id>.error.json", err=True)
    for run_id, message in failed.items():
        typer.echo(shorten(f"FAILED {run_id}: {message}", TERMINAL_WIDTH), err=True)
    if failed:
        typer.echo("re-run the same command to retry the failed runs only.", err=True)
