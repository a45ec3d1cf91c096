"""The trainer's buffers: theta and its gradient flat, with the penalties and the updates.

A private part of ``nn.fit``. The parameters of a stack, {name: (M, ...)}, live for the
fit in one flat vector theta, parameter by parameter (each parameter's (M, ...) block
contiguous, in the network's flattening order), and the gradient in a second vector of
the same layout; every parameter is a view of its block. The penalties' gradient
lam (theta - c) and the update then cost one operation per penalty term and one (GD) or
seven (Adam) per step, whatever the number of parameter tensors, and every view is made
once per fit. The arithmetic is element for element that of the per-tensor code
(``L2Penalty.apply``, ``torch.optim.Adam`` on the CPU): the same iterates, bitwise.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from banditkit.nn.network import Params
from banditkit.nn.penalties import L2Penalty

__all__ = ["Adam", "FlatParams", "FlatPenalties"]


class FlatParams:
    """theta and its gradient as two flat vectors; ``params`` and ``grads`` are views.

    Args:
        params: The stack {name: (M, ...)}, copied into theta.
    """

    def __init__(self, params: Params) -> None:
        self.names = list(params)
        first = next(iter(params.values()))
        self.members = first.shape[0]
        self.theta = torch.cat([p.detach().reshape(-1) for p in params.values()])
        self.grad = torch.empty_like(self.theta)
        self.slices: dict[str, slice] = {}
        start = 0
        for name, p in params.items():
            self.slices[name] = slice(start, start + p.numel())
            start += p.numel()
        self.params: Params = {
            name: self.theta[self.slices[name]].view(p.shape)
            for name, p in params.items()
        }
        self.grads: Params = {
            name: self.grad[self.slices[name]].view(p.shape)
            for name, p in params.items()
        }

    def write_back(self, params: Params) -> None:
        """Copy theta into the tensors of ``params`` (the caller's, for ``inplace``)."""
        for name, p in params.items():
            p.copy_(self.params[name])


class FlatPenalties:
    """The L2 penalties of a fit as terms lam (theta[block] - c) on the flat vectors.

    One term per penalty over the whole of theta when it covers every parameter, else
    one per parameter it names; a centre is flattened (and broadcast over the members)
    once. The values (on recorded steps) are the penalties' own (``L2Penalty.value``).

    Args:
        penalties: The fit's penalties.
        flat: The flat parameters.
    """

    def __init__(self, penalties: Sequence[L2Penalty], flat: FlatParams) -> None:
        self.penalties = list(penalties)
        self.terms: list[tuple[float, slice, torch.Tensor | None]] = []
        #: theta - c of the terms with a centre, written in place every step
        self._diffs: list[torch.Tensor | None] = []
        everything = slice(0, flat.theta.numel())
        for penalty in self.penalties:
            if penalty.lam == 0.0:
                continue
            names = flat.names if penalty.names is None else penalty.names
            blocks = (
                [(everything, flat.names)]
                if penalty.names is None
                else [(flat.slices[n], [n]) for n in names]
            )
            for block, group in blocks:
                center = None
                if penalty.center is not None:
                    center = torch.cat(
                        [
                            penalty.center[n].expand_as(flat.params[n]).reshape(-1)
                            for n in group
                        ]
                    )
                self.terms.append((penalty.lam, block, center))
                self._diffs.append(None if center is None else torch.empty_like(center))
        #: (grad, theta) views of each term's block in ``flat``, made once
        self._views = [(flat.grad[b], flat.theta[b]) for _, b, _ in self.terms]

    def add_grad(self) -> None:
        """Grad += lam (theta - c) for every term, in place (the flat buffers given)."""
        for (lam, _, center), diff, (grad, theta) in zip(
            self.terms, self._diffs, self._views, strict=True
        ):
            if center is None:
                grad.add_(theta, alpha=lam)
            else:  # theta - c into its buffer: no allocation per step
                grad.add_(torch.sub(theta, center, out=diff), alpha=lam)


class Adam:
    """``torch.optim.Adam`` (default betas, eps) on one flat vector, fresh at each fit.

    Per step t, with g the gradient: m = lerp(m, g, 1 - beta1),
    v = beta2 v + (1 - beta2) g^2, theta -= lr / (1 - beta1^t) * m /
    (sqrt(v) / sqrt(1 - beta2^t) + eps): the operations of PyTorch's single-tensor
    implementation (its CPU path), element by element, so the iterates equal
    ``torch.optim.Adam``'s on the same parameters bitwise.

    Args:
        theta: The flat parameters (updated in place by ``step``).
        lr: Step size.
    """

    beta1, beta2, eps = 0.9, 0.999, 1e-8

    def __init__(self, theta: torch.Tensor, lr: float) -> None:
        self.theta, self.lr = theta, lr
        self.m = torch.zeros_like(theta)
        self.v = torch.zeros_like(theta)
        self.denom = torch.empty_like(theta)
        self.t = 0

    def step(self, grad: torch.Tensor) -> None:
        """One update of theta from ``grad``."""
        self.t += 1
        beta1, beta2 = self.beta1, self.beta2
        self.m.lerp_(grad, 1 - beta1)
        self.v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        step = float(self.t)
        bias_correction1 = 1 - beta1**step
        bias_correction2 = 1 - beta2**step
        step_size = self.lr / bias_correction1
        bias_correction2_sqrt = bias_correction2**0.5
        denom = torch.sqrt(self.v, out=self.denom)
        denom.div_(bias_correction2_sqrt).add_(self.eps)
        self.theta.addcdiv_(self.m, denom, value=-step_size)
