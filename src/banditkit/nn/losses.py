"""Losses of the trainer, one object per loss, over rows, pairs or sets of predictions.

Every loss maps the network's predictions f (M, N) on an observation container's feature
table (``nn.observations``) to per-observation values (M, n) and to d loss / d f (M, N)
in closed form, ``value_and_dloss_df(f, obs)``; the trainer contracts the latter with the
network's vjp, so any loss composes with the closed-form backward. A new loss is one
class here.

    BCE          rows   w_i (log(1 + exp(f_i)) - y_i f_i)           [Bae2025, Sec. 7]
                        (weighted BCE: Rows with weights)
    Gaussian     rows   w_i (f_i - y_i)^2 / (2 sigma^2)             Gaussian NLL, up to a
                        constant; per-member perturbed targets are Rows with y (M, n)
    MSE          rows   Gaussian with sigma = 1: (f_i - y_i)^2 / 2  [Zhou2020, Alg. 1]
    BradleyTerry pairs  w_i (log(1 + exp(t_i)) - y_i t_i), t_i = f(first_i) - f(second_i)
                        (Bradley-Terry-Luce, logistic link) [Saha2021]
    PairwiseGLM  pairs  w_i nll(t_i, y_i), nll the Bernoulli NLL of a ``glm.Link``
                        (probit: Thurstone-Mosteller), computed by the link itself
    MNL          sets   w_i (log(1 + sum_{j in S_i} exp(f_j)) - [c_i >= 0] f_{S_i, c_i})
                        P(choose j | S) = exp(f_j) / (1 + sum_{l in S} exp(f_l)), c_i = -1
                        the outside option [Oh2021]

Derivatives, with sigma the sigmoid and p_ij the MNL choice probability of slot j:
BCE w (sigma(f) - y); Gaussian w (f - y) / sigma^2; BradleyTerry +-w (sigma(t) - y) on
first/second; PairwiseGLM +-w nll_grad(t, y) on first/second; MNL w (p_ij - 1[j = c_i]) on the offered rows (summed when a row appears
in several observations).

References:
    [Zhou2020] D. Zhou, L. Li, Q. Gu. Neural contextual bandits with UCB-based
        exploration. ICML 2020.
    [Bae2025] S. Bae, D. Lee. Neural logistic bandits. arXiv:2505.02069.
    [Saha2021] A. Saha. Optimal algorithms for stochastic contextual preference
        bandits. NeurIPS 2021.
    [Oh2021] M. Oh, G. Iyengar. Multinomial logit contextual bandits: provable
        optimality and practicality. AAAI 2021.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import torch

from banditkit.core.validation import check_scalar
from banditkit.glm.links import get_link
from banditkit.nn._kernels import member_by_member
from banditkit.nn._scratch import Allocator
from banditkit.nn.observations import Pairs, Rows, Sets


class RowSlope(NamedTuple):
    """A loss that is a sum over independent units, differentiated block by block.

    Unit k (a row, or a pair) reads rows ``offset + k`` of f for each offset in
    ``offsets`` (rows: (0,); pairs on the halves layout: (0, n)). ``bind(f, i, j,
    out)``, called once per block when a fit starts, returns the operation that writes
    d loss / d f of the rows of units i:j into out (M, r (j - i)) from their
    predictions f (M, r (j - i)), r = len(offsets), both laid out offset after offset
    (``Loss.row_slope``); the views it needs are made then, not at every step.
    """

    units: int
    offsets: tuple[int, ...]
    bind: Callable[[torch.Tensor, int, int, torch.Tensor], Callable[[], None]]


__all__ = [
    "BCE",
    "MNL",
    "MSE",
    "BradleyTerry",
    "Gaussian",
    "Loss",
    "PairwiseGLM",
    "RowSlope",
    "bce_loss",
    "loss_and_derivative",
    "mnl_nll",
    "mse_loss",
]


def per_member(
    fn: Callable[..., torch.Tensor], x: torch.Tensor, *others: torch.Tensor
) -> torch.Tensor:
    """fn(x, *others) elementwise; for a stack on the CPU in float64, row by row.

    Each member's row is then computed as its separate run computes it
    (``nn._kernels.member_by_member``); otherwise the one batched call.
    """
    if x.ndim < 2 or x.shape[0] == 1 or not member_by_member(x):
        return fn(x, *others)
    rows = [o.expand_as(x) for o in others]
    return torch.stack([fn(x[i], *(o[i] for o in rows)) for i in range(x.shape[0])])


def bce_loss(
    f: torch.Tensor, y: torch.Tensor, weights: torch.Tensor | None = None
) -> torch.Tensor:
    """Binary cross-entropy with logits f, per observation, optionally weighted.

    loss_i = w_i * (log(1 + exp(f_i)) - y_i * f_i)

    Args:
        f: Logits, any shape.
        y: Targets in [0, 1], broadcastable to f.
        weights: Non-negative weights broadcastable to f, or None for all ones.

    Returns:
        Losses shaped like f.

    Example:
        >>> bce_loss(torch.zeros(2), torch.tensor([0.0, 1.0]))
        tensor([0.6931, 0.6931])
    """
    y = y.expand_as(f)
    loss = per_member(_bce_with_logits, f, y)
    return loss if weights is None else weights * loss


def _bce_with_logits(f: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.binary_cross_entropy_with_logits(f, y, reduction="none")


def mse_loss(f: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Half squared error per observation, loss_i = (f_i - y_i)^2 / 2 [Zhou2020, Alg. 1].

    Example:
        >>> mse_loss(torch.tensor([1.0]), torch.tensor([0.0]))
        tensor([0.5000])
    """
    return 0.5 * (f - y) ** 2


def mnl_nll(u: torch.Tensor, y: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Multinomial-logit negative log-likelihood with an outside option, per assortment.

    nll_i = log(1 + sum_{j: mask_ij} exp(u_ij)) - [y_i >= 0] * u_{i, y_i},

    computed as a logsumexp over the offered utilities and a 0 for the outside option.

    Args:
        u: Utilities (..., n, S); entries where ``mask`` is False are ignored.
        y: Chosen slot (n,) in [0, S), int64, or -1 for the outside option; a chosen
            slot must be offered (not checked here). (..., n) with per-member sets.
        mask: Offered items (n, S), bool; (..., n, S) with per-member sets.

    Returns:
        nll (..., n).

    Example:
        >>> u = torch.tensor([[0.0, 0.0]])
        >>> mnl_nll(u, torch.tensor([-1]), torch.tensor([[True, True]]))  # log 3
        tensor([1.0986])
    """
    masked = torch.where(mask, u, torch.full_like(u, -torch.inf))
    outside = torch.zeros_like(u[..., :1])
    lse = torch.logsumexp(torch.cat([outside, masked], dim=-1), dim=-1)
    index = y.clamp(min=0).unsqueeze(-1).expand(*u.shape[:-1], 1)
    chosen = torch.gather(u, -1, index)[..., 0]
    return lse - torch.where(y >= 0, chosen, torch.zeros_like(chosen))


def _weighted(
    values: torch.Tensor, deriv: torch.Tensor, weights: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor]:
    if weights is None:
        return values, deriv
    return weights * values, weights * deriv


class Loss(abc.ABC):
    """Interface of a loss: ``value_and_dloss_df(f, obs)`` on one kind of observations.

    ``dloss_df(f, obs)`` is the derivative alone (the trainer's steps whose objective is
    not recorded); its values are those of ``value_and_dloss_df``, bitwise.

    Attributes:
        observations: The container class the loss reads (Rows, Pairs or Sets).
    """

    observations: type = Rows

    def dloss_df(self, f: torch.Tensor, obs: Any) -> torch.Tensor:
        """D (sum of losses) / d f (M, N), without the losses' values."""
        return self.value_and_dloss_df(f, obs)[1]

    def step_derivative(
        self, obs: Any, members: int, new: Allocator
    ) -> Callable[[torch.Tensor], torch.Tensor]:
        """``dloss_df(., obs)`` for the trainer's steps on these observations.

        A loss may prepare buffers from ``new`` (the trainer's, ``nn._scratch``) and
        return its derivative in them, valid until the next call; the values are
        ``dloss_df``'s bitwise. By default ``dloss_df`` itself.

        Args:
            obs: The fit's observations.
            members: M, the rows of f.
            new: Allocates an uninitialised tensor of ``obs.X``'s dtype and device.
        """
        return lambda f: self.dloss_df(f, obs)

    def row_slope(self, obs: Any) -> RowSlope | None:
        """``dloss_df`` block of units by block, for a loss that is a sum over units.

        Where the loss is a sum over units that each read a few rows of f (BCE and
        Gaussian on ``Rows``: a row; Bradley-Terry on the halves layout: rows k and
        n + k), the trainer runs the forward and backward passes over blocks of units
        whose rows stay in the cache (``nn._fused.RowSweep``) and asks for each block's
        derivative from that block's f: the operations of ``dloss_df`` on those rows
        (bitwise its values for a block of all the units; on smaller blocks a sigmoid
        may round its last bit otherwise, PyTorch computing a tensor's tail elements on
        a scalar path). None (the default) where units share rows (other pairs, sets).
        """
        return None

    @abc.abstractmethod
    def value_and_dloss_df(
        self, f: torch.Tensor, obs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Return per-observation losses (M, n) and d (sum of losses) / d f (M, N).

        Args:
            f: Predictions (M, N) on ``obs.X``, one row per member.
            obs: An instance of ``observations``.
        """


class BCE(Loss):
    """Binary cross-entropy with logits on rows [Bae2025, Sec. 7]; weighted with weights.

    Example:
        >>> rows = Rows(torch.zeros(2, 1), torch.tensor([0.0, 1.0]))
        >>> BCE().value_and_dloss_df(torch.zeros(1, 2, dtype=torch.float64), rows)[1]
        tensor([[ 0.5000, -0.5000]], dtype=torch.float64)
    """

    def value_and_derivative(
        self, f: torch.Tensor, y: torch.Tensor, weights: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Elementwise losses and d loss / d f for logits f, targets y, weights."""
        deriv = per_member(torch.sigmoid, f) - y
        return bce_loss(f, y, weights), deriv if weights is None else weights * deriv

    def value_and_dloss_df(
        self, f: torch.Tensor, obs: Rows
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """See ``Loss``."""
        return self.value_and_derivative(f, obs.y, obs.weights)

    def derivative(
        self, f: torch.Tensor, y: torch.Tensor, weights: torch.Tensor | None = None
    ) -> torch.Tensor:
        """D loss / d f = w (sigmoid(f) - y), as ``value_and_derivative``."""
        deriv = per_member(torch.sigmoid, f).sub_(y)
        return deriv if weights is None else weights * deriv

    def dloss_df(self, f: torch.Tensor, obs: Rows) -> torch.Tensor:
        """See ``Loss``."""
        return self.derivative(f, obs.y, obs.weights)

    def row_slope(self, obs: Rows) -> RowSlope:
        """The derivative w (sigmoid(f) - y) on rows i:j, as ``derivative`` (``Loss``)."""

        def bind(
            f: torch.Tensor, i: int, j: int, out: torch.Tensor
        ) -> Callable[[], None]:
            y, weights = obs.y[..., i:j], _rows_of(obs.weights, i, j)

            def slope() -> None:
                torch.sigmoid(f, out=out).sub_(y)
                if weights is not None:
                    out.mul_(weights)

            return slope

        return RowSlope(obs.n, (0,), bind)


class Gaussian(Loss):
    """Gaussian negative log-likelihood (f - y)^2 / (2 sigma^2) on rows, up to a constant.

    Ensemble sampling trains member k on targets y + sigma_r * z_k with z_k drawn once
    and stored: pass Rows with y of shape (M, n).

    Args:
        sigma: Noise standard deviation, > 0.

    Example:
        >>> rows = Rows(torch.zeros(1, 1), torch.tensor([1.0]))
        >>> Gaussian(2.0).value_and_dloss_df(torch.zeros(1, 1, dtype=torch.float64), rows)
        (tensor([[0.1250]], dtype=torch.float64), tensor([[-0.2500]], dtype=torch.float64))
    """

    def __init__(self, sigma: float = 1.0) -> None:
        self.sigma = check_scalar("sigma", sigma, low=0.0, low_open=True)
        self._precision = 1.0 / (self.sigma * self.sigma)

    def value_and_derivative(
        self, f: torch.Tensor, y: torch.Tensor, weights: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Elementwise losses and d loss / d f."""
        values, deriv = mse_loss(f, y), f - y
        if self._precision != 1.0:
            values, deriv = values * self._precision, deriv * self._precision
        return _weighted(values, deriv, weights)

    def value_and_dloss_df(
        self, f: torch.Tensor, obs: Rows
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """See ``Loss``."""
        return self.value_and_derivative(f, obs.y, obs.weights)

    def dloss_df(self, f: torch.Tensor, obs: Rows) -> torch.Tensor:
        """See ``Loss``."""
        deriv = f - obs.y
        if self._precision != 1.0:
            deriv = deriv * self._precision
        return deriv if obs.weights is None else obs.weights * deriv

    def row_slope(self, obs: Rows) -> RowSlope:
        """The derivative w (f - y) / sigma^2 on rows i:j, as ``dloss_df`` (``Loss``)."""
        precision = self._precision

        def bind(
            f: torch.Tensor, i: int, j: int, out: torch.Tensor
        ) -> Callable[[], None]:
            y, weights = obs.y[..., i:j], _rows_of(obs.weights, i, j)

            def slope() -> None:
                torch.sub(f, y, out=out)
                if precision != 1.0:
                    out.mul_(precision)
                if weights is not None:
                    out.mul_(weights)

            return slope

        return RowSlope(obs.n, (0,), bind)


class MSE(Gaussian):
    """Half squared error (f - y)^2 / 2 on rows [Zhou2020, Alg. 1]: Gaussian, sigma = 1."""

    def __init__(self) -> None:
        super().__init__(1.0)


class BradleyTerry(Loss):
    """Bradley-Terry-Luce (logistic) loss on pairs: BCE of f(first) - f(second).

    P(first beats second) = sigmoid(f(x_first) - f(x_second)); with pair weights
    1 / sigma_i^2 the objective is the weighted MLE of variance-aware dueling bandits.

    Example:
        >>> pairs = Pairs(torch.eye(2), first=[0], second=[1], y=[1.0])
        >>> f = torch.tensor([[0.0, 0.0]], dtype=torch.float64)
        >>> BradleyTerry().value_and_dloss_df(f, pairs)[1]
        tensor([[-0.5000,  0.5000]], dtype=torch.float64)
    """

    observations = Pairs

    def value_and_dloss_df(
        self, f: torch.Tensor, obs: Pairs
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """See ``Loss``."""
        margin = _margin(f, obs)
        values, g = BCE().value_and_derivative(margin, obs.y, obs.weights)
        return values, _scatter_pairs(f, obs, g.expand_as(margin))

    def dloss_df(self, f: torch.Tensor, obs: Pairs) -> torch.Tensor:
        """See ``Loss``."""
        margin = _margin(f, obs)
        g = BCE().derivative(margin, obs.y, obs.weights)
        return _scatter_pairs(f, obs, g.expand_as(margin))

    def step_derivative(
        self, obs: Pairs, members: int, new: Allocator
    ) -> Callable[[torch.Tensor], torch.Tensor]:
        """``dloss_df`` into buffers made once (see ``Loss``).

        On the halves layout df = [g, -g] with g = w (sigmoid(T) - y) and
        T = f[:, :n] - f[:, n:]: five operations into two buffers, where ``dloss_df``
        allocates five tensors (T, the sigmoid, y subtracted, the weights, -g) and
        concatenates. The same operations in the same order, so the same values; other
        layouts, and stacks computed member by member (``per_member``), run
        ``dloss_df``.
        """
        if not obs.halves or (members > 1 and member_by_member(obs.X)):
            return super().step_derivative(obs, members, new)
        n = obs.n
        df, margin = new((members, 2 * n)), new((members, n))
        first, second = df[:, :n], df[:, n:]
        y, weights = obs.y, obs.weights

        def derivative(f: torch.Tensor) -> torch.Tensor:
            _pair_slope(f[:, :n], f[:, n:], y, weights, margin, first, second)
            return df

        return derivative

    def row_slope(self, obs: Pairs) -> RowSlope | None:
        """Pairs i:j on the halves layout: [g, -g], g = w (sigmoid(T) - y) (``Loss``).

        The operations of ``step_derivative`` on the block's rows; None off the halves
        layout.
        """
        if not obs.halves:
            return None

        def bind(
            f: torch.Tensor, i: int, j: int, out: torch.Tensor
        ) -> Callable[[], None]:
            n = j - i
            y, weights = obs.y[..., i:j], _rows_of(obs.weights, i, j)
            first, second, g, negated = f[:, :n], f[:, n:], out[:, :n], out[:, n:]
            margin = (
                g if g.is_contiguous() else torch.empty_like(g)
            )  # (``_pair_slope``)

            def slope() -> None:
                _pair_slope(first, second, y, weights, margin, g, negated)

            return slope

        return RowSlope(obs.n, (0, obs.n), bind)


def _pair_slope(
    first: torch.Tensor,
    second: torch.Tensor,
    y: torch.Tensor,
    weights: torch.Tensor | None,
    margin: torch.Tensor,
    g: torch.Tensor,
    negated: torch.Tensor,
) -> None:
    """Bradley-Terry's df of pairs on the halves layout, into buffers: g, -g.

    T = f(first) - f(second) into ``margin`` (contiguous: sigmoid's vectorised and
    scalar paths round differently, and a strided view takes the latter), g = w
    (sigmoid(T) - y) into ``g`` (which may be ``margin``), -g into ``negated``: the
    operations of ``BradleyTerry.dloss_df``, for ``step_derivative`` and ``row_slope``.
    """
    torch.sub(first, second, out=margin)
    torch.sigmoid(margin, out=margin).sub_(y)
    if weights is not None:
        torch.mul(weights, margin, out=g)
    elif margin is not g:
        g.copy_(margin)
    torch.neg(g, out=negated)


def _rows_of(weights: torch.Tensor | None, i: int, j: int) -> torch.Tensor | None:
    """Weights of units i:j (along the last axis), or None without weights."""
    return None if weights is None else weights[..., i:j]


def _margin(f: torch.Tensor, obs: Pairs) -> torch.Tensor:
    """T = f(first) - f(second), (M, n); slices of f when the pairs are its halves."""
    if obs.halves:
        n = obs.n
        return f[:, :n] - f[:, n:]
    return f[:, obs.first] - f[:, obs.second]


def _scatter_pairs(f: torch.Tensor, obs: Pairs, g: torch.Tensor) -> torch.Tensor:
    """Return d loss / d f (M, N) from d loss / d t (M, n), t = f(first) - f(second).

    On the halves layout (``Pairs.halves``: every row in one pair) df is [g, -g], the
    values of the additions onto zeros.
    """
    if obs.halves:
        return torch.cat([g, -g], dim=1)
    df = torch.zeros_like(f).index_add_(1, obs.first, g)
    return df.index_add_(1, obs.second, -g)


class PairwiseGLM(Loss):
    """Bernoulli negative log-likelihood of pairs through a binary GLM link.

    P(first beats second) = mu(t), t = f(x_first) - f(x_second), mu the mean of a
    ``banditkit.glm`` link; loss_i = w_i nll(t_i, y_i) and d loss_i / d t_i =
    w_i nll_grad(t_i, y_i), both computed by the link (float64 numpy, stable in the
    tails), so every link of ``glm`` (or a custom ``glm.Link``) is a pair loss without a
    second implementation. With ``glm.LogisticLink`` it is ``BradleyTerry`` (up to
    rounding); with ``glm.ProbitLink`` it is the Thurstone-Mosteller model.

    Args:
        link: A ``glm.Link`` or the name of one ("logistic", "probit").

    Example:
        >>> pairs = Pairs(torch.eye(2), first=[0], second=[1], y=[1.0])
        >>> f = torch.tensor([[0.0, 0.0]], dtype=torch.float64)
        >>> PairwiseGLM("probit").value_and_dloss_df(f, pairs)[1]  # -phi(0) / Phi(0)
        tensor([[-0.7979,  0.7979]], dtype=torch.float64)
    """

    observations = Pairs

    def __init__(self, link: Any = "logistic") -> None:
        self.link = get_link(link)

    def value_and_dloss_df(
        self, f: torch.Tensor, obs: Pairs
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """See ``Loss``."""
        margin = _margin(f, obs)
        t = margin.detach().cpu().numpy().astype(np.float64)
        y = obs.y.detach().cpu().numpy().astype(np.float64)
        values = torch.as_tensor(
            self.link.nll(t, y), dtype=f.dtype, device=f.device
        ).expand_as(margin)
        g = torch.as_tensor(
            self.link.nll_grad(t, y), dtype=f.dtype, device=f.device
        ).expand_as(margin)
        values, g = _weighted(values, g, obs.weights)
        return values, _scatter_pairs(f, obs, g.expand_as(margin))


class MNL(Loss):
    """Multinomial-logit NLL over offered sets with an outside option of utility 0.

    Example:
        >>> sets = Sets(torch.eye(2), items=[[0, 1]], choice=[-1])
        >>> values, df = MNL().value_and_dloss_df(torch.zeros(1, 2, dtype=torch.float64), sets)
        >>> values, df  # log 3 and p_j = 1/3
        (tensor([[1.0986]], dtype=torch.float64), tensor([[0.3333, 0.3333]], dtype=torch.float64))
    """

    observations = Sets

    def value_and_derivative(
        self, u: torch.Tensor, choice: torch.Tensor, offered: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """NLL (..., n) and d NLL / d u (..., n, S) for utilities u (..., n, S)."""
        values = mnl_nll(u, choice, offered)
        masked = torch.where(offered, u, torch.full_like(u, -torch.inf))
        outside = torch.zeros_like(u[..., :1])
        probs = torch.softmax(torch.cat([outside, masked], dim=-1), dim=-1)[..., 1:]
        chosen = torch.nn.functional.one_hot(choice.clamp(min=0), u.shape[-1])
        return values, probs - chosen.to(u.dtype) * (choice >= 0).to(u.dtype)[..., None]

    def value_and_dloss_df(
        self, f: torch.Tensor, obs: Sets
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """See ``Loss``; per-member sets (items (M, n, S)) read each member's own f."""
        rows = obs.items.clamp(min=0)
        M = f.shape[0]
        if rows.ndim == 3:  # per-member sets: member s reads f[s, items[s]]
            flat = rows.reshape(M, -1)
            u = torch.gather(f, 1, flat).reshape(rows.shape)
        else:
            u = f[:, rows]
        values, du = self.value_and_derivative(u, obs.choice, obs.offered)
        if obs.weights is not None:
            values, du = obs.weights * values, obs.weights.unsqueeze(-1) * du
        du = du.expand(M, *rows.shape[-2:])  # 0 on empty slots: added to row 0
        if rows.ndim == 3:
            df = torch.zeros_like(f).scatter_add_(1, flat, du.reshape(M, -1))
        else:
            df = torch.zeros_like(f).index_add_(1, rows.reshape(-1), du.reshape(M, -1))
        return values, df


_BY_NAME: dict[str, Loss] = {
    "bce": BCE(),
    "weighted-bce": BCE(),
    "mse": MSE(),
    "mnl": MNL(),
}


def loss_and_derivative(
    loss: str,
    f: torch.Tensor,
    y: torch.Tensor,
    weights: torch.Tensor | None = None,
    mask: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-observation losses and their derivatives d loss_i / d f_i, by loss name.

    The elementwise forms of ``BCE``, ``MSE`` and ``MNL`` (module docstring).

    Args:
        loss: "bce", "weighted-bce", "mse" or "mnl".
        f: Outputs: logits (n,), or utilities (n, S) for "mnl".
        y: Targets (n,) as in the loss functions above.
        weights: Weights (n,) for "weighted-bce", else None.
        mask: Offered slots (n, S) for "mnl", else None.

    Returns:
        losses (n,) and derivatives shaped like f.

    Example:
        >>> _, g = loss_and_derivative("bce", torch.zeros(2), torch.tensor([0.0, 1.0]))
        >>> g
        tensor([ 0.5000, -0.5000])
    """
    if loss == "mnl":
        assert mask is not None
        return MNL().value_and_derivative(f, y, mask)
    rows = _BY_NAME[loss]
    assert isinstance(rows, (BCE, Gaussian))
    return rows.value_and_derivative(f, y, None if loss == "mse" else weights)
