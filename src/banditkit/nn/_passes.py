"""The trainer's network passes: f and the explicit backward pass into flat gradients.

A private part of ``nn.fit`` and ``StackedMLP.forward_vjp``. A pass is built once per
fit on the rows X (N, d) shared by the members and the views of the flat parameters and
gradients (``nn._flat.FlatParams``); ``forward()`` returns f (M, N) and
``backward(v)`` writes sum_k v[., k] df[., k] / dtheta into the gradient views.
Buffers are allocated once, by the allocator given (the trainer's ``nn._scratch``).
The pass is chosen by the network (``make_pass``):

* ``Dense2``: depth 2, one member: the closed form of ``nn._kernels`` (module docstring
  there), with z = X W_1^T + b_1, h = a(z), sw = s W_2[0]:

      f = h sw + s b_2,   C = a'(z) * sw * v,   dW_1 = C^T X,   db_1 = sum_k C_k,
      dW_2 = (s v)^T h,   db_2 = s sum_k v_k.

  relu in the units layout of ``nn._fused``: h^T = relu([W_1, b_1] [X, 1]^T) (m, N),
  C^T = 1[h^T > 0] v (one pass, ``threshold_backward``, written over h^T),
  G = C^T [X, 1] (one GEMM for the weights' and the bias's sums), dW_1 = sw * G[:, :d],
  db_1 = sw * G[:, d] and dW_2 = s ([W_1, b_1] . G) (relu: v^T h = sum_k C_k z_k), so
  that the hidden block is passed three times a step (relu, f, the mask) instead of
  seven.
* ``Dense2`` with M > 1 members (relu): on shared rows the members' [W_1, b_1] stacked
  as one (M m, d + 1) matrix, so that each GEMM serves every member and the hidden
  layer is one (M m, N) block; on their own rows X (M, N, d) the same products batched
  over the member axis.
* ``Stacked2``: depth 2, sigmoid, M > 1 members on shared rows: the members' first
  layers side by side, one GEMM per layer over cache-sized row blocks (``nn._kernels``
  blocked layout).
* ``Deep``: one member at any depth (used from depth 3): the explicit reverse pass
  [Rumelhart1986],
  with h_0 = X, h_l = a(h_{l-1} W_l^T + b_l), f = s (h_{L-1} w_L + b_L), g = s v:

      dw_L = g^T h_{L-1},  db_L = sum_k g_k,  delta = (g w_L) * a'(z_{L-1}),
      dW_l = delta^T h_{l-1},  db_l = sum_k delta_k,  delta <- (delta W_l) * a'(z_{l-1}),

  on 2-D products; the operations are those of the autograd graph of
  ``StackedMLP.forward``, so it equals ``torch.func`` bitwise on the tests' networks.
* ``DeepStack``: M > 1 members at any depth (from depth 3, and sigmoid members on their
  own rows X (M, N, d) at depth 2): the same reverse pass with every hidden layer as
  (M, m_l, N), units x rows (class docstring); equal to ``torch.func`` to rounding
  (tests: 1e-10 in float64).
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
from banditkit.nn._scratch import Allocator, copy_into

if TYPE_CHECKING:
    from banditkit.nn.network import StackedMLP

Params = dict[str, torch.Tensor]
#: (W^T, W, dW, b or None, db or None) of one hidden layer (2-D views of one member)
Layer = tuple[
    torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None, torch.Tensor | None
]

__all__ = [
    "Deep",
    "DeepStack",
    "Dense2",
    "Members",
    "Pass",
    "Stacked2",
    "make_pass",
    "reverse_pass",
]

#: grad * 1[input > threshold] elementwise, into grad_input (relu's backward).
_threshold_backward = torch.ops.aten.threshold_backward.grad_input
#: grad * h (1 - h) elementwise, into grad_input (sigmoid's backward from its output h).
_sigmoid_backward_into = torch.ops.aten.sigmoid_backward.grad_input


def _act_backward(
    relu: bool, grad: torch.Tensor, h: torch.Tensor, out: torch.Tensor
) -> torch.Tensor:
    """Return out = grad * a'(z) from h = a(z): the backward of the activation.

    grad may broadcast against h; out may be grad (in place).
    """
    if relu:
        return _threshold_backward(grad, h, 0, grad_input=out)
    return _sigmoid_backward_into(grad, h, grad_input=out)


class Pass(Protocol):
    """f and the backward pass of one network on fixed rows (module docstring)."""

    def forward(self) -> torch.Tensor:
        """F (M, N) at the current parameters."""
        ...

    def backward(self, v: torch.Tensor) -> None:
        """Write the vjp of v (M, N) into the gradient views (once per ``forward``)."""
        ...


def make_pass(
    net: StackedMLP,
    params: Params,
    grads: Params,
    X: torch.Tensor,
    new: Allocator | None = None,
) -> Pass:
    """The pass of ``net`` on rows X (module docstring), over the views given.

    ``new`` allocates the pass's buffers (``X.new_empty`` by default; the trainer's
    ``nn._scratch``, reused from fit to fit).
    """
    members = next(iter(params.values())).shape[0]
    if members > 1 and member_by_member(X):
        return Members(net, params, grads, X, new)
    relu = net.activation == "relu"
    if net.depth == 2 and (relu or (members == 1 and X.ndim == 2)):
        return Dense2(net, params, grads, X, new=new)
    if net.depth == 2 and X.ndim == 2:  # sigmoid members on shared rows
        return Stacked2(net, params, grads, X)
    return reverse_pass(net, params, grads, X, new)


def reverse_pass(
    net: StackedMLP,
    params: Params,
    grads: Params,
    X: torch.Tensor,
    new: Allocator | None = None,
) -> Deep | DeepStack:
    """The explicit reverse pass at any depth: ``Deep`` (one member) or ``DeepStack``."""
    if next(iter(params.values())).shape[0] == 1:
        return Deep(net, params, grads, X, new)
    return DeepStack(net, params, grads, X, new)


class Members:
    """M > 1 members computed member by member, on their own rows X (M, N, d) or shared.

    Each member runs the pass of a network alone (``make_pass`` on its rows and the
    views of its parameters and gradients), so that a stack of seeds computed member by
    member (``nn._kernels.member_by_member``) is each seed's separate fit, bitwise.
    """

    def __init__(
        self,
        net: StackedMLP,
        params: Params,
        grads: Params,
        X: torch.Tensor,
        new: Allocator | None = None,
    ) -> None:
        def own(tensors: Params, s: int) -> Params:
            return {name: t[s : s + 1] for name, t in tensors.items()}

        M = next(iter(params.values())).shape[0]
        self.passes = [
            make_pass(
                net, own(params, s), own(grads, s), X[s] if X.ndim == 3 else X, new
            )
            for s in range(M)
        ]
        self.f = (new or X.new_empty)((M, X.shape[-2]))

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
    """Depth 2: the closed form (module docstring), any members, shared or own rows.

    relu runs the units layout (module docstring) with a member axis: the hidden layer
    of M members on shared rows X (N, d) as one (M m, N) block, the product of the
    stacked [W_1, b_1] (M m, d + 1) with [X, 1]^T (one GEMM for all members), and that
    of members on their own rows X (M, N, d) as (M, m, N), batched products (``bmm``).
    b_1 is the last column of W_1 against a row of ones under X^T (the forward GEMM adds
    it and the gradient GEMM sums its slope) and dW_2 comes from G by relu's identity,
    so that a step makes three passes over the hidden block (relu, f, the mask) besides
    its two GEMMs; the mask C^T is written over h^T (one buffer streamed instead of
    two: 15-19 % off a step's four kernels, docs/performance.md), so that one
    ``backward`` follows each ``forward`` unless ``keep_hidden``
    (``StackedMLP.forward_vjp``, whose vjp may be called again). A loss that needs
    every f before the backward pass makes the mask read h^T from memory; the trainer
    runs the losses that are sums over rows or pairs as one sweep of this layout over
    blocks of rows instead (``nn._fused.RowSweep``, from ``load_units`` and
    ``units_gradients``). sigmoid runs the rows layout (N, m) of one member on X (N, d).
    """

    def __init__(
        self,
        net: StackedMLP,
        params: Params,
        grads: Params,
        X: torch.Tensor,
        *,
        keep_hidden: bool = False,
        new: Allocator | None = None,
    ) -> None:
        #: the allocator of the buffers (``make_pass``), also ``nn._fused``'s
        self.new = new = new or X.new_empty
        self.X, self.s, self.relu = X, net.out_scale, net.activation == "relu"
        self.activation = net.activation
        self.keep_hidden = keep_hidden
        w1, w2 = params["layers.0.weight"], params["layers.1.weight"]
        self.b1, self.b2 = params.get("layers.0.bias"), params.get("layers.1.bias")
        self.gb1, self.gb2 = grads.get("layers.0.bias"), grads.get("layers.1.bias")
        self.w1, self.w2c = w1, w2[:, 0]  # (M, m, d), (M, m)
        self.g1, self.g2 = grads["layers.0.weight"], grads["layers.1.weight"][:, 0]
        if self.relu:
            self._units(X, w1)
            return
        N, m = X.shape[0], net.width
        self.f, self.sv, self.sw = new((1, N)), new((1, N)), new((1, m))
        self.h, self.vc = new((1, N, m)), new((1, N, m))
        self.h0, self.vcT, self.w1t = self.h[0], self.vc[0].mT, w1[0].mT
        self.sw_row = self.sw.unsqueeze(1)

    def _units(self, X: torch.Tensor, w1: torch.Tensor) -> None:
        """The buffers and views of the units layout (class docstring)."""
        M, m, d = w1.shape
        shared = X.ndim == 2
        N = X.shape[-2]
        # the products: B batches of U units (one (M m)-unit product on shared rows)
        B, U = (1, M * m) if shared else (M, m)
        Xb = X.unsqueeze(0) if shared else X  # (B, N, d)
        new = self.new
        self.hT = new((B, U, N))
        # relu's mask overwrites h^T unless the hidden layer must outlive a backward
        self.cT = new((B, U, N)) if self.keep_hidden else self.hT
        self.h_members, self.c_members = self.hT.view(M, m, N), self.cT.view(M, m, N)
        self.f, self.sw = new((M, 1, N)), new((M, 1, m))
        self.f2, self.sw2 = self.f[:, 0], self.sw[:, 0]  # (M, N), (M, m)
        self.sw_col = self.sw2.unsqueeze(-1)
        #: W_1 and G are the parameters' and gradients' own views, or buffers holding
        #: [W_1, b_1] and its G (biases; M > 1 members' W_1 stacked on shared rows)
        self.copied = self.b1 is not None or B != M
        if self.copied:
            cols = d + (self.b1 is not None)
            self.Wa, self.G = new((M, m, cols)), new((M, m, cols))
            self.Wa_w, self.G_w = self.Wa[..., :d], self.G[..., :d]
            if self.b1 is not None:
                self.Wa_b, self.G_b = self.Wa[..., d], self.G[..., d]
                Xa = new((B, N, d + 1))  # [X, 1]
                Xa[..., :d].copy_(Xb)
                Xa[..., d].fill_(1.0)
                Xb = Xa
        else:
            self.Wa, self.G = w1, self.g1
        self.Wp, self.Gp = self.Wa.view(B, U, -1), self.G.view(B, U, -1)
        self.Xa, self.XT = Xb, copy_into(new, Xb.mT)

    def forward(self) -> torch.Tensor:
        """F (M, N): h = a(X W_1^T + b_1), f = h (s W_2[0]) + s b_2."""
        if self.relu:
            f = self._forward_units()
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

    def load_units(self) -> None:
        """[W_1, b_1] into its buffer (where copied) and sw = s W_2[0]: a step's start."""
        if self.copied:
            self.Wa_w.copy_(self.w1)
            if self.b1 is not None:
                self.Wa_b.copy_(self.b1)
        torch.mul(self.w2c, self.s, out=self.sw2)

    def _forward_units(self) -> torch.Tensor:
        """The relu forward: h^T = relu([W_1, b_1] [X, 1]^T), f = (s W_2[0]) h^T."""
        self.load_units()
        torch.bmm(self.Wp, self.XT, out=self.hT)
        torch.relu_(self.hT)
        torch.bmm(self.sw, self.h_members, out=self.f)
        return self.f2

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
            v.unsqueeze(1).expand_as(self.h_members),
            self.h_members,
            0,
            grad_input=self.c_members,
        )
        torch.bmm(self.cT, self.Xa, out=self.Gp)
        self.units_gradients()

    def units_gradients(self) -> None:
        """dW_2, dW_1 and db_1 from G = C^T [X, 1] (relu; module docstring)."""
        # dW_2 = s v^T h = s sum_k C_k z_k = s ([W_1, b_1] . G) (relu)
        torch.linalg.vecdot(self.Wa, self.G, out=self.g2)
        self.g2.mul_(self.s)
        if not self.copied:
            self.g1.mul_(self.sw_col)
            return
        torch.mul(self.G_w, self.sw_col, out=self.g1)
        if self.gb1 is not None:
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
            self.params, self.X, net.out_scale, self.workspace
        )
        return f

    def backward(self, v: torch.Tensor) -> None:
        """The vjp of the last ``forward``, copied into the gradient views."""
        assert self._vjp is not None
        for name, value in self._vjp(v).items():
            self.grads[name].copy_(value)


class Deep:
    """One member at any depth: the explicit reverse pass (module docstring).

    2-D products (``mm``, ``mv``, an outer product) into buffers allocated once with
    their transposed views (``_Buffers``: a step dispatches about 20 operations instead
    of 30, the arithmetic of autograd's graph bitwise). The layers' views are made once.
    A stack of members runs ``DeepStack`` (or ``Members``, member by member).
    """

    def __init__(
        self,
        net: StackedMLP,
        params: Params,
        grads: Params,
        X: torch.Tensor,
        new: Allocator | None = None,
    ) -> None:
        if X.ndim == 3:  # one member on its own rows: (N, d)
            X = X[0]
        self.X, self.s = X, net.out_scale
        self.relu = net.activation == "relu"
        last = net.depth - 1

        def layer(i: int) -> Layer:  # 2-D views of the one member
            w, gw = params[f"layers.{i}.weight"], grads[f"layers.{i}.weight"]
            b, gb = params.get(f"layers.{i}.bias"), grads.get(f"layers.{i}.bias")
            return (w[0].mT, w[0], gw[0], b, None if gb is None else gb[0])

        #: (W^T, W, dW, b, db[0]) of the hidden layers, views made once
        self.layers = [layer(i) for i in range(last)]
        head, ghead = params[f"layers.{last}.weight"], grads[f"layers.{last}.weight"]
        self.head, self.ghead = head[0, 0], ghead[0, 0]  # (m,)
        self.head_bias = params.get(f"layers.{last}.bias")
        self.ghead_bias = grads.get(f"layers.{last}.bias")
        widths = [wt.shape[-1] for wt, *_ in self.layers]
        self.buffers = _Buffers(X, widths, new)  # the layers live in the buffers
        self.hidden = [X, *self.buffers.h]

    def forward(self) -> torch.Tensor:
        """F (1, N) into the buffers, valid until the next; the hidden layers kept."""
        buf, h = self.buffers, self.X
        for (wt, _, _, b, _), out in zip(self.layers, buf.h, strict=True):
            torch.mm(h, wt, out=out)
            if b is not None:
                out.add_(b)
            h = out.relu_() if self.relu else out.sigmoid_()
        torch.mv(h, self.head, out=buf.f_row)
        f = buf.f
        if self.head_bias is not None:
            f = torch.add(f, self.head_bias, out=buf.fb)
        return torch.mul(f, self.s, out=buf.fs)

    def backward(self, v: torch.Tensor) -> None:
        """Write dtheta of sum_k v_k f_k into the gradient views (module docstring)."""
        buf, hidden = self.buffers, self.hidden
        g = torch.mul(v, self.s, out=buf.g)  # (1, N)
        torch.mv(buf.h_t[-1], buf.g_row, out=self.ghead)
        # the outer product g[0] head^T (torch.outer's arithmetic), into delta's buffer
        delta = torch.mul(buf.g_col, self.head, out=buf.delta[-1])
        if self.ghead_bias is not None:
            torch.sum(g, 1, keepdim=True, out=self.ghead_bias)
        delta = _act_backward(self.relu, delta, hidden[-1], delta)
        for i in range(len(self.layers) - 1, -1, -1):
            _, w, gw, _, gb = self.layers[i]
            torch.mm(buf.delta_t[i], hidden[i], out=gw)
            if gb is not None:
                torch.sum(delta, -2, out=gb)
            if i > 0:
                delta = torch.mm(delta, w, out=buf.delta[i - 1])
                delta = _act_backward(self.relu, delta, hidden[i], delta)


class DeepStack:
    """M > 1 members at any depth: the reverse pass, hidden layers as units x rows.

    The layers of every member are (M, m_l, N) blocks, h_l^T = a(W_l h_{l-1}^T + b_l),
    so that every product is a batched GEMM whose long dimension is the rows' (the
    first layer on shared rows X (N, d) is one GEMM of the members' stacked W_1
    (M m, d)), and f = (s w_L) h_{L-1}^T + s b_L a (1, m) x (m, N) product per member
    instead of a reduction over the short axis of (N, m) rows (5-7x faster at m = 20
    to 100: docs/performance.md). With g = s v and C^T = a'(z_{L-1}^T) * g (one pass
    over the top block, g broadcast along the units), the top layer's delta is
    w_L * C and the head's weights are factored out of the N-row products:

        dW_{L-1} = w_L * (C^T h_{L-2}),   db_{L-1} = w_L * sum_k C_k,
        delta_{L-2}^T = a'(z_{L-2}^T) * ((w_L * W_{L-1})^T C^T),

    then delta_l^T = a'(z_l^T) * (W_{l+1}^T delta_{l+1}^T), dW_l = delta_l^T h_{l-1},
    db_l = sum_k delta_l[., k] below, and dw_L = g h_{L-1}, db_L = sum_k g_k. The same
    gradient as autograd's up to rounding (tests: 1e-10 in float64).
    """

    def __init__(
        self,
        net: StackedMLP,
        params: Params,
        grads: Params,
        X: torch.Tensor,
        new: Allocator | None = None,
    ) -> None:
        M = next(iter(params.values())).shape[0]
        N = X.shape[-2]
        new = new or X.new_empty
        self.X, self.XT, self.shared = X, copy_into(new, X.mT), X.ndim == 2
        self.s, self.relu = net.out_scale, net.activation == "relu"
        last = net.depth - 1
        #: (W_l, dW_l, b_l or None, db_l or None) of the hidden layers
        self.layers = [
            (
                params[f"layers.{i}.weight"],
                grads[f"layers.{i}.weight"],
                params.get(f"layers.{i}.bias"),
                grads.get(f"layers.{i}.bias"),
            )
            for i in range(last)
        ]
        self.head = params[f"layers.{last}.weight"]  # (M, 1, m)
        self.ghead = grads[f"layers.{last}.weight"]
        self.head_bias = params.get(f"layers.{last}.bias")  # (M, 1)
        self.ghead_bias = grads.get(f"layers.{last}.bias")
        widths = [w.shape[1] for w, *_ in self.layers]
        self.hT = [new((M, m, N)) for m in widths]
        self.dT = [new((M, m, N)) for m in widths]
        self.f, self.g, self.sw = (
            new((M, 1, N)),
            new((M, 1, N)),
            new((M, 1, widths[-1])),
        )
        # the views that a step reads, made once
        self.hT_t = [h.mT for h in self.hT]  # (M, N, m)
        self.head_col = self.head.mT  # (M, m, 1)
        self.head_row = self.head[:, 0]  # (M, m)
        self.g_units = self.g.expand_as(self.hT[-1])
        self.f2 = self.f[:, 0]
        self.w_t = [w.mT for w, *_ in self.layers]
        w_top = self.layers[-1][0]
        #: w_L * W_{L-1} (rows scaled by the head's weights), transposed
        self.w_top = new(w_top.shape)
        self.w_t[-1] = self.w_top.mT
        # the first layer on shared rows: the members' W_1 and dW_1 stacked (M m, d),
        # views where the tensors are contiguous (the trainer's flat buffers)
        w0, gw0 = self.layers[0][:2]
        self.W0 = w0.view(-1, w0.shape[-1]) if w0.is_contiguous() else None
        flat = gw0.is_contiguous()
        self.G0 = gw0.view(-1, gw0.shape[-1]) if flat else new(gw0.shape).flatten(0, 1)
        self.G0_copied = not flat

    def forward(self) -> torch.Tensor:
        """Return f (M, N); keep the hidden blocks for ``backward``."""
        N = self.X.shape[-2]
        for i, (w, _, b, _) in enumerate(self.layers):
            out = self.hT[i]
            if i > 0:
                torch.bmm(w, self.hT[i - 1], out=out)
            elif self.shared:  # the members' W_1 stacked: one GEMM
                W0 = self.W0 if self.W0 is not None else w.reshape(-1, w.shape[-1])
                torch.mm(W0, self.XT, out=out.view(-1, N))
            else:
                torch.bmm(w, self.XT, out=out)
            if b is not None:
                out.add_(b.unsqueeze(-1))
            if self.relu:
                out.relu_()
            else:
                out.sigmoid_()
        torch.mul(self.head, self.s, out=self.sw)
        torch.bmm(self.sw, self.hT[-1], out=self.f)
        f = self.f2
        if self.head_bias is not None:
            return f + self.s * self.head_bias
        return f

    def backward(self, v: torch.Tensor) -> None:
        """Write dtheta of sum_k v_k f_k into the gradient views (class docstring)."""
        g = torch.mul(v.unsqueeze(1), self.s, out=self.g)  # (M, 1, N)
        torch.bmm(g, self.hT_t[-1], out=self.ghead)
        if self.ghead_bias is not None:
            torch.sum(self.g[:, 0], -1, keepdim=True, out=self.ghead_bias)
        top = len(self.layers) - 1
        _act_backward(self.relu, self.g_units, self.hT[top], self.dT[top])  # C^T
        for i in range(top, -1, -1):
            _, gw, _, gb = self.layers[i]
            d = self.dT[i]
            if i > 0:
                torch.bmm(d, self.hT_t[i - 1], out=gw)
            elif self.shared:  # one GEMM for the members' stacked W_1
                torch.mm(d.view(self.G0.shape[0], -1), self.X, out=self.G0)
                if self.G0_copied:
                    gw.copy_(self.G0.view_as(gw))
            else:
                torch.bmm(d, self.X, out=gw)
            if i == top:  # delta = w_L * C
                gw.mul_(self.head_col)
            if gb is not None:
                torch.sum(d, -1, out=gb)
                if i == top:
                    gb.mul_(self.head_row)
            if i > 0:
                if i == top:
                    torch.mul(self.layers[i][0], self.head_col, out=self.w_top)
                torch.bmm(self.w_t[i], d, out=self.dT[i - 1])
                below = self.dT[i - 1]
                _act_backward(self.relu, below, self.hT[i - 1], below)


class _Buffers:
    """One member's per-step tensors of ``Deep`` on N rows, and their views, made once.

    h (the hidden layers' activations), delta (their backward factors), f, f + b_L,
    s f and g = s v; the transposed views h_t and delta_t, the rows f_row and g_row and
    the column g_col read by the products, so that a step makes no view and allocates
    no tensor.
    """

    def __init__(
        self, X: torch.Tensor, widths: list[int], new: Allocator | None = None
    ) -> None:
        N, new = X.shape[0], new or X.new_empty
        self.h = [new((N, m)) for m in widths]
        self.h_t = [h.mT for h in self.h]
        self.delta = [new((N, m)) for m in widths]
        self.delta_t = [d.mT for d in self.delta]
        self.f, self.fb, self.fs, self.g = (new((1, N)) for _ in range(4))
        self.f_row, self.g_row = self.f[0], self.g[0]
        self.g_col = self.g_row.unsqueeze(1)
