"""Seeds of Neural-ES / Neural-PHE as one stack (policies.ensemble.stacked).

The stacked fit is checked against each ensemble's own ``fit_grouped`` (padded rows of
count 0 add nothing), a diverging seed against its own rescue, and stacked runs against
separate ``simulate`` runs: every action and regret in float64.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from banditkit.policies.ensemble import GroupedRows, NeuralEnsemble, PerturbedHistory
from banditkit.policies.ensemble.stacked import StackedEnsembles, fit_together
from tests.policies.helpers import assert_stack_equals_separate

ENV = {"function": "quadratic", "d": 6, "n_arms": 8}


def _model(seed: int, independent: bool = False) -> NeuralEnsemble:
    return NeuralEnsemble(
        4,
        3,
        width=6,
        depth=3,
        lam=0.5,
        steps=25,
        lr=0.05,
        reduction="mean",
        generator=torch.Generator().manual_seed(seed),
        independent_init=independent,
    )


def _rows(seed: int, n: int, K: int) -> GroupedRows:
    rng = np.random.default_rng(seed)
    arms = rng.standard_normal((K, 4))
    history = PerturbedHistory(4, 3)
    for _ in range(n):
        history.append(arms[rng.integers(K)], rng.normal(), rng.normal(0, 0.3, 3))
    return history.grouped()


@pytest.mark.parametrize("independent", [False, True])
def test_the_stacked_fit_is_each_ensembles_own_fit(independent: bool) -> None:
    """Seeds with 3, 5 and 7 distinct rows (padded to 7), n = 30 observations each."""
    models = [_model(s, independent) for s in range(3)]
    twins = [copy.deepcopy(m) for m in models]
    requests = [(m, _rows(s, 30, 3 + 2 * s), None) for s, m in enumerate(models)]
    fit_together(requests)
    for model, twin, (_, grouped, _) in zip(models, twins, requests, strict=True):
        twin.fit_grouped(grouped)
        for name in model.params:
            moved = (twin.params[name] - model.params0[name]).abs().max()
            assert moved > 1e-3
            torch.testing.assert_close(
                model.params[name], twin.params[name], rtol=1e-12, atol=1e-13
            )


def test_a_seed_that_diverges_is_rescued_on_its_own() -> None:
    models = [_model(s) for s in range(3)]
    twins = [copy.deepcopy(m) for m in models]
    requests = [(m, _rows(s, 30, 4), None) for s, m in enumerate(models)]
    model, (X, counts, sums), _ = requests[1]
    # lr 0.05 overshoots
    requests[1] = (model, GroupedRows(X * 40.0, counts, sums * 1e3), None)
    fit_together(requests)
    assert models[1].lr < 0.05 and models[0].lr == models[2].lr == 0.05
    for model, twin, (_, grouped, _) in zip(models, twins, requests, strict=True):
        twin.fit_grouped(grouped)
        assert model.lr == twin.lr
        for name in model.params:
            torch.testing.assert_close(
                model.params[name], twin.params[name], rtol=1e-10, atol=1e-12
            )


@pytest.mark.parametrize(
    ("name", "extra"),
    [
        ("neural-es", {"m": 3}),
        ("neural-es", {"m": 2, "warmup_strategy": "design", "independent_init": True}),
        ("neural-phe", {"update_every": 3}),
    ],
)
def test_stacked_runs_equal_separate_runs(name: str, extra: dict) -> None:
    params = {"width": 8, "steps": 10, "warmup": 8, **extra}
    members = assert_stack_equals_separate(
        name, params, "nonlinear", ENV, [0, 3, 7, 8], 50
    )
    assert isinstance(members, StackedEnsembles)


def test_anytime_restarts_stack_and_equal_separate_runs() -> None:
    """The doubling trick's restarts (t0 = 10, base 2: phases end at 10, 20, 40) come at
    the same rounds for every seed: the stack takes the separate runs' actions through
    them (new ensembles of m_i members, new warm-ups)."""
    params = {"width": 6, "steps": 5, "anytime": {"t0": 10, "base": 2}}
    members = assert_stack_equals_separate(
        "neural-es", params, "nonlinear", ENV, [0, 3, 7], 45
    )
    assert isinstance(members, StackedEnsembles)
    assert [p.phase for p in members.policies] == [3, 3, 3]
