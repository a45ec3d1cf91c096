"""nn.fit's GD steps (flat buffers, the row sweep, fused loops) against the generic step."""

import importlib

import pytest
import torch

from banditkit.nn import (
    BCE,
    MSE,
    BradleyTerry,
    Gaussian,
    L2Penalty,
    Pairs,
    Rows,
    StackedMLP,
    _fused,
    fit,
)
from banditkit.nn._flat import FlatParams, FlatPenalties
from banditkit.nn._fused import blocks_apply, row_sweep
from banditkit.nn._passes import make_pass
from banditkit.nn.fit import objective_and_grads
from banditkit.nn.network import NeuralLinear


def generic_gd(net, params, obs, loss, penalties, step, steps):
    """The generic loop of nn.fit written out: objective_and_grads, then the update."""
    params = {k: v.clone() for k, v in params.items()}
    history = []
    workspace: dict[str, torch.Tensor] = {}
    with torch.no_grad():
        for _ in range(steps):
            value, grads = objective_and_grads(
                net, params, obs, loss, penalties, workspace=workspace
            )
            history.append(value)
            for name, p in params.items():
                p.sub_(grads[name], alpha=step)
    return params, torch.stack(history)


def problem(n, d, width, dtype, loss, center):
    gen = torch.Generator().manual_seed(n + width)
    net = StackedMLP(d, width=width)
    params = net.init(1, gen, dtype=dtype)
    X = torch.randn(n, d, generator=gen, dtype=torch.float64) / d**0.5
    y = (torch.rand(n, generator=gen, dtype=torch.float64) < 0.5).double()
    if loss == "mse":
        y = y + 0.3 * torch.randn(n, generator=gen, dtype=torch.float64)
    obs = Rows(X, y, dtype=dtype)
    c = None if center == "zero" else {k: v.clone() for k, v in params.items()}
    penalties = [L2Penalty(0.7, c), L2Penalty(0.0)]
    return net, params, obs, BCE() if loss == "bce" else MSE(), penalties


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize(
    ("n", "d", "width", "loss", "center"),
    [
        (1, 3, 4, "bce", "zero"),
        (37, 5, 8, "mse", "init"),
        (400, 20, 20, "bce", "init"),
        # relu, BCE, one L2 term without a centre: the units steps, recorded or not
        (400, 20, 20, "bce", "zero"),
    ],
)
def test_fused_equals_the_generic_loop_bitwise(n, d, width, loss, center, dtype):
    net, params, obs, loss_fn, penalties = problem(n, d, width, dtype, loss, center)
    assert blocks_apply(net, params, obs, loss_fn, penalties)
    # relu, BCE, one L2 term without a centre: the units layout, equal up to
    # rounding; every other case is the rows layout, bitwise
    units = loss == "bce" and center == "zero"
    tol = (1e-12 if dtype == torch.float64 else 1e-5) if units else 0.0
    for reduction, steps in (("sum", 1), ("mean", 25)):
        scale = 1.0 / n if reduction == "mean" else 1.0
        want, history = generic_gd(
            net, params, obs, loss_fn, penalties, 0.05 * scale, steps
        )
        got = fit(
            net,
            params,
            obs,
            loss_fn,
            penalties=penalties,
            lr=0.05,
            steps=steps,
            reduction=reduction,
        )
        for name in params:
            torch.testing.assert_close(got.params[name], want[name], rtol=tol, atol=tol)
        torch.testing.assert_close(got.history, history * scale, rtol=tol, atol=tol)
        ends = fit(
            net,
            params,
            obs,
            loss_fn,
            penalties=penalties,
            lr=0.05,
            steps=steps,
            reduction=reduction,
            record="ends",
        )
        kept = [0, steps - 1] if steps > 1 else [0]
        for name in params:
            torch.testing.assert_close(
                ends.params[name], want[name], rtol=tol, atol=tol
            )
        torch.testing.assert_close(
            ends.history, history[kept] * scale, rtol=tol, atol=tol
        )


def test_block_loop_only_for_its_case():
    net, params, obs, loss_fn, penalties = problem(
        10, 3, 4, torch.float64, "bce", "zero"
    )
    assert blocks_apply(net, params, obs, loss_fn, penalties)
    two = StackedMLP(3, width=4).init(2, torch.Generator().manual_seed(0))
    assert not blocks_apply(net, two, obs, loss_fn, penalties)
    weighted = Rows(obs.X, obs.y, torch.ones(10, dtype=torch.float64))
    assert not blocks_apply(net, params, weighted, loss_fn, penalties)
    deep = StackedMLP(3, width=4, depth=3)
    deep_params = deep.init(1, torch.Generator().manual_seed(0))
    assert not blocks_apply(deep, deep_params, obs, loss_fn, [])
    linear = NeuralLinear(3, width=4)
    lin_params = linear.init(1, torch.Generator().manual_seed(0))
    assert not blocks_apply(linear, lin_params, obs, loss_fn, [])
    group = L2Penalty(1.0, names=["layers.1.weight"])
    assert not blocks_apply(net, params, obs, loss_fn, [group])


def test_record_is_validated():
    net, params, obs, loss_fn, _ = problem(10, 3, 4, torch.float64, "bce", "zero")
    with pytest.raises(ValueError, match="record"):
        fit(net, params, obs, loss_fn, record="some")


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_units_layout_equals_the_generic_loop_up_to_rounding(dtype):
    # relu, BCE, one L2 term without a centre, record="ends": the (m, N) steps
    net, params, obs, loss_fn, penalties = problem(400, 20, 20, dtype, "bce", "zero")
    want, history = generic_gd(net, params, obs, loss_fn, penalties, 0.05 / 400, 30)
    got = fit(
        net,
        params,
        obs,
        loss_fn,
        penalties=penalties,
        lr=0.05,
        steps=30,
        reduction="mean",
        record="ends",
    )
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    for name in params:
        torch.testing.assert_close(got.params[name], want[name], rtol=tol, atol=tol)
    torch.testing.assert_close(got.history, history[[0, 29]] / 400, rtol=tol, atol=tol)


@pytest.mark.parametrize("record", ["all", "ends", "none"])
def test_units_steps_run_every_step_recorded_or_not(monkeypatch, record):
    net, params, obs, loss_fn, penalties = problem(
        50, 4, 6, torch.float64, "bce", "zero"
    )
    want, history = generic_gd(net, params, obs, loss_fn, penalties, 0.05, 5)
    counted = []
    call = _fused.RowSweep.__call__

    def counting(self, count, flat, step, objective=None):
        counted.append((count, objective is not None))
        return call(self, count, flat, step, objective)

    monkeypatch.setattr(_fused.RowSweep, "__call__", counting)
    got = fit(
        net, params, obs, loss_fn, penalties=penalties, lr=0.05, steps=5, record=record
    )
    runs = {
        "all": [(1, True)] * 5,
        "ends": [(4, True), (1, True)],
        "none": [(5, False)],
    }
    assert counted == runs[record]
    kept = {"all": [0, 1, 2, 3, 4], "ends": [0, 4], "none": []}[record]
    torch.testing.assert_close(got.history, history[kept], rtol=1e-12, atol=0)
    for name in params:
        torch.testing.assert_close(got.params[name], want[name], rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_units_row_blocks_equal_one_block_up_to_rounding(monkeypatch, dtype):
    net, params, obs, loss_fn, penalties = problem(203, 20, 20, dtype, "bce", "zero")

    def run():
        return fit(
            net,
            params,
            obs,
            loss_fn,
            penalties=penalties,
            lr=1e-3,
            steps=7,
            record="ends",
        )

    whole = run()
    # 20 units x 203 rows > 2 x 1000: blocks of 50 rows, the last of 3
    monkeypatch.setattr(_fused, "UNITS_BLOCK_BYTES", 8000)
    blocked = run()
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    torch.testing.assert_close(blocked.history, whole.history, rtol=tol, atol=tol)
    for name in params:
        torch.testing.assert_close(
            blocked.params[name], whole.params[name], rtol=tol, atol=tol
        )
    assert not torch.equal(blocked.params["layers.0.weight"], params["layers.0.weight"])


def test_members_on_own_rows_run_the_batched_sweep_whatever_the_pass(monkeypatch):
    """Members with their own rows take the batched sweep (one bmm batch a member)
    also when the stack is computed member by member (its pass is ``Members``, without
    the units buffers: the sweep then gets a ``Dense2`` of its own), so that
    ``separate_members`` does not change its arithmetic: the same parameters and
    objectives as the stack without it."""
    calls = []
    call = _fused.RowSweep.__call__

    def spy(self, count, flat, step, objective=None):
        calls.append((count, self.network.hT.shape[0]))
        return call(self, count, flat, step, objective)

    monkeypatch.setattr(_fused.RowSweep, "__call__", spy)
    gen = torch.Generator().manual_seed(0)
    net = StackedMLP(6, width=16, depth=2)
    params = net.init(3, gen, dtype=torch.float64)
    X = torch.randn(3, 40, 6, generator=gen, dtype=torch.float64)
    y = (torch.rand(3, 40, generator=gen) < 0.5).double()
    fits = [
        fit(
            net,
            params,
            Rows(X, y),
            BCE(),
            penalties=[L2Penalty(0.5)],
            lr=0.002,
            steps=12,
            record="ends",
            separate_members=separate,
        )
        for separate in (False, True)
    ]
    # to the last recorded step, then that step; three batches of one member's units
    assert calls == [(11, 3), (1, 3), (11, 3), (1, 3)]
    for name in params:
        assert torch.equal(fits[0].params[name], fits[1].params[name]), name
    assert torch.equal(fits[0].history, fits[1].history)


def test_neurallog_seed_batch_is_its_former_loop_bitwise():
    """A batch of NeuralLog seeds on their own rows: the sweep's operations are those
    of the batched loop it replaced (``members_units_steps``), written out here."""
    gen = torch.Generator().manual_seed(3)
    M, N, d, m, s, lam, step = 3, 50, 6, 16, 4.0, 0.5, 0.002
    net = StackedMLP(d, width=m, depth=2)
    assert net.out_scale == s
    params = net.init(M, gen, dtype=torch.float64)
    X = torch.randn(M, N, d, generator=gen, dtype=torch.float64)
    y = (torch.rand(M, N, generator=gen) < 0.5).double()
    W1 = params["layers.0.weight"].clone()
    W2 = params["layers.1.weight"][:, 0].clone()
    XT = X.mT.contiguous()
    history = []
    for k in range(9):  # the former loop, on separate tensors
        hT = torch.bmm(W1, XT).relu_()
        sw = W2 * s
        f = torch.bmm(sw.unsqueeze(1), hT)
        if k in (0, 8):
            values = BCE().value_and_dloss_df(f[:, 0], Rows(X, y))[0].sum(-1)
            penalty = 0.5 * lam * (W1.flatten(1) ** 2).sum(1) + 0.5 * lam * (W2**2).sum(
                1
            )
            history.append(values + penalty)
        torch.sigmoid_(f).sub_(y.unsqueeze(-2))
        torch.ops.aten.threshold_backward.grad_input(
            f.expand_as(hT), hT, 0, grad_input=hT
        )
        g1 = torch.bmm(hT, X)
        g2 = torch.linalg.vecdot(W1, g1).mul_(s)
        g1.mul_(sw.unsqueeze(-1))
        W1.sub_(g1.add_(W1, alpha=lam), alpha=step)
        W2.sub_(g2.add_(W2, alpha=lam), alpha=step)
    got = fit(
        net,
        params,
        Rows(X, y),
        BCE(),
        penalties=[L2Penalty(lam)],
        lr=step,
        steps=9,
        record="ends",
    )
    assert torch.equal(got.params["layers.0.weight"], W1)
    assert torch.equal(got.params["layers.1.weight"][:, 0], W2)
    torch.testing.assert_close(got.history, torch.stack(history), rtol=1e-13, atol=0)


#: the trainer's module (``banditkit.nn.fit`` the attribute is the function)
trainer = importlib.import_module("banditkit.nn.fit")

SWEEP_KINDS = [
    "members-gaussian-weighted",
    "rows-bce-bias-adam",
    "pairs-btl-adam",
    "own-rows-bce-centre",
    "own-pairs-btl-adam",
]


def sweep_problem(kind, dtype, n=120, d=5, width=8):
    """A fit the row sweep computes: (net, params, obs, loss, penalties, optimizer)."""
    g = torch.Generator().manual_seed(5)
    X = torch.randn(n, d, generator=g, dtype=torch.float64) / d**0.5
    w = torch.rand(n, generator=g, dtype=torch.float64) + 0.5
    if kind == "members-gaussian-weighted":  # Neural-ES: own targets, L2 to theta_0
        net = StackedMLP(d, width=width)
        params = net.init(3, g, dtype=dtype)
        y = torch.randn(3, n, generator=g, dtype=torch.float64)
        obs = Rows(X, y, w, dtype=dtype)
        centre = {k: v.clone() for k, v in params.items()}
        penalties = [L2Penalty(0.4, centre), L2Penalty(0.1)]
        return net, params, obs, Gaussian(0.8), penalties, "gd"
    if kind == "own-rows-bce-centre":  # seeds on their own rows, weighted, a centre
        net = StackedMLP(d, width=width)
        params = net.init(3, g, dtype=dtype)
        Xs = torch.randn(3, n, d, generator=g, dtype=torch.float64) / d**0.5
        y = (torch.rand(3, n, generator=g) < 0.5).double()
        centre = {k: v.clone() for k, v in params.items()}
        obs = Rows(Xs, y, w.expand(3, n), dtype=dtype)
        return net, params, obs, BCE(), [L2Penalty(0.4, centre)], "gd"
    if kind == "own-pairs-btl-adam":  # NVLDB seeds (float32) on their own duels
        net = NeuralLinear(d, width=width)
        params = net.init(3, g, dtype=dtype)
        half = n // 2
        Xs = torch.randn(3, n, d, generator=g, dtype=torch.float64) / d**0.5
        y = (torch.rand(3, half, generator=g) < 0.5).double()
        first, second = torch.arange(half), torch.arange(half, n)
        obs = Pairs(Xs, first, second, y, w[:half], dtype=dtype)
        return net, params, obs, BradleyTerry(), [L2Penalty(1.0)], "adam"
    if kind == "rows-bce-bias-adam":
        net = StackedMLP(d, width=width, bias=True)
        params = net.init(1, g, dtype=dtype)
        y = (torch.rand(n, generator=g) < 0.5).double()
        return net, params, Rows(X, y, w, dtype=dtype), BCE(), [L2Penalty(0.3)], "adam"
    net = NeuralLinear(d, width=width)  # NVLDB: weighted duels, L2 to theta_0
    params = net.init(1, g, dtype=dtype)
    half = n // 2
    y = (torch.rand(half, generator=g) < 0.5).double()
    obs = Pairs(X, torch.arange(half), torch.arange(half, n), y, w[:half], dtype=dtype)
    centre = {k: v.clone() for k, v in params.items()}
    return net, params, obs, BradleyTerry(), [L2Penalty(1.0, centre)], "adam"


def sweep_fit(kind, dtype, record="all", steps=6, optimizer=None):
    net, params, obs, loss, penalties, default = sweep_problem(kind, dtype)
    optimizer = optimizer or default
    lr = 0.01 if optimizer == "adam" else 0.002
    return fit(
        net,
        params,
        obs,
        loss,
        penalties=penalties,
        optimizer=optimizer,
        lr=lr,
        steps=steps,
        record=record,
    )


@pytest.mark.parametrize("kind", SWEEP_KINDS)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("record", ["all", "ends"])
def test_one_block_sweep_is_the_two_passes_bitwise(monkeypatch, kind, dtype, record):
    """With one block the sweep runs the passes' operations on ``step_derivative``'s
    values: members with weights and a centre (GD), biases (Adam), pairs (Adam)."""
    sweeps = []
    gradient = _fused.RowSweep.gradient

    def spy(self):
        sweeps.append(len(self.blocks))
        gradient(self)

    monkeypatch.setattr(_fused.RowSweep, "gradient", spy)
    swept = sweep_fit(kind, dtype, record)
    assert sweeps == [1] * 6
    monkeypatch.setattr(trainer, "row_sweep", lambda *args, **kwargs: None)
    passes = sweep_fit(kind, dtype, record)
    assert len(sweeps) == 6  # the passes, not the sweep
    assert torch.equal(swept.history, passes.history)
    for name in swept.params:
        assert torch.equal(swept.params[name], passes.params[name]), name


@pytest.mark.parametrize("kind", SWEEP_KINDS)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_row_blocks_equal_one_block_up_to_rounding(monkeypatch, kind, dtype):
    """Blocks of units (a pair's two rows together, members' f put back in row order
    for the recorded objective) change only the order of G's and sum v's additions.

    Under GD: Adam divides each gradient entry by its own magnitude, so that an entry
    that is zero up to rounding (the symmetric start of ``NeuralLinear``) moves by
    +-lr whichever way it rounds."""
    whole = sweep_fit(kind, dtype, optimizer="gd")
    blocks = []
    init = _fused.RowSweep.__init__

    def spy(self, *args, **kwargs):
        init(self, *args, **kwargs)
        blocks.append(len(self.blocks))

    monkeypatch.setattr(_fused.RowSweep, "__init__", spy)
    # 400 bytes: 2 to 12 rows a block of 8 (or 3 x 8) units, 10 blocks or more
    monkeypatch.setattr(_fused, "UNITS_BLOCK_BYTES", 400)
    blocked = sweep_fit(kind, dtype, optimizer="gd")
    assert blocks and min(blocks) >= 10, blocks
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    torch.testing.assert_close(blocked.history, whole.history, rtol=tol, atol=tol)
    for name in whole.params:
        torch.testing.assert_close(
            blocked.params[name], whole.params[name], rtol=tol, atol=tol
        )


def test_row_blocks_follow_the_torch_func_gradient(monkeypatch):
    """Blocked pairs with biases, one step at lr 1: theta_0 - theta_1 is torch.func's
    gradient of the objective written out (an independent computation)."""
    monkeypatch.setattr(_fused, "UNITS_BLOCK_BYTES", 8 * 8 * 7)
    net, params, obs, loss, penalties, _ = sweep_problem(
        "pairs-btl-adam", torch.float64
    )

    def total(p):
        f = net.forward(p, obs.X)
        half = obs.n
        margin = f[:, :half] - f[:, half:]
        values = obs.weights * (torch.nn.functional.softplus(margin) - obs.y * margin)
        diff = torch.cat(
            [(p[k] - c).reshape(-1) for k, c in penalties[0].center.items()]
        )
        return values.sum() + 0.5 * penalties[0].lam * (diff * diff).sum()

    grads = torch.func.grad(total)({k: v.clone() for k, v in params.items()})
    result = fit(net, params, obs, loss, penalties=penalties, lr=1.0, steps=1)
    torch.testing.assert_close(
        result.history[0, 0], total(params), rtol=1e-12, atol=1e-12
    )
    for name, g in grads.items():
        torch.testing.assert_close(
            params[name] - result.params[name], g, rtol=1e-10, atol=1e-10
        )


def test_a_loss_that_overrides_its_derivative_alone_is_not_swept():
    """A subclass with its own ``dloss_df`` but its parent's ``row_slope`` would be
    swept with the parent's slope: ``row_sweep`` declines it (the passes run it)."""

    class Doubled(BCE):
        def dloss_df(self, f, obs):
            return 2.0 * super().dloss_df(f, obs)

    net, params, obs, _, penalties, _ = sweep_problem(
        "rows-bce-bias-adam", torch.float64
    )
    flat = FlatParams({k: v.clone() for k, v in params.items()})
    network = make_pass(net, flat.params, flat.grads, obs.X)
    terms = FlatPenalties(penalties, flat)
    assert (
        row_sweep(net, network, obs, BCE(), terms, obs.X.new_empty, gd=False)
        is not None
    )
    assert (
        row_sweep(net, network, obs, Doubled(), terms, obs.X.new_empty, gd=False)
        is None
    )
    shared = Pairs(obs.X, torch.arange(60), torch.arange(60).flip(0), obs.y[:60])
    assert (
        row_sweep(
            net, network, shared, BradleyTerry(), terms, obs.X.new_empty, gd=False
        )
        is None
    )
