"""The ``serve`` command group: the decision service and the export of its state.

banditkit serve CONFIG --db URL [--host 127.0.0.1] [--port 8000]   (= serve run ...)
banditkit serve export --db URL --policy ID --out FILE.bk
"""

from __future__ import annotations

import logging
import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

from banditkit.cli.common import ImportOption, _load_imports, app
from banditkit.core.lazy import lazy_import
from banditkit.errors import BanditkitError

if TYPE_CHECKING:
    from banditkit import serve as _serve
    from banditkit.serve import app as _app
    from banditkit.serve import evaluate as _evaluate
    from banditkit.serve import process as _process
else:  # the service (SQLAlchemy, FastAPI, uvicorn: the `serve` extra) stays out of the
    # start-up of every other command: imported at first use, after ``_need_extra``
    _serve = lazy_import("banditkit.serve")
    _app = lazy_import("banditkit.serve.app")
    _evaluate = lazy_import("banditkit.serve.evaluate")
    _process = lazy_import("banditkit.serve.process")


class WriterMode(str, Enum):
    """Where ``serve run``'s single writer runs (``serve.process``)."""

    process = "process"
    thread = "thread"


_LOOPBACK = ("127.0.0.1", "::1", "localhost")


class _RunByDefault(TyperGroup):
    """``serve CONFIG ...`` runs ``serve run CONFIG ...``; ``serve export`` exports."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


serve_app = typer.Typer(
    cls=_RunByDefault,
    no_args_is_help=True,
    help="The decision service: serve policies over HTTP, export their state (docs/serve.md).",
)
app.add_typer(serve_app, name="serve")

DbOption = Annotated[
    str,
    typer.Option(
        "--db",
        help="Database URL of the event log: sqlite:///events.db or "
        "postgresql://user:password@host/db (the password is never printed).",
    ),
]


def _need_extra() -> None:
    try:
        import fastapi  # noqa: F401
        import sqlalchemy  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise BanditkitError(
            f"the service needs the serve extra ({exc.name} is missing): "
            "pip install 'banditkit[serve]'."
        ) from None


@serve_app.command("run")
def run(
    config: Annotated[Path, typer.Argument(help="The service configuration (YAML).")],
    db: DbOption,
    host: Annotated[
        str,
        typer.Option("--host", help="Interface to listen on (loopback by default)."),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535)] = 8000,
    access_log: Annotated[
        bool, typer.Option("--access-log", help="Log every request line.")
    ] = False,
    writer: Annotated[
        WriterMode,
        typer.Option(
            "--writer",
            help="Where the single writer runs: 'process' (a child process: the HTTP "
            "side and the writer do not share a GIL) or 'thread' (one process).",
        ),
    ] = WriterMode.process,
    imports: ImportOption = None,
) -> None:
    """Serve the configured policies over HTTP until SIGINT or SIGTERM."""
    _need_extra()
    _load_imports(imports)
    # here, not at the top: uvicorn stays out of the start-up of every other command
    import uvicorn

    logging.basicConfig(level=logging.INFO, format="%(levelname)s: %(message)s")
    # the HTTP loop, the writer and the learner share the interpreter: hand it over
    # every millisecond (Python's default, 5 ms, is a whole latency budget)
    sys.setswitchinterval(0.001)
    cfg = _serve.load_config(config)
    tokens = cfg.tokens()
    if host not in _LOOPBACK:
        open_ids = [pid for pid, token in tokens.items() if token is None]
        if open_ids:
            logging.getLogger("banditkit.serve").warning(
                "listening on %s with policies without a token: %s",
                host,
                ", ".join(open_ids),
            )
    service: _serve.Service | _process.WriterProcess = (
        _process.WriterProcess(cfg, db, imports=imports)
        if writer is WriterMode.process
        else _serve.Service(cfg, db)
    )
    service.open()
    logging.getLogger("banditkit.serve").info("event log: %s", service.url)
    uvicorn.run(
        # the start-up's objects out of the garbage collector's full collections, which
        # otherwise stop every thread for tens of milliseconds (create_app, freeze_gc)
        _app.create_app(service, tokens, freeze_gc=True),
        host=host,
        port=port,
        access_log=access_log,
        log_level="info",
        timeout_graceful_shutdown=10,
        proxy_headers=False,
        server_header=False,
    )


@serve_app.command("export")
def export(
    db: DbOption,
    policy: Annotated[str, typer.Option("--policy", help="The policy id.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="The .bk file to write.")],
    imports: ImportOption = None,
) -> None:
    """Write a served policy's current state (snapshot + log) as a .bk file."""
    _need_extra()
    _load_imports(imports)
    status = _serve.export_policy(db, policy, out)
    typer.echo(
        f"{out}: policy {policy!r} at log position {status['log_position']} "
        f"({status['decisions']} decisions, {status['feedbacks']} feedbacks, model "
        f"version {status['version']})."
    )


def evaluate_db(
    db: str,
    policy: str | None,
    candidates: list[str] | None,
    methods: list[str] | None,
    level: float,
    seed: int,
    out: Path | None,
    log: Path | None,
) -> None:
    """``banditkit evaluate --db``: estimates on a decision service's log, with a report."""
    if policy is None or log is not None:
        raise BanditkitError(
            "evaluate --db needs --policy ID (and takes no log file): "
            "banditkit evaluate --db URL --policy ID --candidate NAME[:k=v,...]."
        )
    _need_extra()
    folder = out or Path(f"evaluate-{policy}")
    try:
        text, _ = _evaluate.evaluate_service_log(
            db,
            policy,
            list(candidates or []),
            methods=tuple(methods) if methods else ("ips", "snips", "dr"),
            level=level,
            seed=seed,
            out=folder,
        )
    except ValueError as exc:  # a bad candidate or method, or no usable row
        raise BanditkitError(str(exc)) from None
    typer.echo(text)
    typer.echo(f"report: {folder / 'report.md'}")
