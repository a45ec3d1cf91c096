"""Block-encoded inputs: the first layer on each row's non-zero block only.

The block (disjoint) encoding of a K-armed classification bandit places the context x
(d,) of arm a in block a of a K d vector, zeros elsewhere. For such a row x^(a),

    W_1 x^(a) = W_1[:, B_a] x     (B_a = columns a d .. (a + 1) d - 1),

so the first layer's products need d columns of W_1, not K d: the rest multiplies
zeros. For the rows of a history, grouped by block (rows of block a: X_a, (N_a, d)),

    z_a = X_a W_1[:, B_a]^T,     dW_1[:, B_a] = (c v)_a^T X_a,     dW_1[:, B] = 0
                                                                 for a block B no row uses,

which cuts the two GEMMs of a full-batch step (4 N m K d flops) by a factor K. Only the
order of the floating-point sums changes (the rows are permuted by block, and the zero
terms leave the dot products): results equal the dense computation up to rounding
(tests/nn/test_blocks.py: outputs, gradients and a trained network within 1e-10 in
float64).

Nothing is declared: the structure is read off the rows, exactly.

    block_count(X)       the largest number B of equal column blocks (B <= MAX_BLOCKS)
                         such that the non-zeros of every row lie in one block, or None
    BlockLayout.of(X, B) the rows grouped by block: the permutation, the row range of
                         each block and the compact (N, D / B) rows
    choose_blocks        the layout of a fit's rows, or None where dense steps are cheaper
    fused_gd_blocks      the GD steps of ``nn.fit`` on a ``BlockLayout``

``nn.fit`` runs ``fused_gd_blocks`` where the fused loop applies, the rows are on the CPU
and ``choose_blocks`` finds a partition that saves enough work; every fit looks afresh
(one exact pass over the rows, only when the saving could be large enough).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch.utils._python_dispatch import is_in_torch_dispatch_mode

from banditkit.core.validation import check_int
from banditkit.nn._flat import FlatParams, FlatPenalties
from banditkit.nn._kernels import activation_slope
from banditkit.nn.losses import BCE, Loss
from banditkit.nn.network import Params, StackedMLP
from banditkit.nn.observations import Rows
from banditkit.nn.penalties import L2Penalty

__all__ = [
    "BLOCK_MIN_WORK",
    "MAX_BLOCKS",
    "BlockLayout",
    "block_count",
    "choose_blocks",
    "fused_gd_blocks",
]

#: The most blocks ``block_count`` considers: each non-empty block costs the fused loop
#: two small products per step (a few microseconds of dispatch each), so very fine
#: partitions (one column per block) would cost more than the flops they save.
MAX_BLOCKS = 64
#: Least work saved for which ``choose_blocks`` trains on the blocks: N m (D - D / B)
#: multiply-adds per product of the first layer (N rows, width m, D inputs in B blocks).
#: Below, the per-block products' fixed cost per GD step outweighs the flops saved (the
#: measured crossovers are in docs/performance.md).
BLOCK_MIN_WORK = 400_000
#: Rows whose spans ``_partition`` looks at before its pass over all rows.
_PROBE_ROWS = 8


def _row_spans(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """[lo, hi) of the non-zeros of each row, and whether the row has any."""
    nz = X != 0.0
    any_nz = nz.any(axis=1)
    lo = nz.argmax(axis=1)
    hi = X.shape[1] - nz[:, ::-1].argmax(axis=1)
    return lo, hi, any_nz


def block_count(
    X: np.ndarray | torch.Tensor, max_blocks: int = MAX_BLOCKS
) -> int | None:
    """The largest B in [2, max_blocks] splitting the columns of X into B blocks.

    B must divide D = X.shape[1], and the non-zeros of every row must lie within one of
    the B blocks of D / B consecutive columns (all-zero rows fit any block). Exact: one
    pass over X for the spans of the rows, then O(N) per divisor of D.

    Args:
        X: Rows (N, D).
        max_blocks: The largest B considered, >= 2.

    Returns:
        B, or None when no B >= 2 fits (dense rows, or N = 0).

    Example:
        >>> X = np.array([[1.0, 2.0, 0.0, 0.0], [0.0, 0.0, 0.0, 3.0]])
        >>> block_count(X)
        2
        >>> block_count(np.ones((2, 4))) is None
        True
    """
    max_blocks = check_int("max_blocks", max_blocks, low=2)
    Xn = X.detach().cpu().numpy() if isinstance(X, torch.Tensor) else np.asarray(X)
    if Xn.ndim != 2:
        raise ValueError(f"X must have shape (N, D); got {Xn.shape}.")
    found = _partition(Xn, max_blocks)
    return None if found is None else found[0]


def _partition(Xn: np.ndarray, max_blocks: int) -> tuple[int, np.ndarray] | None:
    """``block_count``'s B of rows Xn (N, D), with each row's block (N,) int64.

    An all-zero row is put in block 0 (as ``BlockLayout.of`` does); None when no B fits.
    """
    N, D = Xn.shape
    if N == 0:
        return None
    # exact early exit: a block is at most D / 2 columns wide (B >= 2), so a row whose
    # non-zeros span more than D / 2 columns rules out every B; dense rows show it in
    # their first rows (a few microseconds instead of a pass over all N rows)
    if D > 1 and Xn[0, 0] != 0.0 and Xn[0, -1] != 0.0:  # the first row spans D
        return None
    lo, hi, any_nz = _row_spans(Xn[:_PROBE_ROWS])
    if bool(((hi - lo)[any_nz] > D // 2).any()):
        return None
    lo, hi, any_nz = _row_spans(Xn)
    first, last = lo[any_nz], hi[any_nz] - 1
    for B in range(min(max_blocks, D), 1, -1):
        if D % B:
            continue
        w = D // B
        if np.array_equal(first // w, last // w):
            return B, np.where(any_nz, lo // w, 0)
    return None


def choose_blocks(X: torch.Tensor, width: int) -> BlockLayout | None:
    """The layout of the block loop on rows X (N, D) of a width-m network, or None (dense).

    None unless the rows are on the CPU and block-encoded in B >= 2 blocks
    (``block_count``) with N m (D - D / B) >= ``BLOCK_MIN_WORK``; the exact pass over
    the rows is skipped when even B = D could not save that much. The layout is
    ``BlockLayout.of(X, B)``, grouped from the blocks that pass found (one pass over
    the rows, not two).
    """
    N, D = X.shape
    if X.device.type != "cpu" or N * width * (D - 1) < BLOCK_MIN_WORK:
        return None  # no partition could save enough
    found = _partition(X.detach().numpy(), MAX_BLOCKS)
    if found is None or N * width * (D - D // found[0]) < BLOCK_MIN_WORK:
        return None
    B, block = found
    return BlockLayout.grouped(X, B, torch.from_numpy(block))


@dataclass(frozen=True)
class BlockLayout:
    """Rows grouped by their non-zero block (module docstring).

    Attributes:
        n_blocks: B; the columns are B blocks of ``width`` = D / B.
        width: Columns per block.
        order: (N,) int64: row ``order[i]`` of X is row i of the layout.
        bounds: B + 1 row offsets: the rows of block a are ``bounds[a]:bounds[a + 1]``
            of the layout.
        X: (N, width) the rows' blocks, in the layout's order.
    """

    n_blocks: int
    width: int
    order: torch.Tensor
    bounds: tuple[int, ...]
    X: torch.Tensor

    @classmethod
    def of(cls, X: torch.Tensor, n_blocks: int) -> BlockLayout:
        """Group the rows of X (N, D) by block; ValueError if a row spans two blocks.

        Args:
            X: Rows (N, D).
            n_blocks: B, dividing D.

        Raises:
            ValueError: If B does not divide D, or a row has non-zeros in two blocks.
        """
        n_blocks = check_int("n_blocks", n_blocks, low=1)
        N, D = X.shape
        if D % n_blocks:
            raise ValueError(
                f"n_blocks must divide the {D} columns of X; got {n_blocks}."
            )
        w = D // n_blocks
        # a block is used where its largest |x| is not 0 (NaN counts as used, as in
        # X != 0); ten times faster than (X != 0).any(-1) on the CPU
        used = X.reshape(N, n_blocks, w).abs().amax(-1) != 0  # (N, B)
        if bool((used.sum(1) > 1).any()):
            raise ValueError(
                f"X is not block-encoded in {n_blocks} blocks of {w} columns: a row "
                "has non-zeros in two blocks."
            )
        block = used.to(torch.int8).argmax(1)  # all-zero rows: block 0
        return cls.grouped(X, n_blocks, block)

    @classmethod
    def grouped(
        cls, X: torch.Tensor, n_blocks: int, block: torch.Tensor
    ) -> BlockLayout:
        """The layout of rows X (N, D) whose row i lies in block ``block[i]`` (trusted).

        ``of`` after its check; ``choose_blocks`` with the blocks of its own pass.
        """
        N, D = X.shape
        w = D // n_blocks
        order = torch.argsort(block, stable=True)
        counts = torch.bincount(block, minlength=n_blocks).tolist()
        bounds = tuple(int(b) for b in np.concatenate(([0], np.cumsum(counts))))
        compact = X.reshape(N, n_blocks, w)[order, block[order]]  # (N, w), a copy
        return cls(n_blocks, w, order, bounds, compact)

    def blocks(self) -> list[tuple[int, int, int]]:
        """(block a, first row, end row) of the non-empty blocks."""
        b = self.bounds
        return [(a, b[a], b[a + 1]) for a in range(self.n_blocks) if b[a + 1] > b[a]]


def _to_blocks(W: torch.Tensor, n_blocks: int) -> torch.Tensor:
    """W (1, m, B w) as a contiguous (1, B, w, m) stack of its transposed column blocks."""
    m, D = W.shape[1], W.shape[2]
    blocks = W[0].reshape(m, n_blocks, D // n_blocks).permute(1, 2, 0)
    return blocks.contiguous()[None]


def _blocked(params: Params, n_blocks: int) -> Params:
    """The depth-2 parameters (or a penalty centre) with W_1 as ``_to_blocks``'s stack."""
    return {
        "layers.0.weight": _to_blocks(params["layers.0.weight"], n_blocks),
        "layers.1.weight": params["layers.1.weight"],
    }


def fused_gd_blocks(
    net: StackedMLP,
    params: Params,
    obs: Rows,
    loss: Loss,
    penalties: Sequence[L2Penalty],
    layout: BlockLayout,
    *,
    step: float,
    steps: int,
    record: str,
) -> list[torch.Tensor]:
    """The GD steps of ``nn.fit`` with the first layer on each row's block (module docstring).

    W_1 is copied into a (B, w, m) stack of its transposed column blocks V_a =
    W_1[:, B_a]^T (and so is its penalty centre) for the loop, and written back at the
    end. Per step, with X_a the rows of block a in the layout and v = l'(f),

        h_a = a(X_a V_a);   f = h (s W_2[0]);   C = a'(z) * v   (rows of h);
        G_a = X_a^T C_a;    dV_a = G_a * (s W_2[0]) + lam (V_a - C_a^0);
        dW_2 = s v^T h = s sum_a sum_k V_a[k] * G_a[k]   (relu: h = z 1[z > 0]),

    so s W_2[0] leaves the N-row products (as in the blocked layout of ``nn._kernels``),
    relu's dW_2 is O(m D) instead of a pass over h, and the slope times v is one pass
    (``threshold_backward``). G_a is computed as X_a^T C_a with X_a^T stored contiguous,
    faster than (C_a^T X_a) for these shapes (docs/performance.md). A block
    without rows has G_a = 0 (its penalty term only). The sums are in another order
    than the dense loop's: equal up to rounding.

    The 2 x B per-block products of a step run through ``numpy.matmul`` on NumPy views
    of the loop's buffers (NumPy's OpenBLAS), the rest in PyTorch. For these small shapes
    (tens to hundreds of rows, w x m blocks) one thread of OpenBLAS took 0.75-0.9 of
    ``torch.mm``'s time in float64 and about the same in float32, where the call's lower
    overhead still took about 10 % off a ``neural-ts`` run (docs/performance.md, section
    "Re-measured on another machine"). OpenBLAS picks its kernel from the instruction
    set, where MKL also tells Intel from other CPUs. Under a PyTorch dispatch mode
    (``FlopCounterMode``, which counts PyTorch's operations only) they stay ``torch.mm``,
    so that they are counted.

    Args:
        net: A depth-2 ``StackedMLP`` without biases (``nn._fused.blocks_apply``).
        params: One member's parameters (1, ...), updated in place.
        obs: Rows without weights.
        loss: ``BCE`` or ``MSE``.
        penalties: L2 penalties on every parameter.
        layout: ``BlockLayout.of(obs.X, B)``.
        step: lr (times 1 / n for reduction "mean").
        steps: Number of steps.
        record: "all" (J at every step) or "ends" (the first and the last step).

    Returns:
        J (1,) of the recorded steps, in order (the sums in the layout's row order).
    """
    w1, w2 = params["layers.0.weight"], params["layers.1.weight"]
    B = layout.n_blocks
    Xc = layout.X
    rows = Rows(Xc, obs.y[layout.order], validate=False)
    # theta = [V; w_2] flat (nn._flat), V the (1, B, w, m) stack of W_1's blocks
    flat = FlatParams(_blocked(params, B))
    V, W2 = flat.params["layers.0.weight"], flat.params["layers.1.weight"]
    G, g2 = flat.grads["layers.0.weight"], flat.grads["layers.1.weight"]
    centred = [
        (p.lam, None if p.center is None else _blocked(p.center, B)) for p in penalties
    ]
    terms = FlatPenalties([L2Penalty(lam, c) for lam, c in centred], flat)
    N, m = Xc.shape[0], net.width
    s = net.out_scale
    new = Xc.new_empty
    h, C = new((N, m)), new((N, m))
    f, dloss, sw = new((1, N)), new((1, N)), new((1, m))
    prod = torch.empty_like(V)
    # the (B w, m) rows of V * G: its sum over dim 0 is the sum over (B, w), in the same
    # order (bitwise), a quarter faster than summing two dimensions
    prod_rows = prod[0].view(-1, m)
    # NumPy views where the products run in NumPy's BLAS (docstring), torch tensors
    # under a dispatch mode (FlopCounterMode, whose count must see them: reproduce --plan)
    counted = is_in_torch_dispatch_mode()
    parts = _block_views(layout, (Xc, V, G, h, C), numpy=not counted)
    empty = [G[0, a] for a in range(B) if layout.bounds[a + 1] == layout.bounds[a]]
    bce = type(loss) is BCE
    relu = net.activation == "relu"
    v_rows = dloss[0].unsqueeze(-1).expand(N, m)  # v broadcast over the units
    slope_times_v = torch.ops.aten.threshold_backward.grad_input
    w2c, sw0, g2v = W2[:, 0], sw[0], g2[0, 0]
    history: list[torch.Tensor] = []
    mm: Any = torch.mm if counted else np.matmul
    for i in range(steps):
        for Xa, _, Va, _, ha, _ in parts:  # z_a = X_a V_a
            mm(Xa, Va, out=ha)
        if relu:
            torch.relu_(h)
        else:
            torch.sigmoid_(h)
        torch.mul(w2c, s, out=sw)
        torch.mv(h, sw0, out=f[0])
        recorded = record == "all" or i == 0 or i == steps - 1
        values = loss_derivative(loss, f, rows, rows.y, bce, recorded, out=dloss)
        if relu:  # C = 1[z > 0] v, one pass
            slope_times_v(v_rows, h, 0.0, grad_input=C)
        else:
            activation_slope(net.activation, h, out=C).mul_(v_rows)
        for _, XaT, _, Ga, _, Ca in parts:  # G_a = X_a^T C_a
            mm(XaT, Ca, out=Ga)
        for G_empty in empty:  # no rows: no data term
            G_empty.zero_()
        if relu:  # dW_2 = s sum_a sum_k V_a[k] G_a[k]
            torch.mul(V, G, out=prod)
            torch.sum(prod_rows, dim=0, out=g2v)
            g2.mul_(s)
        else:
            torch.matmul(dloss, h, out=g2[0]).mul_(s)
        G.mul_(sw)  # dV_a = G_a (s W_2[0])
        if values is not None:
            history.append(terms.objective(values))
        terms.add_grad()
        flat.theta.sub_(flat.grad, alpha=step)
    w1[0].copy_(V[0].permute(2, 0, 1).reshape(w1.shape[1], w1.shape[2]))
    w2.copy_(W2)
    return history


def _block_views(
    layout: BlockLayout, tensors: tuple[torch.Tensor, ...], numpy: bool
) -> list[tuple[Any, ...]]:
    """Per non-empty block a: (X_a, X_a^T contiguous, V_a, G_a, z_a in h, C_a in C).

    ``tensors`` = (X in the layout's order, V, G, h, C); the views are made once for all
    the steps of a fit, as NumPy arrays where ``numpy``.
    """
    Xc, V, G, h, C = tensors
    parts = []
    for a, lo, hi in layout.blocks():
        views = (
            Xc[lo:hi],
            Xc[lo:hi].T.contiguous(),
            V[0, a],
            G[0, a],
            h[lo:hi],
            C[lo:hi],
        )
        parts.append(tuple(t.numpy() for t in views) if numpy else views)
    return parts


def loss_derivative(
    loss: Loss,
    f: torch.Tensor,
    obs: Rows,
    y: torch.Tensor,
    bce: bool,
    recorded: bool,
    *,
    out: torch.Tensor,
) -> torch.Tensor | None:
    """Write dloss/df of one step of the block loop into ``out``; the per-row losses when ``recorded``.

    A recorded step asks the loss for its values and derivative; otherwise the
    derivative is written in place: sigmoid(f) - y for BCE (``bce``), f - y for MSE.
    """
    if recorded:
        values, deriv = loss.value_and_dloss_df(f, obs)
        out.copy_(deriv)
        return values
    if bce:
        torch.sigmoid(f, out=out).sub_(y)
    else:
        torch.sub(f, y, out=out)
    return None
