"""Products over a member stack and the closed-form depth-2 pass of ``StackedMLP``.

Notation of ``banditkit.nn.network``: M members, N rows X (N, d) shared by the members,
width m, z = W_1 x + b_1, h = a(z), s = sqrt(m) or 1, c = s * W_2[0] * a'(z) per member.
The depth-2 forward and vector-Jacobian product, v (M, N) given,

    f = s (h W_2^T + b_2),
    dW_1 = (v * c)^T X,   db_1 = sum_k v_k c_k,   dW_2 = s v^T h,   db_2 = s sum_k v_k,

run on one of two layouts:

* ``nn._passes.Dense2``, the trainer's pass: relu with any members (the hidden layer as
  units x rows, the members' first layers stacked into one GEMM on shared rows) and
  sigmoid with one member (2-D products).
* sigmoid with M > 1 members on shared rows (``depth2_forward_vjp``, blocked): the
  members' first layers side by side, W (M m, d), so that each layer is one GEMM for
  all members (X W^T forward, X^T C backward), computed over blocks of rows sized to
  stay in the L2 cache (``ROW_BLOCK_ELEMENTS``), and with s W_2[0] factored out of the
  N-row products: with C = v * a'(z) (no s W_2[0]) and G = C^T X,

      dW_1 = (s W_2[0]) * G,   db_1 = (s W_2[0]) * sum_k C_k,   dW_2 = s v^T h,

  v^T h contracted per row block. Only the (N, M m) block of h is kept between the
  forward and the vjp. Results differ from the one-member pass by rounding only (tests:
  within 1e-12).

Why: the stack's (N, M m) hidden block (8 MB at N = 2000, M = 10, m = 50) does not fit
in the L2 cache where one member's (0.8 MB) does, and each elementwise pass over it
(activation, slope, products with W_2 and v) streams it from memory. The layout removes
passes (s W_2[0] leaves the N-row work) and makes each layer one large GEMM; on row
blocks of a few hundred rows the forward's passes after the GEMM that writes a block
read it from L2. (relu stacks ran here until 2026-12-07; the units layout of ``Dense2``
is faster for them: docs/performance.md.)
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator

import torch

__all__ = [
    "ROW_BLOCK_ELEMENTS",
    "activation_slope",
    "depth2_forward_vjp",
    "depth2_slopes",
    "member_by_member",
    "no_grad_if_enabled",
    "separate_members",
    "stack_mm",
    "stack_mv",
    "workspace_buffer",
]

#: Entries of one (rows, M m) block of the blocked depth-2 pass: 2^17 doubles = 1 MiB,
#: the size of a typical L2 cache (the measurement behind it: docs/performance.md).
ROW_BLOCK_ELEMENTS = 2**17

Grads = dict[str, torch.Tensor]
VJP = Callable[[torch.Tensor], Grads]


_NOTHING = contextlib.nullcontext()


#: Set by ``nn.fit(..., separate_members=True)`` for the span of the fit.
_SEPARATE_MEMBERS: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "separate_members", default=False
)


@contextlib.contextmanager
def separate_members(on: bool) -> Iterator[None]:
    """Within: a stack on the CPU in float64 computes member by member (below)."""
    token = _SEPARATE_MEMBERS.set(on)
    try:
        yield
    finally:
        _SEPARATE_MEMBERS.reset(token)


def member_by_member(x: torch.Tensor) -> bool:
    """Whether a stack computes its members one by one, so each equals its separate run.

    Inside ``separate_members(True)`` (``nn.fit(..., separate_members=True)``, which a
    stack of seeds asks for), on the CPU in float64. A batched kernel rounds a member's
    values differently from the same member alone (an (M, N, m) @ (M, m, 1) batched
    product; the last elements of an elementwise exp, which its scalar path computes, sit
    elsewhere in a stack), and Adam amplifies such last-bit differences until a seed's
    actions part from its separate run's. Member by member, the products are the 2-D
    ones of a single network and the elementwise passes run over each member's own row,
    so a stack of seeds takes its seeds' separate actions bitwise. Otherwise (ensemble
    members, float32, accelerators) the batched kernels are used: equal to rounding,
    and faster.
    """
    return (
        _SEPARATE_MEMBERS.get() and x.device.type == "cpu" and x.dtype == torch.float64
    )


def no_grad_if_enabled() -> contextlib.AbstractContextManager[object]:
    """``torch.no_grad()`` while gradients are recorded, else a no-op context.

    Inside the trainer's loop (``nn.fit`` runs it under ``no_grad``) the helpers skip
    building and entering a fresh ``no_grad`` per call, a few microseconds each of the
    per-step Python overhead.
    """
    return torch.no_grad() if torch.is_grad_enabled() else _NOTHING


def stack_mm(
    a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None
) -> torch.Tensor:
    """Return a @ b per member: each of a (M, n, k), b (M, k, j) may be shared (2-D).

    ``out`` (M, n, j), if given, receives the product (see ``workspace_buffer``).
    """
    if (a.ndim == 2 or a.shape[0] == 1) and (b.ndim == 2 or b.shape[0] == 1):
        # the 2-D kernel of the single-network code (module docstring)
        a2, b2 = (a if a.ndim == 2 else a[0]), (b if b.ndim == 2 else b[0])
        if out is None:
            return a2.matmul(b2)[None]
        torch.matmul(a2, b2, out=out[0])
        return out
    if out is None:
        return torch.matmul(a, b)
    return torch.matmul(a, b, out=out)


def stack_mv(a: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Return a @ v per member: a (M, n, k), v (M, k) -> (M, n)."""
    if v.shape[0] == 1:
        return a[0].mv(v[0]).unsqueeze(0)
    # within 1.3x of a (., 1) bmm at the K-arm sizes of a prediction (measured
    # 2026-12-07); the trainer's stacks on N rows use the units layout instead
    return torch.linalg.vecdot(a, v.unsqueeze(1))


def workspace_buffer(
    workspace: dict[str, torch.Tensor] | None,
    key: str,
    shape: tuple[int, ...],
    like: torch.Tensor,
) -> torch.Tensor | None:
    """A tensor of ``shape`` kept in ``workspace`` across calls, or None without one.

    Reusing the hidden blocks of every step saves a fresh allocation each: for large
    stacks those are fresh pages from the OS, whose first touch costs more than the
    arithmetic.
    """
    if workspace is None:
        return None
    buf = workspace.get(key)
    if buf is None or buf.shape != shape or buf.dtype != like.dtype:
        buf = torch.empty(shape, dtype=like.dtype, device=like.device)
        workspace[key] = buf
    return buf


def activation_slope(
    activation: str, h: torch.Tensor, out: torch.Tensor | None = None
) -> torch.Tensor:
    """Return a'(z) from h = a(z): 1[z > 0] for relu, h (1 - h) for sigmoid.

    1[z > 0] is torch's subgradient of relu; it is computed as sign(h) = sign(relu(z)),
    the same values at a third of the cost of a bool-to-float cast.

    Args:
        activation: "relu" or "sigmoid".
        h: The activations a(z).
        out: Optional tensor shaped like h to write into.
    """
    if activation == "relu":
        return torch.sign(h) if out is None else torch.sign(h, out=out)
    return h * (1.0 - h) if out is None else torch.mul(h, 1.0 - h, out=out)


def depth2_forward_vjp(
    params: Grads,
    X: torch.Tensor,
    out_scale: float,
    workspace: dict[str, torch.Tensor] | None = None,
) -> tuple[torch.Tensor, VJP]:
    """Return f (M, N) and the vjp v (M, N) -> gradients of a depth-2 sigmoid stack.

    Args:
        params: "layers.0.weight" (M, m, d), "layers.1.weight" (M, 1, m) and, with
            biases, "layers.0.bias" (M, m) and "layers.1.bias" (M, 1); M > 1.
        X: Rows (N, d), shared by the members.
        out_scale: s.
        workspace: Buffers kept across calls (``StackedMLP.forward_vjp``).

    Returns:
        f (M, N) and the vjp, whose value has the keys of params in their order.
    """
    return _blocked(params, X, out_scale, workspace)


def depth2_slopes(
    activation: str,
    h: torch.Tensor,
    sw: torch.Tensor,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """Return c = a'(z) * (s W_2[0]) from h = a(z): the depth-2 backward factor.

    The one definition of c shared by the trainer's sigmoid pass (``nn._passes.Dense2``)
    and the per-arm gradients of ``nn.grads``. sw (..., m) broadcasts over the rows of h.
    """
    return activation_slope(activation, h, out=out).mul_(sw)


def _blocked(
    params: Grads,
    X: torch.Tensor,
    s: float,
    workspace: dict[str, torch.Tensor] | None,
) -> tuple[torch.Tensor, VJP]:
    """The (N, M m) layout, one GEMM per layer, over blocks of rows (docstring)."""
    w1, w2 = params["layers.0.weight"], params["layers.1.weight"]
    b1, b2 = params.get("layers.0.bias"), params.get("layers.1.bias")
    M, m, d = w1.shape
    N, width = X.shape[0], M * m
    W = w1.reshape(width, d)  # the members' first layers side by side
    bias = None if b1 is None else b1.reshape(width)
    sw = s * w2[:, 0]  # (M, m)
    # the cache argument is a CPU one: elsewhere one block of all rows
    rows = N if X.device.type != "cpu" else max(1, min(N, ROW_BLOCK_ELEMENTS // width))
    blocks = [(i, min(i + rows, N)) for i in range(0, N, rows)]
    with torch.no_grad():
        h = workspace_buffer(workspace, "h", (N, width), X)
        h = X.new_empty((N, width)) if h is None else h
        c = workspace_buffer(workspace, "c", (rows, width), X)
        c = X.new_empty((rows, width)) if c is None else c
        f_rows = X.new_empty((N, M))
        for i, j in blocks:
            hb = torch.mm(X[i:j], W.mT, out=h[i:j])
            if bias is not None:
                hb.add_(bias)
            hb.sigmoid_()
            # f = h . (s W_2[0]) per member, the product in c (free until the vjp)
            hsw = torch.mul(hb.view(j - i, M, m), sw, out=c[: j - i].view(j - i, M, m))
            torch.sum(hsw, -1, out=f_rows[i:j])
        f = f_rows.mT.contiguous()
        if b2 is not None:
            f += s * b2

    def vjp(v: torch.Tensor) -> Grads:
        v_rows = v.mT.contiguous()  # (N, M)
        gt = X.new_zeros((d, width))  # G^T = X^T C
        c_sum = None if b1 is None else X.new_zeros(width)
        vh = X.new_zeros((M, m))
        for i, j in blocks:
            hb, cb = h[i:j], c[: j - i]
            activation_slope("sigmoid", hb, out=cb)
            cb.view(j - i, M, m).mul_(v_rows[i:j].unsqueeze(-1))
            gt.addmm_(X[i:j].mT, cb)
            if c_sum is not None:
                c_sum += cb.sum(0)
            # v^T h per member on this block
            h3 = hb.view(j - i, M, m).transpose(0, 1)
            vh += torch.matmul(v_rows[i:j].mT.unsqueeze(1), h3).squeeze(1)
        G = gt.mT.reshape(M, m, d)
        grads = {"layers.0.weight": G * sw.unsqueeze(-1)}
        if c_sum is not None:
            grads["layers.0.bias"] = c_sum.view(M, m) * sw
        grads["layers.1.weight"] = (s * vh).unsqueeze(1)
        if b2 is not None:
            grads["layers.1.bias"] = (s * v.sum(1)).unsqueeze(1)
        return grads

    return f, vjp
