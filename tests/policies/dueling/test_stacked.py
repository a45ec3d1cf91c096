"""Seeds of one NVLDB / NLDB / NDB configuration trained as one stack (``dueling.stacked``).

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
from banditkit.nn import flat_params
from banditkit.policies.dueling.stacked import DuelBuffers, StackedDuels
from banditkit.policies.parts.history import PairHistory
from banditkit.policies.parts.models.stacking import fit_stack

SEEDS = [0, 1, 2]
SMALL = {"width": 8, "steps": 3}
#: The exact path, where a stack is bitwise its separate runs (NVLDB / NLDB default to
#: float32 on the distinct duels; NDB is float64 on every duel by default anyway).
EXACT = {"dtype": "float64", "distinct_duels": False}


def _runs(name: str, stacked: bool, horizon: int = 16, **params: object) -> list:
    params = {**SMALL, **EXACT, **params}
    policies = [bk.make_policy(name, seed=s, **params) for s in SEEDS]
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


def _buffers(histories: list, models: list, capacity: int = 2) -> DuelBuffers:
    """The histories' duels in stacked buffers (grown on the way)."""
    like = next(iter(models[0].fit_recipe(histories[0]).params.values()))
    buffers = DuelBuffers(len(histories), histories[0].d, capacity, like)
    buffers.sync(histories)  # grown past ``capacity`` on the way
    return buffers


def _observations(buffers: DuelBuffers, histories: list):
    def observations(chosen: list, weighted: bool):
        w = np.stack([histories[s].w for s in chosen]) if weighted else None
        return buffers.pairs(chosen, w)

    return observations


@pytest.mark.parametrize("name", ["nvldb-ucb", "ndb-ucb"])
def test_one_stacked_fit_is_each_members_own_fit(name):
    """The stack's building block against the members' own ``fit``: bitwise in float64."""
    policies = [bk.make_policy(name, seed=s, **SMALL, **EXACT) for s in SEEDS]
    envs = [bk.make_env("dueling", utility="cos", d=4, n_arms=5) for _ in SEEDS]
    simulate_seeds(policies, envs, 6, SEEDS, members=Separate(policies))
    models = [p.model for p in policies]
    histories = [p.history for p in policies]
    separate = [copy.deepcopy(m) for m in models]
    buffers = _buffers(histories, models)
    assert fit_stack(models, histories, _observations(buffers, histories)) == []
    arms = np.random.default_rng(0).normal(size=(7, 4))
    for model, alone, history in zip(models, separate, histories, strict=True):
        alone.fit(history)
        mine, theirs = (m.fit_recipe(history).params for m in (model, alone))
        for key, value in theirs.items():
            assert torch.equal(mine[key], value), key
        f, z = model.evaluate(arms)  # the member's own network after the stacked fit
        f_alone, z_alone = alone.evaluate(arms)
        np.testing.assert_array_equal(z, z_alone)
        np.testing.assert_array_equal(f, f_alone)


def test_a_member_that_diverges_runs_its_own_fit():
    """A member whose fit diverges is rescued by its own fit, bitwise its separate run.

    Member 1's duels are 1000 times larger: at lr = 0.5 its stacked attempt does not
    settle, so it refits alone at lr / 10 (kept: the next fit leaves it out of the
    stack), as its ``NeuralModel.fit`` does; the other members keep the stacked fit.
    """
    policies = [
        bk.make_policy("ndb-ucb", seed=s, width=8, steps=5, lr=0.5) for s in SEEDS
    ]
    for policy in policies:
        policy.act(bk.Context(arms=np.eye(4)[:3]))  # builds the model
    rng = np.random.default_rng(0)
    histories = []
    for s in SEEDS:
        history = PairHistory(4)
        scale = 1e3 if s == 1 else 1.0
        for _ in range(12):
            x1, x2 = scale * rng.normal(size=(2, 4))
            history.append(x1, x2, float(rng.random() < 0.5))
        histories.append(history)
    models = [p.model for p in policies]
    separate = [copy.deepcopy(m) for m in models]
    buffers = _buffers(histories, models, capacity=16)
    for fit in range(2):
        alone = fit_stack(models, histories, _observations(buffers, histories))
        assert alone == [1]
        for model, own, history in zip(models, separate, histories, strict=True):
            own.fit(history)
            assert torch.equal(flat_params(model.mlp), flat_params(own.mlp)), fit
            assert model.trainer.lr == own.trainer.lr
    assert [m.trainer.lr for m in models] == [0.5, 0.05, 0.5]


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
        ("ndb-ucb", {}),
        ("ndb-ts", {"gram": "diagonal"}),
        ("ndb-ucb", {"link": "thurstone", "update_every": 3}),
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
    assert isinstance(
        stack([bk.make_policy("ndb-ucb", seed=s) for s in SEEDS]), StackedDuels
    )


RULES = [
    (name, rule)
    for name in ("nvldb-ucb", "nvldb-ts")
    for rule in ("asym", "osym", "csym")
]


def test_the_six_pair_rules_of_one_network_stack_and_equal_their_runs():
    """Members that differ in their rule (and UCB / TS, NLDB beside NVLDB) share a stack.

    Each member keeps its rule, its stream and its weights; only the fit is shared
    (``Policy.stack_key``), and every member takes its separate run's pairs.
    """
    configs = [*RULES, ("nldb-ucb", "osym")]
    seeds = [s for _ in configs for s in (0, 1)]

    def play(stacked: bool) -> list:
        policies = [
            bk.make_policy(name, rule=rule, seed=s, **SMALL, **EXACT)
            for name, rule in configs
            for s in (0, 1)
        ]
        envs = [bk.make_env("dueling", utility="cos", d=4, n_arms=5) for _ in seeds]
        members = stack(policies) if stacked else Separate(policies)
        assert isinstance(members, StackedDuels) or not stacked
        return simulate_seeds(policies, envs, 30, seeds, members=members)

    separate, stacked = play(False), play(True)
    assert _agreement(_actions(stacked), _actions(separate)).all()
    for a, b in zip(stacked, separate, strict=True):
        np.testing.assert_array_equal(a.regret, b.regret)
    # the rules do differ: not every member takes the same pairs
    assert len({tuple(np.asarray(r.actions).ravel()) for r in separate[::2]}) > 1


def test_the_runner_batches_the_pair_rules_of_one_network():
    env = {"utility": "cos", "d": 4, "n_arms": 5}
    specs = [
        RunSpec("dueling", env, name, {**SMALL, "rule": rule}, seed=s, horizon=8)
        for name, rule in RULES
        for s in (0, 1)
    ]
    specs.append(RunSpec("dueling", env, "nvldb-ucb", {"width": 16}, seed=0, horizon=8))
    specs.append(RunSpec("dueling", env, "ndb-ucb", SMALL, seed=0, horizon=8))
    tasks = group_seeds(specs, "on")
    groups = [t for t in tasks if isinstance(t, SeedGroup)]
    assert len(groups) == 1 and list(groups[0].specs) == specs[:12]
    assert tasks[1:] == specs[12:]  # another width, another model: on their own
    with pytest.raises(ValueError, match="stack_key"):
        stack([bk.make_policy("nvldb-ucb", seed=0), bk.make_policy("ndb-ucb", seed=1)])


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


def test_the_duels_margins_and_feature_differences_come_from_one_pass_each_side():
    """``duel_outputs``: df and dphi equal the model's predict / features, bitwise."""
    policy = bk.make_policy("nvldb-ucb", seed=0, **SMALL)
    env = bk.make_env("dueling", utility="cos", d=4, n_arms=5)
    bk.simulate(policy, env, 12, seed=0)
    h, model = policy.history, policy.model
    duels = policy.duel_outputs()
    np.testing.assert_array_equal(duels.df, model.predict(h.X1) - model.predict(h.X2))
    np.testing.assert_array_equal(
        duels.dphi, model.features(h.X1) - model.features(h.X2)
    )


def _float32_stack(horizon: int) -> StackedDuels:
    policies = [
        bk.make_policy(
            "nvldb-ucb", seed=s, dtype="float32", distinct_duels=False, **SMALL
        )
        for s in SEEDS
    ]
    envs = [bk.make_env("dueling", utility="cos", d=4, n_arms=5) for _ in SEEDS]
    members = stack(policies)
    assert isinstance(members, StackedDuels)
    simulate_seeds(policies, envs, horizon, SEEDS, members=members)
    return members


def test_a_float32_stack_evaluates_its_members_in_one_batched_pass():
    """Outside the fit too: the arms at act, every duel after the fit (float32, CPU).

    Each member's values equal its own passes up to float32 rounding; in float64 the
    stack leaves them to the members (bit for bit their separate runs).
    """
    members = _float32_stack(horizon=10)
    assert members._batched()
    batched = members._duel_outputs()
    assert batched is not None and len(batched) == len(SEEDS)
    for member, duels in zip(members.members, batched, strict=True):
        own = member.duel_outputs()
        np.testing.assert_allclose(duels.df, own.df, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(duels.dphi, own.dphi, rtol=1e-5, atol=1e-6)
    # the arms of a round: f and phi handed to each member equal its own pass
    contexts = []
    for s in SEEDS:
        env = bk.make_env("dueling", utility="cos", d=4, n_arms=5)
        env.reset(seed=s + 100)
        contexts.append(env.context())
    members.act_all(contexts)
    for member, ctx in zip(members.members, contexts, strict=True):
        assert member._given is not None
        f, phi = member.model.evaluate(np.array(ctx.arms))
        np.testing.assert_allclose(member._given[0], f, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(member._given[1], phi, rtol=1e-5, atol=1e-6)

    policies = [bk.make_policy("nvldb-ucb", seed=s, **SMALL, **EXACT) for s in SEEDS]
    envs = [bk.make_env("dueling", utility="cos", d=4, n_arms=5) for _ in SEEDS]
    exact = stack(policies)
    assert isinstance(exact, StackedDuels)
    simulate_seeds(policies, envs, 4, SEEDS, members=exact)
    assert not exact._batched() and exact._duel_outputs() is None
    assert all(p._given is None for p in policies)
