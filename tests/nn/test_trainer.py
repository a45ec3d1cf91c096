"""The pieces of nn.fit against torch.func and torch.optim, float64 (tolerance 1e-10).

Passes (nn._passes), losses' derivatives, flat penalties and Adam (nn._flat), and whole
steps of nn.fit on every kind of observations the families use: rows, pairs, sets,
weighted, per-member targets, L2 towards a centre, on one member and on a stack.
"""

import itertools

import pytest
import torch

from banditkit.nn import (
    BCE,
    MNL,
    BradleyTerry,
    Gaussian,
    L2Penalty,
    NeuralLinear,
    Pairs,
    PairwiseGLM,
    Rows,
    Sets,
    StackedMLP,
    fit,
)
from banditkit.nn._flat import Adam, FlatParams, FlatPenalties
from banditkit.nn._kernels import separate_members
from banditkit.nn._passes import (
    Deep,
    DeepStack,
    Dense2,
    Members,
    Stacked2,
    make_pass,
)
from tests.nn.helpers import gen, rand, randn

N, D = 14, 4
TOL = {"rtol": 1e-10, "atol": 1e-10}


def moved(net: StackedMLP, M: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """M members away from their initialisation (no unit at its kink, halves apart)."""
    params = net.init(M, gen(seed))
    g = gen(seed + 1)
    return {
        k: v + 0.3 * torch.randn(v.shape, generator=g, dtype=v.dtype)
        for k, v in params.items()
    }


NETS = [
    (kind, depth, M, bias, act)
    for kind, depth, M, bias, act in itertools.product(
        ["stacked", "linear"], [2, 3, 4], [1, 3], [False, True], ["relu", "sigmoid"]
    )
    if not (kind == "linear" and not bias)
]


def network(kind: str, depth: int, bias: bool, act: str) -> StackedMLP:
    if kind == "linear":
        return NeuralLinear(D, width=6, depth=depth, activation=act)
    return StackedMLP(D, width=6, depth=depth, bias=bias, activation=act)


@pytest.mark.parametrize(("kind", "depth", "M", "bias", "act"), NETS)
@pytest.mark.parametrize("separate", [False, True])
def test_passes_equal_torch_func(kind, depth, M, bias, act, separate):
    net = network(kind, depth, bias, act)
    params = moved(net, M)
    X, v = randn(N, D, seed=2), randn(M, N, seed=3)
    flat = FlatParams(params)
    one_by_one = separate and M > 1  # float64 on the CPU: member by member
    with separate_members(separate):
        network_pass = make_pass(net, flat.params, flat.grads, X)
    expected = {2: Dense2 if M == 1 or act == "relu" else Stacked2}.get(
        depth, Deep if M == 1 else DeepStack
    )
    assert isinstance(network_pass, Members if one_by_one else expected)
    with torch.no_grad():
        f = network_pass.forward()
        network_pass.backward(v)
    f_ref, vjp = net.forward_vjp(params, X, method="torch.func")
    torch.testing.assert_close(f, f_ref, **TOL)
    for name, g in vjp(v).items():
        torch.testing.assert_close(flat.grads[name], g, **TOL)
        if depth > 2 and M == 1:  # the pass performs autograd's operations
            assert torch.equal(flat.grads[name], g), name
    if one_by_one:  # each member: its own pass's arithmetic, bitwise
        for k in range(M):
            one = {name: p[k : k + 1] for name, p in params.items()}
            f_k, vjp_k = net.forward_vjp(one, X)
            assert torch.equal(f[k], f_k[0])
            for name, g in vjp_k(v[k : k + 1]).items():
                assert torch.equal(flat.grads[name][k], g[0]), (k, name)
    # and the functional form: forward_vjp with method "auto" is this pass (batched)
    f_auto, vjp_auto = net.forward_vjp(params, X)
    torch.testing.assert_close(f_auto, f_ref, **TOL)
    exact = {"rtol": 0, "atol": 0}
    for name, g in vjp_auto(v).items():
        torch.testing.assert_close(
            g, flat.grads[name], **(TOL if one_by_one else exact)
        )


@pytest.mark.parametrize(
    ("kind", "bias"), [("stacked", False), ("stacked", True), ("linear", True)]
)
@pytest.mark.parametrize(
    ("depth", "act"), [(2, "relu"), (2, "sigmoid"), (3, "relu"), (3, "sigmoid")]
)
@pytest.mark.parametrize("separate", [False, True])
def test_members_on_their_own_rows_equal_torch_func(kind, bias, depth, act, separate):
    """X (M, N, d): the units passes batched, or member by member (float64 seeds)."""
    net = network(kind, depth, bias, act)
    M = 3
    params = moved(net, M)
    X, v = randn(M, N, D, seed=2), randn(M, N, seed=3)
    flat = FlatParams(params)
    batched = Dense2 if (depth, act) == (2, "relu") else DeepStack
    with separate_members(separate):
        network_pass = make_pass(net, flat.params, flat.grads, X)
        assert isinstance(network_pass, Members if separate else batched)
        with torch.no_grad():
            f = network_pass.forward()
            network_pass.backward(v)
    for k in range(M):
        one = {name: p[k : k + 1] for name, p in params.items()}
        f_ref, vjp = net.forward_vjp(one, X[k], method="torch.func")
        torch.testing.assert_close(f[k : k + 1], f_ref, **TOL)
        f_own, vjp_own = net.forward_vjp(one, X[k])  # the member's own pass
        own = vjp_own(v[k : k + 1])
        for name, g in vjp(v[k : k + 1]).items():
            torch.testing.assert_close(flat.grads[name][k : k + 1], g, **TOL)
            if separate:  # member by member: its own fit's arithmetic, bitwise
                assert torch.equal(flat.grads[name][k : k + 1], own[name]), name
        if separate:
            assert torch.equal(f[k : k + 1], f_own)


@pytest.mark.parametrize("act", ["relu", "sigmoid"])
def test_a_stack_with_strided_parameters_equals_torch_func(act):
    """DeepStack copies the first layer where its views would not be contiguous."""
    net = network("stacked", 3, True, act)
    M = 3
    params = {  # same values, transposed storage: no (M m, d) view exists
        name: p.mT.contiguous().mT if p.ndim == 3 else p
        for name, p in moved(net, M).items()
    }
    assert not params["layers.0.weight"].is_contiguous()
    X, v = randn(N, D, seed=2), randn(M, N, seed=3)
    f, vjp = net.forward_vjp(params, X, method="backprop")
    f_ref, vjp_ref = net.forward_vjp(params, X, method="torch.func")
    torch.testing.assert_close(f, f_ref, **TOL)
    ref = vjp_ref(v)
    for name, g in vjp(v).items():
        torch.testing.assert_close(g, ref[name], **TOL)


def observations(kind: str, M: int):
    """(loss, observations) of every kind the families train on."""
    X = randn(N, D, seed=4)
    w_rows = rand(M, N, seed=5) + 0.2
    if kind == "rows-bce-weighted":
        return BCE(), Rows(X, (rand(N, seed=6) < 0.5).double(), w_rows)
    if kind == "rows-gaussian-members":
        return Gaussian(0.7), Rows(X, randn(M, N, seed=7))
    half = N // 2
    first, second = torch.arange(half), torch.arange(half, N)
    y_pairs, w_pairs = rand(half, seed=8), rand(half, seed=9) + 0.5
    if kind == "pairs-btl-halves":
        return BradleyTerry(), Pairs(X, first, second, y_pairs, w_pairs)
    if kind == "pairs-btl-shared":  # rows in several pairs: the general scatter
        return BradleyTerry(), Pairs(X, first, second.flip(0) // 2, y_pairs, w_pairs)
    if kind == "pairs-probit":
        return PairwiseGLM("probit"), Pairs(X, first, second, y_pairs, w_pairs)
    items = torch.randint(-1, N, (6, 3), generator=gen(10))
    items[:, 0] = torch.arange(6)
    choice = torch.randint(-1, 1, (6,), generator=gen(11))
    return MNL(), Sets(X, items, choice, rand(M, 6, seed=12))


KINDS = [
    "rows-bce-weighted",
    "rows-gaussian-members",
    "pairs-btl-halves",
    "pairs-btl-shared",
    "pairs-probit",
    "sets-mnl",
]


def test_pairs_know_their_layout():
    assert observations("pairs-btl-halves", 1)[1].halves
    assert not observations("pairs-btl-shared", 1)[1].halves


@pytest.mark.parametrize("kind", KINDS)
def test_derivative_alone_equals_the_pair(kind):
    loss, obs = observations(kind, 3)
    f = randn(3, N, seed=13)
    assert torch.equal(loss.dloss_df(f, obs), loss.value_and_dloss_df(f, obs)[1])


@pytest.mark.parametrize("M", [1, 3])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_flat_objective_is_the_penalties_own_values_bitwise(M, dtype):
    """``FlatPenalties.objective`` (the trainer's recorded J) against the losses' sum
    plus each ``L2Penalty.value``, as the trainer computed it before: equal bitwise,
    for penalties on every parameter or some, with centres of M or 1 members, lam 0."""
    net = NeuralLinear(D, width=6, depth=3)
    params = {k: v.to(dtype) for k, v in moved(net, M, seed=4).items()}
    start = {k: v.to(dtype) for k, v in net.init(M, gen(9)).items()}
    shared = {k: v[:1] for k, v in start.items()}
    names = ["layers.0.weight", "layers.2.bias", "layers.1.weight"]
    cases = [
        [L2Penalty(0.7)],
        [L2Penalty(1.3, start)],
        [L2Penalty(0.25, shared, names), L2Penalty(0.0), L2Penalty(2.0, None, names)],
        [L2Penalty(0.0)],
        [],
    ]
    values = randn(M, 11, seed=5).to(dtype)
    for penalties in cases:
        flat = FlatParams(params)
        terms = FlatPenalties(penalties, flat)
        expected = values.sum(-1).expand(M)
        for penalty in penalties:
            expected = expected + penalty.value(flat.params)
        for _ in range(2):  # the square buffers are made at the first call
            assert torch.equal(terms.objective(values), expected), penalties


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("M", [1, 3])
@pytest.mark.parametrize("separate", [False, True])
def test_step_derivative_equals_dloss_df_bitwise(kind, M, separate):
    """The trainer's prepared derivative (buffers made once) is ``dloss_df``, also on
    a second call into the same buffers."""
    loss, obs = observations(kind, M)
    with separate_members(separate):
        derivative = loss.step_derivative(obs, M, obs.X.new_empty)
        for seed in (13, 14):
            f = randn(M, N, seed=seed)
            assert torch.equal(derivative(f), loss.dloss_df(f, obs)), (kind, seed)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("M", [1, 3])
def test_row_slope_of_a_block_equals_dloss_df_bitwise(kind, M):
    """Each block's slope (its rows offset after offset) is ``dloss_df``'s values on
    those rows: bitwise for a block of every unit, to the last bit on smaller blocks (a
    sigmoid's tail elements take PyTorch's scalar path); the losses whose units share
    rows have none."""
    loss, obs = observations(kind, M)
    rows = loss.row_slope(obs)
    if kind in ("pairs-btl-shared", "pairs-probit", "sets-mnl"):
        assert rows is None
        return
    assert rows is not None
    assert len(rows.offsets) * rows.units == N
    f = randn(M, N, seed=13)
    want = loss.dloss_df(f, obs)
    # every unit; then blocks of one, two and the rest of the units
    for i, j in [(0, rows.units), *itertools.pairwise([0, 1, 3, rows.units])]:
        spans = [slice(offset + i, offset + j) for offset in rows.offsets]
        f_block = torch.cat([f[:, span] for span in spans], dim=1)
        out = torch.full_like(f_block, torch.nan)
        slope = rows.bind(f_block, i, j, out)
        expected = torch.cat([want[:, s] for s in spans], dim=1)
        for _ in range(2):  # bound once, run at every step
            slope()
            if j - i == rows.units:
                assert torch.equal(out, expected)
            else:
                torch.testing.assert_close(out, expected, rtol=1e-15, atol=1e-16)


@pytest.mark.parametrize("weighted", [False, True])
def test_step_derivative_of_halves_in_float32_and_without_weights(weighted):
    half = N // 2
    for dtype in (torch.float32, torch.float64):
        obs = Pairs(
            randn(N, D, seed=4),
            torch.arange(half),
            torch.arange(half, N),
            rand(3, half, seed=8),  # per-member targets
            rand(half, seed=9) + 0.5 if weighted else None,
            dtype=dtype,
        )
        assert obs.halves
        derivative = BradleyTerry().step_derivative(obs, 3, obs.X.new_empty)
        for seed in (13, 14):
            f = randn(3, N, seed=seed).to(dtype)
            assert torch.equal(derivative(f), BradleyTerry().dloss_df(f, obs))


def objective(net, loss, obs, penalties, params):
    """J(theta) per member: the loss values and the penalties, written out."""
    f = net.forward(params, obs.X)
    if isinstance(loss, PairwiseGLM):  # probit, written in torch for autograd
        t = f[:, obs.first] - f[:, obs.second]
        logp = torch.special.log_ndtr
        values = -(obs.y * logp(t) + (1 - obs.y) * logp(-t)) * obs.weights
    else:
        values, _ = loss.value_and_dloss_df(f, obs)
    total = values.sum(-1).expand(f.shape[0])
    for penalty in penalties:
        names = list(params) if penalty.names is None else penalty.names
        for name in names:
            diff = params[name]
            if penalty.center is not None:
                diff = diff - penalty.center[name]
            total = total + 0.5 * penalty.lam * (diff * diff).flatten(1).sum(1)
    return total


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("depth", "M"), [(2, 1), (2, 3), (3, 1), (3, 3)])
@pytest.mark.parametrize("penalty", ["zero", "centre", "head"])
def test_one_step_moves_by_the_torch_func_gradient(kind, depth, M, penalty):
    """One GD step at lr 1: theta_0 - theta_1 = grad J, J(theta_0) = history[0]."""
    net = NeuralLinear(D, width=6, depth=depth) if "pairs" in kind else None
    net = net or StackedMLP(D, width=6, depth=depth, bias=kind == "sets-mnl")
    params = moved(net, M, seed=depth)
    loss, obs = observations(kind, M)
    if kind == "pairs-probit" and M > 1:
        y = randn(M, N // 2, seed=14).sigmoid()  # per-member soft labels
        obs = Pairs(obs.X, obs.first, obs.second, y, obs.weights)
    centre = {k: v[:1] + 0.1 for k, v in params.items()}
    penalties = {
        "zero": [L2Penalty(0.7)],
        "centre": [L2Penalty(0.7, centre), L2Penalty(0.2)],
        "head": [L2Penalty(0.3, None, net.head_names)],
    }[penalty]

    def total(p):
        return objective(net, loss, obs, penalties, p).sum()

    grads = torch.func.grad(total)({k: v.clone() for k, v in params.items()})
    result = fit(net, params, obs, loss, penalties=penalties, lr=1.0, steps=1)
    with torch.no_grad():
        J = objective(net, loss, obs, penalties, params)
    torch.testing.assert_close(result.history[0], J, rtol=1e-12, atol=1e-12)
    for name, g in grads.items():
        torch.testing.assert_close(params[name] - result.params[name], g, **TOL)


def test_adam_is_torch_optim_adam_bitwise():
    g = gen(15)
    for trial in range(40):
        dtype = torch.float64 if trial % 2 else torch.float32
        shapes = [
            (int(a), int(b)) for a, b in torch.randint(1, 30, (3, 2), generator=g)
        ]
        tensors = [torch.randn(s, generator=g, dtype=dtype) for s in shapes]
        flat = torch.cat([t.reshape(-1) for t in tensors])
        reference = [t.clone().requires_grad_(True) for t in tensors]
        optimizer = torch.optim.Adam(reference, lr=0.03)
        adam = Adam(flat, 0.03)
        for _ in range(4):
            grads = [torch.randn(s, generator=g, dtype=dtype) for s in shapes]
            for t, grad in zip(reference, grads, strict=True):
                t.grad = grad
            optimizer.step()
            adam.step(torch.cat([grad.reshape(-1) for grad in grads]))
        assert torch.equal(torch.cat([t.detach().reshape(-1) for t in reference]), flat)


@pytest.mark.parametrize(
    ("kind", "depth", "M"), [("pairs-btl-halves", 3, 1), ("sets-mnl", 2, 3)]
)
def test_adam_fit_follows_torch_optim_on_the_torch_func_gradient(kind, depth, M):
    net = NeuralLinear(D, width=6, depth=depth) if "pairs" in kind else None
    net = net or StackedMLP(D, width=6, depth=depth, bias=True)
    params = moved(net, M, seed=7)
    loss, obs = observations(kind, M)
    penalties = [L2Penalty(0.5, {k: v.clone() for k, v in params.items()})]
    reference = {k: v.clone().requires_grad_(True) for k, v in params.items()}
    optimizer = torch.optim.Adam(list(reference.values()), lr=0.01)
    for _ in range(6):
        optimizer.zero_grad()
        objective(net, loss, obs, penalties, reference).sum().backward()
        optimizer.step()
    for record in ("all", "ends"):
        result = fit(
            net,
            params,
            obs,
            loss,
            penalties=penalties,
            optimizer="adam",
            lr=0.01,
            steps=6,
            record=record,
        )
        for name, value in reference.items():
            torch.testing.assert_close(result.params[name], value.detach(), **TOL)


def test_mean_reduction_scales_the_step_and_the_objective():
    net = StackedMLP(D, width=6)
    params = moved(net, 2)
    loss, obs = observations("rows-gaussian-members", 2)
    pen = [L2Penalty(0.4)]
    plain = fit(net, params, obs, loss, penalties=pen, lr=0.5 / N, steps=3)
    mean = fit(net, params, obs, loss, penalties=pen, lr=0.5, steps=3, reduction="mean")
    torch.testing.assert_close(mean.history, plain.history / N, rtol=1e-13, atol=0)
    for name in params:
        torch.testing.assert_close(
            mean.params[name], plain.params[name], rtol=1e-13, atol=1e-15
        )


@pytest.mark.parametrize("record", ["all", "ends", "none"])
def test_members_with_their_own_rows_train_as_separate_fits(record):
    """X (M, N, d): member k on its own rows; the units steps with a member axis."""
    M = 3
    net = StackedMLP(D, width=6)
    params = moved(net, M)
    X = randn(M, N, D, seed=16)
    y = (rand(M, N, seed=17) < 0.5).double()
    pen = [L2Penalty(0.6)]
    result = fit(
        net, params, Rows(X, y), BCE(), penalties=pen, lr=0.05, steps=9, record=record
    )
    assert result.history.shape == ({"all": 9, "ends": 2, "none": 0}[record], M)
    for k in range(M):
        one = {name: p[k : k + 1] for name, p in params.items()}
        alone = fit(net, one, Rows(X[k], y[k]), BCE(), penalties=pen, lr=0.05, steps=9)
        for name, p in alone.params.items():
            torch.testing.assert_close(
                result.params[name][k : k + 1], p, rtol=1e-12, atol=1e-13
            )
    with pytest.raises(ValueError, match="member tables"):
        fit(net, params, Rows(X[:2], y[:2]), BCE())
