"""A fast start: importing banditkit, its --help and list, and the non-neural policies
leave PyTorch (and the other slow imports) unimported."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[2] / "src")
SLOW = ("torch", "pandas", "scipy.optimize")


def _modules_after(code: str) -> set[str]:
    """The slow modules in sys.modules after running ``code`` in a fresh interpreter."""
    env = {
        **os.environ,
        "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
    probe = (
        f"{code}\nimport sys\nprint(' '.join(m for m in {SLOW!r} if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return set(out.stdout.split("\n")[-2].split())


def _cli(*args: str) -> str:
    return (
        "import sys, contextlib, io\n"
        "from banditkit.cli import main\n"
        f"sys.argv = ['banditkit', *{list(args)!r}]\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        "        main()\n"
        "    except SystemExit as exc:\n"
        "        assert not exc.code, exc.code\n"
    )


def test_import_banditkit_imports_no_slow_module() -> None:
    assert _modules_after("import banditkit") == set()


@pytest.mark.parametrize("args", [("--help",), ("list",), ("list", "policies")])
def test_help_and_list_import_no_slow_module(args: tuple[str, ...]) -> None:
    assert _modules_after(_cli(*args)) == set()


def test_linear_glm_and_logistic_policies_run_without_torch() -> None:
    code = (
        "import banditkit as bk\n"
        "for name in ('linucb', 'lints', 'glm-ucb', 'logistic-ucb1', 'ada-ofu-ecolog'):\n"
        "    env = bk.make_env('logistic', h='h1', d=3, n_arms=3)\n"
        "    bk.simulate(bk.make_policy(name, seed=0), env, horizon=8, seed=0)\n"
    )
    assert "torch" not in _modules_after(code)


def test_a_neural_policy_imports_torch_when_built() -> None:
    code = (
        "import banditkit as bk\n"
        "env = bk.make_env('logistic', h='h1', d=3, n_arms=3)\n"
        "bk.simulate(bk.make_policy('neural-ucb', width=4, seed=0), env, horizon=2, seed=0)\n"
    )
    assert "torch" in _modules_after(code)
