"""Progress a user can trust: ETAs from runs of the same kind, a bar for one long simulate,
terminal lines within 100 columns, report parameters as differences from defaults."""

from __future__ import annotations

import io
from typing import Any

import numpy as np

import banditkit as bk
from banditkit.core.roundbar import RoundBar
from banditkit.experiments.compute.progress import Eta, LogProgress
from banditkit.experiments.report.markdown import results_table


def _kind(env: str, policy: str, params: str = "", rounds: int = 100) -> Any:
    return (((env, policy, params), (env, policy), policy), rounds)


def test_eta_uses_the_cost_of_the_same_kind_not_the_first_runs() -> None:
    # 2 slow neural runs first, then 98 cheap linear runs: the mean of the first runs
    # would predict 98 x 10 s; the kinds predict what is left of each kind.
    slow, cheap = _kind("e", "neural-ucb"), _kind("e", "linucb")
    eta = Eta([slow] * 2 + [cheap] * 98, workers=1)
    eta.finished(slow, 10.0)
    eta.finished(slow, 10.0)
    eta.finished(cheap, 0.1)
    seconds, exact = eta.left()
    assert exact and np.isclose(seconds, 97 * 0.1)


def test_eta_of_an_unmeasured_kind_scales_a_close_kind_per_round() -> None:
    a, b = _kind("e", "linucb", "nu=1", 100), _kind("e", "linucb", "nu=2", 400)
    eta = Eta([a, b], workers=2)
    assert eta.text() == "?"
    eta.finished(a, 2.0)
    seconds, exact = eta.left()
    assert not exact and np.isclose(
        seconds, 8.0
    )  # 400 rounds at 0.02 s, one worker busy
    assert eta.text() == "~0:08"


def test_log_lines_fit_100_columns_with_the_eta() -> None:
    stream = io.StringIO()
    progress = LogProgress(stream)
    progress.start("exp", 2, 0)
    kind = _kind("e", "p")
    progress.plan([kind, kind], 1)
    progress.measured(kind, 3.0)
    progress.advance("x" * 300, True)
    line = stream.getvalue().splitlines()[1]
    assert len(line) == 100 and line.endswith("ETA 0:03)") and "…" in line


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_round_bar_is_quiet_off_a_terminal_and_shown_on_one() -> None:
    quiet = io.StringIO()
    bar = RoundBar(50, None, "p", stream=quiet)
    for n in range(1, 51):
        bar.tick(n)
    bar.close()
    assert quiet.getvalue() == ""
    shown = _Terminal()
    bar = RoundBar(50, True, "linucb", stream=shown)
    for n in range(1, 51):
        bar.tick(n)
    bar.close()
    assert "linucb: 50 of 50 rounds in" in shown.getvalue()
    off = _Terminal()
    bar = RoundBar(50, False, "p", stream=off)
    bar.tick(50)
    bar.close()
    assert off.getvalue() == ""


def test_the_bar_does_not_change_results(capsys) -> None:
    def run(progress: bool | None) -> Any:
        env = bk.make_env("logistic", h="h1", d=3, n_arms=3)
        return bk.simulate(
            bk.make_policy("linucb", seed=0), env, 60, seed=1, progress=progress
        )

    shown, plain = run(True), run(False)
    assert "linucb: 60 of 60 rounds" in capsys.readouterr().err
    assert np.array_equal(shown.regret, plain.regret)
    assert np.array_equal(shown.actions, plain.actions)


def test_report_parameters_are_the_differences_from_defaults() -> None:
    defaults = bk.make_policy("linucb").get_params()
    changed = {**defaults, "nu": defaults["nu"] * 3}
    rows = [
        {
            "env": "e",
            "label": label,
            "policy": "linucb",
            "params": params,
            "n_seeds": 2,
            "final_regret_mean": 1.0,
            "final_regret_std": 0.1,
            "final_regret_ci": [0.9, 1.1],
            "seconds_mean": 0.1,
            "n_updates_mean": 1.0,
        }
        for label, params in (("A", defaults), ("B", changed))
    ]
    table = results_table({"results": rows}).splitlines()
    assert "| A | defaults |" in table[2]
    assert f"| B | nu={defaults['nu'] * 3} |" in table[3]
