"""The fused relu/BCE steps of ``nn.fit`` with the hidden layer as units x rows.

A private kernel of ``nn.fit``. The steps whose objective is not recorded, for one
depth-2 relu network without biases trained by GD on unweighted rows with BCE and one L2
penalty on every parameter without a centre (NeuralLog's refits), keep the hidden layer
as (m, N) instead of (N, m) (``units_steps``):

    h^T = relu(W_1 X^T),  f = sw^T h^T,  v = sigmoid(f) - y,  C^T = 1[h^T > 0] v,
    G = C^T X,  dW_1 = sw * G,  dw_2 = s (W_1 . G)  (rows of W_1 and G),
    grad += lam theta,  theta -= step * grad,

with v broadcast along the units in one pass (contiguous rows), sw = s W_2[0]
multiplying the (m, d) product instead of the (N, m) block, and dw_2 = s v^T h from G:
relu's h = z 1[z > 0] gives v^T h = sum_k C_k z_k = sum_k C_k W_1 x_k, an O(m d)
product instead of a pass over the (m, N) block. h^T = W_1 X^T runs faster than
X W_1^T for these shapes (docs/performance.md). The same gradient; the products and the
place of sw round
differently, so the iterates agree with the plain pass's up to rounding (tests: 1e-12).

``blocks_apply`` and ``units_apply`` say where the block loop of ``nn._blocks`` and these
steps compute a fit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import torch

from banditkit.nn._passes import Dense2, Pass
from banditkit.nn.losses import BCE, Gaussian, Loss
from banditkit.nn.network import Params, StackedMLP
from banditkit.nn.observations import Pairs, Rows, Sets
from banditkit.nn.penalties import L2Penalty

if TYPE_CHECKING:
    from banditkit.nn._flat import FlatParams, FlatPenalties

__all__ = ["blocks_apply", "fused_steps", "members_units_steps", "units_steps"]

#: grad * 1[input > threshold] elementwise, into grad_input (relu's backward).
_threshold_backward = torch.ops.aten.threshold_backward.grad_input

Observations = Rows | Pairs | Sets


def blocks_apply(
    net: StackedMLP,
    params: Params,
    obs: Observations,
    loss: Loss,
    penalties: Sequence[L2Penalty],
) -> bool:
    """Whether the block loop can compute this GD fit (before looking at the rows).

    One member of a depth-2 ``StackedMLP`` without biases, unweighted rows with one
    target per row, BCE or MSE, and L2 penalties on every parameter.
    """
    if (
        type(net) is not StackedMLP
        or net.depth != 2
        or net.bias
        or not isinstance(obs, Rows)
        or obs.X.ndim != 2
        or obs.weights is not None
        or obs.y.ndim != 1
    ):
        return False
    if not (
        type(loss) is BCE
        or (isinstance(loss, Gaussian) and loss._precision == 1.0)  # MSE: sigma = 1
    ):
        return False
    w1 = params["layers.0.weight"]
    if w1.shape[0] != 1 or w1.dtype != obs.X.dtype or w1.device != obs.X.device:
        return False
    return all(
        type(p) is L2Penalty and (p.names is None or set(p.names) == set(params))
        for p in penalties
    )


def _units_case(
    net: StackedMLP, obs: Observations, loss: Loss, terms: FlatPenalties
) -> bool:
    """relu, no biases, depth 2, unweighted rows, BCE, one L2 term on all without centre."""
    return (
        type(net) is StackedMLP
        and net.depth == 2
        and not net.bias
        and net.activation == "relu"
        and type(loss) is BCE
        and isinstance(obs, Rows)
        and obs.weights is None
        and len(terms.terms) == 1
        and terms.terms[0][2] is None
        and all(type(p) is L2Penalty and p.names is None for p in terms.penalties)
    )


def fused_steps(
    net: StackedMLP,
    network: Pass,
    obs: Observations,
    loss: Loss,
    terms: FlatPenalties,
) -> Callable[[int, FlatParams, float], None] | None:
    """The kernel of this GD fit's unrecorded steps, or None (the plain steps).

    ``units_steps`` for one member on shared rows, ``members_units_steps`` for members
    with their own rows (X (M, N, d)), both in the units case (``_units_case``).
    """
    if not _units_case(net, obs, loss, terms):
        return None
    assert isinstance(obs, Rows)
    lam = terms.terms[0][0]
    if obs.X.ndim == 3:
        return lambda count, flat, step: members_units_steps(
            count, flat, obs.X, obs.y, net.out_scale, lam, step
        )
    if isinstance(network, Dense2) and obs.y.ndim == 1:
        return lambda count, flat, step: units_steps(
            count, network, flat, obs.y, lam, step
        )
    return None


def units_steps(
    count: int,
    network: Dense2,
    flat: FlatParams,
    y: torch.Tensor,
    lam: float,
    step: float,
) -> None:
    """``count`` GD steps with the hidden layer as (m, N) (module docstring)."""
    X, s = network.X, network.s
    w1, w2c, sw, f = network.w1t.mT, network.w2c, network.sw, network.f
    g1, g2 = network.g1, network.g2
    grad, theta = flat.grad, flat.theta
    m, N = w1.shape[0], X.shape[0]
    XT = X.mT.contiguous()
    hT, cT = X.new_empty((m, N)), X.new_empty((m, N))
    dloss = X.new_empty((1, N))
    v_units, sw_col = dloss.expand(m, N), sw[0].unsqueeze(-1)
    mm, mul = torch.mm, torch.mul
    relu_, sigmoid = torch.relu_, torch.sigmoid
    for _ in range(count):
        mm(w1, XT, out=hT)
        relu_(hT)
        mul(w2c, s, out=sw)
        mm(sw, hT, out=f)
        sigmoid(f, out=dloss).sub_(y)
        _threshold_backward(v_units, hT, 0, grad_input=cT)
        mm(cT, X, out=g1)  # G = C^T X, then dw_2 = s (W_1 . G) (relu: v^T h = G . W_1)
        torch.linalg.vecdot(w1, g1, out=g2[0])
        g2.mul_(s)
        g1.mul_(sw_col)
        grad.add_(theta, alpha=lam)
        theta.sub_(grad, alpha=step)


def members_units_steps(
    count: int,
    flat: FlatParams,
    X: torch.Tensor,
    y: torch.Tensor,
    s: float,
    lam: float,
    step: float,
) -> None:
    """``count`` GD steps for M members with their own rows X (M, N, d), y (M or 1, N).

    The units steps with a member axis, hidden layer (M, m, N): per member
    h^T = relu(W_1 X^T), f = sw^T h^T, v = sigmoid(f) - y, C^T = 1[h^T > 0] v,
    dW_1 = sw * (C^T X), dw_2 = (s v) h, with batched products (the seeds of one
    NeuralLog configuration side by side, ``policies.logistic.neurallog_batched``).
    """
    M, N, _ = X.shape
    W1 = flat.params["layers.0.weight"]
    W2 = flat.params["layers.1.weight"][:, 0]
    g1 = flat.grads["layers.0.weight"]
    g2 = flat.grads["layers.1.weight"]  # (M, 1, m)
    grad, theta = flat.grad, flat.theta
    m = W1.shape[1]
    XT = X.mT.contiguous()
    hT, cT = X.new_empty((M, m, N)), X.new_empty((M, m, N))
    f, sv = X.new_empty((M, 1, N)), X.new_empty((M, 1, N))
    sw = X.new_empty((M, m))
    labels = y.unsqueeze(-2)  # (M or 1, 1, N)
    sw_row, sw_col = sw.unsqueeze(1), sw.unsqueeze(-1)
    v_rows, h_rows = f.expand(M, m, N), hT.mT
    for _ in range(count):
        torch.bmm(W1, XT, out=hT)
        hT.relu_()
        torch.mul(W2, s, out=sw)
        torch.bmm(sw_row, hT, out=f)
        v = torch.sigmoid_(f).sub_(labels)  # (M, 1, N), in f
        _threshold_backward(v_rows, hT, 0, grad_input=cT)
        torch.bmm(cT, X, out=g1)
        g1.mul_(sw_col)
        torch.mul(v, s, out=sv)
        torch.bmm(sv, h_rows, out=g2)
        grad.add_(theta, alpha=lam)
        theta.sub_(grad, alpha=step)
