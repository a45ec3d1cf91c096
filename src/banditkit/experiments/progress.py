"""Progress reporting: a rich progress bar on a terminal, plain log lines otherwise.

Both show runs done / total, elapsed time and an estimate of the time left. They write to
standard error, so that standard output stays free for results.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Protocol, TextIO

__all__ = ["LogProgress", "NullProgress", "Progress", "RichProgress", "make_progress"]


class Progress(Protocol):
    """What the runner reports to."""

    def start(self, title: str, total: int, skipped: int) -> None:
        """``total`` runs to compute now; ``skipped`` were already finished."""

    def advance(self, description: str, ok: bool) -> None:
        """One run finished (``ok``) or failed."""

    def message(self, text: str) -> None:
        """A line of information."""

    def stop(self) -> None:
        """No more runs."""


def _clock(seconds: float) -> str:
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class NullProgress:
    """Reports nothing."""

    def start(self, title: str, total: int, skipped: int) -> None:
        """Ignore."""

    def advance(self, description: str, ok: bool) -> None:
        """Ignore."""

    def message(self, text: str) -> None:
        """Ignore."""

    def stop(self) -> None:
        """Ignore."""


class LogProgress:
    """One plain line per finished run: ``[3/12] ok env / policy / seed 2 (0:04, ETA 0:12)``."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream
        self.total = 0
        self.done = 0
        self.t0 = time.monotonic()

    def _write(self, text: str) -> None:
        stream = self.stream or sys.stderr
        print(text, file=stream, flush=True)

    def start(self, title: str, total: int, skipped: int) -> None:
        """Log the plan."""
        self.total, self.done, self.t0 = total, 0, time.monotonic()
        note = f" ({skipped} already finished)" if skipped else ""
        self._write(f"{title}: {total} runs to compute{note}")

    def advance(self, description: str, ok: bool) -> None:
        """Log one finished run with elapsed time and ETA."""
        self.done += 1
        elapsed = time.monotonic() - self.t0
        eta = elapsed / self.done * (self.total - self.done)
        status = "ok" if ok else "FAILED"
        self._write(
            f"[{self.done}/{self.total}] {status} {description} "
            f"(elapsed {_clock(elapsed)}, ETA {_clock(eta)})"
        )

    def message(self, text: str) -> None:
        """Log a line."""
        self._write(text)

    def stop(self) -> None:
        """Nothing to close."""


class RichProgress:
    """A rich progress bar: description, bar, runs done / total, elapsed, ETA."""

    def __init__(self, console: Any | None = None) -> None:
        from rich.console import Console

        self.console = console or Console(stderr=True)
        self._bar: Any = None
        self._task: Any = None
        self.failed = 0

    def start(self, title: str, total: int, skipped: int) -> None:
        """Open the bar."""
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.progress import Progress as RichBar

        if skipped:
            self.console.print(
                f"{title}: {skipped} runs already finished, {total} to compute"
            )
        self._bar = RichBar(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("runs"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self.console,
        )
        self._bar.start()
        self._task = self._bar.add_task(title, total=total)

    def advance(self, description: str, ok: bool) -> None:
        """Advance the bar; failed runs are printed above it."""
        if not ok:
            self.failed += 1
            self.console.print(f"[red]FAILED[/red] {description}")
        if self._bar is not None:
            self._bar.advance(self._task)

    def message(self, text: str) -> None:
        """Print a line above the bar."""
        self.console.print(text)

    def stop(self) -> None:
        """Close the bar."""
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def make_progress(kind: str | Progress | None = "auto") -> Progress:
    """``"auto"`` (a bar on a terminal, else log lines), ``"bar"``, ``"log"``, ``"none"``."""
    if kind is None or kind == "none":
        return NullProgress()
    if not isinstance(kind, str):
        return kind
    if kind == "auto":
        kind = "bar" if sys.stderr.isatty() else "log"
    if kind == "bar":
        return RichProgress()
    if kind == "log":
        return LogProgress()
    raise ValueError(f"progress must be 'auto', 'bar', 'log' or 'none'; got {kind!r}.")
