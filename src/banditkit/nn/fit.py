"""The trainer: full-batch GD or Adam on a stack of M independent networks.

Objective of member k, minimised from the parameters passed in (warm start):

    J_k(theta_k) = sum_i loss_i(f(.; theta_k)) + sum_penalties P(theta_k)  (reduction="sum")
    J_k / n                                                              (reduction="mean")

with loss_i one of ``nn.losses`` over the observations of ``nn.observations`` (rows, pairs
or sets; per-member targets and weights allowed) and the penalties of ``nn.penalties``.
"mean" has the minimiser of "sum" (the penalty is divided by n as well).

One step for all members: f and the explicit backward pass of the network
(``nn._passes``: the depth-2 closed form, or the reverse pass layer by layer for any
depth), d loss / d f from the loss, the penalties' lam (theta - c), then
theta -= lr * grad (GD) or one Adam step (``torch.optim.Adam``'s arithmetic, default
betas, fresh state at each call). The parameters and their gradient live in two flat
buffers for the fit (``nn._flat``), every buffer and view is made once (in memory
that the next fit reuses, ``nn._scratch``), and the objective's value is computed only
on the steps whose J is recorded: a step costs its products and a few operations per
layer, not a pass through Python objects. Members never mix: every operation is per
member or batched over the member axis, so a stack of M equals M runs of one (tests:
within 1e-12).

Kernels, chosen here (never by the caller), all with the arithmetic above: a depth-2
relu network under a loss that is a sum over rows or pairs (BCE, Gaussian, Bradley-Terry
on the halves layout) runs each step, forward and backward, as one sweep over
cache-sized blocks of units (``nn._fused.RowSweep``; under GD with the penalties and the
update, the recorded steps too); one depth-2 network without biases trained by GD on
unweighted rows with BCE or MSE and L2 penalties on every parameter runs, when its rows
are block-encoded on the CPU and the saving is large enough, the block loop of
``nn._blocks`` (the first layer on each row's block); members of such networks with their
own block-encoded rows (X (M, N, D)) run one block loop each, which is what each would run
alone. These round differently from the plain pass where they split sums (tests: 1e-12).

Symbols: lr = η, steps = J.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import torch

from banditkit.core.validation import check_choice, check_int, check_scalar
from banditkit.nn._blocks import BlockLayout, choose_blocks, fused_gd_blocks
from banditkit.nn._flat import Adam, FlatParams, FlatPenalties
from banditkit.nn._fused import RowSweep, blocks_apply, row_sweep
from banditkit.nn._kernels import separate_members as kernels_separate_members
from banditkit.nn._passes import Pass, make_pass
from banditkit.nn._scratch import scratch
from banditkit.nn.losses import Loss
from banditkit.nn.network import Params, StackedMLP
from banditkit.nn.observations import Pairs, Rows, Sets
from banditkit.nn.penalties import L2Penalty

__all__ = ["FitResult", "fit", "objective_and_grads"]

OPTIMIZERS = ("gd", "adam")
REDUCTIONS = ("sum", "mean")
RECORDS = ("all", "ends", "none")
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
    if obs.X.ndim == 3 and obs.X.shape[0] != M:
        raise ValueError(
            f"obs.X has {obs.X.shape[0]} member tables; the stack has M = {M}."
        )
    items = getattr(obs, "items", None)  # Sets: per-member sets with per-member tables
    if items is not None and items.ndim == 3 and items.shape[0] != M:
        raise ValueError(
            f"obs.items has {items.shape[0]} member sets; the stack has M = {M}."
        )
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
    record: str = "all",
    separate_members: bool = False,
) -> FitResult:
    """Train M members at once, warm-started from ``params`` (module docstring).

    Args:
        net: The network (``StackedMLP`` or ``NeuralLinear``).
        params: The stack (M, ...) to start from (``net.init`` or a previous fit).
        obs: ``Rows``, ``Pairs`` or ``Sets``, as ``loss.observations``; X of the
            params' dtype and device with d = net.d; y and weights (n,) or (M, n).
        loss: A loss of ``nn.losses``.
        penalties: L2 penalties (``nn.penalties``); none by default.
        optimizer: "gd" (theta -= lr * grad J) or "adam" (``torch.optim.Adam``'s
            update, module docstring).
        lr: Step size, > 0.
        steps: Full-batch steps, >= 1.
        reduction: "sum" or "mean" (J / n, same minimiser).
        inplace: Update the tensors of ``params`` themselves (e.g. views of a module's
            parameters from ``stack_params``); otherwise they are copied first.
        record: "all" (J at every step), "ends" (J at the first and the last step
            only, history (2, M), or (1, M) for one step) or "none" (history (0, M)):
            the parameters are the same; the other steps skip the objective's value.
        separate_members: On the CPU in float64, compute the members one by one, so
            that each member's fit equals its own fit alone bitwise (the seeds of one
            configuration trained as a stack; ``nn._kernels.member_by_member``). Off,
            the batched kernels agree with it to rounding and are faster.

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
    if obs.X.shape[-1] != net.d:
        raise ValueError(f"obs.X must have d = {net.d} columns; got {obs.X.shape[-1]}.")
    _check_members(obs, penalties, params, M)
    if not inplace:
        params = {name: p.detach().clone() for name, p in params.items()}
    scale = 1.0 / obs.n if reduction == "mean" else 1.0
    with torch.no_grad(), kernels_separate_members(separate_members):
        members = (
            _block_members(net, params, obs, loss, penalties)
            if optimizer == "gd"
            else None
        )
        if members is not None:  # block-encoded rows (nn._blocks)
            history = _fit_blocks(members, net, loss, lr * scale, steps, record)
            return FitResult(params, _stacked(history, M, obs.X) * scale)
        history = _steps(
            net, params, obs, loss, penalties, optimizer, lr, steps, scale, record
        )
    return FitResult(params, _stacked(history, M, obs.X) * scale)


#: One member's share of a fit: its parameters (views), rows, penalties and layout.
_Member = tuple[Params, Rows, list[L2Penalty], BlockLayout]


def _block_members(
    net: StackedMLP,
    params: Params,
    obs: Observations,
    loss: Loss,
    penalties: Sequence[L2Penalty],
) -> list[_Member] | None:
    """The fit as block loops (``nn._blocks``), one per member, or None (dense steps).

    One member on rows (N, D) is one block loop. Members with their own rows
    (X (M, N, D), y (M, N)) are M: each member's share is what a fit of that member
    alone would be given (its parameters as views of the stack, its rows and targets,
    its penalty centres), so it runs the block loop of its own layout, K times fewer
    flops than the stack's dense steps on K blocks. None unless every share qualifies
    (``blocks_apply``, ``choose_blocks``).
    """
    if not isinstance(obs, Rows):
        return None
    shares: list[tuple[Params, Rows, list[L2Penalty]]]
    if obs.X.ndim == 2:
        shares = [(params, obs, list(penalties))]
    elif obs.y.ndim == 2:
        M = obs.X.shape[0]
        shares = [
            (
                {name: p[s : s + 1] for name, p in params.items()},  # views
                Rows(obs.X[s], obs.y[s], validate=False),
                [_member_penalty(p, s, M) for p in penalties],
            )
            for s in range(M)
        ]
    else:
        return None
    members: list[_Member] = []
    for own, rows, terms in shares:
        if not blocks_apply(net, own, rows, loss, terms):
            return None
        layout = choose_blocks(rows.X, net.width)
        if layout is None:
            return None
        members.append((own, rows, terms, layout))
    return members


def _member_penalty(penalty: L2Penalty, s: int, M: int) -> L2Penalty:
    """Member s's share of a penalty: its own centre (or the shared one)."""
    center = penalty.center
    if center is not None:
        center = {n: c[s : s + 1] if c.shape[0] == M else c for n, c in center.items()}
    return L2Penalty(penalty.lam, center, penalty.names)


def _fit_blocks(
    members: list[_Member],
    net: StackedMLP,
    loss: Loss,
    step: float,
    steps: int,
    record: str,
) -> list[torch.Tensor]:
    """The block loop of each member (``_block_members``); J (M,) of the recorded steps."""
    histories = [
        fused_gd_blocks(
            net, own, rows, loss, terms, layout, step=step, steps=steps, record=record
        )
        for own, rows, terms, layout in members
    ]
    if len(histories) == 1:
        return histories[0]
    return [torch.cat(values) for values in zip(*histories, strict=True)]


def _stacked(history: list[torch.Tensor], M: int, like: torch.Tensor) -> torch.Tensor:
    """The recorded J as (recorded steps, M); (0, M) when none was recorded."""
    return torch.stack(history) if history else like.new_zeros((0, M))


def _steps(
    net: StackedMLP,
    params: Params,
    obs: Observations,
    loss: Loss,
    penalties: Sequence[L2Penalty],
    optimizer: str,
    lr: float,
    steps: int,
    scale: float,
    record: str,
) -> list[torch.Tensor]:
    """Run the steps on flat buffers (module docstring); J of the recorded steps.

    The parameters of ``params`` are updated in place at the end.
    """
    with scratch(obs.X) as new:  # the pass's buffers, reused from fit to fit
        flat = FlatParams(params)
        network = make_pass(net, flat.params, flat.grads, obs.X, new)
        terms = FlatPenalties(penalties, flat)
        adam = Adam(flat.theta, lr) if optimizer == "adam" else None
        sweep = row_sweep(net, network, obs, loss, terms, new, gd=adam is None)
        fused = None if adam is not None else sweep
        recorded = [
            record == "all" or (record == "ends" and i in (0, steps - 1))
            for i in range(steps)
        ]

        # the unrecorded steps' derivative, where the row sweep does not compute it
        derivative = (
            loss.step_derivative(obs, flat.members, new) if sweep is None else None
        )

        def objective(f: torch.Tensor) -> torch.Tensor:
            return terms.objective(loss.value_and_dloss_df(f, obs)[0])

        history: list[torch.Tensor] = []
        i = 0
        while i < steps:
            if fused is not None:
                # the fused steps to the next recorded one, J of the first if recorded
                count = next((j for j in range(i + 1, steps) if recorded[j]), steps) - i
                value = fused(
                    count, flat, lr * scale, objective if recorded[i] else None
                )
                if value is not None:
                    history.append(value)
                i += count
                continue
            value = _gradient(network, sweep, obs, loss, derivative, terms, recorded[i])
            if value is not None:
                history.append(value)
            if adam is None:
                flat.theta.sub_(flat.grad, alpha=lr * scale)
            else:
                if scale != 1.0:
                    flat.grad.mul_(scale)
                adam.step(flat.grad)
            i += 1
        flat.write_back(params)
        return history


def _gradient(
    network: Pass,
    sweep: RowSweep | None,
    obs: Observations,
    loss: Loss,
    derivative: Callable[[torch.Tensor], torch.Tensor] | None,
    terms: FlatPenalties,
    recorded: bool,
) -> torch.Tensor | None:
    """Grad J into the flat gradients; J per member (M,) when ``recorded``, else None.

    By the row sweep where there is one (``nn._fused.row_sweep``), else the pass's
    forward and backward; ``derivative`` is the loss's ``step_derivative``, for the
    unrecorded steps.
    """
    if sweep is not None:
        sweep.gradient()
        terms.add_grad()
        if not recorded:
            return None
        return terms.objective(loss.value_and_dloss_df(sweep.predictions(), obs)[0])
    f = network.forward()
    if not recorded:
        assert derivative is not None  # prepared whenever there is no sweep
        network.backward(derivative(f))
        terms.add_grad()
        return None
    values, dloss_df = loss.value_and_dloss_df(f, obs)
    total = terms.objective(values)
    network.backward(dloss_df)
    terms.add_grad()
    return total
