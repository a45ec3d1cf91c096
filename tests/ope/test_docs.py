"""docs/ope.md: its examples run and print what the page shows."""

import contextlib
import io
import re
from pathlib import Path

from tests.datasets._data import require_reference_data

DOC = Path(__file__).parents[2] / "docs" / "ope.md"


def _run(block: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(block, {"__name__": "docs_example"})
    return out.getvalue()


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)


def test_the_simulated_example_prints_what_the_page_shows():
    text = DOC.read_text()
    printed = _run(_python_blocks()[0])
    assert printed.count("\n") == 3
    assert printed in text


def test_the_obd_numbers_on_the_page_are_the_ones_computed(monkeypatch):
    monkeypatch.setenv("BANDITKIT_DATA", str(require_reference_data("obd")))
    monkeypatch.setenv("BANDITKIT_OFFLINE", "1")
    from banditkit import ope

    text = DOC.read_text()
    printed = _run(_python_blocks()[1])
    assert "reference   0.0038" in printed
    rows = {
        line.split("|")[1].split()[0]: line
        for line in text.splitlines()
        if "items) |" in line
    }
    for campaign in ("all", "men", "women"):
        est, ref = ope.obd_uniform_check(campaign, methods=("ips", "snips", "dr", "dm"))
        row = rows[campaign]
        assert f"{ref.value:.4f} [{ref.ci[0]:.4f}, {ref.ci[1]:.4f}]" in row
        for name in ("ips", "snips", "dr"):
            e = est[name]
            assert f"{e.value:.4f} [{e.ci[0]:.4f}, {e.ci[1]:.4f}]" in row, (
                campaign,
                name,
            )


def test_the_propensity_example_prints_what_the_page_shows():
    text = DOC.read_text()
    block = next(b for b in _python_blocks() if "explore_floor" in b)
    printed = _run(block)
    assert printed.count("\n") == 2
    assert printed in text


def test_the_duels_example_prints_what_the_page_shows():
    printed = _run(next(b for b in _python_blocks() if "log_from_runs(out)" in b))
    lines = printed.splitlines()
    assert len(lines) == 4 and lines[0].startswith("pair 2000 16")
    assert "\n".join(lines) in DOC.read_text()
