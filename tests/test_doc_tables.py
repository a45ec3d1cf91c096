"""Every Markdown table of README.md and docs/ has as many cells in each row as in its header.

GitHub's Markdown splits a table row at every pipe that is not escaped, inside code spans
too, and drops the cells past the header's count: a norm written ``||x||`` in a table cell
cuts the row and loses its end. Write it ``\\|\\|x\\|\\|`` there (it renders as ||x||).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SEPARATOR = re.compile(r"^\|[\s:|-]+\|\s*$")


def cell_count(row: str) -> int:
    """Cells of a table row written with leading and trailing pipes (GFM's split)."""
    return len(re.findall(r"(?<!\\)\|", row.strip())) - 1


def ragged_rows(text: str) -> list[int]:
    """1-based line numbers of table rows whose cell count differs from their header's."""
    lines = text.split("\n")
    bad, fenced, i = [], False, 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            fenced = not fenced
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if not fenced and line.startswith("|") and SEPARATOR.match(nxt):
            width, j = cell_count(line), i + 2
            while j < len(lines) and lines[j].startswith("|"):
                if cell_count(lines[j]) != width:
                    bad.append(j + 1)
                j += 1
            i = j
            continue
        i += 1
    return bad


def test_ragged_rows_are_found() -> None:
    table = "| a | b |\n|---|---|\n| `||x||` | 1 |\n| `\\|\\|x\\|\\|` | 1 |\n"
    assert ragged_rows(table) == [3]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_tables_are_rectangular(page: Path) -> None:
    assert ragged_rows(page.read_text()) == [], (
        f"{page.name}: rows cut by unescaped pipes"
    )
