"""Names in a config that become file names, and names shown on one line.

Everything an experiment writes stays under its output directory, so a string of the config
that names a file or folder there is an *id*: letters, digits, ``_``, ``.`` and ``-``, not
starting with a dot or a dash, at most 100 characters (:data:`ID_PATTERN`). That is the
``figure:`` id (``reproduce`` writes ``DIR/<figure>/``) and a layout's ``name:``
(``figures/<name>.png``); ``../../x``, ``/tmp/x``, ``..`` or a name with a newline is
refused with the field named. The experiment's ``name`` and the labels are free text shown
in reports, so they need only be one line (:data:`LINE_PATTERN`: no control characters, at
most 500 characters); where one names a file (the default figure id is the experiment's
name) it is made an id by :func:`file_stem`.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

__all__ = [
    "ID_PATTERN",
    "LINE_PATTERN",
    "MAX_LINE",
    "FileId",
    "OneLine",
    "check_file_id",
    "check_line",
    "file_stem",
]

ID_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$"
"""An id that names a file or folder under the output directory."""

MAX_LINE = 500
"""Longest name or label."""

LINE_PATTERN = rf"^[^\x00-\x1f\x7f]{{1,{MAX_LINE}}}$"
"""One line of text: no control characters (newlines, tabs, escapes), 1 to 500 characters."""


def file_stem(text: str) -> str:
    """``text`` as an id (:data:`ID_PATTERN`): other characters become ``-``.

    Example:
        >>> file_stem("../../escape"), file_stem("logistic fig 1"), file_stem("..")
        ('escape', 'logistic-fig-1', 'x')
    """
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", text)
    stem = re.sub(r"^[.-]+|-+$", "", stem)[:100].rstrip("-")
    return stem if re.fullmatch(ID_PATTERN, stem) else "x"


def check_line(text: str) -> str:
    """``text`` if it is one line (:data:`LINE_PATTERN`).

    Raises:
        ValueError: Saying what is expected and the value.
    """
    if not re.fullmatch(LINE_PATTERN, text):
        raise ValueError(
            f"expected one line of text, 1 to {MAX_LINE} characters without control characters "
            f"(newlines, tabs); got {text[:80]!r}"
        )
    return text


def check_file_id(text: str) -> str:
    """``text`` if it is an id (:data:`ID_PATTERN`).

    Raises:
        ValueError: Saying what is expected and the value.
    """
    if not re.fullmatch(ID_PATTERN, text):
        raise ValueError(
            "expected an id that names a file of the output: letters, digits, '_', '.' "
            f"and '-', not starting with '.' or '-', at most 100 characters; got "
            f"{text[:80]!r}"
        )
    return text


OneLine = Annotated[str, AfterValidator(check_line)]
"""A config string shown on one line (names, labels)."""

FileId = Annotated[str, AfterValidator(check_file_id)]
"""A config string that names a file or folder under the output directory."""
