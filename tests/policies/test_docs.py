"""The worked examples of docs/models.md run and their assertions hold."""

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "models.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


def test_the_page_has_one_example_per_family_and_composition():
    text = DOC.read_text()
    for family in ("### Contextual", "### Dueling", "### Assortment", "neural-linear"):
        assert family in text
    assert "### Adding a UCB or TS variant" in text
    assert len(BLOCKS) == 7  # declared parameters, a UCB/TS variant, five families


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_example_runs(index):
    exec(compile(BLOCKS[index], f"{DOC.name}[{index}]", "exec"), {})
