"""Defaults that learn: ``make_policy(name)`` with no hyper-parameters beats random play.

The practical defaults of the NeuralLog family and NCBF-UCB (nu, lam, width 20, refit
every 50 rounds with 100 GD steps at lr 0.01) must learn on the paper's synthetic latent
functions and on a classification bandit without any tuning (docs/logistic.md, section
"Fidelity"). Before the widths were calibrated, the default nu = 1 gave random play.
"""

from __future__ import annotations

from functools import cache

import pytest

import banditkit as bk
from tests.policies.helpers import mean_final_regret

NAMES = [
    "neurallog-ucb1",
    "neurallog-ucb2",
    "neurallog-ts1",
    "neurallog-ts2",
    "ncbf-ucb",
]
SYNTHETIC = {
    "h1": {"h": "h1", "d": 10, "n_arms": 5},
    "h3": {"h": "h3", "d": 10, "n_arms": 5},
}
HORIZON = 400


@cache
def _random(label: str) -> float:
    env = bk.make_env("logistic", **SYNTHETIC[label])
    return mean_final_regret("random", env, HORIZON)


@pytest.mark.parametrize("name", NAMES)
def test_defaults_beat_random_play_on_synthetic_functions(name: str) -> None:
    ratios = {}
    for label, params in SYNTHETIC.items():
        env = bk.make_env("logistic", **params)
        ratios[label] = mean_final_regret(name, env, HORIZON) / _random(label)
    assert max(ratios.values()) < 0.85, ratios
    assert sum(ratios.values()) / len(ratios) < 0.8, ratios


def test_ucb2_defaults_beat_random_play_on_a_classification_bandit() -> None:
    env = bk.make_env("classification", dataset="digits")
    regret = mean_final_regret("neurallog-ucb2", env, 300, seeds=1)
    uniform = mean_final_regret("random", env, 300, seeds=1)
    assert regret < 0.8 * uniform, (regret, uniform)
