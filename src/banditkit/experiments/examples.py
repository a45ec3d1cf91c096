"""The examples shipped with banditkit (``banditkit examples``): list them, write one out.

The files live in the package (``banditkit/examples/``), so an installed banditkit has them
wherever it runs; :func:`write_example` copies one into a folder of the user's, as a starting
point to edit and run (``banditkit run demo.yaml --out results/demo``, ``python quickstart.py``).
An example may also be a folder of configs laid out like a paper's (a ``_paper.yaml`` and one
config per figure: the ``tour`` of ``make demo``), run with ``banditkit reproduce``.
"""

from __future__ import annotations

import ast
import shutil
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from banditkit.core.errors import BanditkitError, UnknownNameError
from banditkit.core.safe_yaml import read_yaml_file
from banditkit.core.validation import suggest

__all__ = ["Example", "example_path", "list_examples", "run_command", "write_example"]

_SUFFIXES = (".yaml", ".yml", ".py")


@dataclass(frozen=True)
class Example:
    """A shipped example: its file name, a one-line description and how to run it."""

    name: str
    description: str
    run: str


def _folder() -> Path:
    return Path(str(resources.files("banditkit") / "examples"))


def _is_paper(path: Path) -> bool:
    """A folder laid out like a paper's: its ``_paper.yaml`` and configs."""
    return path.is_dir() and (path / "_paper.yaml").is_file()


def _describe(path: Path) -> str:
    if _is_paper(path):
        return str(read_yaml_file(path / "_paper.yaml").get("title", ""))
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".py":
        doc = ast.get_docstring(ast.parse(text)) or ""
        return doc.strip().splitlines()[0] if doc.strip() else ""
    for line in text.splitlines():
        if line.startswith("#"):
            return line.lstrip("# ").strip()
    return ""


def run_command(path: Path) -> str:
    """How to run the example file ``path`` (a shell command)."""
    if path.suffix == ".py":
        return f"python {path.name}"
    if _is_paper(path):
        return f"banditkit reproduce {path.name} --out results/{path.name}"
    return f"banditkit run {path.name} --out results/{path.stem}"


def list_examples() -> list[Example]:
    """The shipped examples, sorted by name.

    Example:
        >>> [e.name for e in list_examples()][:1]
        ['demo.yaml']
    """
    return [
        Example(p.name, _describe(p), run_command(p))
        for p in sorted(_folder().iterdir())
        if (p.suffix in _SUFFIXES or _is_paper(p)) and not p.name.startswith("_")
    ]


def example_path(name: str) -> Path:
    """The installed file of the example ``name`` ("demo.yaml", or just "demo").

    Raises:
        UnknownNameError: For a name no example has (close matches listed).
    """
    known = [e.name for e in list_examples()]
    for candidate in (name, *(name + s for s in _SUFFIXES)):
        matches = [k for k in known if k.casefold() == candidate.casefold()]
        if matches:
            return _folder() / matches[0]
    stems = sorted({Path(k).stem for k in known} | set(known))
    raise UnknownNameError(
        f"unknown example {name!r}.{suggest(name, stems)} Examples: {', '.join(known)}."
    )


def write_example(
    name: str, target: str | Path | None = None, *, overwrite: bool = False
) -> Path:
    """Copy the example ``name`` to ``target`` (a file, or a folder to put it in).

    Args:
        name: The example ("demo.yaml" or "demo"); see :func:`list_examples`.
        target: Where to write it; None: the current directory, under its own name.
        overwrite: Replace an existing file.

    Returns:
        The file written.

    Raises:
        UnknownNameError: For an unknown example.
        BanditkitError: If the file exists and ``overwrite`` is False.
    """
    source = example_path(name)
    dest = Path.cwd() if target is None else Path(target)
    if dest.is_dir():
        dest = dest / source.name
    if dest.exists() and not overwrite:
        raise BanditkitError(f"{dest} exists; choose another path or pass --force.")
    dest.parent.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        shutil.copytree(
            source,
            dest,
            dirs_exist_ok=True,
            ignore=shutil.ignore_patterns("__pycache__"),
        )
    else:
        shutil.copyfile(source, dest)
    return dest
