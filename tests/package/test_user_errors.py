"""No silent failure, and one place for a user's errors: banditkit.errors, exit 2, no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

import banditkit as bk
from banditkit.cli import app
from banditkit.core import POLICIES, ContextualPolicy
from banditkit.errors import (
    BanditkitError,
    ConfigError,
    DamagedFileError,
    DatasetError,
    MissingDatasetsError,
    OutputDirError,
    PolicyFileError,
    RunsFailedError,
    UnknownNameError,
    UnsavablePolicyError,
)

SRC = str(Path(__file__).resolve().parents[2] / "src")
CFG = {
    "name": "plain",
    "horizon": 15,
    "seeds": 2,
    "env": {"name": "linear", "d": 3, "n_arms": 3},
    "policies": [{"name": "random"}, {"name": "LinUCB"}],
}


def _python(code: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    script = cwd / "script.py"
    script.write_text(textwrap.dedent(code))
    full_env = {**os.environ, "PYTHONPATH": SRC, **env}
    return subprocess.run(
        [sys.executable, str(script)],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
    )


def test_the_documented_snippet_works_in_a_plain_script(tmp_path: Path) -> None:
    (tmp_path / "my.yaml").write_text(yaml.safe_dump(CFG))
    done = _python(
        """
        import banditkit as bk
        result = bk.run_experiment("my.yaml", out="results/my")
        print(result.ok, result.computed, [r["n_seeds"] for r in result.summary["results"]])
        """,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[-2] == "True 4 [2, 2]"


def test_an_unguarded_parallel_script_fails_loudly_with_advice(tmp_path: Path) -> None:
    (tmp_path / "my.yaml").write_text(yaml.safe_dump(CFG))
    done = _python(
        """
        import banditkit as bk
        bk.run_experiment("my.yaml", out="results/my", jobs=2, progress="none")
        """,
        tmp_path,
    )
    assert done.returncode != 0
    assert "RunsFailedError" in done.stderr and '__name__ == "__main__"' in done.stderr


def test_failed_runs_raise_listing_them(tmp_path: Path, monkeypatch) -> None:
    real = bk.core.simulate

    def failing(policy: Any, env: Any, horizon: int, seed: int = 0, **kw: Any) -> Any:
        if seed == 1:
            raise ZeroDivisionError("deliberate")
        return real(policy, env, horizon, seed, **kw)

    monkeypatch.setattr(bk.core, "simulate", failing)
    with pytest.raises(RunsFailedError) as info:
        bk.run_experiment(CFG, tmp_path / "o", progress="none", figures=False)
    assert len(info.value.failed) == 2 and info.value.exit_code == 1
    assert "ZeroDivisionError: deliberate" in str(info.value) and "re-run" in str(
        info.value
    )
    assert isinstance(info.value, BanditkitError)


def test_the_public_errors_keep_their_builtin_bases() -> None:
    assert issubclass(ConfigError, ValueError) and issubclass(
        ConfigError, BanditkitError
    )
    assert issubclass(OutputDirError, OSError) and issubclass(
        OutputDirError, BanditkitError
    )
    assert issubclass(MissingDatasetsError, FileNotFoundError)
    assert issubclass(MissingDatasetsError, DatasetError)
    assert issubclass(PolicyFileError, DamagedFileError)
    assert issubclass(UnknownNameError, ValueError)


def test_names_match_ignoring_case_and_underscores() -> None:
    assert type(bk.make_policy("LinUCB")) is type(bk.make_policy("linucb"))
    assert type(bk.make_policy("Neural_UCB", width=4)).__name__ == "NeuralUCB"
    with pytest.raises(UnknownNameError, match="Did you mean 'linucb'"):
        bk.make_policy("LinUCBB")


def test_a_config_name_is_stored_in_its_registered_spelling(tmp_path: Path) -> None:
    bk.run_experiment(CFG, tmp_path / "o", progress="none", figures=False)
    stored = yaml.safe_load((tmp_path / "o" / "config.yaml").read_text())
    assert [p["name"] for p in stored["policies"]] == ["random", "linucb"]


runner = CliRunner()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["run", "missing.yaml", "--out", "o"], "missing.yaml: file not found"),
        (["reproduce", "no-such-paper", "--out", "o"], "unknown paper 'no-such-paper'"),
        (["plot", "nowhere"], "not found"),
    ],
)
def test_user_errors_exit_2_in_two_lines_at_most(
    tmp_path: Path, monkeypatch, args: list[str], expected: str
) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert expected in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) <= 2


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": SRC}
    cmd = [sys.executable, "-m", "banditkit"]
    plain = subprocess.run(
        [*cmd, "run", "missing.yaml", "--out", "o"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert plain.returncode == 2 and "Traceback" not in plain.stderr
    for extra_args, extra_env in (
        (["--debug"], {}),
        ([], {"BANDITKIT_DEBUG": "1"}),
    ):
        shown = subprocess.run(
            [*cmd, *extra_args, "run", "missing.yaml", "--out", "o"],
            cwd=tmp_path,
            env={**env, **extra_env},
            capture_output=True,
            text=True,
        )
        assert "Traceback" in shown.stderr and "ConfigError" in shown.stderr


class _Forgetful(ContextualPolicy):
    """Keeps its counts in an attribute it does not save."""

    def __init__(self, *, seed: int = 0) -> None:
        super().__init__(seed=seed)
        self.counts = np.zeros(0)

    def _setup(self, ctx: Any) -> None:
        self.counts = np.zeros(ctx.n_arms)

    def _act(self, ctx: Any) -> int:
        return int(np.argmin(self.counts))

    def _update(self, ctx: Any, action: Any, feedback: Any) -> None:
        self.counts[action] += 1


def test_save_policy_refuses_what_it_cannot_bring_back(tmp_path: Path) -> None:
    policy = _Forgetful()
    with pytest.raises(UnsavablePolicyError, match="not registered"):
        bk.save_policy(policy, tmp_path / "p.bk")
    POLICIES.register("test-forgetful")(_Forgetful)
    try:
        env = bk.make_env("linear", d=2, n_arms=3)
        bk.simulate(policy, env, horizon=4, seed=0)
        with pytest.raises(UnsavablePolicyError, match="counts"):
            bk.save_policy(policy, tmp_path / "p.bk")
        assert not (tmp_path / "p.bk").exists()
        fresh = _Forgetful()
        bk.save_policy(fresh, tmp_path / "fresh.bk")  # nothing learned yet: fine
        assert isinstance(bk.load_policy(tmp_path / "fresh.bk"), _Forgetful)
    finally:
        POLICIES.unregister("test-forgetful")


def test_command_line_names_ignore_case() -> None:
    listed = runner.invoke(app, ["list", "Policies"])
    assert listed.exit_code == 0 and "linucb" in listed.output
    path = runner.invoke(app, ["datasets", "path", "MNIST"])
    assert path.exit_code == 0 and "mnist" in path.output
