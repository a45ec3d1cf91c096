"""The fused relu/BCE steps of ``nn.fit`` with the hidden layer as units x rows.

A private kernel of ``nn.fit``. The steps of one depth-2 relu network without biases
trained by GD on unweighted rows with BCE and one L2 penalty on every parameter without
a centre (NeuralLog's refits) keep the hidden layer as (m, N) instead of (N, m)
(``UnitsSteps``):

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
A recorded step runs here too: the objective is computed from the step's f before its
update (``Objective``), so the whole fit is one kernel. Large hidden blocks are split
into row blocks that stay in the cache (``UnitsSteps``).

``blocks_apply`` and ``_units_case`` say where the block loop of ``nn._blocks`` and these
steps compute a fit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import torch

from banditkit.nn._passes import Dense2, Pass
from banditkit.nn._scratch import Allocator, copy_into
from banditkit.nn.losses import BCE, Gaussian, Loss
from banditkit.nn.network import Params, StackedMLP
from banditkit.nn.observations import Pairs, Rows, Sets
from banditkit.nn.penalties import L2Penalty

if TYPE_CHECKING:
    from banditkit.nn._flat import FlatParams, FlatPenalties

__all__ = [
    "UNITS_BLOCK_ELEMENTS",
    "UnitsSteps",
    "blocks_apply",
    "fused_steps",
    "members_units_steps",
]

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


#: A fused kernel: ``(count, flat, step, objective)`` runs ``count`` GD steps and, when
#: ``objective`` is given, returns J (M,) at the first step's parameters, computed by
#: ``objective`` from that step's f (M, N) before its update.
Objective = Callable[[torch.Tensor], torch.Tensor]
Steps = Callable[[int, "FlatParams", float, Objective | None], torch.Tensor | None]

#: Entries of the (m, rows) hidden block of one row block of ``UnitsSteps``: the rows
#: are split into blocks once the whole (m, N) block exceeds ``2 * UNITS_BLOCK_ELEMENTS``
#: (measured: docs/performance.md, "The trainer's recorded steps and row blocks").
UNITS_BLOCK_ELEMENTS = 2**16


def fused_steps(
    net: StackedMLP,
    network: Pass,
    obs: Observations,
    loss: Loss,
    terms: FlatPenalties,
    new: Allocator,
) -> Steps | None:
    """The kernel of this GD fit's steps, or None (the plain steps).

    ``UnitsSteps`` for one member on shared rows, ``members_units_steps`` for members
    with their own rows (X (M, N, d)), both in the units case (``_units_case``). Their
    buffers are the ``Dense2`` pass's (``network``) where it has them, else from ``new``.
    """
    if not _units_case(net, obs, loss, terms):
        return None
    assert isinstance(obs, Rows)
    lam = terms.terms[0][0]
    if obs.X.ndim == 3:
        buffers = _members_buffers(network, obs.X, net.width, new)
        return lambda count, flat, step, objective: members_units_steps(
            count, flat, obs.X, buffers, obs.y, net.out_scale, lam, step, objective
        )
    if isinstance(network, Dense2) and network.w1.shape[0] == 1 and obs.y.ndim == 1:
        return UnitsSteps(network, obs.y, lam)
    return None


#: X^T (M, d, N), h^T (M, m, N), f (M, 1, N) and sw (M, m) of ``members_units_steps``
_MembersBuffers = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]


def _members_buffers(
    network: Pass, X: torch.Tensor, m: int, new: Allocator
) -> _MembersBuffers:
    """The units layout's buffers on rows X (M, N, d).

    The ``Dense2`` pass's, or new ones from ``new`` (a stack computed member by member
    builds ``Members``, which has none).
    """
    if isinstance(network, Dense2):
        return network.XT, network.hT, network.f, network.sw2
    M, N, _ = X.shape
    return copy_into(new, X.mT), new((M, m, N)), new((M, 1, N)), new((M, m))


class UnitsSteps:
    """GD steps of one network with the hidden layer as (m, N) (module docstring).

    The buffers and the rows' layout are made once per fit. On the CPU, once the
    (m, N) hidden block exceeds twice ``UNITS_BLOCK_ELEMENTS``, a step runs over blocks
    of about ``UNITS_BLOCK_ELEMENTS / m`` rows: each block's h^T, v and C^T pass through
    the cache once (forward, loss slope, relu's mask) and G accumulates C_b^T X_b, the
    rows loss being a sum over rows. With one block the arithmetic is that of the
    unblocked steps bitwise; with several, G sums its blocks in another order (rounding).
    """

    def __init__(self, network: Dense2, y: torch.Tensor, lam: float) -> None:
        X = network.X
        self.w1, self.w2c, self.sw = network.w1[0], network.w2c, network.sw[0]
        self.g1, self.g2 = network.g1[0], network.g2[0]
        N, m = X.shape[0], self.w1.shape[0]
        self.s, self.lam = network.s, lam
        self.sw_col = self.sw[0].unsqueeze(-1)
        rows = N
        if X.device.type == "cpu" and m * N > 2 * UNITS_BLOCK_ELEMENTS:
            rows = max(1, UNITS_BLOCK_ELEMENTS // m)
        self.f, self.v = network.new((1, N)), network.new((1, N))
        # the network's (m, N) hidden buffer (its first m n entries for row blocks of
        # n rows) and its X^T (one block): nothing is allocated or copied twice
        hidden = network.hT.view(-1)
        #: per block: X_b^T (d, n) contiguous, X_b, y_b, f_b, v_b, v_b along the units
        #: and h_b^T (m, n), overwritten by C_b^T (contiguous views of one buffer)
        self.blocks = []
        for i in range(0, N, rows):
            j = min(i + rows, N)
            n = j - i
            v = self.v[:, i:j]
            self.blocks.append(
                (
                    network.XT[0] if n == N else copy_into(network.new, X[i:j].mT),
                    X[i:j],
                    y[i:j],
                    self.f[:, i:j],
                    v,
                    v.expand(m, n),
                    hidden[: m * n].view(m, n),
                )
            )

    def __call__(
        self,
        count: int,
        flat: FlatParams,
        step: float,
        objective: Objective | None = None,
    ) -> torch.Tensor | None:
        """``count`` GD steps; J at the first step's parameters if ``objective``."""
        s, w1, w2c, sw, sw_col = self.s, self.w1, self.w2c, self.sw, self.sw_col
        g1, g2, lam = self.g1, self.g2, self.lam
        grad, theta = flat.grad, flat.theta
        mm, relu_, sigmoid = torch.mm, torch.relu_, torch.sigmoid
        value = None
        for k in range(count):
            torch.mul(w2c, s, out=sw)
            for b, (XT, Xb, yb, f, v, v_units, hT) in enumerate(self.blocks):
                mm(w1, XT, out=hT)
                relu_(hT)
                mm(sw, hT, out=f)
                sigmoid(f, out=v).sub_(yb)
                _threshold_backward(v_units, hT, 0, grad_input=hT)  # C^T over h^T
                if b == 0:  # G = C^T X, summed over the row blocks
                    mm(hT, Xb, out=g1)
                else:
                    g1.addmm_(hT, Xb)
            if k == 0 and objective is not None:
                value = objective(self.f)
            # dw_2 = s (W_1 . G) (relu: v^T h = G . W_1), dW_1 = sw * G
            torch.linalg.vecdot(w1, g1, out=g2)
            g2.mul_(s)
            g1.mul_(sw_col)
            grad.add_(theta, alpha=lam)
            theta.sub_(grad, alpha=step)
        return value


def members_units_steps(
    count: int,
    flat: FlatParams,
    X: torch.Tensor,
    buffers: _MembersBuffers,
    y: torch.Tensor,
    s: float,
    lam: float,
    step: float,
    objective: Objective | None = None,
) -> torch.Tensor | None:
    """``count`` GD steps for M members with their own rows X (M, N, d), y (M or 1, N).

    The units steps with a member axis, hidden layer (M, m, N): per member
    h^T = relu(W_1 X^T), f = sw^T h^T, v = sigmoid(f) - y, C^T = 1[h^T > 0] v (over
    h^T), G = C^T X, dW_1 = sw * G, dw_2 = s (W_1 . G), with batched products (the
    seeds of one NeuralLog configuration side by side,
    ``policies.logistic.neurallog_batched``), in ``buffers`` made once per fit
    (``_members_buffers``).
    """
    W1 = flat.params["layers.0.weight"]
    W2 = flat.params["layers.1.weight"][:, 0]
    g1 = flat.grads["layers.0.weight"]
    g2 = flat.grads["layers.1.weight"][:, 0]  # (M, m)
    grad, theta = flat.grad, flat.theta
    XT, hT, f, sw = buffers
    labels = y.unsqueeze(-2)  # (M or 1, 1, N)
    sw_row, sw_col = sw.unsqueeze(1), sw.unsqueeze(-1)
    v_rows = f.expand_as(hT)
    value = None
    for k in range(count):
        torch.bmm(W1, XT, out=hT)
        hT.relu_()
        torch.mul(W2, s, out=sw)
        torch.bmm(sw_row, hT, out=f)
        if k == 0 and objective is not None:  # J at this step's parameters
            value = objective(f[:, 0])
        torch.sigmoid_(f).sub_(labels)  # v (M, 1, N), in f
        _threshold_backward(v_rows, hT, 0, grad_input=hT)  # C^T over h^T
        torch.bmm(hT, X, out=g1)  # G
        torch.linalg.vecdot(W1, g1, out=g2)  # relu: v^T h = G . W_1
        g2.mul_(s)
        g1.mul_(sw_col)
        grad.add_(theta, alpha=lam)
        theta.sub_(grad, alpha=step)
    return value
