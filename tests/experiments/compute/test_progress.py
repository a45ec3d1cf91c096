"""Progress: plain log lines with done/total, elapsed and ETA; a rich bar on terminals."""

from __future__ import annotations

import io
import re

from rich.console import Console

from banditkit.experiments.compute.progress import (
    LogProgress,
    NullProgress,
    RichProgress,
    make_progress,
)


def test_log_lines():
    stream = io.StringIO()
    progress = LogProgress(stream)
    progress.start("exp", 2, 3)
    progress.advance("linear / A / seed 0", True)
    progress.advance("linear / A / seed 1", False)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "exp: 2 runs to compute (3 already finished)"
    assert lines[1].startswith("[1/2] ok linear / A / seed 0 (elapsed 0:00, ETA")
    assert lines[2].startswith("[2/2] FAILED linear / A / seed 1")


def test_rich_bar_renders_counts():
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=100)
    progress = RichProgress(console)
    progress.start("exp", 2, 1)
    progress.advance("a", True)
    progress.advance("b", False)
    progress.stop()
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", buffer.getvalue())
    assert "2/2" in text and "FAILED" in text and "1 runs already finished" in text


def test_make_progress_modes():
    assert isinstance(make_progress("none"), NullProgress)
    assert isinstance(make_progress("log"), LogProgress)
    assert isinstance(
        make_progress("auto"), LogProgress
    )  # pytest's stderr is no terminal
