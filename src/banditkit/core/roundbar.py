"""A progress bar over the rounds of one long ``simulate`` (on a terminal only).

``simulate(..., progress=None)`` (the default) shows it on standard error when that is a
terminal and the run has lasted :data:`DELAY_SECONDS` already, so short runs, scripts whose
output goes to a file, tests and the experiment runner's workers stay quiet;
``progress=True`` shows it at once (even when standard error is not a terminal),
``progress=False`` never. It only reads the round counter: results are unchanged.
"""

from __future__ import annotations

import shutil
import sys
import time
from typing import Any

__all__ = ["DELAY_SECONDS", "RoundBar"]

#: Seconds a run must have lasted before the automatic bar appears.
DELAY_SECONDS = 2.0
#: Rounds between two looks at the clock (keeps the cost per round negligible).
_EVERY = 16


class RoundBar:
    """Rounds done / horizon, elapsed time and time left, for one run.

    Args:
        horizon: Rounds of the run.
        mode: None (automatic, see the module docstring), True (at once) or False (never).
        label: Text in front of the bar.
        stream: Where to draw (standard error by default).
    """

    def __init__(
        self,
        horizon: int,
        mode: bool | None,
        label: str = "simulate",
        stream: Any = None,
    ) -> None:
        self.horizon = horizon
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        terminal = bool(getattr(self.stream, "isatty", lambda: False)())
        self.enabled = mode is True or (mode is None and terminal)
        self.delay = 0.0 if mode is True else DELAY_SECONDS
        self.t0 = time.monotonic()
        self._bar: Any = None
        self._task: Any = None
        self.done = 0

    def tick(self, n: int) -> None:
        """``n`` rounds are done."""
        self.done = n
        if not self.enabled or (n % _EVERY and n != self.horizon):
            return
        if self._bar is None:
            if time.monotonic() - self.t0 < self.delay:
                return
            self._open()
        self._bar.update(self._task, completed=n)

    def _open(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        console = Console(file=self.stream, width=min(100, _width(self.stream)))
        self._bar = Progress(
            TextColumn(self.label),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("rounds"),
            TimeElapsedColumn(),
            TextColumn("left"),
            TimeRemainingColumn(),
            console=console,
            transient=True,
        )
        self._bar.start()
        self._task = self._bar.add_task(self.label, total=self.horizon)

    def close(self) -> None:
        """Remove the bar (it is transient) and print one line with the time taken."""
        if self._bar is not None:
            self._bar.stop()
            elapsed = time.monotonic() - self.t0
            print(
                f"{self.label}: {self.done} of {self.horizon} rounds in {elapsed:.1f} s",
                file=self.stream,
            )
            self._bar = None


def _width(stream: Any) -> int:
    return shutil.get_terminal_size((100, 24)).columns if stream is sys.stderr else 100
