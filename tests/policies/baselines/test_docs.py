"""docs/baselines.md: its examples run and print what the page shows."""

import contextlib
import io
import re
from pathlib import Path

DOC = Path(__file__).parents[3] / "docs" / "baselines.md"


def _run(block: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(block, {"__name__": "docs_example"})
    return out.getvalue()


def test_each_example_prints_what_the_page_shows():
    text = DOC.read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    assert len(blocks) == 2
    for block, lines in zip(blocks, (5, 4), strict=True):
        printed = _run(block)
        assert printed.count("\n") == lines
        assert printed in text
