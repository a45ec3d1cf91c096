"""The functional trainer: full-batch GD or Adam on a stack of M independent networks.

Objective of member k, minimised from the parameters passed in (warm start):

    J_k(theta_k) = sum_i loss_i(f(.; theta_k)) + sum_penalties P(theta_k)  (reduction="sum")
    J_k / n                                                              (reduction="mean")

with loss_i one of ``nn.losses`` over the observations of ``nn.observations`` (rows, pairs
or sets; per-member targets and weights allowed) and the penalties of ``nn.penalties``.
"mean" has the minimiser of "sum" (the penalty is divided by n as well).

One step for all members: f = ``net.forward_vjp(params, X)`` (closed form for depth 2,
torch.func otherwise), d loss / d f from ``loss.value_and_dloss_df``, the gradient
``vjp(d loss / d f)``, the penalties' lam (theta - c), then theta -= lr * grad (GD) or
one ``torch.optim.Adam`` step (default betas; fresh state at each call). Members never
mix: every operation is per member or batched over the member axis (no Python loop over
members), so a stack of M equals M runs of one (tests: bitwise for M = 1, within 1e-12
otherwise).

Kernels, chosen here (never by the caller): one depth-2 network without biases trained
by GD on unweighted rows with BCE or MSE and L2 penalties on every parameter runs the
fused loop of ``nn._fused`` (the same arithmetic with every buffer made once), its
unrecorded relu/BCE steps with the hidden layer as (m, N) when the one penalty has no
centre; when those rows are block-encoded on the CPU and the saving is large enough,
the block loop of ``nn._blocks`` (the first layer on each row's block).

Symbols: lr = η, steps = J.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import torch

from banditkit.core.validation import check_choice, check_int, check_scalar
from banditkit.nn._blocks import BlockLayout, choose_blocks, fused_gd_blocks
from banditkit.nn._fused import fusable, fused_gd
from banditkit.nn.losses import Loss
from banditkit.nn.network import Params, StackedMLP
from banditkit.nn.observations import Pairs, Rows, Sets
from banditkit.nn.penalties import L2Penalty

__all__ = ["FitResult", "fit", "objective_and_grads"]

OPTIMIZERS = ("gd", "adam")
REDUCTIONS = ("sum", "mean")
RECORDS = ("all", "ends")
Observations = Rows | Pairs | Sets


class FitResult(NamedTuple):
    """What ``fit`` returns.

    Attributes:
        params: The trained stack (M, ...); the input tensors when ``inplace``.
        history: J per member at the parameters each step started from, (steps, M);
            ``history[0]`` is the warm start. Divergence shows as inf or nan.
    """

    params: Params
    history: torch.Tensor


def objective_and_grads(
    net: StackedMLP,
    params: Params,
    obs: Observations,
    loss: Loss,
    penalties: Sequence[L2Penalty] = (),
    *,
    method: str = "auto",
    workspace: dict[str, torch.Tensor] | None = None,
) -> tuple[torch.Tensor, Params]:
    """J per member (M,) (reduction "sum") and its gradient, without autograd.

    Args:
        net: The network.
        params: The stack (M, ...).
        obs: Observations of the kind ``loss.observations``.
        loss: The loss.
        penalties: Penalties added to the loss.
        method: Gradient method of ``net.forward_vjp``.
        workspace: Buffers reused across calls (``net.forward_vjp``).

    Returns:
        J (M,) and {name: dJ/dparam (M, ...)}.
    """
    f, vjp = net.forward_vjp(params, obs.X, method=method, workspace=workspace)
    values, dloss_df = loss.value_and_dloss_df(f, obs)
    grads = vjp(dloss_df)
    total = values.sum(-1).expand(f.shape[0])
    for penalty in penalties:
        value, grads = penalty.apply(params, grads)
        total = total + value
    return total, grads


def _check_members(
    obs: Observations, penalties: Sequence[L2Penalty], params: Params, M: int
) -> None:
    """Per-member data must have M rows (or be shared); centres M or 1 members."""
    for name in ("y", "weights"):
        value = getattr(obs, name, None)
        if value is not None and value.ndim == 2 and value.shape[0] != M:
            raise ValueError(
                f"obs.{name} has {value.shape[0]} member rows; the stack has M = {M}."
            )
    for i, penalty in enumerate(penalties):
        names = list(params) if penalty.names is None else penalty.names
        unknown = [n for n in names if n not in params]
        if unknown:
            raise ValueError(f"penalties[{i}] names unknown parameters {unknown}.")
        if penalty.center is None:
            continue
        for n in names:
            shape = tuple(penalty.center[n].shape)
            if shape[1:] != tuple(params[n].shape[1:]) or shape[0] not in (1, M):
                raise ValueError(
                    f"penalties[{i}].center[{n!r}] must have shape (M or 1, "
                    f"*{tuple(params[n].shape[1:])}) with M = {M}; got {shape}."
                )


def fit(
    net: StackedMLP,
    params: Params,
    obs: Observations,
    loss: Loss,
    *,
    penalties: Sequence[L2Penalty] = (),
    optimizer: str = "gd",
    lr: float = 0.01,
    steps: int = 100,
    reduction: str = "sum",
    inplace: bool = False,
    method: str = "auto",
    record: str = "all",
) -> FitResult:
    """Train M members at once, warm-started from ``params`` (module docstring).

    Args:
        net: The network (``StackedMLP`` or ``NeuralLinear``).
        params: The stack (M, ...) to start from (``net.init`` or a previous fit).
        obs: ``Rows``, ``Pairs`` or ``Sets``, as ``loss.observations``; X of the
            params' dtype and device with d = net.d; y and weights (n,) or (M, n).
        loss: A loss of ``nn.losses``.
        penalties: L2 penalties (``nn.penalties``); none by default.
        optimizer: "gd" (theta -= lr * grad J) or "adam" (torch.optim.Adam).
        lr: Step size, > 0.
        steps: Full-batch steps, >= 1.
        reduction: "sum" or "mean" (J / n, same minimiser).
        inplace: Update the tensors of ``params`` themselves (e.g. views of a module's
            parameters from ``stack_params``); otherwise they are copied first.
        method: "auto", "closed-form" (depth 2) or "torch.func" (``net.forward_vjp``).
        record: "all" (J at every step) or "ends" (J at the first and the last step
            only, history (2, M), or (1, M) for one step): the parameters are the same;
            the fused loop then skips the objective's value on the other steps.

    Returns:
        FitResult(params, history (steps, M), or the recorded steps).

    Raises:
        ValueError: On a loss/observation mismatch, wrong shapes, member rows of y,
            weights or penalty centres other than M (or 1 for centres), a penalty on
            unknown parameters, lr <= 0, steps < 1, or an unknown optimizer,
            reduction or record.

    Notes:
        The kernels are chosen here, by the network, the data and the device (module
        docstring): results agree across them up to floating-point order.

    Example:
        >>> net = StackedMLP(2, width=4)
        >>> params = net.init(3, torch.Generator().manual_seed(0))
        >>> rows = Rows(torch.eye(2, dtype=torch.float64), torch.tensor([1.0, 0.0]))
        >>> from banditkit.nn.losses import BCE
        >>> result = fit(net, params, rows, BCE(), penalties=[L2Penalty(0.1)], steps=20)
        >>> result.history.shape, bool((result.history[-1] < result.history[0]).all())
        (torch.Size([20, 3]), True)
    """
    optimizer = check_choice("optimizer", optimizer, OPTIMIZERS)
    lr = check_scalar("lr", lr, low=0.0, low_open=True)
    steps = check_int("steps", steps, low=1)
    reduction = check_choice("reduction", reduction, REDUCTIONS)
    record = check_choice("record", record, RECORDS)
    M = net.check_params(params)
    if not isinstance(obs, loss.observations):
        raise ValueError(
            f"obs must be {loss.observations.__name__} for {type(loss).__name__}; "
            f"got {type(obs).__name__}."
        )
    if obs.X.shape[1] != net.d:
        raise ValueError(f"obs.X must have d = {net.d} columns; got {obs.X.shape[1]}.")
    _check_members(obs, penalties, params, M)
    if not inplace:
        params = {name: p.detach().clone() for name, p in params.items()}
    tensors = list(params.values())
    opt = torch.optim.Adam(tensors, lr=lr) if optimizer == "adam" else None
    scale = 1.0 / obs.n if reduction == "mean" else 1.0
    history = []
    workspace: dict[str, torch.Tensor] = {}
    if opt is None and fusable(net, params, obs, loss, penalties, method):
        # one depth-2 network on rows: the fused loop, the same arithmetic (nn._fused)
        assert isinstance(obs, Rows)
        blocks = choose_blocks(obs.X, net.width)
        if blocks is not None:
            # block-encoded rows: the first layer on each row's block (nn._blocks)
            history = fused_gd_blocks(
                net,
                params,
                obs,
                loss,
                penalties,
                BlockLayout.of(obs.X, blocks),
                step=lr * scale,
                steps=steps,
                record=record,
            )
            return FitResult(params, torch.stack(history) * scale)
        history = fused_gd(
            net,
            params,
            obs,
            loss,
            penalties,
            step=lr * scale,
            steps=steps,
            record=record,
        )
        return FitResult(params, torch.stack(history) * scale)
    if opt is None:  # plain GD: theta -= lr * scale * grad, no optimiser state
        step = lr * scale
        items = list(params.items())
        # one no_grad for the whole loop: the closed form and the penalties then skip
        # their own (torch.func's vjp ignores an outer no_grad, as it should)
        with torch.no_grad():
            for i in range(steps):
                value, grads = objective_and_grads(
                    net,
                    params,
                    obs,
                    loss,
                    penalties,
                    method=method,
                    workspace=workspace,
                )
                if record == "all" or i == 0 or i == steps - 1:
                    history.append(value)
                for name, param in items:
                    param.sub_(grads[name], alpha=step)
        return FitResult(params, torch.stack(history) * scale)
    for i in range(steps):
        value, grads = objective_and_grads(
            net, params, obs, loss, penalties, method=method, workspace=workspace
        )
        if record == "all" or i == 0 or i == steps - 1:
            history.append(value)
        for name, param in params.items():
            param.grad = grads[name] if scale == 1.0 else grads[name] * scale
        opt.step()
    opt.zero_grad(set_to_none=True)
    return FitResult(params, torch.stack(history) * scale)
