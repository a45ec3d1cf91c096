"""The trainer's depth-2 relu steps with the hidden layer as units x rows.

Private kernels of ``nn.fit`` on ``Dense2``'s units layout (``nn._passes``), where the
hidden layer is (M m, N) instead of (N, m):

    h^T = relu([W_1, b_1] [X, 1]^T),  f = sw^T h^T + s b_2,  v = dloss/df,
    C^T = 1[h^T > 0] v,  G = C^T [X, 1],  dW_1 = sw * G,  dw_2 = s ([W_1, b_1] . G),

with v broadcast along the units in one pass (contiguous rows), sw = s W_2[0]
multiplying the (m, d) product instead of the (N, m) block, and dw_2 = s v^T h from G:
relu's h = z 1[z > 0] gives v^T h = sum_k C_k z_k, an O(m d) product instead of a pass
over the hidden block.

``RowSweep`` (``row_sweep``): a loss that is a sum over units of a few rows each (BCE
and Gaussian on rows, Bradley-Terry on the halves layout of pairs; ``Loss.row_slope``),
on rows shared by the members or on their own rows X (M, N, d): one sweep over blocks of
units per step, so that each block of the hidden layer stays in the cache from its
forward GEMM to its gradient GEMM; GD steps run as one kernel with the penalties and the
update (J of a recorded step from its f before the update, ``Objective``), Adam steps
take its gradient. NeuralLog's refits (GD, BCE, no biases, one L2 term without a centre:
``_units_case``) are among them, one network or a batch of seeds on their own rows.

The same gradient as the plain passes; blocks add G in another order (rounding, tests:
1e-12). ``blocks_apply`` says where the block loop of ``nn._blocks`` computes a fit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple

import torch

from banditkit.nn._passes import Dense2, Members, Pass
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
    new: Allocator,
    *,
    gd: bool,
) -> RowSweep | None:
    """The row sweep of this fit's steps (``RowSweep``), or None (the passes).

    A ``Dense2`` relu pass, on rows shared by the members or on their own, and a loss
    that is a sum over units (``Loss.row_slope``, defined by the class that defines its
    derivative, so that a subclass overriding ``dloss_df`` alone is not swept with its
    parent's slope). A stack computed member by member (``Members``) runs its members'
    own passes, except NeuralLog's refit of members on their own rows (GD,
    ``_units_case``), which has always run batched and gets a ``Dense2`` of its own
    from ``new``. 2-D products for NeuralLog's refit of one member (``RowSweep``).
    """
    if isinstance(network, Members):
        if not (gd and obs.X.ndim == 3 and _units_case(net, obs, loss, terms)):
            return None
        flat = terms.flat
        network = Dense2(net, flat.params, flat.grads, obs.X, new=new)
    if not (isinstance(network, Dense2) and network.relu and not network.keep_hidden):
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
        and obs.X.ndim == 2
        and network.w1.shape[0] == 1
        and obs.y.ndim == 1
        and _units_case(net, obs, loss, terms)
    )
    return RowSweep(network, rows, terms, two_d=two_d)


def _owner(cls: type, name: str) -> type:
    """The class of ``cls``'s MRO that defines attribute ``name``."""
    return next(c for c in cls.__mro__ if name in vars(c))


class _Block(NamedTuple):
    """One block of ``RowSweep``: its products' operands and views.

    Shapes with the leading batch B of ``bmm`` (1 on shared rows, U = M m units; M on
    the members' own rows, U = m); ``two_d`` drops it (one member on shared rows).
    """

    XT: torch.Tensor  # [X_b, 1]^T (B, cols, n), contiguous
    Xa: torch.Tensor  # [X_b, 1] (B, n, cols)
    hT: torch.Tensor  # h_b^T (B, U, n), overwritten by C_b^T
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
    on rows X (N, d) shared by the M members or on their own rows X (M, N, d), in
    ``Dense2``'s units layout (hidden layer (M m, N) or (M, m, N)): per block of units,
    whose n rows are [X_b, 1],

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
    with 2-D products (``mm``), everything else with ``Dense2``'s batched ones (``bmm``;
    one batch on shared rows): the two round differently for the (1, m) head, and each
    keeps the arithmetic its fits have always had (the seeded runs of
    tests/test_golden.py; a batch of NeuralLog seeds on their own rows takes the
    operations of its former loop, ``members_units_steps``, bitwise).

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
        B, U, N = network.hT.shape  # batches (1 on shared rows, else M) of U units
        self.M, self.offsets = M, rows.offsets
        r = len(rows.offsets)  # rows a unit
        if r * rows.units != N:
            raise ValueError(f"{rows.units} units of {r} rows on {N} rows")
        units, column = rows.units, r * B * U * network.X.element_size()  # bytes a unit
        if network.X.device.type == "cpu" and column * units > 2 * UNITS_BLOCK_BYTES:
            units = max(1, UNITS_BLOCK_BYTES // column)
        new = network.new
        #: f and v of every block, block after block: (M, 1, n) contiguous each (the
        #: batched head's output), so that with one block, or one member on rows, they
        #: are the (M, N) predictions as they stand
        self._f, self._v = new((M * N,)), new((M * N,))
        #: s b_2 (M, 1), made once a step
        self.sb2 = None if network.b2 is None else new((M, 1))
        hidden = network.hT.view(-1)  # the pass's (B, U, N) buffer: n columns a block
        Xa, XT = network.Xa, network.XT  # (B, N, cols), (B, cols, N)
        self.spans: list[tuple[int, int]] = []  # the units of each block
        self.blocks: list[_Block] = []
        for i in range(0, rows.units, units):
            j = min(i + units, rows.units)
            n, start = r * (j - i), r * i  # the block's rows, its place in f and v
            if n == N:
                XTb, Xab = XT, Xa
            else:  # the units' rows, offset after offset, contiguous (once a fit)
                Xab = Xa[:, i:j] if r == 1 else new((B, n, Xa.shape[-1]))
                for k, offset in enumerate(rows.offsets if r > 1 else ()):
                    Xab[:, k * (j - i) : (k + 1) * (j - i)] = Xa[
                        :, offset + i : offset + j
                    ]
                XTb = copy_into(new, Xab.mT)
            fb, vb = (
                self._f[M * start : M * (start + n)],
                self._v[M * start : M * (start + n)],
            )
            hb = hidden[: B * U * n]
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
                f, v, hT = fb.view(M, 1, n), vb.view(M, 1, n), hb.view(B, U, n)
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
