"""The prepared GPU script (``benchmarks/gpu_session.sh``) names what exists."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from banditkit.experiments.bench import discover
from banditkit.experiments.config.papers import select_figures

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "gpu_session.sh"


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_script_parses() -> None:
    subprocess.run(["bash", "-n", str(SCRIPT)], check=True)


def test_its_tests_benchmark_and_figure_exist() -> None:
    text = SCRIPT.read_text()
    for path in re.findall(r"\btests/[\w/]+(?:\.py)?", text):
        assert (ROOT / path).exists(), path
    (name,) = set(re.findall(r"bench --only (\w+)", text))
    assert [Path(b.name).stem for b in discover(ROOT / "benchmarks", only=[name])] == [
        name
    ]
    ((paper, figure),) = set(re.findall(r"reproduce (\w+) --figure (\w+)", text))
    _, configs = select_figures(paper, figure)
    assert list(configs) == [figure]
