"""Per-observation losses of the trainer, each a function of the network outputs.

    "bce", "weighted-bce"   loss_i = w_i * (log(1 + exp(f_i)) - y_i f_i)   (w_i = 1 for bce)
                            [Bae2025, Sec. 7]; f_i is the logit, evaluated stably.
    "mse"                   loss_i = (f_i - y_i)^2 / 2                      [Zhou2020, Alg. 1]
    "mnl"                   loss_i = -u_{i,y_i} + log(1 + sum_{j offered} exp(u_{i,j}))
                            the multinomial-logit negative log-likelihood with an outside
                            option of utility 0; the first term is absent when y_i = -1
                            (no purchase).

References:
    [Zhou2020] D. Zhou, L. Li, Q. Gu. Neural contextual bandits with UCB-based
        exploration. ICML 2020.
    [Bae2025] S. Bae, D. Lee. Neural logistic bandits. arXiv:2505.02069.
"""

from __future__ import annotations

import torch

__all__ = ["bce_loss", "loss_and_derivative", "mnl_nll", "mse_loss"]


def bce_loss(
    f: torch.Tensor, y: torch.Tensor, weights: torch.Tensor | None = None
) -> torch.Tensor:
    """Binary cross-entropy with logits f, per observation, optionally weighted.

    loss_i = w_i * (log(1 + exp(f_i)) - y_i * f_i)

    Args:
        f: Logits (n,).
        y: Targets (n,) in [0, 1].
        weights: Non-negative weights (n,), or None for all ones.

    Returns:
        Losses (n,).

    Example:
        >>> bce_loss(torch.zeros(2), torch.tensor([0.0, 1.0]))
        tensor([0.6931, 0.6931])
    """
    loss = torch.nn.functional.binary_cross_entropy_with_logits(f, y, reduction="none")
    return loss if weights is None else weights * loss


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
        u: Utilities (n, S); entries where ``mask`` is False are ignored.
        y: Chosen slot (n,) in [0, S), int64, or -1 for the outside option; a chosen
            slot must be offered (not checked here).
        mask: Offered items (n, S), bool.

    Returns:
        nll (n,).

    Example:
        >>> u = torch.tensor([[0.0, 0.0]])
        >>> mnl_nll(u, torch.tensor([-1]), torch.tensor([[True, True]]))  # log 3
        tensor([1.0986])
    """
    masked = torch.where(mask, u, torch.full_like(u, -torch.inf))
    outside = torch.zeros_like(u[:, :1])
    lse = torch.logsumexp(torch.cat([outside, masked], dim=1), dim=1)
    chosen = torch.gather(u, 1, y.clamp(min=0)[:, None])[:, 0]
    return lse - torch.where(y >= 0, chosen, torch.zeros_like(chosen))


def loss_and_derivative(
    loss: str,
    f: torch.Tensor,
    y: torch.Tensor,
    weights: torch.Tensor | None = None,
    mask: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-observation losses and their derivatives d loss_i / d f_i, in closed form.

    The derivatives, with sigma the sigmoid and p_ij the MNL choice probability of
    offered slot j (exp(u_ij) / (1 + sum_offered exp(u_il))):

        "bce", "weighted-bce"   w_i (sigma(f_i) - y_i)
        "mse"                   f_i - y_i
        "mnl"                   p_ij - 1[j = y_i]   (0 on slots not offered)

    Together with ``nn.forward_vjp`` they give the trainer's gradient without autograd.

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
        values = mnl_nll(f, y, mask)
        masked = torch.where(mask, f, torch.full_like(f, -torch.inf))
        outside = torch.zeros_like(f[:, :1])
        probs = torch.softmax(torch.cat([outside, masked], dim=1), dim=1)[:, 1:]
        chosen = torch.nn.functional.one_hot(y.clamp(min=0), f.shape[1]).to(f.dtype)
        return values, probs - chosen * (y >= 0).to(f.dtype)[:, None]
    if loss == "mse":
        return mse_loss(f, y), f - y
    values = bce_loss(f, y, weights)
    deriv = torch.sigmoid(f) - y
    return values, deriv if weights is None else weights * deriv
