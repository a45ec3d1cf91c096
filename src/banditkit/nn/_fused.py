"""The fused full-batch GD loop of ``nn.fit`` for one depth-2 network on rows.

The generic loop of ``nn.fit`` runs, per step, the closed-form forward/vjp of
``nn.kernels``, the loss's value and derivative, the penalties' value and gradient and
the update: about 35 tensor operations, each a few microseconds of dispatch and Python,
whatever the number of rows. At the sizes of a bandit refit (tens to a few thousand rows,
widths 20 to 100) that fixed cost is of the order of the two GEMMs of the step. This loop
does the same arithmetic, operation for operation, for the common case

    one member (M = 1), depth 2, no biases, GD, ``Rows`` without weights,
    loss ``BCE`` or ``MSE``, ``L2Penalty`` on every parameter,

with every intermediate in a buffer allocated once per fit, and the objective's value
(the loss values, their sum and the penalty values, used only for ``history``) computed
only on the steps that ``fit``'s ``record`` keeps: on every step ("all") or on the first
and the last ("ends"). Per step (relu; z = X W_1^T, s W_2[0] = w):

    h = relu(X W_1^T);  f = h w;  c = sign(h) * w;  d = l'(f);
    dW_1 = (c * d)^T X + lam (W_1 - C_1);  dW_2 = (s d)^T h + lam (W_2 - C_2);
    W -= lr * dW

which is 14 operations, two of them the GEMMs: the operations of the dense pass of
``nn.kernels`` (``depth2_dense_pass``, whose backward factor c is ``depth2_slopes``, the
definition shared with the generic loop and the per-arm gradients of ``nn.grads``) in
the same order, with every view made once per fit and theta and its gradient in flat
buffers, so that the L2 term and the update are one operation each (about 12 us less
per step than calling the pass: 18 against 32 us at 50 rows). Results equal the
generic loop's bitwise (tests/nn/test_fused.py checks parameters and history step by step).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from banditkit.nn._kernels import depth2_slopes
from banditkit.nn.losses import BCE, Gaussian, Loss
from banditkit.nn.network import Params, StackedMLP
from banditkit.nn.observations import Pairs, Rows, Sets
from banditkit.nn.penalties import L2Penalty

__all__ = ["fusable", "fused_gd"]

#: grad * 1[input > threshold] elementwise, into grad_input (relu's backward).
_threshold_backward = torch.ops.aten.threshold_backward.grad_input

Observations = Rows | Pairs | Sets


def fusable(
    net: StackedMLP,
    params: Params,
    obs: Observations,
    loss: Loss,
    penalties: Sequence[L2Penalty],
    method: str,
) -> bool:
    """Whether ``fused_gd`` computes this fit (module docstring); else the generic loop."""
    if (
        type(net) is not StackedMLP
        or net.depth != 2
        or net.bias
        or method not in ("auto", "closed-form")
        or not isinstance(obs, Rows)
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


def fused_gd(
    net: StackedMLP,
    params: Params,
    obs: Rows,
    loss: Loss,
    penalties: Sequence[L2Penalty],
    *,
    step: float,
    steps: int,
    record: str,
    layout: str = "auto",
) -> list[torch.Tensor]:
    """Run ``steps`` GD steps theta -= step * grad J in place; return the recorded J.

    The parameters and their gradients live in two flat buffers for the loop (W_1 and
    W_2 are views of one (m d + m,) vector), so that the L2 term and the update are one
    operation each, and every view the step reads is made once before it: the same
    operations element by element, about 12 us less per step.

    Args:
        net: A depth-2 ``StackedMLP`` without biases (``fusable``).
        params: One member's parameters (1, ...), updated in place.
        obs: Rows without weights.
        loss: ``BCE`` or ``MSE``.
        penalties: L2 penalties on every parameter.
        step: lr (times 1 / n for reduction "mean").
        steps: Number of steps.
        record: "all" (J at every step) or "ends" (the first and the last step).
        layout: "auto" (the fits of ``nn.fit``): "units" where it applies, else "rows".
            "rows": the hidden layer as (N, m), every step the operations of the generic
            loop (bitwise). "units": the unrecorded relu/BCE steps with one L2 term
            without a centre keep it as (m, N) (``_plain_relu_bce_steps_units``): the
            products round differently (the iterates agree up to rounding, not
            bitwise) and the step is about 1.3x faster at N >= 500 in float64.

    Returns:
        J (1,) (reduction "sum", unscaled) of the recorded steps, in order.
    """
    X, y = obs.X, obs.y
    w1, w2 = params["layers.0.weight"], params["layers.1.weight"]
    N, m = X.shape[0], net.width
    s = net.out_scale
    new = X.new_empty
    names = ("layers.0.weight", "layers.1.weight")
    # theta and its gradient as flat buffers, W_1 and W_2 their views (docstring)
    theta = torch.cat([w1.reshape(-1), w2.reshape(-1)])
    grad = torch.empty_like(theta)
    split = w1.numel()
    W1, W2 = theta[:split].view_as(w1), theta[split:].view_as(w2)
    g1, g2 = grad[:split].view_as(w1), grad[split:].view_as(w2)
    views = {names[0]: W1, names[1]: W2}
    lams = []
    for p in penalties:
        if p.lam != 0.0:
            center = (
                None
                if p.center is None
                else torch.cat([p.center[n].reshape(-1) for n in names])
            )
            lams.append((p.lam, center))
    h, vc = new((1, N, m)), new((1, N, m))
    f, dloss, sv, sw = new((1, N)), new((1, N)), new((1, N)), new((1, m))
    # the views of one step, made once (the dense layout of nn.kernels)
    h0, vcT = h[0], vc[0].mT
    f0, sw0, sw_row, dloss_col = f[0], sw[0], sw.unsqueeze(1), dloss.unsqueeze(-1)
    w1t, w2c, g1_0, g2_0 = W1[0].mT, W2[:, 0], g1[0], g2[0]
    relu = net.activation == "relu"
    bce = type(loss) is BCE
    history: list[torch.Tensor] = []
    # layout "units": the steps that record nothing, with relu, BCE and one L2 penalty
    # without a centre (NeuralLog's refits), run with the hidden layer as (m, N)
    units = (
        layout != "rows"
        and relu
        and bce
        and record == "ends"
        and len(lams) == 1
        and lams[0][1] is None
        and steps > 2
    )
    with torch.no_grad():
        for i in range(steps):
            if units and i == 1:
                _plain_relu_bce_steps_units(
                    steps - 2,
                    (X, W1[0], w2c, s, sw, sw0, f, dloss, y, sv, g1_0, g2_0),
                    (grad, theta, lams[0][0], step),
                )
                continue
            if units and 1 < i < steps - 1:
                continue
            # depth2_dense_pass of nn.kernels, operation for operation
            torch.mm(X, w1t, out=h0)
            if relu:
                torch.relu_(h)
            else:
                torch.sigmoid_(h)
            torch.mul(w2c, s, out=sw)
            torch.mv(h0, sw0, out=f0)
            if not relu:
                depth2_slopes(net.activation, h, sw_row, out=vc)  # c, then c v below
            recorded = record == "all" or i == 0 or i == steps - 1
            values = loss_derivative(loss, f, obs, y, bce, recorded, out=dloss)
            # the vjp of nn.kernels (dense layout): dW_1 = (c v)^T X, dW_2 = s v^T h
            if relu:
                # c v = (1[h > 0] sw) v: the products v_k sw_j where h > 0, else 0,
                # the values of depth2_slopes(h) * v in two passes instead of three
                torch.mul(dloss_col, sw_row, out=vc)
                _threshold_backward(vc, h, 0, grad_input=vc)
            else:
                vc.mul_(dloss_col)
            torch.mm(vcT, X, out=g1_0)
            torch.mul(dloss, s, out=sv)
            torch.mm(sv, h0, out=g2_0)  # (1, N) @ (N, m)
            if values is not None:
                grads = {names[0]: g1, names[1]: g2}
                grads = add_penalties(grads, views, penalties, [], values, history)
                W1.sub_(grads[names[0]], alpha=step)
                W2.sub_(grads[names[1]], alpha=step)
                continue
            for lam, center in lams:  # lam (theta - c), both blocks at once
                grad.add_(theta if center is None else theta - center, alpha=lam)
            theta.sub_(grad, alpha=step)
        w1.copy_(W1)
        w2.copy_(W2)
    return history


def _plain_relu_bce_steps_units(
    count: int, first: tuple[Any, ...], second: tuple[Any, ...]
) -> None:
    """``count`` unrecorded relu/BCE/L2 steps of ``fused_gd``, hidden layer (m, N).

    h^T = relu(W_1 X^T), f = sw^T h^T, v = sigmoid(f) - y, c^T = 1[h^T > 0] v (one pass:
    v broadcast along the units, contiguous rows), dW_1 = sw * (c^T X), dw_2 = (s v) h,
    then the L2 term and the update as before. The same gradient; the products (W X^T
    instead of X W^T) and the place of sw round differently, so the iterates agree with
    the rows layout's up to rounding (``fused_gd(layout="units")``).
    """
    X, w1, w2c, s, sw, sw0, f, dloss, y, sv, g1_0, g2_0 = first
    grad, theta, lam, step = second
    m, N = w1.shape[0], X.shape[0]
    XT = X.mT.contiguous()
    hT, cT = X.new_empty((m, N)), X.new_empty((m, N))
    hT_rows, v_units, sw_col = hT.mT, dloss.expand(m, N), sw0.unsqueeze(-1)
    mm, mul = torch.mm, torch.mul
    relu_, sigmoid = torch.relu_, torch.sigmoid
    for _ in range(count):
        mm(w1, XT, out=hT)
        relu_(hT)
        mul(w2c, s, out=sw)
        mm(sw, hT, out=f)
        sigmoid(f, out=dloss).sub_(y)
        _threshold_backward(v_units, hT, 0, grad_input=cT)
        mm(cT, X, out=g1_0)
        g1_0.mul_(sw_col)
        mul(dloss, s, out=sv)
        mm(sv, hT_rows, out=g2_0)
        grad.add_(theta, alpha=lam)
        theta.sub_(grad, alpha=step)


def add_penalties(
    grads: dict[str, torch.Tensor],
    params: dict[str, torch.Tensor],
    penalties: Sequence[L2Penalty],
    lams: Sequence[tuple[float, dict[str, torch.Tensor] | None]],
    values: torch.Tensor | None,
    history: list[torch.Tensor],
) -> dict[str, torch.Tensor]:
    """Add the L2 penalties' part to the data gradient of one fused step.

    With ``values`` (the per-row losses of a recorded step) the penalties are applied
    through their own ``apply`` and the step's objective is appended to ``history``;
    without, only their gradient lam (theta - c) is added, in place.
    """
    if values is not None:
        total = values.sum(-1).expand(1)
        for penalty in penalties:
            value, grads = penalty.apply(params, grads)
            total = total + value
        history.append(total)
        return grads
    for lam, center in lams:
        for name, theta in params.items():
            diff = theta if center is None else theta - center[name]
            grads[name].add_(diff, alpha=lam)
    return grads


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
    """Write dloss/df of one fused step into ``out``; the per-row losses when ``recorded``.

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
