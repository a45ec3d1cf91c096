"""The Python snippets of README.md and the general docs pages run as written.

The family and feature pages run their own examples (tests/*/test_docs.py); this file covers
README.md, docs/architecture.md, docs/datasets.md and docs/experiments.md, each in a fresh
working directory holding the small ``my.yaml`` those snippets refer to.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

MY_YAML = """\
name: my
horizon: 30
seeds: 2
env: {name: linear, d: 3, n_arms: 4}
policies:
  - {name: random}
  - {name: linucb}
"""


def blocks(page: str) -> list[str]:
    """The ```python blocks of a page, in order."""
    return re.findall(r"```python\n(.*?)```", (ROOT / page).read_text(), flags=re.S)


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    (tmp_path / "my.yaml").write_text(MY_YAML)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run_blocks(page: str, namespace: dict | None = None) -> dict:
    namespace = {} if namespace is None else namespace
    for i, code in enumerate(blocks(page)):
        exec(compile(code, f"{page}[{i}]", "exec"), namespace)
    return namespace


def test_readme_quick_tour_and_own_loop(workdir):
    assert len(blocks("README.md")) == 2
    ns = run_blocks("README.md")
    assert ns["run"].horizon == 2000 and (workdir / "policy.bk").is_file()
    assert ns["policy"].t == 2000 + 100  # the own loop continued the loaded policy


def test_architecture_api_tour(workdir):
    ns = run_blocks("docs/architecture.md")
    assert ns["result"].ok and (workdir / "results" / "my" / "summary.json").is_file()


def test_experiments_python_api(workdir):
    from banditkit.experiments.config.metrics import METRICS

    try:
        ns = run_blocks("docs/experiments.md")
    finally:
        METRICS.pop("regret-per-update", None)
    assert ns["result"].ok
    assert len(ns["runs"]) == 2 * 2 * 30 and len(ns["final"]) == 2 * 2


@pytest.mark.skipif(
    not os.environ.get("BANDITKIT_DATA"),
    reason="needs BANDITKIT_DATA (shuttle, magic, obd)",
)
def test_datasets_page(workdir):
    ns = run_blocks("docs/datasets.md")
    assert ns["ds"].features.shape == (58000, 9) and ns["ds"].n_classes == 7
