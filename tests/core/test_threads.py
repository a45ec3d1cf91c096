"""Thread counts of a run (core/threads.py): set inside, the caller's back outside."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch
from threadpoolctl import threadpool_info

import banditkit as bk
from banditkit.core.threads import limit_threads


def _blas_threads() -> set[int]:
    return {int(lib["num_threads"]) for lib in threadpool_info()}


class ThreadSpy(bk.ContextualPolicy):
    """Records the PyTorch and BLAS thread counts it computes under."""

    def __init__(self, *, seed: int = 0) -> None:
        super().__init__(seed=seed)
        self.torch_threads: set[int] = set()
        self.blas_threads: set[int] = set()

    def _act(self, ctx):
        self.torch_threads.add(torch.get_num_threads())
        self.blas_threads |= _blas_threads()
        return 0

    def _update(self, ctx, action, feedback):
        pass


@pytest.fixture
def two_threads():
    """The caller's own settings: two threads everywhere (restored afterwards)."""
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=2):
        yield
    torch.set_num_threads(before)


def test_limit_threads_sets_and_restores(two_threads):
    with limit_threads(1):
        assert torch.get_num_threads() == 1
        assert _blas_threads() == {1}
    assert torch.get_num_threads() == 2
    assert _blas_threads() == {2}


def test_limit_threads_restores_after_an_error(two_threads):
    with pytest.raises(RuntimeError), limit_threads(1):
        raise RuntimeError("inside")
    assert torch.get_num_threads() == 2


def test_limit_threads_refuses_zero():
    with pytest.raises(ValueError, match="threads"), limit_threads(0):
        pass


@pytest.mark.parametrize("threads", [1, 3])
def test_simulate_runs_the_policy_with_its_thread_count(two_threads, threads):
    spy = ThreadSpy()
    bk.simulate(spy, bk.make_env("linear", d=2, n_arms=2), 5, threads=threads)
    assert spy.torch_threads == {threads}
    assert spy.blas_threads == {threads}
    assert torch.get_num_threads() == 2  # the caller's setting is back


def test_simulate_defaults_to_one_thread(two_threads):
    spy = ThreadSpy()
    bk.simulate(spy, bk.make_env("linear", d=2, n_arms=2), 5)
    assert spy.torch_threads == {1} and spy.blas_threads == {1}


SCRIPT = textwrap.dedent(
    """
    import json, sys
    import banditkit as bk
    out = {}
    for name, params in json.loads(sys.argv[1]).items():
        env = bk.make_env("logistic", h="h1", d=6, n_arms=4)
        run = bk.simulate(bk.make_policy(name, seed=1, **params), env, 80, seed=1)
        out[name] = float(run.cumulative_regret[-1])
    print(json.dumps(out))
    """
)


def test_a_plain_script_and_banditkit_run_agree(tmp_path):
    """Same seed, same final regret: a script with the machine's threads, and the CLI."""
    policies = {
        "neural-ucb": {"width": 16, "steps": 5, "update_every": 10},
        "linucb": {"nu": 0.5},
    }
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith("_NUM_THREADS") and k != "VECLIB_MAXIMUM_THREADS"
    }
    script = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(policies)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    from_script = json.loads(script.stdout)
    config = tmp_path / "c.yaml"
    config.write_text(
        json.dumps(
            {
                "name": "threads",
                "horizon": 80,
                "seeds": [1],
                "env": {"name": "logistic", "h": "h1", "d": 6, "n_arms": 4},
                "policies": [{"name": n, **p} for n, p in policies.items()],
            }
        )
    )
    cli = [sys.executable, "-m", "banditkit", "run", str(config)]
    subprocess.run(
        [*cli, "--out", str(tmp_path / "out"), "--progress", "none", "--jobs", "1"],
        env=env,
        capture_output=True,
        check=True,
    )
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    from_cli = {r["policy"]: r["final_regret_mean"] for r in summary["results"]}
    assert from_cli == from_script
