"""Seeds of one NVLDB / NLDB configuration trained as one stack (``dueling.stacked``).

The stacked play must take the actions of the separate runs in float64 on the CPU,
bitwise (the trainer computes a stack member by member there:
``nn._kernels.member_by_member``), agree with them within noise in float32 (batched
kernels), and be picked by the runner on its own.
"""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
import torch

import banditkit as bk
from banditkit.core.members import Separate, stack
from banditkit.core.simulate import simulate_seeds
from banditkit.experiments.config.resolved import RunSpec
from banditkit.experiments.plan.tasks import SeedGroup, group_seeds
from banditkit.experiments.store.tidy import load_runs
from banditkit.policies.dueling.stacked import StackedDuels, StackedNeuralLinear

SEEDS = [0, 1, 2]
SMALL = {"width": 8, "steps": 3}


def _runs(name: str, stacked: bool, horizon: int = 16, **params: object) -> list:
    policies = [bk.make_policy(name, seed=s, **SMALL, **params) for s in SEEDS]
    envs = [bk.make_env("dueling", utility="cos", d=4, n_arms=5) for _ in SEEDS]
    members = stack(policies) if stacked else Separate(policies)
    assert isinstance(members, StackedDuels) or not stacked
    return simulate_seeds(policies, envs, horizon, SEEDS, members=members)


def _actions(runs: list) -> list:
    return [np.asarray(r.actions).tolist() for r in runs]


def _agreement(a: list, b: list) -> np.ndarray:
    """Per member, whether each round's pair is the same (S, T)."""
    return np.array(
        [
            np.all(np.asarray(x) == np.asarray(y), axis=-1)
            for x, y in zip(a, b, strict=True)
        ]
    )


def test_one_stacked_fit_is_each_members_own_fit():
    """The stack's building block against the members' own ``fit``: bitwise in float64."""
    policies = [bk.make_policy("nvldb-ucb", seed=s, **SMALL) for s in SEEDS]
    envs = [bk.make_env("dueling", utility="cos", d=4, n_arms=5) for _ in SEEDS]
    simulate_seeds(policies, envs, 6, SEEDS, members=Separate(policies))
    models = [p.model for p in policies]
    separate = [copy.deepcopy(m) for m in models]
    stacked = StackedNeuralLinear(models, capacity=2)  # grown on the way
    for i in range(policies[0].history.n):
        stacked.append(
            np.stack([p.history.X1[i] for p in policies]),
            np.stack([p.history.X2[i] for p in policies]),
            np.array([p.history.outcome[i] for p in policies]),
        )
    stacked.fit(np.stack([p.history.w for p in policies]))
    arms = np.random.default_rng(0).normal(size=(7, 4))
    for model, alone, policy in zip(models, separate, policies, strict=True):
        alone.fit(policy.history)
        for name, value in alone.params.items():
            assert torch.equal(model.params[name], value), name
        f, phi = model.evaluate(arms)  # the member reads its slice of the stack
        f_alone, phi_alone = alone.evaluate(arms)
        np.testing.assert_array_equal(phi, phi_alone)
        np.testing.assert_array_equal(f, f_alone)


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("nvldb-ucb", {}),
        ("nvldb-ts", {"rule": "csym"}),
        ("nldb-ucb", {"rule": "osym"}),
        ("nldb-ts", {}),
        ("nvldb-ucb", {"gram_mode": "incremental", "zeta_mode": "frozen"}),
        ("nvldb-ucb", {"link": "thurstone", "penalised": "head", "update_every": 3}),
        ("nvldb-ts", {"variance_mode": "oracle", "depth": 2}),
    ],
)
def test_stacked_seeds_take_the_separate_runs_actions(name, params):
    """float64 on the CPU: every round the separate runs' pair, and the same regret.

    (Before the trainer computed a stack member by member, batched products made a
    seed part from its separate run within a few dozen rounds, by rounding that Adam
    amplified on the head bias.)
    """
    separate = _runs(name, False, horizon=40, **params)
    stacked = _runs(name, True, horizon=40, **params)
    assert _agreement(_actions(stacked), _actions(separate)).all()
    for a, b in zip(stacked, separate, strict=True):
        np.testing.assert_array_equal(a.n_updates, b.n_updates)
        np.testing.assert_array_equal(a.regret, b.regret)


def test_float32_stacked_equals_separate_within_noise():
    separate = _runs("nvldb-ucb", False, horizon=30, dtype="float32")
    stacked = _runs("nvldb-ucb", True, horizon=30, dtype="float32")
    assert _agreement(_actions(stacked), _actions(separate)).mean() >= 0.6
    total = [sum(float(r.regret.sum()) for r in runs) for runs in (stacked, separate)]
    assert total[0] == pytest.approx(total[1], rel=0.25)


def test_the_runner_groups_dueling_seeds():
    env = {"utility": "cos", "d": 4, "n_arms": 5}
    specs = [
        RunSpec("dueling", env, "nvldb-ucb", SMALL, seed=s, horizon=8) for s in SEEDS
    ]
    specs.append(RunSpec("dueling", env, "colstim", {}, seed=0, horizon=8))
    tasks = group_seeds(specs, "on")
    groups = [t for t in tasks if isinstance(t, SeedGroup)]
    assert len(groups) == 1 and [s.seed for s in groups[0].specs] == SEEDS
    assert stack([bk.make_policy("ndb-ucb", seed=s) for s in SEEDS]) is None


def test_the_runner_stores_batched_duels_as_separate_runs(tmp_path):
    cfg = {
        "name": "duels",
        "horizon": 8,
        "seeds": 3,
        "env": {"name": "dueling", "utility": "cos", "d": 4, "n_arms": 5},
        "policies": [{"name": "nvldb-ucb", **SMALL}],
    }
    metas = {}
    for mode in ("on", "off"):
        result = bk.run_experiment(
            cfg, tmp_path / mode, progress="none", figures=False, batch_seeds=mode
        )
        assert result.ok and result.computed == 3
        metas[mode] = {
            p.name: json.loads(p.read_text())
            for p in (tmp_path / mode / "runs").glob("*.json")
        }
    assert sorted(metas["on"]) == sorted(metas["off"])  # the same run ids
    assert [m["batched_seeds"] for m in metas["on"].values()] == [3, 3, 3]
    assert all("batched_seeds" not in m for m in metas["off"].values())
    keys = ["seed", "t"]
    on, off = (
        load_runs(tmp_path / mode).sort_values(keys).reset_index(drop=True)
        for mode in ("on", "off")
    )
    np.testing.assert_allclose(on["regret"], off["regret"], atol=1e-12)
