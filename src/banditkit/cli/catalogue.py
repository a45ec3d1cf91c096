"""The catalogue commands: list, describe, examples.

``list policies`` shows each policy's family, papers and summary line; ``describe NAME`` its
parameters with defaults, paper symbols, meanings and ranges. Both read the registry's
:meth:`~banditkit.core.registry.Registry.describe`. Text is wrapped to the terminal, never
cut.
"""

from __future__ import annotations

import os
import shutil
import textwrap
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

import banditkit
from banditkit.cli.common import EXIT_INVALID, _error, app
from banditkit.core import ENVIRONMENTS, POLICIES
from banditkit.core.registry import REQUIRED, Description, Registry
from banditkit.core.validation import suggest
from banditkit.experiments import METRICS
from banditkit.experiments.config.papers import list_papers
from banditkit.experiments.examples import list_examples, run_command, write_example


def _width() -> int:
    """The terminal's width (100 columns when output is not a terminal)."""
    return max(shutil.get_terminal_size((100, 24)).columns, 40)


def _rows(rows: Sequence[Sequence[str]], width: int) -> list[str]:
    """Rows as left-aligned columns; the last column is wrapped under itself, never cut.

    Example:
        >>> text = "one two three four five six seven eight nine ten"
        >>> for line in _rows([["a", text], ["bb", "eleven"]], 40):
        ...     print(line)
        a   one two three four five six seven
            eight nine ten
        bb  eleven
    """
    if not rows:
        return []
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    indent = sum(w + 2 for w in widths)
    room = width - indent
    lines = []
    for row in rows:
        left = "".join(f"{c:<{w}}  " for c, w in zip(row[:-1], widths, strict=True))
        if room < 30:  # too narrow beside the columns: the text on lines of its own
            lines.append(left.rstrip())
            lines += textwrap.wrap(
                row[-1], width, initial_indent="    ", subsequent_indent="    "
            )
            continue
        wrapped = textwrap.wrap(row[-1], room) or [""]
        lines.append((left + wrapped[0]).rstrip())
        lines += [" " * indent + more for more in wrapped[1:]]
    return lines


def _catalogue(registry: Registry[Any]) -> list[str]:
    """One row per registered name: family, the papers cited, the summary line."""
    rows = []
    for name in registry.names():
        entry = registry.describe(name)
        rows.append([name, entry.family, ", ".join(entry.papers) or "-", entry.summary])
    return _rows(rows, _width())


@app.command("list")
def list_(
    what: Annotated[
        str | None,
        typer.Argument(
            help="policies, envs, datasets, papers or metrics (default: all)."
        ),
    ] = None,
) -> None:
    """List registered policies (family, papers, summary), envs, datasets, papers, metrics."""
    sections = {
        "policies": lambda: _catalogue(POLICIES),
        "envs": lambda: _catalogue(ENVIRONMENTS),
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
    if what is not None:
        what = what.casefold()
    if what is not None and what not in sections:
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
    if what == "policies":
        typer.echo("\nbanditkit describe NAME shows a policy's parameters.")


def _value(value: Any) -> str:
    return "(required)" if value is REQUIRED else repr(value)


def describe_lines(entry: Description, width: int = 100) -> list[str]:
    """What ``banditkit describe`` prints for ``entry``, wrapped to ``width`` columns."""

    def wrap(text: str, indent: str = "") -> list[str]:
        return textwrap.wrap(
            text, width, initial_indent=indent, subsequent_indent=indent
        )

    lines = wrap(f"{entry.name}: {entry.summary}")
    lines.append(f"{entry.kind}, {entry.family or 'no family'}; class {entry.origin}")
    if entry.references:
        lines.append("papers:")
        for key, text in entry.references.items():
            lines += wrap(f"[{key}] {text}", "  ")
    if entry.design_horizon is not None:
        adapt = " or ".join(entry.horizon_params) or "its parameters"
        lines += wrap(
            f"horizon: its defaults are made for T of about {entry.design_horizon:,}; a "
            f"run below a quarter of that warns at begin(T) unless {adapt} is set."
        )
    lines.append("parameters (name = default; the paper's name; meaning and range):")
    for p in entry.parameters:
        head = f"  {p.name} = {_value(p.default)}"
        if p.resolved != p.default:
            head += f" (resolves to {_value(p.resolved)})"
        if p.symbol:
            head += f"; paper: {p.symbol}"
        lines += wrap(head)
        if p.doc:
            lines += wrap(p.doc, "      ")
    return lines


@app.command()
def describe(
    name: Annotated[
        str, typer.Argument(help="A policy or environment (see `banditkit list`).")
    ],
) -> None:
    """Describe a policy (or environment): papers, parameters, defaults and ranges."""
    for registry in (POLICIES, ENVIRONMENTS):
        if name in registry:
            entry = registry.describe(name, resolve=True)
            for line in describe_lines(entry, _width()):
                typer.echo(line)
            return
    known = POLICIES.names() + ENVIRONMENTS.names()
    _error(
        f"unknown policy or environment {name!r}.{suggest(name, known, n=5)} "
        "`banditkit list policies` and `banditkit list envs` list them all."
    )
    raise typer.Exit(EXIT_INVALID)


def _examples_lines(examples: Iterable[Any]) -> list[str]:
    return _rows([[e.name, e.description] for e in examples], _width())


@app.command()
def examples(
    name: Annotated[
        str | None,
        typer.Argument(help="Example to write out (e.g. demo.yaml); none: list them."),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", "-o", help="File or folder to write it to [default: here]."
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite an existing file.")
    ] = False,
) -> None:
    """List the shipped examples, or write one out as a starting point."""
    if name is None:
        for line in _examples_lines(list_examples()):
            typer.echo(line)
        typer.echo("\nbanditkit examples NAME [--out PATH] writes one out.")
        return
    path = write_example(name, out, overwrite=force)
    typer.echo(f"wrote {path}")
    relative = os.path.relpath(path)
    typer.echo(f"run it: {run_command(path).replace(path.name, relative, 1)}")
