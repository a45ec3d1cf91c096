"""The one trainer of banditkit: full-batch gradient descent or Adam on a regularised loss.

Objective, minimised in place from the model's current parameters (warm start):

    J(theta) = sum_i loss_i(theta) + (lam / 2) * ||theta - c||^2        (reduction="sum")
    J(theta) / n                                                         (reduction="mean")

with c = 0 (center="zero", practical mode of [Bae2025, Sec. 7]) or c = theta_0
(center="init", [Zhou2020, Alg. 1]), n the number of observations and loss_i one of
``banditkit.nn.losses`` ("bce", "weighted-bce", "mse", "mnl"). "mean" has the same
minimiser as "sum" and keeps the GD step stable as n grows.

This is a thin wrapper over the functional trainer ``nn.fit.fit``: the model's
parameters, as a stack of one member (``nn.network.stack_params``, views that ``fit``
updates in place), the data as ``Rows`` (or ``Sets`` for "mnl"), the loss as an
``nn.losses`` object and the penalty as ``L2Penalty(lam, center)``. Gradients come from
the trainer's explicit backward pass (the closed form for depth 2); the tests check them
against autograd of the same objective.

Symbols: lam = λ, lr = η, steps = J (number of gradient steps).

References:
    [Zhou2020] D. Zhou, L. Li, Q. Gu. Neural contextual bandits with UCB-based
        exploration. ICML 2020.
    [Bae2025] S. Bae, D. Lee. Neural logistic bandits. arXiv:2505.02069.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import torch

from banditkit.core.validation import check_choice, check_int, check_scalar
from banditkit.nn.fit import fit
from banditkit.nn.grads import as_model_tensor
from banditkit.nn.losses import BCE, MNL, MSE, Loss
from banditkit.nn.mlp import MLP
from banditkit.nn.network import stack_params
from banditkit.nn.observations import Rows, Sets, per_member
from banditkit.nn.penalties import L2Penalty

__all__ = ["Trainer", "train"]

LOSSES = ("bce", "weighted-bce", "mse", "mnl")
OPTIMIZERS = ("gd", "adam")
CENTERS = ("zero", "init")
REDUCTIONS = ("sum", "mean")

ArrayLike = Any  # torch.Tensor, numpy array or nested sequence


def _observations(
    model: MLP,
    X: ArrayLike,
    y: ArrayLike,
    loss: str,
    weights: ArrayLike | None,
    mask: ArrayLike | None,
) -> tuple[Rows | Sets, Loss]:
    """Validate the data of one model and return them as observations with their loss.

    "mnl" data (n, S, d) become ``Sets`` over the table X.reshape(n * S, d).
    """
    if weights is not None and loss != "weighted-bce":
        raise ValueError(
            f"weights is only used by loss='weighted-bce'; got loss={loss!r}."
        )
    if mask is not None and loss != "mnl":
        raise ValueError(f"mask is only used by loss='mnl'; got loss={loss!r}.")
    Xt = as_model_tensor(model, X, "X", 3 if loss == "mnl" else 2)
    dtype, device, n = Xt.dtype, Xt.device, Xt.shape[0]
    if loss == "mnl":
        S = Xt.shape[1]
        if mask is None:
            mask_t = torch.ones(n, S, dtype=torch.bool, device=device)
        else:
            mask_t = torch.as_tensor(mask, device=device)
            if mask_t.dtype != torch.bool or mask_t.shape != (n, S):
                raise ValueError(
                    f"mask must be a bool array of shape ({n}, {S}); "
                    f"got {mask_t.dtype} {tuple(mask_t.shape)}."
                )
        yf = _as_vector(y, "y", n, torch.float64, device)
        if not bool(((yf == yf.round()) & (yf >= -1) & (yf < S)).all()):
            raise ValueError(f"y must hold integers in [-1, {S}) for loss='mnl'.")
        slots = torch.arange(n * S, device=device).reshape(n, S)
        items = torch.where(mask_t, slots, torch.full_like(slots, -1))
        try:
            sets = Sets(Xt.reshape(n * S, -1), items, yf.to(torch.int64), dtype=dtype)
        except ValueError as err:
            raise ValueError(
                "y must point at an offered slot (mask True) or be -1."
            ) from err
        return sets, MNL()
    yt = _as_vector(y, "y", n, dtype, device)
    if loss in ("bce", "weighted-bce") and not bool(((yt >= 0) & (yt <= 1)).all()):
        raise ValueError(f"y must lie in [0, 1] for loss={loss!r}.")
    if loss == "weighted-bce" and weights is None:
        raise ValueError("loss='weighted-bce' needs weights (n,); got None.")
    if weights is not None:
        weights = _as_vector(weights, "weights", n, dtype, device)
    rows = Rows(Xt, yt, weights, dtype=dtype, device=device)
    return rows, MSE() if loss == "mse" else BCE()


def _as_vector(
    value: ArrayLike, name: str, n: int, dtype: torch.dtype, device: torch.device
) -> torch.Tensor:
    v = per_member(value, name, n, dtype, device)
    if v.ndim != 1:
        raise ValueError(f"{name} must have shape ({n},); got {tuple(v.shape)}.")
    return v


def train(
    model: MLP,
    X: ArrayLike,
    y: ArrayLike,
    *,
    loss: str = "bce",
    weights: ArrayLike | None = None,
    mask: ArrayLike | None = None,
    lam: float = 1.0,
    center: str = "zero",
    optimizer: str = "gd",
    lr: float = 0.01,
    steps: int = 100,
    reduction: str = "sum",
    record: str = "all",
) -> list[float]:
    """Minimise J(theta) (module docstring) in place, warm-started from the model.

    Args:
        model: The network; trained in place. Data follow its dtype and device.
        X: Features (n, d), or (n, S, d) item features padded to S slots for "mnl".
        y: Targets (n,): labels in [0, 1] for "bce" and "weighted-bce", reals for "mse",
            the chosen slot in [0, S) or -1 (outside option, no purchase) for "mnl".
        loss: "bce" (f is the logit), "weighted-bce", "mse" or "mnl".
        weights: Per-observation weights (n,), >= 0; required by "weighted-bce" and
            rejected otherwise. A zero weight removes the observation from the loss.
        mask: Offered slots (n, S), bool, for "mnl" only; None offers every slot.
        lam: Weight of the L2 term, >= 0; 0 trains the plain loss.
        center: "zero" penalises ||theta||^2, "init" penalises ||theta - theta_0||^2
            with theta_0 = ``model.theta0``.
        optimizer: "gd" (full-batch gradient descent, theta -= lr * grad J) or "adam"
            (torch.optim.Adam with default betas; its state starts fresh at each call).
        lr: Step size, > 0.
        steps: Number of full-batch steps, >= 1.
        reduction: "sum" (the papers' objective) or "mean" (J / n, same minimiser).
        record: "all" (J at every step) or "ends" (J at the first and the last step
            only, which saves the objective's value on the other steps; see
            ``nn.fit``). The parameters are the same either way.

    Returns:
        J at the parameters each step started from (length ``steps``, or the first and
        the last with record="ends"); ``history[0]`` is the objective at the warm
        start. A diverging run shows up as inf or nan here.

    Raises:
        ValueError: On bad shapes, NaN or inf in the data, labels out of range, lr <= 0,
            steps < 1, lam < 0, or an unknown loss, optimizer, center or reduction.

    Notes:
        Deviation: [Bae2025, Sec. 7] writes lam * ||theta||^2 without the 1/2; pass twice
        that lam to reproduce it. Assumption: "mean" divides the penalty by n as well,
        so that it keeps the minimiser of "sum".

    Example:
        >>> model = MLP(2, width=4, generator=torch.Generator().manual_seed(0))
        >>> X = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
        >>> history = train(model, X, [1.0, 0.0], lam=0.1, steps=20)
        >>> history[-1] < history[0]
        True
    """
    loss = check_choice("loss", loss, LOSSES)
    lam = check_scalar("lam", lam, low=0.0)
    center = check_choice("center", center, CENTERS)
    optimizer = check_choice("optimizer", optimizer, OPTIMIZERS)
    lr = check_scalar("lr", lr, low=0.0, low_open=True)
    steps = check_int("steps", steps, low=1)
    reduction = check_choice("reduction", reduction, REDUCTIONS)
    obs, loss_fn = _observations(model, X, y, loss, weights, mask)
    center_params = model.initial_params() if center == "init" else None
    penalties = [L2Penalty(lam, center_params)] if lam > 0.0 else []
    result = fit(
        model.network,
        stack_params(model),  # views: trained in place
        obs,
        loss_fn,
        penalties=penalties,
        optimizer=optimizer,
        lr=lr,
        steps=steps,
        reduction=reduction,
        inplace=True,
        record=record,
    )
    return [float(v) for v in result.history[:, 0].tolist()]


@dataclass(frozen=True)
class Trainer:
    """Hyper-parameters of ``train``, validated once; ``fit`` runs it on a model.

    Args:
        loss: See ``train``.
        lam: See ``train``.
        center: See ``train``.
        optimizer: See ``train``.
        lr: See ``train``.
        steps: See ``train``.
        reduction: See ``train``.

    Example:
        >>> trainer = Trainer(lr=0.01, steps=100)  # [Bae2025, Sec. 7]
        >>> trainer.steps
        100
    """

    loss: str = "bce"
    lam: float = 1.0
    center: str = "zero"
    optimizer: str = "gd"
    lr: float = 0.01
    steps: int = 100
    reduction: str = "sum"

    def __post_init__(self) -> None:
        check_choice("loss", self.loss, LOSSES)
        check_scalar("lam", self.lam, low=0.0)
        check_choice("center", self.center, CENTERS)
        check_choice("optimizer", self.optimizer, OPTIMIZERS)
        check_scalar("lr", self.lr, low=0.0, low_open=True)
        check_int("steps", self.steps, low=1)
        check_choice("reduction", self.reduction, REDUCTIONS)

    def fit(
        self,
        model: MLP,
        X: ArrayLike,
        y: ArrayLike,
        *,
        weights: ArrayLike | None = None,
        mask: ArrayLike | None = None,
        record: str = "all",
    ) -> list[float]:
        """Run ``train`` with these hyper-parameters; see ``train`` for the arguments.

        Returns:
            The objective per step, as ``train``.
        """
        hyper = {f.name: getattr(self, f.name) for f in fields(self)}
        return train(model, X, y, weights=weights, mask=mask, record=record, **hyper)
