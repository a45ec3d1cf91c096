"""docs/assortment.md: its example runs and prints what the page shows."""

import contextlib
import io
import re
from pathlib import Path

DOC = Path(__file__).parents[2] / "docs" / "assortment.md"


def test_the_example_prints_what_the_page_shows():
    text = DOC.read_text()
    (block,) = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(block, {"__name__": "docs_example"})
    printed = out.getvalue()
    assert printed.count("\n") == 5
    assert f"prints\n\n```\n{printed}```" in text


def test_the_api_table_names_every_export():
    import banditkit as bk

    text = DOC.read_text()
    for name in bk.assortment.__all__:
        if name not in ("METHODS", "Assortment"):
            assert f"{name}(" in text
    for method in bk.assortment.METHODS:
        assert f'`"{method}"`' in text
