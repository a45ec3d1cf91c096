"""The errors a user causes or can fix: one base, caught by the command line (exit 2).

Every exception of this module, and those that subclass :class:`BanditkitError` elsewhere
(``ConfigError``, ``OutputDirError``, ``DatasetNotFoundError``, ...), is a condition the user
can fix from its message alone. ``banditkit`` prints the message (no traceback; ``--debug``
or ``BANDITKIT_DEBUG=1`` shows it) and exits with :attr:`BanditkitError.exit_code`. Each also
derives from the built-in exception it used to be (``ValueError``, ``OSError``, ...), so code
catching those keeps working. ``banditkit.errors`` gathers them all for library users.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "BanditkitError",
    "DamagedFileError",
    "DatasetError",
    "RunsFailedError",
    "UnknownNameError",
]


class BanditkitError(Exception):
    """Base of the errors a user causes or can fix; the message says what to do.

    Attributes:
        exit_code: The exit status of ``banditkit`` for this error (2: invalid input).

    Example:
        >>> isinstance(UnknownNameError("unknown policy 'x'"), BanditkitError)
        True
    """

    exit_code: int = 2


class UnknownNameError(BanditkitError, ValueError):
    """A name not in a registry (policy, environment, dataset, paper, ...), with suggestions."""


class DatasetError(BanditkitError):
    """A dataset is missing, damaged or cannot be downloaded."""


class DamagedFileError(BanditkitError, ValueError):
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


class RunsFailedError(BanditkitError, RuntimeError):
    """Some runs of an experiment have no result; the others are stored and summarised.

    Re-running the same call (same output directory) computes the failed runs only.

    Attributes:
        failed: Run id -> one-line error.
        out: The output directory (tracebacks in ``out/runs/<id>.error.json``).
        result: The experiment's result object (its ``summary`` marks the failed runs).
        exit_code: 1, the command line's status for failed runs.

    Example:
        >>> err = RunsFailedError({"a1b2": "ZeroDivisionError: division by zero"}, "res")
        >>> print(str(err).splitlines()[0])
        1 run failed: a1b2 (ZeroDivisionError: division by zero).
    """

    exit_code = 1

    def __init__(
        self,
        failed: Mapping[str, str],
        out: str | os.PathLike[str],
        result: Any = None,
        *,
        shown: int = 5,
    ) -> None:
        self.failed = dict(failed)
        self.out = Path(out)
        self.result = result
        by_message: dict[str, list[str]] = {}
        for rid, msg in self.failed.items():
            by_message.setdefault(msg, []).append(rid)
        groups = []
        for msg, ids in list(by_message.items())[:shown]:
            more = f" and {len(ids) - shown} more" if len(ids) > shown else ""
            groups.append(f"{', '.join(ids[:shown])}{more} ({msg})")
        if len(by_message) > shown:
            groups.append(f"and {len(by_message) - shown} other errors")
        n = len(self.failed)
        super().__init__(
            f"{n} run{'s' if n != 1 else ''} failed: {'; '.join(groups)}.\n"
            f"Tracebacks are in {self.out / 'runs'}/<id>.error.json; re-run the same "
            "call with the same output directory to retry the failed runs only."
        )
