"""The trainer's depth-2 relu steps with the hidden layer as units x rows.

Private kernels of ``nn.fit`` on ``Dense2``'s units layout (``nn._passes``), where the
hidden layer is (M m, N) instead of (N, m):

    h^T = relu([W_1, b_1] [X, 1]^T),  f = sw^T h^T + s b_2,  v = dloss/df,
    C^T = 1[h^T > 0] v,  G = C^T [X, 1],  dW_1 = sw * G,  dw_2 = s ([W_1, b_1] . G),

with v broadcast along the units in one pass (contiguous rows), sw = s W_2[0]
multiplying the (m, d) product instead of the (N, m) block, and dw_2 = s v^T h from G:
relu's h = z 1[z > 0] gives v^T h = sum_k C_k z_k, an O(m d) product instead of a pass
over the hidden block.

* ``RowSweep`` (``row_sweep``): a loss that is a sum over units of a few rows each (BCE
  and Gaussian on rows, Bradley-Terry on the halves layout of pairs; ``Loss.row_slope``)
  on rows shared by the members: one sweep over blocks of units per step, so that each
  block of the hidden layer stays in the cache from its forward GEMM to its gradient
  GEMM; GD steps run as one kernel with the penalties and the update (J of a recorded
  step from its f before the update, ``Objective``), Adam steps take its gradient.
* ``members_units_steps`` (``fused_steps``): members on their own rows X (M, N, d)
  under NeuralLog's refit (GD, BCE, one L2 term without a centre, no biases), the same
  steps with batched products.

The same gradient as the plain passes; blocks add G in another order (rounding, tests:
1e-12). ``blocks_apply`` and ``_units_case`` say where the block loop of ``nn._blocks``
and the members' loop compute a fit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple

import torch

from banditkit.nn._passes import Dense2, Pass
from banditkit.nn._scratch import Allocator, copy_into
from banditkit.nn.losses import BCE, Gaussian, Loss, RowSlope
from banditkit.nn.network import Params, StackedMLP
from banditkit.nn.observations import Pairs, Rows, Sets
from banditkit.nn.penalties import L2Penalty

if TYPE_CHECKING:
    from banditkit.nn._flat import FlatParams, FlatPenalties

__all__ = [
    "UNITS_BLOCK_BYTES",
    "RowSweep",
    "blocks_apply",
    "fused_steps",
    "members_units_steps",
    "row_sweep",
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

#: Bytes of the (M m, rows) hidden block of one row block of ``RowSweep`` (half the
#: L2 cache of the machine measured): the rows are split into blocks once the whole
#: (M m, N) block exceeds twice this (measured: docs/performance.md, "The trainer's
#: row sweep").
UNITS_BLOCK_BYTES = 2**20


def row_sweep(
    net: StackedMLP,
    network: Pass,
    obs: Observations,
    loss: Loss,
    terms: FlatPenalties,
    *,
    gd: bool,
) -> RowSweep | None:
    """The row sweep of this fit's steps (``RowSweep``), or None (the passes).

    A ``Dense2`` relu pass on rows shared by the members and a loss that is a sum over
    rows (``Loss.row_slope``, defined by the class that defines its derivative, so that
    a subclass overriding ``dloss_df`` alone is not swept with its parent's slope).
    2-D products in the case the NeuralLog refit kernel covered (``_units_case`` with
    one member, GD; ``RowSweep``).
    """
    if not (
        isinstance(network, Dense2)
        and network.relu
        and not network.keep_hidden
        and obs.X.ndim == 2
    ):
        return None
    owners = [_owner(type(loss), name) for name in ("row_slope", "dloss_df")]
    if not issubclass(owners[0], owners[1]):
        return None
    rows = loss.row_slope(obs)
    if rows is None:
        return None
    two_d = (
        gd
        and isinstance(obs, Rows)
        and network.w1.shape[0] == 1
        and obs.y.ndim == 1
        and _units_case(net, obs, loss, terms)
    )
    return RowSweep(network, rows, terms, two_d=two_d)


def _owner(cls: type, name: str) -> type:
    """The class of ``cls``'s MRO that defines attribute ``name``."""
    return next(c for c in cls.__mro__ if name in vars(c))


def fused_steps(
    net: StackedMLP,
    network: Pass,
    obs: Observations,
    loss: Loss,
    terms: FlatPenalties,
    new: Allocator,
) -> Steps | None:
    """The batched units loop of a GD fit of members on their own rows, or None.

    ``members_units_steps`` for members with their own rows (X (M, N, d)) in the units
    case (``_units_case``), on the ``Dense2`` pass's buffers (``network``) where it has
    them, else from ``new``. (Rows shared by the members: ``row_sweep``.)
    """
    if obs.X.ndim != 3 or not _units_case(net, obs, loss, terms):
        return None
    assert isinstance(obs, Rows)
    lam = terms.terms[0][0]
    buffers = _members_buffers(network, obs.X, net.width, new)
    return lambda count, flat, step, objective: members_units_steps(
        count, flat, obs.X, buffers, obs.y, net.out_scale, lam, step, objective
    )


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


class _Block(NamedTuple):
    """One block of ``RowSweep``: its products' operands and views.

    Shapes with the leading batch of one (``bmm``); ``two_d`` drops it, one member.
    """

    XT: torch.Tensor  # [X_b, 1]^T (1, cols, n), contiguous
    Xa: torch.Tensor  # [X_b, 1] (1, n, cols)
    hT: torch.Tensor  # h_b^T (1, M m, n), overwritten by C_b^T
    h_members: torch.Tensor  # the same as (M, m, n)
    f: torch.Tensor  # (M, 1, n)
    f2: torch.Tensor  # the same as (M, n)
    v2: torch.Tensor  # v (M, n)
    v_units: torch.Tensor  # v along the units (M, m, n), a broadcast view
    slope: Callable[[], None]  # v from f, the loss's (``RowSlope``)


class RowSweep:
    """A depth-2 relu step's forward and backward in one sweep over blocks of rows.

    For a loss that is a sum over units of a few rows each (``Loss.row_slope``: BCE and
    Gaussian/MSE on rows, Bradley-Terry on the halves layout of pairs; weighted or not)
    on rows X (N, d) shared by the M members, in ``Dense2``'s units layout (hidden layer
    (M m, N)): per block of units, whose n rows are [X_b, 1],

        h_b^T = relu([W_1, b_1] [X_b, 1]^T),  f_b = sw^T h_b^T + s b_2 (per member),
        v_b = slope(f_b),  C_b^T = 1[h_b^T > 0] v_b,  G += C_b^T [X_b, 1],

    then the gradients from G (``Dense2.units_gradients``) and db_2 = s sum v, so that
    the (M m, n) block passes through the cache once per step: written by the forward
    GEMM, read by relu, the head and the mask, and by the gradient GEMM. On the CPU the
    units are split into blocks of about ``UNITS_BLOCK_BYTES`` of hidden layer once the
    whole exceeds twice that (a block's rows copied together once per fit: a pair's two
    rows side by side); elsewhere, and below that, one block. With one block these are
    the products and elementwise operations of ``Dense2.forward`` then ``backward`` on
    ``step_derivative``'s values, so the fit is that of the two passes bitwise; with
    several, G and sum v add their blocks in another order (rounding: tests 1e-12).

    One member without biases under GD on BCE (NeuralLog's refits, ``two_d``) computes
    with 2-D products (``mm``), everything else with ``Dense2``'s batched ones (``bmm``,
    one batch): the two round differently for the (1, m) head, and each keeps the
    arithmetic its fits have always had (the seeded runs of tests/test_golden.py).

    ``gradient()`` writes grad J of the losses into the flat gradients (penalties
    apart); called as a fused GD kernel (``Steps``) it also adds the penalties and
    updates theta, ``count`` times.
    """

    def __init__(
        self,
        network: Dense2,
        rows: RowSlope,
        terms: FlatPenalties,
        *,
        two_d: bool = False,
    ) -> None:
        self.network, self.terms, self.two_d = network, terms, two_d
        M, m = network.w1.shape[:2]
        U, N = network.hT.shape[1], network.hT.shape[2]
        self.M, self.offsets = M, rows.offsets
        r = len(rows.offsets)  # rows a unit
        if r * rows.units != N:
            raise ValueError(f"{rows.units} units of {r} rows on {N} rows")
        units, column = rows.units, r * U * network.X.element_size()  # bytes a unit
        if network.X.device.type == "cpu" and column * units > 2 * UNITS_BLOCK_BYTES:
            units = max(1, UNITS_BLOCK_BYTES // column)
        new = network.new
        #: f and v of every block, block after block: (M, 1, n) contiguous each (the
        #: batched head's output), so that with one block, or one member on rows, they
        #: are the (M, N) predictions as they stand
        self._f, self._v = new((M * N,)), new((M * N,))
        #: s b_2 (M, 1), made once a step
        self.sb2 = None if network.b2 is None else new((M, 1))
        hidden = network.hT.view(-1)  # the pass's (M m, N) buffer: n columns a block
        Xa, XT = network.Xa, network.XT  # (1, N, cols), (1, cols, N)
        self.spans: list[tuple[int, int]] = []  # the units of each block
        self.blocks: list[_Block] = []
        for i in range(0, rows.units, units):
            j = min(i + units, rows.units)
            n, start = r * (j - i), r * i  # the block's rows, its place in f and v
            if n == N:
                XTb, Xab = XT, Xa
            else:  # the units' rows, offset after offset, contiguous (once a fit)
                Xab = Xa[:, i:j] if r == 1 else new((1, n, Xa.shape[-1]))
                for k, offset in enumerate(rows.offsets if r > 1 else ()):
                    Xab[:, k * (j - i) : (k + 1) * (j - i)] = Xa[
                        :, offset + i : offset + j
                    ]
                XTb = copy_into(new, Xab.mT)
            fb, vb = (
                self._f[M * start : M * (start + n)],
                self._v[M * start : M * (start + n)],
            )
            hb = hidden[: U * n]
            self.spans.append((i, j))
            if two_d:  # one member, one row of units: 2-D views (W, G, sw (1, m) too)
                f2, v2, h = fb.view(1, n), vb.view(1, n), hb.view(U, n)
                block = _Block(
                    XTb[0],
                    Xab[0],
                    h,
                    h,
                    f2,
                    f2,
                    v2,
                    v2.expand(m, n),
                    rows.bind(f2, i, j, v2),
                )
            else:
                f, v, hT = fb.view(M, 1, n), vb.view(M, 1, n), hb.view(1, U, n)
                f2, v2 = f[:, 0], v[:, 0]
                block = _Block(
                    XTb,
                    Xab,
                    hT,
                    hT.view(M, m, n),
                    f,
                    f2,
                    v2,
                    v.expand(M, m, n),
                    rows.bind(f2, i, j, v2),
                )
            self.blocks.append(block)
        #: W, G and sw (1, m) as 2-D views for ``two_d``
        self.flat2 = (network.Wp[0], network.Gp[0], network.sw[0])

    def predictions(self) -> torch.Tensor:
        """F (M, N) of the last ``gradient()`` (a new tensor when blocks interleave)."""
        if len(self.blocks) == 1 or (self.M == 1 and len(self.offsets) == 1):
            return self._f.view(self.M, -1)
        f = self._f.new_empty((self.M, self._f.numel() // self.M))
        for (i, j), block in zip(self.spans, self.blocks, strict=True):
            n = j - i
            for k, offset in enumerate(self.offsets):
                f[:, offset + i : offset + j] = block.f2[:, k * n : (k + 1) * n]
        return f

    def gradient(self) -> None:
        """The losses' gradient at the current parameters into the flat gradients."""
        network, sb2, b2 = self.network, self.sb2, self.network.b2
        network.load_units()
        Wp, sw, Gp = network.Wp, network.sw, network.Gp
        if self.two_d:
            W, G, sw_row = self.flat2
            for b, (XT, Xa, h, _, f, _, _, v_units, slope) in enumerate(self.blocks):
                torch.mm(W, XT, out=h)
                torch.relu_(h)
                torch.mm(sw_row, h, out=f)
                slope()
                _threshold_backward(v_units, h, 0, grad_input=h)
                if b == 0:  # G = C^T X, summed over the row blocks
                    torch.mm(h, Xa, out=G)
                else:
                    G.addmm_(h, Xa)
        else:
            if sb2 is not None and b2 is not None:  # f = h sw + s b_2 (``Dense2``)
                torch.mul(b2, network.s, out=sb2)
            for b, (XT, Xa, hT, hm, f, f2, _, v_units, slope) in enumerate(self.blocks):
                torch.bmm(Wp, XT, out=hT)
                torch.relu_(hT)
                torch.bmm(sw, hm, out=f)
                if sb2 is not None:
                    f2.add_(sb2)
                slope()
                _threshold_backward(v_units, hm, 0, grad_input=hm)  # C^T over h^T
                if b == 0:
                    torch.bmm(hT, Xa, out=Gp)
                else:
                    Gp.baddbmm_(hT, Xa)
        network.units_gradients()
        gb2 = network.gb2
        if gb2 is not None:  # db_2 = s sum_k v_k
            total = self.blocks[0].v2.sum(1, keepdim=True)
            for block in self.blocks[1:]:
                total += block.v2.sum(1, keepdim=True)
            torch.mul(total, network.s, out=gb2)

    def __call__(
        self,
        count: int,
        flat: FlatParams,
        step: float,
        objective: Objective | None = None,
    ) -> torch.Tensor | None:
        """``count`` GD steps; J at the first step's parameters if ``objective``."""
        grad, theta, add_penalties = flat.grad, flat.theta, self.terms.add_grad
        value = None
        for k in range(count):
            self.gradient()
            if k == 0 and objective is not None:
                value = objective(self.predictions())
            add_penalties()
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
