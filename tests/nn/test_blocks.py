"""Block-encoded rows (``nn._blocks``) against the dense computation."""

from __future__ import annotations

import contextlib
from unittest import mock

import numpy as np
import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from banditkit import nn
from banditkit.nn._blocks import (
    BLOCK_MIN_WORK,
    BlockLayout,
    block_count,
    choose_blocks,
    fused_gd_blocks,
)
from banditkit.policies.parts.models.neural import NeuralModel


def forced_blocks(blocks: int | None) -> mock._patch:
    """``nn.fit`` with its block choice forced to ``blocks`` (None: dense)."""

    def layout(X: torch.Tensor, width: int) -> BlockLayout | None:
        return None if blocks is None else BlockLayout.of(X, blocks)

    return mock.patch("banditkit.nn.fit.choose_blocks", side_effect=layout)


def block_rows(
    K: int, d: int, N: int, seed: int = 0, used: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """N rows: a random context in the block of a random arm among the first ``used``."""
    rng = np.random.default_rng(seed)
    arms = rng.integers(0, K if used is None else used, size=N)
    X = np.zeros((N, K * d))
    for i, a in enumerate(arms):
        X[i, a * d : (a + 1) * d] = rng.normal(size=d)
    return X, rng.normal(size=N)


def brute_block_count(X: np.ndarray) -> int | None:
    """The largest B <= 64 dividing D with every row's non-zeros in one block."""
    D = X.shape[1]
    for B in range(min(64, D), 1, -1):
        if D % B == 0:
            used = (X != 0).reshape(len(X), B, D // B).any(-1).sum(1)
            if (used <= 1).all():
                return B
    return None


def test_block_count_matches_brute_force() -> None:
    rng = np.random.default_rng(1)
    X, _ = block_rows(4, 6, 50)
    cases = [X, X[:, :12], np.ones((3, 8)), np.zeros((2, 6))]
    sparse = np.zeros((40, 24))  # non-zeros in random short spans
    for i in range(40):
        lo = rng.integers(0, 22)
        sparse[i, lo : lo + rng.integers(1, 3)] = 1.0
    cases.append(sparse)
    X2 = X.copy()
    X2[5] = 0.0  # an all-zero row fits any block
    cases.append(X2)
    for case in cases:
        assert block_count(case) == brute_block_count(case)
    assert block_count(X) == 4
    assert block_count(np.ones((3, 8))) is None
    with pytest.raises(ValueError, match="max_blocks"):
        block_count(X, max_blocks=1)


def test_block_count_early_exits_agree_with_brute_force() -> None:
    """The exits on the first rows' spans (``_partition``) decide as the full pass."""
    rng = np.random.default_rng(7)
    for trial in range(300):
        N, D = int(rng.integers(1, 30)), int(rng.choice([1, 2, 5, 6, 12, 24]))
        X = np.zeros((N, D))
        for i in range(N):
            width = int(rng.integers(0, D + 1))  # 0: an all-zero row
            lo = int(rng.integers(0, D - width + 1))
            X[i, lo : lo + width] = rng.normal(size=width)
            if width > 1 and rng.random() < 0.5:  # a zero inside the span
                X[i, lo + int(rng.integers(1, width))] = 0.0
        assert block_count(X) == brute_block_count(X), (trial, X)
    dense_late = block_rows(4, 6, 50)[0]
    dense_late[30] = 1.0  # a dense row after the probed ones
    assert block_count(dense_late) is None
    full_first = block_rows(4, 6, 50)[0]
    full_first[0] = 1.0
    assert block_count(full_first) is None


def test_layout_regroups_the_rows() -> None:
    X, _ = block_rows(3, 4, 30, used=2)  # block 2 has no rows
    X[7] = 0.0
    Xt = torch.from_numpy(X)
    layout = BlockLayout.of(Xt, 3)
    assert layout.bounds[-1] == 30 and layout.bounds[2] == layout.bounds[3]
    rebuilt = torch.zeros_like(Xt)
    for a, lo, hi in layout.blocks():
        rows = layout.order[lo:hi]
        rebuilt[rows, a * 4 : (a + 1) * 4] = layout.X[lo:hi]
    torch.testing.assert_close(rebuilt, Xt, rtol=0, atol=0)
    strided = torch.from_numpy(np.asfortranarray(X))  # not contiguous: the same layout
    assert not strided.is_contiguous()
    torch.testing.assert_close(BlockLayout.of(strided, 3).X, layout.X, rtol=0, atol=0)
    with pytest.raises(ValueError, match="two blocks"):
        BlockLayout.of(torch.ones(2, 6, dtype=torch.float64), 3)
    with pytest.raises(ValueError, match="divide"):
        BlockLayout.of(Xt, 5)


def _fit(
    net: nn.StackedMLP,
    params: nn.Params,
    rows: nn.Rows,
    loss: nn.Loss,
    blocks: int | None,
    *,
    steps: int,
    lr: float,
    center: bool = True,
    record: str = "all",
) -> nn.FitResult:
    c = {k: v + 0.05 for k, v in params.items()} if center else None
    with forced_blocks(blocks):
        return nn.fit(
            net,
            params,
            rows,
            loss,
            penalties=[nn.L2Penalty(0.7, c)],
            lr=lr,
            steps=steps,
            reduction="mean",
            record=record,
        )


@pytest.mark.parametrize(
    ("loss", "activation", "center", "record"),
    [
        (nn.MSE(), "relu", True, "all"),
        (nn.BCE(), "relu", False, "ends"),
        (nn.MSE(), "sigmoid", True, "ends"),
    ],
)
def test_trained_network_equals_the_dense_one(
    loss: nn.Loss, activation: str, center: bool, record: str
) -> None:
    K, d = 3, 5
    X, y = block_rows(K, d, 60, used=2)  # block 2 without rows: penalty only
    X[4] = 0.0
    if isinstance(loss, nn.BCE):
        y = (y > 0).astype(np.float64)
    rows = nn.Rows(torch.from_numpy(X), torch.from_numpy(y))
    net = nn.StackedMLP(K * d, width=8, activation=activation)
    params = net.init(1, torch.Generator().manual_seed(3))
    dense = _fit(
        net, params, rows, loss, None, steps=40, lr=0.05, center=center, record=record
    )
    block = _fit(
        net, params, rows, loss, K, steps=40, lr=0.05, center=center, record=record
    )
    moved = (dense.params["layers.0.weight"] - params["layers.0.weight"]).abs().max()
    assert moved > 1e-3  # the fit did something
    for name in params:
        torch.testing.assert_close(
            block.params[name], dense.params[name], rtol=0, atol=1e-10
        )
    torch.testing.assert_close(block.history, dense.history, rtol=1e-12, atol=1e-10)
    # the unused block moved by its penalty alone: towards the centre, identically
    cols = slice(2 * d, 3 * d)
    torch.testing.assert_close(
        block.params["layers.0.weight"][..., cols],
        dense.params["layers.0.weight"][..., cols],
        rtol=0,
        atol=1e-14,
    )


def test_outputs_and_gradients_equal_the_dense_ones() -> None:
    """One step at lr 1: theta_0 - theta_1 is the gradient; J(theta_0) the loss."""
    K, d = 4, 3
    X, y = block_rows(K, d, 25)
    rows = nn.Rows(torch.from_numpy(X), torch.from_numpy(y))
    net = nn.StackedMLP(K * d, width=6)
    params = net.init(1, torch.Generator().manual_seed(0))
    for name, p in params.items():  # a trained-looking network, not theta_0
        params[name] = p + 0.3 * torch.randn(
            p.shape, dtype=p.dtype, generator=torch.Generator().manual_seed(1)
        )
    f_dense = net.forward(params, rows.X)
    dense = _fit(net, params, rows, nn.MSE(), None, steps=1, lr=1.0)
    block = _fit(net, params, rows, nn.MSE(), K, steps=1, lr=1.0)
    expected = ((f_dense[0] - rows.y) ** 2).sum() / 2
    penalty = sum(0.35 * (0.05**2) * p.numel() for p in params.values())
    torch.testing.assert_close(
        block.history[0, 0] * rows.n, expected + penalty, rtol=1e-12, atol=0
    )
    for name in params:
        g_dense = params[name] - dense.params[name]
        g_block = params[name] - block.params[name]
        assert g_dense.abs().max() > 1e-3
        torch.testing.assert_close(g_block, g_dense, rtol=0, atol=1e-12)


def test_float32_within_rounding() -> None:
    K, d = 2, 11
    X, y = block_rows(K, d, 300)
    rows = nn.Rows(torch.from_numpy(X), torch.from_numpy(y), dtype=torch.float32)
    net = nn.StackedMLP(K * d, width=10)
    params = net.init(1, torch.Generator().manual_seed(0), dtype=torch.float32)
    dense = _fit(net, params, rows, nn.MSE(), None, steps=20, lr=0.005)
    block = _fit(net, params, rows, nn.MSE(), K, steps=20, lr=0.005)
    assert bool(dense.history[-1] < dense.history[0])
    for name in params:
        torch.testing.assert_close(
            block.params[name], dense.params[name], rtol=0, atol=1e-5
        )


def test_blocks_outside_the_fused_loop_is_the_dense_fit() -> None:
    X, y = block_rows(2, 3, 20)
    w = np.linspace(0.5, 1.5, 20)
    rows = nn.Rows(torch.from_numpy(X), torch.from_numpy(y), torch.from_numpy(w))
    net = nn.StackedMLP(6, width=4)
    params = net.init(1, torch.Generator().manual_seed(0))
    dense = _fit(net, params, rows, nn.MSE(), None, steps=5, lr=0.1)
    block = _fit(net, params, rows, nn.MSE(), 2, steps=5, lr=0.1)  # weights: dense
    for name in params:
        torch.testing.assert_close(
            block.params[name], dense.params[name], rtol=0, atol=0
        )
    plain = nn.Rows(torch.from_numpy(X), torch.from_numpy(y))
    with pytest.raises(ValueError, match="two blocks"):
        _fit(net, params, plain, nn.MSE(), 3, steps=1, lr=0.1)  # blocks of 2 columns


def test_blocks_are_chosen_by_the_work_they_save() -> None:
    K, d, width = 7, 4, 10
    N = BLOCK_MIN_WORK // (width * (K - 1) * d) + 30  # enough rows for the blocks
    X, _ = block_rows(K, d, N, seed=2)
    Xt = torch.from_numpy(X)
    zeros = Xt.clone()
    zeros[::7] = 0.0  # all-zero rows go to block 0, in both
    for rows in (Xt, zeros):
        layout = choose_blocks(rows, width)
        assert layout is not None and layout.n_blocks == K
        # grouped from the blocks of the choice's own pass: the layout ``of`` finds
        reference = BlockLayout.of(rows, K)
        assert layout.bounds == reference.bounds
        assert torch.equal(layout.order, reference.order)
        assert torch.equal(layout.X, reference.X)
    assert choose_blocks(Xt[:30], width) is None  # too little work saved
    assert choose_blocks(torch.ones(N, K * d, dtype=torch.float64), width) is None


def test_neural_model_fits_block_rows_as_dense() -> None:
    from banditkit.policies.parts.history import History

    K, d, width = 7, 4, 10
    N = BLOCK_MIN_WORK // (width * (K - 1) * d) + 30  # enough rows for the blocks
    X, y = block_rows(K, d, N, seed=2)
    history = History(K * d)
    for x, r in zip(X, y, strict=True):
        history.append(x, float(r))
    trainer = nn.Trainer(
        loss="mse", lam=2.0, center="init", lr=0.05, steps=30, reduction="mean"
    )
    theta = []
    for blocks in (None, K):
        model = NeuralModel(
            K * d,
            width=width,
            depth=2,
            trainer=trainer,
            generator=torch.Generator().manual_seed(0),
        )
        with forced_blocks(blocks) as chosen:
            model.fit(history)
        assert chosen.called
        theta.append(nn.flat_params(model.mlp))
    assert (theta[0] - model.mlp.theta0).abs().max() > 1e-3
    torch.testing.assert_close(theta[1], theta[0], rtol=0, atol=1e-10)


def test_members_with_their_own_block_rows_each_fit_as_alone() -> None:
    """X (M, N, D): one block loop per member, each that member's fit on its own rows."""
    M, K, d, N = 3, 4, 5, 40
    rows = [block_rows(K, d, N, seed=s) for s in range(M)]
    X = torch.from_numpy(np.stack([r[0] for r in rows]))
    y = torch.from_numpy(np.stack([r[1] for r in rows]))
    net = nn.StackedMLP(K * d, width=8)
    params = net.init(M, torch.Generator().manual_seed(2))
    center = net.init(M, torch.Generator().manual_seed(5))
    options = {"lr": 0.05, "steps": 30, "reduction": "mean", "record": "ends"}

    def fit(blocks: int | None) -> nn.FitResult:
        with forced_blocks(blocks):
            return nn.fit(
                net,
                params,
                nn.Rows(X, y),
                nn.MSE(),
                penalties=[nn.L2Penalty(0.3, center)],
                **options,
            )

    stacked = fit(K)
    dense = fit(None)  # the dense steps of the stack: the same up to rounding
    for s in range(M):
        own = {name: p[s : s + 1] for name, p in params.items()}
        own_center = {name: c[s : s + 1] for name, c in center.items()}
        with forced_blocks(K):
            alone = nn.fit(
                net,
                own,
                nn.Rows(X[s], y[s]),
                nn.MSE(),
                penalties=[nn.L2Penalty(0.3, own_center)],
                **options,
            )
        for name in params:  # the same block loop on the same rows: the same numbers
            torch.testing.assert_close(
                stacked.params[name][s : s + 1], alone.params[name], rtol=0, atol=0
            )
        torch.testing.assert_close(
            stacked.history[:, s : s + 1], alone.history, rtol=0, atol=0
        )
    for name in params:
        torch.testing.assert_close(
            stacked.params[name], dense.params[name], rtol=0, atol=1e-10
        )
    moved = (stacked.params["layers.0.weight"] - params["layers.0.weight"]).abs()
    assert moved.max() > 1e-3


def test_the_block_products_are_counted_under_a_flop_counter() -> None:
    """The products run in NumPy, except under a dispatch mode that must see them."""
    K, d, width = 5, 8, 16
    X, y = block_rows(K, d, 60, seed=3)
    net = nn.StackedMLP(K * d, width=width, depth=2, bias=False)
    params = net.init(1, torch.Generator().manual_seed(0), dtype=torch.float64)
    rows = nn.Rows(torch.from_numpy(X), torch.from_numpy(y))
    fits = {}
    loop = mock.patch("banditkit.nn.fit.fused_gd_blocks", wraps=fused_gd_blocks)
    for counted in (False, True):
        counter = FlopCounterMode(display=False)
        mode = counter if counted else contextlib.nullcontext()
        with forced_blocks(K), loop as spy, mode:
            fits[counted] = nn.fit(net, params, rows, nn.MSE(), lr=0.01, steps=3)
        assert spy.call_count == 1  # the block loop ran
        if counted:  # the 2 products of 3 steps on each row's block, not the dense ones
            flops = counter.get_total_flops()
            assert (
                3 * 2 * (2 * 60 * d * width) <= flops < 3 * 2 * (2 * 60 * K * d * width)
            )
    for name, p in fits[False].params.items():  # the same steps either way
        torch.testing.assert_close(fits[True].params[name], p, rtol=1e-12, atol=1e-12)
