"""Seed batching of the practical NeuralLog policies (policies.neurallog_batched, core.batched).

Each building block is checked against the per-member computation it stacks: the blocked
log-determinants against ``LogdetGram``, the stacked GD against ``nn.Trainer`` on one
network, and a batched run of S seeds against S separate ``simulate`` runs.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from banditkit.core import make_env, make_policy, simulate
from banditkit.core.batched import batched_policy, simulate_seeds
from banditkit.linalg import EffectiveDimension
from banditkit.linalg.effdim import LogdetGram
from banditkit.nn import MLP, Trainer, flat_params
from banditkit.policies.logistic.batched_logdets import MemberLogdets
from banditkit.policies.logistic.neurallog_batched import fit_stacked

ENV = {"h": "h1", "d": 6, "n_arms": 4, "pool": 40}
SMALL = {"width": 8, "update_every": 15, "steps": 10, "lr": 0.1}


def _runs(name: str, params: dict, seeds: list[int], horizon: int):
    separate = [
        simulate(
            make_policy(name, **params, seed=s),
            make_env("logistic", **ENV),
            horizon,
            seed=s,
            progress=False,
        )
        for s in seeds
    ]
    batched = simulate_seeds(
        [make_policy(name, **params, seed=s) for s in seeds],
        [make_env("logistic", **ENV) for _ in seeds],
        horizon,
        seeds,
    )
    return separate, batched


@pytest.mark.parametrize(
    ("name", "extra"),
    [
        ("neurallog-ucb2", {}),
        ("neurallog-ucb1", {"dtype": "float32"}),
        ("neurallog-ts2", {}),
        ("ncbf-ucb", {"effdim_kind": "diagonal"}),
    ],
)
def test_batched_run_equals_separate_runs(name: str, extra: dict) -> None:
    separate, batched = _runs(name, {**SMALL, **extra}, [0, 3, 7], 90)
    for one, many in zip(separate, batched, strict=True):
        np.testing.assert_array_equal(many.actions, one.actions)
        np.testing.assert_allclose(
            many.cumulative_regret, one.cumulative_regret, rtol=0, atol=1e-9
        )
        np.testing.assert_array_equal(many.n_updates, one.n_updates)
        np.testing.assert_array_equal(many.reward, one.reward)
        assert [r.name for r in many.records] == [r.name for r in one.records]
        assert many.meta["seed"] == one.meta["seed"]


def test_member_logdets_match_logdet_gram_per_member() -> None:
    rng = np.random.default_rng(0)
    S, p, a = 3, 7, 0.3
    # block 4: whole folds and pending rows are both read
    batch = MemberLogdets([EffectiveDimension(p, a, "full", block=4) for _ in range(S)])
    grams = [LogdetGram(p, 1.0) for _ in range(S)]
    for _ in range(21):
        Z = rng.standard_normal((S, p))
        batch.update(Z)
        for s in range(S):
            grams[s].update(Z[s], a)
        direct = [
            np.linalg.slogdet(g.matrix)[1] for g in grams
        ]  # independent: the sum itself
        np.testing.assert_allclose(batch.value, direct, rtol=1e-11)


def test_member_logdets_bracket_then_resolve_to_the_direct_logdet() -> None:
    rng = np.random.default_rng(1)
    S, p, a = 3, 6, 0.4
    trackers = [EffectiveDimension(p, a, "full", block=4) for _ in range(S)]
    batch = MemberLogdets(trackers)
    rows = np.zeros((S, 0, p))
    for n in range(1, 11):
        Z = rng.standard_normal((S, p))
        batch.update(Z)
        rows = np.concatenate([rows, Z[:, None]], axis=1)
        # independent: logdet(I + a sum z z^T) of the rows so far
        direct = np.array([np.linalg.slogdet(np.eye(p) + a * R.T @ R)[1] for R in rows])
        low, high = batch.bounds()
        assert np.all(low <= direct + 1e-9) and np.all(direct <= high + 1e-9)
        which = np.arange(S) == n % S  # resolve one member per round
        batch.resolve(which)
        low, high = batch.bounds()
        np.testing.assert_allclose(low[which], direct[which], rtol=1e-11)
        np.testing.assert_array_equal(low[which], high[which])
    np.testing.assert_allclose(batch.value, direct, rtol=1e-11)


def test_member_trackers_reject_bad_block() -> None:
    with pytest.raises(ValueError, match="block"):
        EffectiveDimension(3, 1.0, "full", block=0)


def test_fit_stacked_matches_the_trainer_per_member() -> None:
    gen = torch.Generator().manual_seed(0)
    S, n, d, m = 3, 25, 4, 6
    nets = [MLP(d, width=m, generator=gen) for _ in range(S)]
    X = torch.rand(S, n, d, generator=gen, dtype=torch.float64)
    y = (torch.rand(S, n, generator=gen) < 0.5).to(torch.float64)
    w1 = torch.stack([flat_params(net)[: m * d].view(m, d) for net in nets])
    w2 = torch.stack([flat_params(net)[m * d :] for net in nets])
    lam, lr, steps = 0.4, 0.05, 30
    fit_stacked(
        X, y, w1, w2, out_scale=nets[0].out_scale, lam=lam, step=lr / n, steps=steps
    )
    trainer = Trainer(loss="bce", lam=lam, lr=lr, steps=steps, reduction="mean")
    for s, net in enumerate(nets):
        trainer.fit(net, X[s], y[s])
        theta = flat_params(net)
        torch.testing.assert_close(
            w1[s].reshape(-1), theta[: m * d], rtol=1e-12, atol=0
        )
        torch.testing.assert_close(w2[s], theta[m * d :], rtol=1e-12, atol=0)


def test_unsupported_configurations_have_no_batch() -> None:
    def members(name: str, **params: object) -> list:
        return [make_policy(name, **params, seed=s) for s in (0, 1)]

    assert batched_policy(members("linucb")) is None  # no batched counterpart
    assert batched_policy(members("neurallog-ucb2", mode="theory", width=4)) is None
    assert batched_policy(members("neurallog-ucb2", gram="full", width=4)) is None
    assert (
        batched_policy(members("neurallog-ucb1", keep_log_factors=True, width=4))
        is None
    )
    assert batched_policy(members("neurallog-ucb2", width=4)[:1]) is None
    assert batched_policy(members("neurallog-ucb2", width=4)) is not None
    with pytest.raises(ValueError, match="same hyper-parameters"):
        batched_policy(
            [
                make_policy("neurallog-ucb2", width=4, seed=0),
                make_policy("neurallog-ucb2", width=6, seed=1),
            ]
        )


def test_simulate_seeds_validates() -> None:
    policies = [make_policy("neurallog-ucb2", width=4, seed=s) for s in (0, 1)]
    envs = [make_env("logistic", **ENV) for _ in range(2)]
    with pytest.raises(ValueError, match="one entry per seed"):
        simulate_seeds(policies, envs, 5, [0])
    linear = [make_policy("linucb", seed=s) for s in (0, 1)]
    with pytest.raises(ValueError, match="no batched policy"):
        simulate_seeds(linear, envs, 5, [0, 1])


def test_kernel_effective_dimension_uses_the_members_trackers() -> None:
    separate, batched = _runs(
        "neurallog-ucb2", {**SMALL, "effdim_kind": "kernel"}, [1, 2], 40
    )
    for one, many in zip(separate, batched, strict=True):
        np.testing.assert_array_equal(many.actions, one.actions)
