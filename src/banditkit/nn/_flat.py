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
    once. The objective of a recorded step (``objective``) computes the penalties'
    values on the same blocks, with ``L2Penalty.value``'s arithmetic (bitwise).

    Args:
        penalties: The fit's penalties.
        flat: The flat parameters.
    """

    def __init__(self, penalties: Sequence[L2Penalty], flat: FlatParams) -> None:
        self.penalties = list(penalties)
        self.flat = flat
        self.terms: list[tuple[float, slice, torch.Tensor | None]] = []
        #: theta - c of the terms with a centre, written in place every step
        self._diffs: list[torch.Tensor | None] = []
        #: each penalty with the indices of its terms (none when lam = 0)
        self._groups: list[tuple[L2Penalty, list[int]]] = []
        #: the parameters each term covers, in their order
        self._term_names: list[list[str]] = []
        #: per term: a buffer for its squares and their (M, k) rows per parameter
        self._squares: list[tuple[torch.Tensor, list[torch.Tensor]]] | None = None
        everything = slice(0, flat.theta.numel())
        for penalty in self.penalties:
            indices: list[int] = []
            self._groups.append((penalty, indices))
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
                indices.append(len(self.terms))
                self.terms.append((penalty.lam, block, center))
                self._term_names.append(list(group))
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

    def objective(self, values: torch.Tensor) -> torch.Tensor:
        """J per member (M,): the losses' values (M or 1, n) summed, plus the penalties.

        The penalties' values are ``L2Penalty.value``'s arithmetic on the flat buffers,
        bitwise: per parameter in its order, (lam / 2) times the row sums of
        (theta - c)^2 (M, k), added one after the other, each penalty added to the
        losses' sum in turn; the squares of a term's block are one operation, not one
        per parameter (a recorded step of a six-tensor network dispatched 36 for its
        penalty).
        """
        total = values.sum(-1).expand(self.flat.members)
        if self._squares is None:
            self._squares = [self._square_rows(i) for i in range(len(self.terms))]
        for penalty, indices in self._groups:
            if not indices:  # lam = 0: L2Penalty.value's zeros
                total = total + penalty.value(self.flat.params)
                continue
            half = 0.5 * penalty.lam
            value: torch.Tensor | None = None
            for i in indices:
                center, diff = self.terms[i][2], self._diffs[i]
                theta = self._views[i][1]
                if center is not None and diff is not None:
                    theta = torch.sub(theta, center, out=diff)
                squares, rows = self._squares[i]
                torch.mul(theta, theta, out=squares)
                for row in rows:
                    term = half * row.sum(1)
                    value = term if value is None else value.add_(term)
            assert value is not None
            total = total + value
        return total

    def _square_rows(self, i: int) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """A buffer for term i's squares and its (M, k) row views, one per parameter."""
        flat, block = self.flat, self.terms[i][1]
        squares = torch.empty_like(flat.theta[block])
        rows = []
        for name in self._term_names[i]:
            part = flat.slices[name]
            start = part.start - block.start
            rows.append(
                squares[start : start + part.stop - part.start].view(flat.members, -1)
            )
        return squares, rows


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
