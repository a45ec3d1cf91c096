"""DeviceObservations: a history mirrored in growing device buffers (float32, CPU here);
GroupedRows: its distinct rows counted as it grows."""

import numpy as np
import pytest
import torch

from banditkit import nn
from banditkit.core import Context
from banditkit.policies.baselines.neural import NeuralUCB
from banditkit.policies.parts.history import History, PairHistory, SetHistory
from banditkit.policies.parts.models import (
    DeviceObservations,
    GroupedRows,
    NeuralLinearModel,
    NeuralModel,
    observations_of,
)

CPU = torch.device("cpu")


def rows_history(n: int, d: int = 3, seed: int = 0) -> History:
    rng = np.random.default_rng(seed)
    h = History(d)
    for _ in range(n):
        h.append(rng.normal(size=d), float(rng.random()), weight=float(rng.random()))
    return h


def same(a: torch.Tensor | None, b: torch.Tensor | None) -> None:
    assert (a is None) == (b is None)
    if a is not None and b is not None:
        torch.testing.assert_close(a, b, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_mirror_equals_the_checked_conversion(dtype: torch.dtype) -> None:
    mirror = DeviceObservations(dtype, CPU)
    assert mirror.zero_copy == (dtype == torch.float64)
    rng = np.random.default_rng(1)
    rows, pairs, sets = History(3), PairHistory(3), SetHistory(3)
    for t in range(40):
        rows.append(rng.normal(size=3), float(rng.random()), weight=1.0 + t)
        pairs.append(rng.normal(size=3), rng.normal(size=3), float(t % 2), 2.0)
        sets.append(rng.normal(size=(1 + t % 3, 3)), choice=t % 2 - 1)
        if t % 7 == 0:
            for h in (rows, pairs, sets):
                for weighted in (True, False):
                    got = mirror(h, weighted=weighted)
                    want = observations_of(h, weighted=weighted, dtype=dtype)
                    for name in ("X", "y", "weights", "first", "second"):
                        same(getattr(got, name, None), getattr(want, name, None))
                    for name in ("items", "choice"):
                        same(getattr(got, name, None), getattr(want, name, None))


def test_only_new_rows_cross_and_weights_are_reread() -> None:
    mirror = DeviceObservations(torch.float32, CPU)
    h = rows_history(5)
    mirror(h)
    buffers = dict(mirror._buffers)
    h.append(np.ones(3), 1.0, weight=3.0)
    h.w[0] = 7.0  # rewritten in place, as NVLDB's 1 / zeta^2
    rows = mirror(h)
    assert mirror._buffers["X"] is buffers["X"] and mirror._buffers["X"].n == 6
    assert rows.weights is not None
    assert rows.weights[0] == 7.0 and rows.weights[-1] == 3.0


def test_a_reloaded_or_other_history_is_mirrored_afresh() -> None:
    mirror = DeviceObservations(torch.float32, CPU)
    h = rows_history(6)
    mirror(h)
    h.load_state_dict(rows_history(6, seed=9).state_dict())  # same n, new rows
    same(mirror(h).X, observations_of(h, dtype=torch.float32).X)
    other = rows_history(3, seed=4)
    same(mirror(other).X, observations_of(other, dtype=torch.float32).X)
    h.load_state_dict(rows_history(2, seed=5).state_dict())  # shrank
    same(mirror(h).X, observations_of(h, dtype=torch.float32).X)


def test_bad_rows_are_refused_once() -> None:
    mirror = DeviceObservations(torch.float32, CPU)
    h = rows_history(3)
    h.append(np.array([np.nan, 0.0, 0.0]), 0.0)
    with pytest.raises(ValueError, match="NaN or inf"):
        mirror(h)
    with pytest.raises(TypeError, match="History"):
        mirror(object())  # type: ignore[arg-type]


@pytest.mark.parametrize("device", ["cuda:7", "tpu"])
def test_models_name_a_missing_device(device: str) -> None:
    gen = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="device"):
        NeuralModel(
            3, width=4, depth=2, trainer=nn.Trainer(), generator=gen, device=device
        )
    with pytest.raises(ValueError, match="device"):
        NeuralLinearModel(3, width=4, generator=gen, device=device)


@pytest.mark.parametrize("kind", ["rows", "pairs"])
def test_float32_models_train_on_the_mirror_as_on_the_history(kind: str) -> None:
    """The float32 fit on the mirror equals nn.fit on the checked float32 conversion."""
    rng = np.random.default_rng(3)
    if kind == "rows":
        history: History | PairHistory = History(4)
        for _ in range(30):
            history.append(rng.normal(size=4), float(rng.random() < 0.5))
    else:
        history = PairHistory(4)
        for _ in range(30):
            history.append(
                rng.normal(size=4), rng.normal(size=4), float(rng.random() < 0.5)
            )
    trainer = nn.Trainer(loss="bce", lam=0.5, center="init", lr=0.05, steps=7)
    model = NeuralModel(
        4,
        width=6,
        depth=2,
        trainer=trainer,
        generator=torch.Generator().manual_seed(1),
        dtype="float32",
    )
    start = {k: v.clone() for k, v in nn.stack_params(model.mlp).items()}
    model.fit(history)
    obs = observations_of(history, weighted=False, dtype=torch.float32)
    loss = nn.BCE() if kind == "rows" else nn.BradleyTerry()
    want = nn.fit(
        model.mlp.network,
        start,
        obs,
        loss,
        penalties=[nn.L2Penalty(0.5, model.mlp.initial_params())],
        lr=0.05,
        steps=7,
    ).params
    for name, p in nn.stack_params(model.mlp).items():
        torch.testing.assert_close(p, want[name], rtol=0, atol=0)
    linear = NeuralLinearModel(
        4,
        width=5,
        loss="btl" if kind == "pairs" else "bce",
        steps=4,
        generator=torch.Generator().manual_seed(2),
        dtype="float32",
    )
    linear.fit(history)
    assert linear.params["layers.0.weight"].dtype == torch.float32
    mean, phi = linear.evaluate(np.ones((2, 4)))
    assert mean.dtype == phi.dtype == np.float64


def grouped_by_unique(h: History) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The groups over the whole history at once (np.unique and np.bincount)."""
    X_u, inverse, counts = np.unique(
        h.X, axis=0, return_inverse=True, return_counts=True
    )
    ybar = np.bincount(inverse.reshape(-1), weights=h.y, minlength=len(counts))
    return X_u, ybar / counts, counts.astype(np.float64)


def same_bits(a: tuple[np.ndarray, ...], b: tuple[np.ndarray, ...]) -> None:
    """Bit for bit, but the sign of a zero in a row (np.unique keeps either of the two)."""
    for x, y in zip((a[0] + 0.0, *a[1:]), (b[0] + 0.0, *b[1:]), strict=True):
        assert x.dtype == y.dtype and x.shape == y.shape
        assert x.tobytes() == y.tobytes()


def test_grouped_rows_equal_the_whole_history_grouped_at_every_size() -> None:
    rng = np.random.default_rng(3)
    arms = rng.normal(size=(12, 4))
    arms[5] = arms[4]
    arms[5, 0], arms[4, 0] = 0.0, -0.0  # one row for np.unique
    h, groups = History(4), GroupedRows()
    for t in range(400):
        h.append(arms[rng.integers(12)], float(rng.normal()))
        if t % 37 == 0 or t > 390:
            same_bits(groups(h), grouped_by_unique(h))
    assert groups._n == 400 and len(groups._rows) == 11  # counted once, incrementally


def test_grouped_rows_count_afresh_a_changed_history_and_after_an_undo() -> None:
    groups = GroupedRows()
    h = rows_history(30, d=2)
    groups(h)
    h.load_state_dict(rows_history(30, d=2, seed=8).state_dict())  # same n, new rows
    same_bits(groups(h), grouped_by_unique(h))
    h.load_state_dict(rows_history(7, d=2, seed=2).state_dict())  # shrank
    same_bits(groups(h), grouped_by_unique(h))
    other = rows_history(5, d=2, seed=4)
    same_bits(groups(other), grouped_by_unique(other))
    undo = groups._transaction()
    undo()
    assert groups._source is None and groups._n == 0
    same_bits(groups(other), grouped_by_unique(other))
    empty = History(2)
    X_u, ybar, counts = groups(empty)
    assert X_u.shape == (0, 2) and ybar.shape == counts.shape == (0,)
    same_bits(groups(other), grouped_by_unique(other))


def test_grouped_neural_ucb_keeps_its_groups_as_the_history_grows() -> None:
    policy = NeuralUCB(width=8, steps=3, grouped=True, update_every=1, seed=0)
    rng = np.random.default_rng(0)
    arms = rng.normal(size=(5, 3))
    for _ in range(30):
        ctx = Context(arms=arms)
        policy.update(ctx, policy.act(ctx), float(rng.random()))
    groups = policy.model._groups
    assert groups._n == 30 and len(groups._rows) <= 5
