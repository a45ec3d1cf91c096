"""Progress reporting: a rich progress bar on a terminal, plain log lines otherwise.

Both show runs done / total, elapsed time and an estimate of the time left. They write to
standard error, so that standard output stays free for results, and fit 100 columns.

The estimate (:class:`Eta`) comes from the measured cost of the finished runs of the same
kind: a run left is expected to take the median wall time of the finished runs with the same
environment, policy, parameters and horizon (seeds differ); for a kind none of whose runs has
finished yet, the median cost per round of the closest finished kind (same environment and
policy name, else same policy name, else any) times its horizon, and the estimate is shown
as approximate ("~"). The sum is divided by the workers busy on what is left.
"""

from __future__ import annotations

import shutil
import statistics
import sys
import time
from collections.abc import Hashable, Sequence
from typing import Any, Protocol, TextIO

from banditkit.experiments.config.resolved import RunSpec

__all__ = [
    "Eta",
    "LogProgress",
    "NullProgress",
    "Progress",
    "RichProgress",
    "RunKind",
    "make_progress",
    "run_kind",
]

#: Terminal lines are cut to this many characters.
WIDTH = 100

#: What identifies a kind of run, from the most to the least specific level, and its rounds:
#: ``((full key, (env, policy name), policy name), horizon)``.
RunKind = tuple[tuple[Hashable, ...], int]


def run_kind(spec: RunSpec) -> RunKind:
    """The kind of a run for the estimate: its own kind, then coarser levels, and its rounds.

    Example:
        >>> kind = run_kind(RunSpec("linear", {}, "random", {}, 0, 10))
        >>> kind[0][1:], kind[1]
        ((('linear', 'random'), 'random'), 10)
    """
    return (
        (spec.kind, (spec.env_name, spec.policy_name), spec.policy_name),
        spec.horizon,
    )


class Eta:
    """Time left from the measured cost of finished runs of the same kind (module docstring).

    Args:
        kinds: The kind of every run left to compute.
        workers: Runs computed side by side.

    Example:
        >>> eta = Eta([((("a",), "p"), 10), ((("a",), "p"), 10), ((("b",), "p"), 20)], 1)
        >>> eta.finished(((("a",), "p"), 10), 3.0)
        >>> eta.left()  # 3 s for the other "a" run, 20 rounds at 0.3 s for "b"
        (9.0, False)
        >>> eta.finished(((("a",), "p"), 10), 5.0); eta.finished(((("b",), "p"), 20), 1.0)
        >>> eta.left()
        (0.0, True)
    """

    def __init__(self, kinds: Sequence[RunKind], workers: int = 1) -> None:
        self.pending: dict[RunKind, int] = {}
        for kind in kinds:
            self.pending[kind] = self.pending.get(kind, 0) + 1
        self.workers = max(1, int(workers))
        self.costs: dict[Hashable, list[float]] = {}
        self.per_round: dict[Hashable, list[float]] = {}

    def finished(self, kind: RunKind, seconds: float | None) -> None:
        """A run of ``kind`` ended; ``seconds`` is its wall time (None: failed, not measured)."""
        if self.pending.get(kind, 0) > 0:
            self.pending[kind] -= 1
        if seconds is None or seconds < 0:
            return
        levels, rounds = kind
        self.costs.setdefault(levels[0], []).append(seconds)
        for level in (*levels, None):
            self.per_round.setdefault(level, []).append(seconds / max(rounds, 1))

    def _estimate(self, kind: RunKind) -> tuple[float | None, bool]:
        levels, rounds = kind
        if levels[0] in self.costs:
            return statistics.median(self.costs[levels[0]]), True
        for level in (*levels[1:], None):
            if level in self.per_round:
                return statistics.median(self.per_round[level]) * rounds, False
        return None, False

    def left(self) -> tuple[float | None, bool]:
        """(seconds left or None when nothing is measured yet, all kinds measured)."""
        total, exact, count = 0.0, True, 0
        for kind, n in self.pending.items():
            if n <= 0:
                continue
            seconds, measured = self._estimate(kind)
            if seconds is None:
                return None, False
            total += n * seconds
            exact = exact and measured
            count += n
        return total / max(1, min(self.workers, count)), exact

    def text(self) -> str:
        """``"0:12"``, ``"~0:12"`` (approximate) or ``"?"`` (nothing measured yet)."""
        seconds, exact = self.left()
        if seconds is None:
            return "?"
        return ("" if exact else "~") + _clock(seconds)


def fit(text: str, width: int = WIDTH) -> str:
    """``text`` cut to ``width`` characters, an ellipsis marking the cut.

    Example:
        >>> fit("abcdef", 4)
        'abc…'
    """
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


class Progress(Protocol):
    """What the runner reports to."""

    def start(self, title: str, total: int, skipped: int) -> None:
        """``total`` runs to compute now; ``skipped`` were already finished."""

    # Optional (the runner calls them when present): ``plan(kinds, workers)`` with the
    # RunKind of every run to compute, and ``measured(kind, seconds)`` before each
    # ``advance``, feed an :class:`Eta`.

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
        self.eta: Eta | None = None

    def _write(self, text: str) -> None:
        stream = self.stream or sys.stderr
        print(fit(text), file=stream, flush=True)

    def start(self, title: str, total: int, skipped: int) -> None:
        """Log the plan."""
        self.total, self.done, self.t0 = total, 0, time.monotonic()
        self.eta = None
        note = f" ({skipped} already finished)" if skipped else ""
        self._write(f"{title}: {total} runs to compute{note}")

    def plan(self, kinds: Sequence[RunKind], workers: int) -> None:
        """The kind of every run to compute (for the ETA)."""
        self.eta = Eta(kinds, workers)

    def measured(self, kind: RunKind, seconds: float | None) -> None:
        """A run of ``kind`` took ``seconds`` (None: failed)."""
        if self.eta is not None:
            self.eta.finished(kind, seconds)

    def _eta_text(self) -> str:
        if self.eta is not None:
            return self.eta.text()
        elapsed = time.monotonic() - self.t0
        return _clock(elapsed / max(self.done, 1) * (self.total - self.done))

    def advance(self, description: str, ok: bool) -> None:
        """Log one finished run with elapsed time and ETA (the line fits 100 columns)."""
        self.done += 1
        elapsed = time.monotonic() - self.t0
        status = "ok" if ok else "FAILED"
        head = f"[{self.done}/{self.total}] {status} "
        tail = f" (elapsed {_clock(elapsed)}, ETA {self._eta_text()})"
        self._write(head + fit(description, WIDTH - len(head) - len(tail)) + tail)

    def message(self, text: str) -> None:
        """Log a line."""
        self._write(text)

    def stop(self) -> None:
        """Nothing to close."""


class RichProgress:
    """A rich progress bar: description, bar, runs done / total, elapsed, ETA."""

    def __init__(self, console: Any | None = None) -> None:
        from rich.console import Console

        if console is None:
            width = min(WIDTH, shutil.get_terminal_size((WIDTH, 24)).columns)
            console = Console(stderr=True, width=width)
        self.console = console
        self._bar: Any = None
        self._task: Any = None
        self.failed = 0
        self.eta: Eta | None = None

    def start(self, title: str, total: int, skipped: int) -> None:
        """Open the bar."""
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            TextColumn,
            TimeElapsedColumn,
        )
        from rich.progress import Progress as RichBar

        self.eta = None

        if skipped:
            self.console.print(
                fit(f"{title}: {skipped} runs already finished, {total} to compute")
            )
        self._bar = RichBar(
            TextColumn("[bold]{task.description}"),
            BarColumn(bar_width=30),
            MofNCompleteColumn(),
            TextColumn("runs"),
            TimeElapsedColumn(),
            TextColumn("ETA {task.fields[eta]}"),
            console=self.console,
        )
        self._bar.start()
        self._task = self._bar.add_task(fit(title, 30), total=total, eta="?")

    def plan(self, kinds: Sequence[RunKind], workers: int) -> None:
        """The kind of every run to compute (for the ETA)."""
        self.eta = Eta(kinds, workers)

    def measured(self, kind: RunKind, seconds: float | None) -> None:
        """A run of ``kind`` took ``seconds`` (None: failed)."""
        if self.eta is not None:
            self.eta.finished(kind, seconds)

    def advance(self, description: str, ok: bool) -> None:
        """Advance the bar; failed runs are printed above it."""
        if not ok:
            self.failed += 1
            self.console.print(f"[red]FAILED[/red] {fit(description, WIDTH - 7)}")
        if self._bar is not None:
            eta = self.eta.text() if self.eta is not None else "?"
            self._bar.update(self._task, advance=1, eta=eta)

    def message(self, text: str) -> None:
        """Print a line above the bar."""
        self.console.print(fit(text))

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
