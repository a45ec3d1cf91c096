"""Errors about a user's files, shared by the policy files and the experiment store."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DamagedFileError"]


class DamagedFileError(ValueError):
    """A file cannot be read back as what it should be (truncated, foreign, edited, newer).

    Attributes:
        path: The file.
        problem: What is wrong with it.

    Example:
        >>> str(DamagedFileError("runs/a.json", "not a JSON object"))
        "'runs/a.json': not a JSON object"
    """

    def __init__(self, path: str | os.PathLike[str], problem: str) -> None:
        self.path = Path(path)
        self.problem = problem
        super().__init__(f"{str(self.path)!r}: {problem}")
