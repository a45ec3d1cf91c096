"""docs/architecture.md section 11 lists exactly the public names of every public package.

A package's public names are its ``__all__``; ``policies.parts`` is public module by module
(own policies compose its parts). When a name is added or removed, regenerate the list with
``python tests/package/test_public_api.py`` and paste it into the page.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"

#: The public packages (and the public modules of ``policies.parts``), in the page's order.
PUBLIC = (
    "banditkit",
    "banditkit.core",
    "banditkit.core.params",
    "banditkit.linalg",
    "banditkit.glm",
    "banditkit.nn",
    "banditkit.assortment",
    "banditkit.datasets",
    "banditkit.plugins",
    "banditkit.policies",
    "banditkit.policies.parts.history",
    "banditkit.policies.parts.models",
    "banditkit.policies.parts.scorer",
    "banditkit.policies.parts.selection",
    "banditkit.policies.parts.schedules",
    "banditkit.policies.parts.weights",
    "banditkit.policies.parts.warmup",
    "banditkit.policies.parts.scored",
    "banditkit.policies.parts.stacked",
    "banditkit.policies.parts.stacked_network",
    "banditkit.policies.baselines",
    "banditkit.policies.logistic",
    "banditkit.policies.dueling",
    "banditkit.policies.ensemble",
    "banditkit.policies.mnl",
    "banditkit.policies.rare",
    "banditkit.envs",
    "banditkit.testing",
    "banditkit.experiments",
    "banditkit.ope",
    "banditkit.serve",
    "banditkit.errors",
)


def public_names(module: str) -> list[str]:
    return sorted(importlib.import_module(module).__all__)


def listed() -> dict[str, list[str]]:
    """Names per module, as section 11 of the page lists them."""
    text = PAGE.read_text(encoding="utf-8")
    section = text[text.index("## 11. The public API") :]
    items = re.findall(
        r"^- \*\*`([\w.]+)`\*\*(.*?)(?=^- \*\*`|^\n|\Z)", section, re.M | re.S
    )
    return {
        module: re.findall(r"`([\w]+)`", body.partition("Names:")[2])
        for module, body in items
    }


def expected_line(module: str) -> str:
    names = ", ".join(f"`{name}`" for name in public_names(module))
    return f"- **`{module}`**: ... Names: {names}."


def test_every_public_package_is_listed_in_order():
    assert list(listed()) == list(PUBLIC)


@pytest.mark.parametrize("module", PUBLIC)
def test_listed_names_are_the_public_names(module):
    assert listed()[module] == public_names(module), expected_line(module)


if __name__ == "__main__":
    for module in PUBLIC:
        print(expected_line(module))
