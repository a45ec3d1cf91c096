"""Seeds of one epsilon-greedy-MNL configuration whose refits train as one stack.

``policies.mnl.stacked``: the members' epoch refits run as one ``nn.fit`` over per-member
sets (``UtilityNet.fit_stack``, batched kernels). Each member's network must equal its own
fit to rounding, the runs must take the separate runs' offers, and the runner must group
the seeds on its own.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

import banditkit as bk
from banditkit.core.members import Separate, stack
from banditkit.core.simulate import simulate_seeds
from banditkit.experiments.config.resolved import RunSpec
from banditkit.experiments.plan.tasks import SeedGroup, group_seeds
from banditkit.nn import flat_params
from banditkit.policies.mnl.common import UtilityNet
from banditkit.policies.mnl.stacked import StackedEpsGreedy
from banditkit.policies.parts.history import SetHistory
from banditkit.policies.parts.models.device_history import member_sets

SEEDS = [0, 1, 2]
ENV = {
    "utility": "realizable",
    "features": "gaussian",
    "d": 3,
    "n_items": 12,
    "capacity": 4,
}
SMALL = {"width": 3, "steps": 40, "lr": 0.05}


def _runs(stacked: bool, horizon: int = 40, seeds=SEEDS, **params: object) -> list:
    policies = [
        bk.make_policy("eps-greedy-mnl", seed=s, **{**SMALL, **params}) for s in seeds
    ]
    envs = [bk.make_env("mnl", **ENV) for _ in seeds]
    members = stack(policies) if stacked else Separate(policies)
    assert isinstance(members, StackedEpsGreedy) or not stacked
    return simulate_seeds(policies, envs, horizon, seeds, members=members)


def _histories(seed: int, n: int) -> list[SetHistory]:
    """Three histories of n sets of sizes 1-4 (d = 3), each with its own sizes."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(3):
        h = SetHistory(3)
        for _ in range(n):
            size = int(rng.integers(1, 5))
            h.append(rng.normal(size=(size, 3)), int(rng.integers(-1, size)))
        out.append(h)
    return out


def test_member_sets_keep_each_members_layout():
    histories = _histories(0, 5)
    sets = member_sets(histories, dtype=torch.float64)
    for s, h in enumerate(histories):
        own = bk.nn.Sets(  # the layout of the member's own fit
            h.items,
            np.where(
                np.arange(h.sizes.max())[None] < h.sizes[:, None],
                h.offsets[:-1, None] + np.arange(h.sizes.max())[None],
                -1,
            ),
            h.choice,
        )
        N, S = own.X.shape[0], own.S
        assert torch.equal(sets.X[s, :N], own.X) and not sets.X[s, N:].any()
        assert torch.equal(sets.items[s, :, :S], own.items)
        assert bool((sets.items[s, :, S:] == -1).all())
        assert torch.equal(sets.choice[s], own.choice)
    with pytest.raises(ValueError, match="as many sets"):
        member_sets([histories[0], _histories(1, 4)[0]], dtype=torch.float64)


def test_the_mnl_loss_of_per_member_sets_is_each_members_loss():
    """Against each member's loss on its own (2-D) sets: values and df to 1e-12."""
    histories = _histories(2, 7)
    sets = member_sets(histories, dtype=torch.float64)
    f = torch.randn(3, sets.X.shape[1], dtype=torch.float64)
    values, df = bk.nn.MNL().value_and_dloss_df(f, sets)
    for s, h in enumerate(histories):
        own = member_sets([h], dtype=torch.float64)
        one = bk.nn.Sets(own.X[0], own.items[0], own.choice[0])
        N = one.X.shape[0]
        v, g = bk.nn.MNL().value_and_dloss_df(f[s : s + 1, :N], one)
        torch.testing.assert_close(values[s], v[0], rtol=0, atol=1e-12)
        torch.testing.assert_close(df[s, :N], g[0], rtol=0, atol=1e-12)
        assert not df[s, N:].any()  # the padding rows are offered in no set


def test_sets_check_per_member_shapes():
    X = torch.zeros(2, 3, 1, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"items must have shape \(M, n, S\)"):
        bk.nn.Sets(X, [[0, 1]], [0])
    with pytest.raises(
        ValueError, match=r"choice must be an integer array of shape \(2, 1\)"
    ):
        bk.nn.Sets(X, [[[0, 1]], [[2, -1]]], [0])
    with pytest.raises(ValueError, match="must point at an offered slot"):
        bk.nn.Sets(X, [[[0, 1]], [[2, -1]]], [[0], [1]])


def test_one_stacked_fit_is_each_members_own_fit():
    """``UtilityNet.fit_stack`` against each net's own ``fit``: parameters to 1e-10."""
    histories = _histories(3, 9)
    nets = [
        UtilityNet(3, 3, np.random.default_rng(s), dtype="float64") for s in range(3)
    ]
    alone = [copy.deepcopy(n) for n in nets]
    start = [flat_params(n.model).clone() for n in nets]
    nll = UtilityNet.fit_stack(nets, histories, lr=0.05, steps=30)
    for net, own, h, value in zip(nets, alone, histories, nll, strict=True):
        expected = own.fit(h, lr=0.05, steps=30)
        assert value == pytest.approx(expected, rel=1e-12)
        torch.testing.assert_close(
            flat_params(net.model), flat_params(own.model), rtol=0, atol=1e-10
        )
        # the fit moved every member from its own start
        assert not torch.equal(flat_params(net.model), start[nets.index(net)])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_stacked_seeds_take_the_offers_of_their_separate_runs(dtype):
    separate = _runs(False, dtype=dtype)
    stacked = _runs(True, dtype=dtype)
    for a, b in zip(separate, stacked, strict=True):
        assert [tuple(x) for x in a.actions] == [tuple(x) for x in b.actions]
        np.testing.assert_allclose(a.regret, b.regret, rtol=0, atol=1e-9)
        assert list(a.n_updates) == list(b.n_updates)
    assert stacked[0].n_updates[-1] == 5  # refits after t = 1, 3, 7, 15, 31


def test_a_stacked_members_state_is_its_separate_runs():
    """The members' state after a stacked run resumes like the separate run's (float64)."""
    policies = [
        bk.make_policy("eps-greedy-mnl", seed=s, dtype="float64", **SMALL)
        for s in SEEDS
    ]
    envs = [bk.make_env("mnl", **ENV) for _ in SEEDS]
    simulate_seeds(policies, envs, 20, SEEDS, members=stack(policies))
    twins = [
        bk.make_policy("eps-greedy-mnl", seed=s, dtype="float64", **SMALL)
        for s in SEEDS
    ]
    envs = [bk.make_env("mnl", **ENV) for _ in SEEDS]
    simulate_seeds(twins, envs, 20, SEEDS, members=Separate(twins))
    for p, q in zip(policies, twins, strict=True):
        a, b = p.state_dict(), q.state_dict()
        np.testing.assert_allclose(
            a["state"]["net"]["w"], b["state"]["net"]["w"], atol=1e-10
        )
        np.testing.assert_array_equal(
            a["state"]["epoch"]["items"], b["state"]["epoch"]["items"]
        )
        assert a["t"] == b["t"] == 20 and a["n_updates"] == b["n_updates"] == 4


def test_the_runner_groups_eps_greedy_mnl_seeds():
    specs = [
        RunSpec("mnl", ENV, "eps-greedy-mnl", SMALL, seed=s, horizon=8) for s in SEEDS
    ]
    specs.append(
        RunSpec("mnl", ENV, "eps-greedy-mnl", {**SMALL, "width": 5}, seed=0, horizon=8)
    )
    tasks = group_seeds(specs, "on")
    groups = [t for t in tasks if isinstance(t, SeedGroup)]
    assert len(groups) == 1 and [s.seed for s in groups[0].specs] == SEEDS
    assert tasks[1:] == specs[3:]  # another width: on its own


def test_the_runner_stores_batched_mnl_seeds_as_separate_runs(tmp_path):
    import json

    from banditkit.experiments.store.tidy import load_runs

    cfg = {
        "name": "mnl-stack",
        "horizon": 20,
        "seeds": 3,
        "env": {"name": "mnl", **ENV},
        "policies": [{"name": "eps-greedy-mnl", **SMALL}],
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
    keys = ["seed", "t"]
    on, off = (
        load_runs(tmp_path / mode).sort_values(keys).reset_index(drop=True)
        for mode in ("on", "off")
    )
    np.testing.assert_allclose(on["regret"], off["regret"], atol=1e-9)
