"""The trainer's network passes: f and the explicit backward pass into flat gradients.

A private part of ``nn.fit`` and ``StackedMLP.forward_vjp``. A pass is built once per
fit on the rows X (N, d) shared by the members and the views of the flat parameters and
gradients (``nn._flat.FlatParams``); ``forward()`` returns f (M, N) and
``backward(v)`` writes sum_k v[., k] df[., k] / dtheta into the gradient views.
Buffers are allocated once. The pass is chosen by the network (``make_pass``):

* ``Dense2``: depth 2, one member: the closed form of ``nn._kernels`` (module docstring
  there) on 2-D products, with z = X W_1^T + b_1, h = a(z), sw = s W_2[0]:

      f = h sw + s b_2,   C = a'(z) * sw * v,   dW_1 = C^T X,   db_1 = sum_k C_k,
      dW_2 = (s v)^T h,   db_2 = s sum_k v_k.

  relu in the units layout of ``nn._fused``: h^T = relu([W_1, b_1] [X, 1]^T) (m, N),
  C^T = 1[h^T > 0] v (one pass, ``threshold_backward``), G = C^T [X, 1] (one GEMM for
  the weights' and the bias's sums), dW_1 = sw * G[:, :d], db_1 = sw * G[:, d] and
  dW_2 = s ([W_1, b_1] . G) (relu: v^T h = sum_k C_k z_k), so that the hidden block is
  passed three times a step (relu, f, the mask) instead of seven.
* ``Stacked2``: depth 2, M > 1 members: the members' first layers side by side, one
  GEMM per layer over cache-sized row blocks (``nn._kernels`` blocked layout).
* ``Dense2`` with members on their own rows X (M, N, d) (relu): the same products
  batched over the member axis.
* ``Deep``: any depth (used from depth 3, and for sigmoid members with their own rows
  X (M, N, d)): the explicit reverse pass [Rumelhart1986],
  with h_0 = X, h_l = a(h_{l-1} W_l^T + b_l), f = s (h_{L-1} w_L + b_L), g = s v:

      dw_L = g^T h_{L-1},  db_L = sum_k g_k,  delta = (g w_L) * a'(z_{L-1}),
      dW_l = delta^T h_{l-1},  db_l = sum_k delta_k,  delta <- (delta W_l) * a'(z_{l-1}),

  on 2-D products for one member and batched ones for a stack; the operations are
  those of the autograd graph of ``StackedMLP.forward``, so it equals ``torch.func``
  to rounding (tests: 1e-10 in float64).
* ``Members``: M > 1 members computed member by member (a stack of seeds on the CPU in
  float64, ``nn._kernels.member_by_member``): each member's own one-member pass above,
  so that each member's arithmetic is its separate fit's, bitwise.

References:
    [Rumelhart1986] D. Rumelhart, G. Hinton, R. Williams. Learning representations by
        back-propagating errors. Nature 323, 1986.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

import torch

from banditkit.nn._kernels import (
    depth2_forward_vjp,
    depth2_slopes,
    member_by_member,
)

if TYPE_CHECKING:
    from banditkit.nn.network import StackedMLP

Params = dict[str, torch.Tensor]
#: (W^T, W, dW, b or None, db or None) of one hidden layer
Layer = tuple[
    torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None, torch.Tensor | None
]

__all__ = ["Deep", "Dense2", "Members", "Pass", "Stacked2", "make_pass"]

#: grad * 1[input > threshold] elementwise, into grad_input (relu's backward).
_threshold_backward = torch.ops.aten.threshold_backward.grad_input
#: grad * h (1 - h) elementwise, into grad_input (sigmoid's backward from its output h).
_sigmoid_backward_into = torch.ops.aten.sigmoid_backward.grad_input


class Pass(Protocol):
    """f and the backward pass of one network on fixed rows (module docstring)."""

    def forward(self) -> torch.Tensor:
        """F (M, N) at the current parameters."""
        ...

    def backward(self, v: torch.Tensor) -> None:
        """Write the vjp of v (M, N) into the gradient views."""
        ...


def make_pass(net: StackedMLP, params: Params, grads: Params, X: torch.Tensor) -> Pass:
    """The pass of ``net`` on rows X (module docstring), over the views given."""
    members = next(iter(params.values())).shape[0]
    if members > 1 and member_by_member(X):
        return Members(net, params, grads, X)
    if net.depth == 2 and X.ndim == 2:
        if members == 1:
            return Dense2(net, params, grads, X)
        return Stacked2(net, params, grads, X)
    if net.depth == 2 and net.activation == "relu":  # members on their own rows
        return Dense2(net, params, grads, X)
    return Deep(net, params, grads, X)


class Members:
    """M > 1 members computed member by member, on their own rows X (M, N, d) or shared.

    Each member runs the pass of a network alone (``make_pass`` on its rows and the
    views of its parameters and gradients), so that a stack of seeds computed member by
    member (``nn._kernels.member_by_member``) is each seed's separate fit, bitwise.
    """

    def __init__(
        self, net: StackedMLP, params: Params, grads: Params, X: torch.Tensor
    ) -> None:
        def own(tensors: Params, s: int) -> Params:
            return {name: t[s : s + 1] for name, t in tensors.items()}

        M = next(iter(params.values())).shape[0]
        self.passes = [
            make_pass(net, own(params, s), own(grads, s), X[s] if X.ndim == 3 else X)
            for s in range(M)
        ]
        self.f = X.new_empty((M, X.shape[-2]))

    def forward(self) -> torch.Tensor:
        """F (M, N): each member's f on its rows."""
        for f, network in zip(self.f, self.passes, strict=True):
            f.copy_(network.forward()[0])
        return self.f

    def backward(self, v: torch.Tensor) -> None:
        """Each member's vjp of its row of v into its gradient views."""
        for s, network in enumerate(self.passes):
            network.backward(v[s : s + 1])


class Dense2:
    """Depth 2: the closed form (module docstring), one member or members on own rows.

    relu runs the units layout (module docstring) with a member axis, X (N, d) of one
    member or X (M, N, d) of members with their own rows, all products batched
    (``bmm``): the hidden layer as (M, m, N), b_1 as the last column of W_1 against a
    row of ones under X^T (the forward GEMM adds it and the gradient GEMM sums its
    slope), and dW_2 from G by relu's identity, so that a step makes three passes over
    the hidden block (relu, f, the mask) besides its two GEMMs. sigmoid runs the rows
    layout (N, m) of one member on X (N, d).
    """

    def __init__(
        self, net: StackedMLP, params: Params, grads: Params, X: torch.Tensor
    ) -> None:
        self.X, self.s, self.relu = X, net.out_scale, net.activation == "relu"
        self.activation = net.activation
        w1, w2 = params["layers.0.weight"], params["layers.1.weight"]
        self.b1, self.b2 = params.get("layers.0.bias"), params.get("layers.1.bias")
        self.gb1, self.gb2 = grads.get("layers.0.bias"), grads.get("layers.1.bias")
        self.w1, self.w2c = w1, w2[:, 0]  # (M, m, d), (M, m)
        self.g1, self.g2 = grads["layers.0.weight"], grads["layers.1.weight"][:, 0]
        if self.relu:
            self._units(X if X.ndim == 3 else X.unsqueeze(0), w1)
            return
        N, m = X.shape[0], net.width
        new = X.new_empty
        self.f, self.sv, self.sw = new((1, N)), new((1, N)), new((1, m))
        self.h, self.vc = new((1, N, m)), new((1, N, m))
        self.h0, self.vcT, self.w1t = self.h[0], self.vc[0].mT, w1[0].mT
        self.sw_row = self.sw.unsqueeze(1)

    def _units(self, X: torch.Tensor, w1: torch.Tensor) -> None:
        """The buffers and views of the units layout on X (M or 1, N, d)."""
        M, m, d = w1.shape
        N = X.shape[1]
        new = X.new_empty
        self.hT, self.cT = new((M, m, N)), new((M, m, N))
        self.f, self.sw = new((M, 1, N)), new((M, 1, m))
        self.f2, self.sw2 = self.f[:, 0], self.sw[:, 0]  # (M, N), (M, m)
        self.sw_col = self.sw2.unsqueeze(-1)
        X = X.expand(M, N, d)
        if self.b1 is None:
            self.XT, self.Xa, self.Wa, self.G = X.mT.contiguous(), X, w1, self.g1
            return
        self.Xa = torch.cat([X, X.new_ones((M, N, 1))], dim=2)  # [X, 1]
        self.XT = self.Xa.mT.contiguous()
        self.Wa, self.G = new((M, m, d + 1)), new((M, m, d + 1))  # [W_1, b_1], its G
        self.Wa_w, self.Wa_b = self.Wa[..., :d], self.Wa[..., d]
        self.G_w, self.G_b = self.G[..., :d], self.G[..., d]

    def forward(self) -> torch.Tensor:
        """F (M, N): h = a(X W_1^T + b_1), f = h (s W_2[0]) + s b_2."""
        if self.relu:
            if self.b1 is not None:
                self.Wa_w.copy_(self.w1)
                self.Wa_b.copy_(self.b1)
            torch.bmm(self.Wa, self.XT, out=self.hT)
            torch.relu_(self.hT)
            torch.mul(self.w2c, self.s, out=self.sw2)
            torch.bmm(self.sw, self.hT, out=self.f)
            f = self.f2
        else:
            h = self.h
            torch.mm(self.X, self.w1t, out=self.h0)
            if self.b1 is not None:
                h.add_(self.b1.unsqueeze(1))
            torch.sigmoid_(h)
            torch.mul(self.w2c, self.s, out=self.sw)
            torch.mv(self.h0, self.sw[0], out=self.f[0])
            f = self.f
        if self.b2 is not None:
            return f + self.s * self.b2
        return f

    def backward(self, v: torch.Tensor) -> None:
        """dW_1, db_1, dW_2, db_2 of sum_k v_k f_k, v (M, N) (module docstring)."""
        if self.relu:
            self._backward_units(v)
        else:
            vc = self.vc
            depth2_slopes(self.activation, self.h, self.sw_row, out=vc)
            vc.mul_(v.unsqueeze(-1))
            torch.mm(self.vcT, self.X, out=self.g1[0])
            if self.gb1 is not None:
                torch.sum(vc, 1, out=self.gb1)
            torch.mul(v, self.s, out=self.sv)
            torch.mm(self.sv, self.h0, out=self.g2)
        if self.gb2 is not None:
            torch.mul(v.sum(1, keepdim=True), self.s, out=self.gb2)

    def _backward_units(self, v: torch.Tensor) -> None:
        """C^T = 1[h^T > 0] v, G = C^T [X, 1], and the gradients from G (relu)."""
        _threshold_backward(
            v.unsqueeze(1).expand_as(self.hT), self.hT, 0, grad_input=self.cT
        )
        torch.bmm(self.cT, self.Xa, out=self.G)
        # dW_2 = s v^T h = s sum_k C_k z_k = s ([W_1, b_1] . G) (relu)
        torch.linalg.vecdot(self.Wa, self.G, out=self.g2)
        self.g2.mul_(self.s)
        if self.b1 is None:
            self.g1.mul_(self.sw_col)
            return
        torch.mul(self.G_w, self.sw_col, out=self.g1)
        assert self.gb1 is not None
        torch.mul(self.G_b, self.sw2, out=self.gb1)


class Stacked2:
    """Depth 2, M > 1 members: the blocked layout of ``nn._kernels``."""

    def __init__(
        self, net: StackedMLP, params: Params, grads: Params, X: torch.Tensor
    ) -> None:
        self.net, self.params, self.grads, self.X = net, params, grads, X
        self.workspace: dict[str, torch.Tensor] = {}
        self._vjp: Callable[[torch.Tensor], Params] | None = None

    def forward(self) -> torch.Tensor:
        """F (M, N); keeps the hidden block for ``backward``."""
        net = self.net
        f, self._vjp = depth2_forward_vjp(
            self.params, self.X, net.activation, net.out_scale, self.workspace
        )
        return f

    def backward(self, v: torch.Tensor) -> None:
        """The vjp of the last ``forward``, copied into the gradient views."""
        assert self._vjp is not None
        for name, value in self._vjp(v).items():
            self.grads[name].copy_(value)


class Deep:
    """Any depth, one member or a batched stack: the explicit reverse pass (docstring).

    One member runs on 2-D products (``mm``, ``mv``, an outer product) into buffers
    allocated once with their transposed views (``_Buffers``: a step dispatches about
    20 operations instead of 30, the same arithmetic bitwise); a stack runs on batched
    products (member by member: ``Members``). The layers' views are made once.
    """

    def __init__(
        self, net: StackedMLP, params: Params, grads: Params, X: torch.Tensor
    ) -> None:
        self.one = next(iter(params.values())).shape[0] == 1
        if self.one and X.ndim == 3:  # one member on its own rows: (N, d)
            X = X[0]
        self.X, self.s = X, net.out_scale
        self.relu = net.activation == "relu"
        last = net.depth - 1

        def layer(i: int) -> Layer:
            w, gw = params[f"layers.{i}.weight"], grads[f"layers.{i}.weight"]
            b, gb = params.get(f"layers.{i}.bias"), grads.get(f"layers.{i}.bias")
            if self.one:  # 2-D views of the one member
                return (w[0].mT, w[0], gw[0], b, gb)
            return (w.mT, w, gw, b, gb)

        #: (W^T, W, dW, b, db) of the hidden layers, views made once
        self.layers = [layer(i) for i in range(last)]
        head, ghead = params[f"layers.{last}.weight"], grads[f"layers.{last}.weight"]
        self.head = head[0, 0] if self.one else head  # (m,) or (M, 1, m)
        self.ghead = ghead[0, 0] if self.one else ghead[:, 0]
        self.head_bias = params.get(f"layers.{last}.bias")
        self.ghead_bias = grads.get(f"layers.{last}.bias")
        self.hidden: list[torch.Tensor] = []
        self.buffers = None
        if self.one:  # one member: its layers live in the buffers
            widths = [wt.shape[-1] for wt, *_ in self.layers]
            self.buffers = _Buffers(X, widths)
            self.hidden = [X, *self.buffers.h]

    def _act_backward(self, delta: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        """Return delta * a'(z) from h = a(z), in place: the backward of the activation."""
        if self.relu:
            return _threshold_backward(delta, h, 0, grad_input=delta)
        return _sigmoid_backward_into(delta, h, grad_input=delta)

    def forward(self) -> torch.Tensor:
        """Return f (M, N); keep the hidden layers for ``backward``."""
        if self.buffers is not None:
            return self._forward_one(self.buffers)
        h = self.X
        hidden = [h]
        for wt, _, _, b, _ in self.layers:
            z = torch.matmul(h, wt)
            if b is not None:
                z.add_(b.unsqueeze(1))
            h = z.relu_() if self.relu else z.sigmoid_()
            hidden.append(h)
        self.hidden = hidden
        f = torch.linalg.vecdot(h, self.head)
        if self.head_bias is not None:
            f = f + self.head_bias
        return f * self.s

    def _forward_one(self, buf: _Buffers) -> torch.Tensor:
        """``forward`` of one member into the buffers: f (1, N), valid until the next."""
        h = self.X
        for (wt, _, _, b, _), out in zip(self.layers, buf.h, strict=True):
            torch.mm(h, wt, out=out)
            if b is not None:
                out.add_(b)
            h = out.relu_() if self.relu else out.sigmoid_()
        torch.mv(h, self.head, out=buf.f[0])
        f = buf.f if self.head_bias is None else buf.f + self.head_bias
        return torch.mul(f, self.s, out=buf.fs)

    def backward(self, v: torch.Tensor) -> None:
        """Write dtheta of sum_k v_k f_k into the gradient views (module docstring)."""
        if self.buffers is not None:
            self._backward_one(v, self.buffers)
            return
        hidden = self.hidden
        g = v * self.s  # (M, N)
        h = hidden[-1]
        self.ghead.copy_(torch.linalg.vecdot(h.mT, g.unsqueeze(1)))
        delta = g.unsqueeze(-1) * self.head
        if self.ghead_bias is not None:
            torch.sum(g, 1, keepdim=True, out=self.ghead_bias)
        delta = self._act_backward(delta, h)
        for i in range(len(self.layers) - 1, -1, -1):
            _, w, gw, _, gb = self.layers[i]
            torch.matmul(delta.mT, hidden[i], out=gw)
            if gb is not None:
                torch.sum(delta, -2, out=gb)
            if i > 0:
                delta = self._act_backward(torch.matmul(delta, w), hidden[i])

    def _backward_one(self, v: torch.Tensor, buf: _Buffers) -> None:
        """``backward`` of one member on the buffers of the last ``_forward_one``."""
        hidden = self.hidden
        g = torch.mul(v, self.s, out=buf.g)  # (1, N)
        torch.mv(buf.h_t[-1], buf.g[0], out=self.ghead)
        # the outer product g[0] head^T (torch.outer's arithmetic), into delta's buffer
        delta = torch.mul(buf.g_col, self.head, out=buf.delta[-1])
        if self.ghead_bias is not None:
            torch.sum(g, 1, keepdim=True, out=self.ghead_bias)
        delta = self._act_backward(delta, hidden[-1])
        for i in range(len(self.layers) - 1, -1, -1):
            _, w, gw, _, gb = self.layers[i]
            torch.mm(buf.delta_t[i], hidden[i], out=gw)
            if gb is not None:
                torch.sum(delta, -2, out=gb[0])
            if i > 0:
                delta = torch.mm(delta, w, out=buf.delta[i - 1])
                delta = self._act_backward(delta, hidden[i])


class _Buffers:
    """One member's per-step tensors of ``Deep`` on N rows, and their views, made once.

    h (the hidden layers' activations), delta (their backward factors), f, s f and
    g = s v; the transposed views h_t and delta_t and the column g_col read by the
    products, so that a step makes no view and allocates no tensor.
    """

    def __init__(self, X: torch.Tensor, widths: list[int]) -> None:
        N, new = X.shape[0], X.new_empty
        self.h = [new((N, m)) for m in widths]
        self.h_t = [h.mT for h in self.h]
        self.delta = [new((N, m)) for m in widths]
        self.delta_t = [d.mT for d in self.delta]
        self.f, self.fs, self.g = new((1, N)), new((1, N)), new((1, N))
        self.g_col = self.g[0].unsqueeze(1)
