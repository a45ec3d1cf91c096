"""Every import in ``src/banditkit`` follows the floors of docs/architecture.md, section 2.

A package imports only packages on the floors below it; function-local and ``TYPE_CHECKING`` imports count as well, so no cycle hides inside a function.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "banditkit"

#: Floor of each top-level package or module of banditkit (docs/architecture.md, section 2).
FLOORS = {
    "core": 0,
    "_version": 0,
    "linalg": 1,
    "glm": 1,
    "assortment": 1,
    "datasets": 1,
    "plugins": 1,
    "nn": 2,
    "policies": 3,
    "envs": 3,
    "testing": 3,
    "experiments": 4,
    "ope": 5,
    "serve": 6,
    "errors": 7,  # the facade re-exporting every public error from where it is raised
    "cli": 8,
    "__init__": 9,
    "__main__": 9,
    "examples": 9,
}


def _package(path: Path) -> str:
    parts = path.relative_to(SRC).parts
    return parts[0].removesuffix(".py")


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, imported top-level banditkit package) of every import in a module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            head, _, rest = name.partition(".")
            if head == "banditkit" and rest:
                found.append((node.lineno, rest.split(".")[0]))
    return found


def _violations() -> list[str]:
    bad = []
    for path in sorted(SRC.rglob("*.py")):
        importer = _package(path)
        for line, imported in _imports(path):
            if imported == importer:
                continue
            low, high = FLOORS[importer], FLOORS[imported]
            if high < low:
                continue
            where = path.relative_to(SRC.parent)
            bad.append(
                f"{where}:{line}: {importer} (floor {low}) imports {imported} (floor {high})"
            )
    return bad


def test_every_package_has_a_floor():
    packages = {_package(path) for path in SRC.rglob("*.py")}
    assert packages <= set(FLOORS), sorted(packages - set(FLOORS))


def test_no_import_climbs_a_floor():
    bad = _violations()
    assert not bad, "\n".join(bad)
