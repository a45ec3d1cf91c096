"""Training on the distinct duels only (``distinct_duels``): the same fit, up to rounding.

A duel of an arm with itself has the margin f(x) - f(x) = 0 for every parameter, so its
loss term is the constant loss(0) (log 2 for the logistic and probit links) and its
gradient is 0. A fit on the distinct duels then follows the iterates of the fit on every
duel up to rounding, with an objective lower by sum_i w_i loss(0) over the dropped duels.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import banditkit as bk
from banditkit import nn
from banditkit.core.members import stack
from banditkit.core.simulate import simulate_seeds
from banditkit.policies.dueling.stacked import DuelBuffers, StackedDuels
from banditkit.policies.parts.history import PairHistory
from banditkit.policies.parts.models import (
    DeviceObservations,
    NeuralLinearModel,
    NeuralModel,
    observations_of,
)
from banditkit.policies.parts.models.device_history import distinct_duels

CPU = torch.device("cpu")


def duels(n: int, d: int = 3, seed: int = 0) -> PairHistory:
    """n duels, every third of an arm with itself, varied outcomes and weights."""
    rng = np.random.default_rng(seed)
    h = PairHistory(d)
    for i in range(n):
        x1 = rng.normal(size=d) / 2.0
        x2 = x1 if i % 3 == 0 else rng.normal(size=d) / 2.0
        h.append(x1, x2, float(rng.random() < 0.5), float(0.5 + rng.random()))
    return h


def test_the_distinct_duels_and_their_containers() -> None:
    h = duels(12)
    keep = distinct_duels(h)
    assert keep is not None
    assert keep.tolist() == [i for i in range(12) if i % 3]
    pairs = observations_of(h, distinct=True)
    assert pairs.n == 8
    np.testing.assert_array_equal(pairs.X[:8].numpy(), h.X1[keep])
    np.testing.assert_array_equal(pairs.X[8:].numpy(), h.X2[keep])
    np.testing.assert_array_equal(pairs.weights.numpy(), h.w[keep])
    # the device mirror (float32 here) selects the same duels as the conversion
    for dtype in (torch.float32, torch.float64):
        got = DeviceObservations(dtype, CPU)(h, distinct=True)
        want = observations_of(h, distinct=True, dtype=dtype)
        for name in ("X", "y", "weights", "first", "second"):
            torch.testing.assert_close(
                getattr(got, name), getattr(want, name), rtol=0, atol=0
            )
    # every duel distinct: nothing selected; none distinct: the first one is kept
    assert distinct_duels(duels(1, seed=1)) is not None  # duel 0 is an arm vs itself
    only_same = PairHistory(2)
    for _ in range(3):
        only_same.append(np.ones(2), np.ones(2), 1.0)
    assert distinct_duels(only_same).tolist() == [0]
    all_distinct = PairHistory(2)
    all_distinct.append(np.ones(2), np.zeros(2), 1.0)
    assert distinct_duels(all_distinct) is None


@pytest.mark.parametrize("link", ["logistic", "probit"])
def test_a_neural_linear_fit_on_the_distinct_duels_is_the_same_fit(link: str) -> None:
    h = duels(60)
    dropped = np.setdiff1d(np.arange(60), distinct_duels(h))
    fits = []
    for distinct in (False, True):
        model = NeuralLinearModel(
            3,
            width=8,
            depth=3,
            loss="btl",
            link=link,
            steps=20,
            reduction="sum",
            distinct_duels=distinct,
            generator=torch.Generator().manual_seed(0),
        )
        fits.append((model.fit(h), model.params))
    (j_all, p_all), (j_distinct, p_distinct) = fits
    head_bias = model.net.head_names[-1]
    assert head_bias.endswith("bias")
    for name in p_all:
        if name != head_bias:
            torch.testing.assert_close(
                p_distinct[name], p_all[name], rtol=1e-9, atol=1e-12
            )
    # the head bias cancels in every margin: its gradient is 0 in exact arithmetic, and
    # Adam's normalised steps (up to lr) follow the rounding of that 0 in either fit
    # J lower by the dropped duels' constant terms, w_i log 2 (both links: g(0) = 1/2)
    constant = float(h.w[dropped].sum()) * math.log(2.0)
    first, last = np.subtract(j_all, j_distinct)
    assert first == pytest.approx(constant, rel=1e-12)
    # at the end, up to the head bias's penalty (lam / 2) (b - b_0)^2 (see above)
    assert last == pytest.approx(constant, abs=1e-5)


def test_an_ndb_model_fit_on_the_distinct_duels_is_the_same_fit() -> None:
    h = duels(45, seed=2)
    trainer = nn.Trainer(
        loss="weighted-bce", lam=1.0, center="init", optimizer="adam", lr=0.01, steps=15
    )
    params = []
    for distinct in (False, True):
        model = NeuralModel(
            3,
            width=8,
            depth=3,
            trainer=trainer,
            distinct_duels=distinct,
            generator=torch.Generator().manual_seed(1),
        )
        model.fit(h)
        params.append(torch.cat([p.detach().ravel() for p in model.mlp.parameters()]))
    torch.testing.assert_close(params[1], params[0], rtol=1e-9, atol=1e-12)


def test_distinct_duels_needs_the_sum_and_a_bool() -> None:
    with pytest.raises(ValueError, match="reduction='sum'"):
        NeuralLinearModel(
            3, loss="btl", distinct_duels=True, generator=torch.Generator()
        )
    with pytest.raises(ValueError, match="distinct_duels must be a bool"):
        bk.make_policy("nvldb-ucb", distinct_duels="yes")


@pytest.mark.parametrize("name", ["nvldb-ucb", "nldb-ts", "ndb-ucb"])
def test_the_policies_play_as_with_every_duel_within_noise(name: str) -> None:
    """Same first rounds (the fits agree to rounding), then regrets of the same size."""
    env = {"utility": "square", "d": 3, "n_arms": 4}
    params = {"width": 8, "steps": 5, "dtype": "float64"}
    runs = [
        bk.simulate(
            bk.make_policy(name, seed=0, distinct_duels=distinct, **params),
            bk.make_env("dueling", **env),
            horizon=40,
            seed=0,
        )
        for distinct in (False, True)
    ]
    every, distinct = (np.asarray(r.actions[:10]).tolist() for r in runs)
    assert distinct == every
    final = [float(r.cumulative_regret[-1]) for r in runs]
    assert abs(final[1] - final[0]) <= 0.25 * max(final[0], 1.0)


def test_members_with_distinct_duels_run_one_by_one_in_float64_on_the_cpu() -> None:
    def members(**params: object) -> list[bk.Policy]:
        return [bk.make_policy("nvldb-ucb", seed=s, **params) for s in (0, 1)]

    assert stack(members(dtype="float64")) is None
    assert stack(members(dtype="float64", distinct_duels=False)) is not None
    assert stack(members()) is not None  # the defaults: float32, distinct duels


def test_a_float32_stack_pads_each_member_with_its_own_duels_of_one_arm() -> None:
    """Each member's distinct duels first, in order; then duels of an arm with itself."""
    histories = [duels(30, seed=s) for s in range(3)]
    histories[1].append(
        np.ones(3), np.ones(3), 1.0
    )  # one more duel of an arm with itself
    for h in histories[::2]:
        h.append(np.ones(3), np.zeros(3), 0.0)
    buffers = DuelBuffers(3, 3, 8, torch.zeros(1, dtype=torch.float32))
    buffers.sync(histories)
    weights = np.stack([h.w for h in histories])
    pairs = buffers.pairs([0, 1, 2], weights, [distinct_duels(h) for h in histories])
    k = max(len(distinct_duels(h)) for h in histories)
    assert pairs.X.shape == (3, 2 * k, 3)
    for s, h in enumerate(histories):
        own = observations_of(h, distinct=True, dtype=torch.float32)
        m = own.n
        torch.testing.assert_close(pairs.X[s, :m], own.X[:m], rtol=0, atol=0)
        torch.testing.assert_close(pairs.X[s, k : k + m], own.X[m:], rtol=0, atol=0)
        torch.testing.assert_close(pairs.weights[s, :m], own.weights, rtol=0, atol=0)
        pad = slice(m, k)  # the padding: duels of an arm with itself
        assert torch.equal(pairs.X[s, pad], pairs.X[s, k + m : 2 * k])
    # the float32 stack plays as the separate float32 runs, up to rounding
    env = {"utility": "square", "d": 3, "n_arms": 4}
    params = {"width": 8, "steps": 5, "dtype": "float32", "distinct_duels": True}
    members = [bk.make_policy("nvldb-ucb", seed=s, **params) for s in (0, 1, 2)]
    batch = stack(members)
    assert isinstance(batch, StackedDuels)
    envs = [bk.make_env("dueling", **env) for _ in range(3)]
    stacked = simulate_seeds(members, envs, 25, [0, 1, 2], members=batch)
    for s in range(3):
        alone = bk.simulate(
            bk.make_policy("nvldb-ucb", seed=s, **params),
            bk.make_env("dueling", **env),
            horizon=25,
            seed=s,
        )
        assert (
            np.asarray(stacked[s].actions[:8]).tolist()
            == np.asarray(alone.actions[:8]).tolist()
        )
