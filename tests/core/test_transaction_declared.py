"""The classes that declare what their update changes (``core.transaction``).

A class that declares ``_undo_parts`` or its own ``_transaction`` is recorded from that
declaration instead of the generic walk, so a declaration that forgets something would
leave a trace of a failed update. For each declared class a failure is injected mid-update
(after each step of it that writes something, on the first update and on a later one) and
the whole object graph of the policy (every attribute of every part: the state, the random
streams and every cache) must equal a deep copy taken before the update; the policy must
then play on as its twin does.
"""

from __future__ import annotations

import copy
import types
from typing import Any

import numpy as np
import pytest
import torch

import banditkit as bk
from banditkit.core.transaction import snapshot
from banditkit.linalg import Gram, InPlaceGram
from banditkit.linalg.blocked import BlockedLogdet
from banditkit.linalg.diagonal import DiagonalGram
from banditkit.linalg.effdim import KernelLogdet
from banditkit.nn import MLP, set_flat_params, stack_params
from banditkit.nn import params as params_module
from banditkit.nn._arms import NumpyArms
from banditkit.policies.baselines.glm import GLMUCB
from banditkit.policies.baselines.linear import LinTS, LinUCB
from banditkit.policies.baselines.neural import NeuralTS, NeuralUCB
from banditkit.policies.logistic.neurallog import (
    NCBFUCB,
    NeuralLogTS1,
    NeuralLogTS2,
    NeuralLogUCB1,
    NeuralLogUCB2,
)
from banditkit.policies.parts.history import Buffers, History
from banditkit.policies.parts.models.device_history import (
    DeviceObservations,
    GroupedRows,
)
from banditkit.policies.parts.models.linear import GLMModel, RidgeModel
from banditkit.policies.parts.models.neural import NeuralModel
from banditkit.policies.parts.scorer import Scorer
from banditkit.testing import assert_same_state


class _Injected(RuntimeError):
    """The failure a test injects."""


def assert_same_graph(
    a: Any, b: Any, path: str = "policy", seen: set[int] | None = None
) -> None:
    """``a`` and its deep copy ``b`` hold the same values everywhere (arrays bit for bit)."""
    seen = set() if seen is None else seen
    if id(a) in seen:
        return
    seen.add(id(a))
    assert type(a) is type(b), f"{path}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(
        a, Buffers
    ):  # the rows past n are scratch space (appends write there)
        assert a.n == b.n, f"{path}.n: {a.n} != {b.n}"
        for name in a.names:
            assert_same_graph(a.view(name), b.view(name), f"{path}.{name}", seen)
    elif isinstance(a, NumpyArms):  # caches keyed on (data pointers, versions)
        left, right = dict(vars(a)), dict(vars(b))
        for cache in (left, right):
            views, kept = cache.pop("_views"), cache.pop("_kept")
            cache["_views"] = (views[0][2:], *views[1:]) if views else views
            cache["_kept"] = None if kept is None else (*kept[:2], kept[2][2:])
        assert_same_graph(left, right, path, seen)
    elif isinstance(a, DeviceObservations | GroupedRows) and a._source is None:
        return  # reset by the undo: mirrored (counted) again at the next fit
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, path
        assert np.array_equal(a, b, equal_nan=True), f"{path} differs"
    elif isinstance(a, torch.Tensor):
        assert torch.equal(a, b), f"{path} differs"
    elif isinstance(a, np.random.Generator):
        assert a.bit_generator.state == b.bit_generator.state, f"{path}: random state"
    elif isinstance(a, torch.Generator):
        assert torch.equal(a.get_state(), b.get_state()), f"{path}: random state"
    elif isinstance(a, dict):
        assert list(a) == list(b), f"{path}: keys {list(a)} != {list(b)}"
        for key in a:
            assert_same_graph(a[key], b[key], f"{path}[{key!r}]", seen)
    elif isinstance(a, list | tuple):
        assert len(a) == len(b), f"{path}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same_graph(x, y, f"{path}[{i}]", seen)
    elif isinstance(a, types.FunctionType | types.MethodType | type):
        return  # code, not state
    elif hasattr(a, "__dict__") and not isinstance(a, torch.dtype | torch.device):
        assert_same_graph(vars(a), vars(b), path, seen)
    else:
        assert a == b or (a != a and b != b), f"{path}: {a!r} != {b!r}"


def _after(owner: type, name: str) -> Any:
    """``owner.name`` that runs, then raises: the update fails with that step done."""
    call = getattr(owner, name)

    def failing(self: Any, *args: Any, **kwargs: Any) -> Any:
        call(self, *args, **kwargs)
        raise _Injected(f"after {owner.__name__}.{name}")

    return failing


#: label -> (policy, parameters, the steps of its update after which a failure is injected)
_CASES: dict[str, tuple[str, dict[str, Any], list[tuple[type, str]]]] = {
    "linucb": (
        "linucb",
        {},
        [
            (History, "append"),
            (InPlaceGram, "rank1_update"),
            (RidgeModel, "_add_in_place"),
            (LinUCB, "_update"),
        ],
    ),
    "linucb-no-history": (
        "linucb",
        {"keep_history": False},
        [(RidgeModel, "add"), (InPlaceGram, "rank1_update"), (LinUCB, "_update")],
    ),
    "lints": (
        "lints",
        {},
        [(History, "append"), (InPlaceGram, "rank1_update"), (LinTS, "_update")],
    ),
    "glm-ucb": (
        "glm-ucb",
        {"warmup": 0},
        [
            (History, "append"),
            (Gram, "update"),
            (GLMModel, "fit"),
            (GLMUCB, "_update"),
        ],
    ),
}
# The NeuralLog family: its exact d_eff by blocks of rows (``BlockedLogdet``, journalled)
for _name, _cls in (
    ("neurallog-ucb1", NeuralLogUCB1),
    ("neurallog-ucb2", NeuralLogUCB2),
    ("neurallog-ts1", NeuralLogTS1),
    ("neurallog-ts2", NeuralLogTS2),
    ("ncbf-ucb", NCBFUCB),
):
    _CASES[_name] = (
        _name,
        {"width": 4, "steps": 3, "update_every": 2},
        [
            (History, "append"),
            (BlockedLogdet, "update_unchecked"),
            (NeuralModel, "fit"),
            (Scorer, "add"),
            (_cls, "_update"),
        ],
    )
# The neural policies in both dtypes: float64 reads the history's arrays in place, float32
# (the default) keeps a mirror of them (``DeviceObservations``), which the undo resets.
for _dtype in ("float64", "float32", "grouped"):
    for _name, _cls in (("neural-ucb", NeuralUCB), ("neural-ts", NeuralTS)):
        # "grouped": float32 on the distinct rows (``GroupedRows``, reset by the undo)
        _CASES[f"{_name}-{_dtype}"] = (
            _name,
            {"width": 8, "steps": 5, "update_every": 2}
            | ({"grouped": True} if _dtype == "grouped" else {"dtype": _dtype}),
            [
                (History, "append"),
                (NeuralModel, "fit"),
                (Scorer, "add"),
                (DiagonalGram, "update_unchecked"),
                (_cls, "_update"),
            ],
        )

_INJECTIONS = [
    (label, owner, method)
    for label, (_, _, steps) in _CASES.items()
    for owner, method in steps
]


def _contexts(d: int, n: int, seed: int = 0) -> list[bk.Context]:
    rng = np.random.default_rng(seed)
    return [bk.Context(arms=rng.normal(size=(4, d)) / 2.0) for _ in range(n)]


@pytest.mark.parametrize("rounds", [0, 5], ids=["first-update", "sixth-update"])
@pytest.mark.parametrize(
    ("label", "owner", "method"),
    _INJECTIONS,
    ids=[f"{n}-after-{o.__name__}.{m}" for n, o, m in _INJECTIONS],
)
def test_a_failure_mid_update_leaves_no_trace(
    label, owner, method, rounds, monkeypatch
):
    """The whole object graph equals a deep copy taken before; then it plays as a twin."""
    name, params, _ = _CASES[label]
    policy, twin = (bk.make_policy(name, seed=3, **params) for _ in range(2))
    contexts = _contexts(3, rounds + 2)
    for t in range(rounds):
        for p in (policy, twin):
            p.update(contexts[t], p.act(contexts[t]), float(t % 2))
    ctx = contexts[rounds]
    action = policy.act(ctx)
    assert twin.act(ctx) == action
    before = copy.deepcopy(policy)
    with monkeypatch.context() as patch:
        patch.setattr(owner, method, _after(owner, method))
        try:
            policy.update(ctx, action, 1.0)
        except _Injected:
            pass
        else:  # a refit this round's schedule does not run
            assert method == "fit"
            return
    assert_same_graph(policy, before)
    for p in (policy, twin):
        p.update(ctx, action, 1.0)
    # the same state; caches may differ in what they keep (a network's passes recompute
    # what they cached for parameters that were put back: their version counters moved)
    assert_same_state(policy, twin)
    assert policy.act(contexts[rounds + 1]) == twin.act(contexts[rounds + 1])


def test_the_neurallog_family_records_its_declared_parts_only():
    """Its snapshot keeps the declared parts and what they declare, no generic walk of
    the policy's other attributes (formulas, rule, parts)."""
    for name in ("neurallog-ucb1", "neurallog-ucb2", "neurallog-ts1", "ncbf-ucb"):
        policy = bk.make_policy(name, seed=0, width=4, steps=3)
        for ctx in _contexts(3, 3):
            policy.update(ctx, policy.act(ctx), 1.0)
        kinds = {type(obj).__name__ for obj in snapshot(policy)._keep}
        assert {"History", "Scorer", "BlockedLogdet"} <= kinds, name
        assert not kinds & {"Practical", "ScoredParts", "Optimistic", "Sampled"}, name


def test_the_declared_policies_record_no_generic_walk():
    """linucb's snapshot records its declared parts only: no list, dict or array."""
    policy = bk.make_policy("linucb", seed=0)
    for ctx in _contexts(3, 3):
        policy.update(ctx, policy.act(ctx), 1.0)
    taken = snapshot(policy)
    kinds = sorted(type(obj).__name__ for obj in taken._keep)
    assert kinds == ["History", "InPlaceGram", "LinUCB", "RidgeModel"]


@pytest.mark.parametrize("block", [False, True], ids=["dense", "block-encoded"])
def test_an_in_place_gram_journals_only_the_blocks_it_overwrites(block):
    """Undo puts V, V^-1, L and the queue back; a block-encoded update copies one block."""
    d, m = 12, 4
    gram = InPlaceGram(d, 1.0, refactor_every=5)
    rng = np.random.default_rng(1)

    def row() -> np.ndarray:
        x = np.zeros(d)
        if block:
            k = int(rng.integers(d // m))
            x[k * m : (k + 1) * m] = rng.normal(size=m)
        else:
            x[:] = rng.normal(size=d)
        return x

    for _ in range(3):
        gram.update(row())
    for step in range(6):  # crosses a refactorisation (every 5) and a read of L
        before = copy.deepcopy(gram)
        taken = snapshot(gram)
        gram.update(row())
        if step == 2:
            assert gram.cholesky.shape == (
                d,
                d,
            )  # applies the queued rows to L in place
        journal = gram._journal
        assert journal is not None
        if block and step != 4:  # step 4 refactorises: nothing written in place
            assert all(saved.shape == (m, m) for _, saved in journal[:2])
        taken.restore()
        assert_same_graph(gram, before, "gram")
        gram.update(row())
        snapshot(gram).commit()
        assert "_journal" not in vars(gram)


def test_a_blocked_logdet_journals_a_row_and_v_inverse_only_at_a_fold():
    """Undo puts the block, V^-1, V and the counters back, across folds and a
    refactorisation; an update that does not fold copies one row."""
    d = 6
    tracker = BlockedLogdet(d, 0.5, block=3, refactor_every=6)
    rng = np.random.default_rng(2)
    tracker.update(rng.normal(size=d))
    for step in range(8):  # folds at steps 1, 4, 7; refactorises at step 4
        before = copy.deepcopy(tracker)
        taken = snapshot(tracker)
        tracker.update(rng.normal(size=d), 0.7)
        if step % 3 == 2:  # a read between the updates moves the cached value
            assert np.isfinite(tracker.logdet)
        journal = tracker._journal
        assert journal is not None
        folded = tracker._k == 0
        assert len(journal) == (4 if folded else 1)  # the row (+ V^-1, V, the block)
        taken.restore()
        assert_same_graph(tracker, before, "tracker")
        tracker.update(rng.normal(size=d))
        snapshot(tracker).commit()
        assert "_journal" not in vars(tracker)


def test_a_kernel_logdet_journals_its_new_row_only():
    """Undo puts L, the sparse rows and log det back, also across a growth of the
    buffers; the journal holds the new row's regions, not the n x n factor."""
    d = 40
    tracker = KernelLogdet(d, 0.25)
    rng = np.random.default_rng(3)

    def row() -> np.ndarray:
        z = np.zeros(d)
        z[rng.choice(d, 5, replace=False)] = rng.normal(size=5)
        return z

    for step in range(20):  # the factor's buffer grows at n = 16
        before = copy.deepcopy(tracker)
        taken = snapshot(tracker)
        tracker.update(row())
        journal = tracker._journal
        assert journal is not None
        assert sum(saved.size for _, saved in journal) <= tracker.n + 5 + 5 + 1
        taken.restore()
        assert_same_graph(tracker, before, f"tracker (step {step})")
        tracker.update(row())
        snapshot(tracker).commit()


def test_an_mlp_puts_back_only_the_parameters_that_changed():
    """Training in place is undone; untouched parameters keep their version counters."""
    mlp = MLP(3, width=4, generator=torch.Generator().manual_seed(0))
    before = copy.deepcopy(mlp)
    weight, bias = mlp.layers[0].weight, mlp.layers[1].weight
    versions = weight._version, bias._version
    taken = snapshot(mlp)
    views = stack_params(mlp)  # a trainer's write access: the copy is taken here
    with torch.no_grad():
        views["layers.0.weight"].add_(1.0)
    assert not torch.equal(weight, before.layers[0].weight)
    taken.restore()
    assert torch.equal(weight, before.layers[0].weight)
    assert bias._version == versions[1]  # not copied: caches keyed on it stay valid
    assert_same_graph(mlp, before, "mlp")


def test_an_mlp_copies_its_parameters_only_when_they_are_written():
    """An update that does not train copies nothing; set_flat_params copies first."""
    mlp = MLP(3, width=4, generator=torch.Generator().manual_seed(0))
    before = copy.deepcopy(mlp)
    taken = snapshot(mlp)
    assert params_module._OWED.get(mlp)  # owed, not taken
    taken.commit()
    assert not params_module._OWED.get(mlp)  # withdrawn at the end
    taken = snapshot(mlp)
    set_flat_params(mlp, torch.zeros(sum(p.numel() for p in mlp.parameters())))
    taken.restore()
    assert_same_graph(mlp, before, "mlp")


def test_a_write_that_bypasses_before_write_cannot_be_undone_silently():
    """A parameter written without ``before_write`` makes the undo raise, not lie."""
    mlp = MLP(3, width=4, generator=torch.Generator().manual_seed(0))
    taken = snapshot(mlp)
    with torch.no_grad():
        mlp.layers[0].weight.add_(1.0)
    with pytest.raises(RuntimeError, match="before_write"):
        taken.restore()
