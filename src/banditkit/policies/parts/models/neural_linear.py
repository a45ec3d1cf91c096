"""The neural-linear model: a representation phi(x) whose last hidden layer feeds a linear head.

    f(x; W, theta) = theta^T phi(x; W) + b      phi the last hidden layer of nn.NeuralLinear

trained by the functional trainer ``nn.fit`` on whatever a history holds:

    History       Rows   (x_i, y_i, w_i)       "mse" (Gaussian) or "bce" (logistic head)
    PairHistory   Pairs  (x_i1, x_i2, o_i, w_i) "btl": BradleyTerry on f(x_i1) - f(x_i2)
                                              (``link="probit"``, or any glm link:
                                              PairwiseGLM, e.g. Thurstone-Mosteller)
    SetHistory    Sets   (S_i, c_i, w_i)        "mnl": multinomial logit, outside option 0

with the weights w of the history (e.g. the 1 / zeta_i^2 of a variance-aware estimator)
and an ``L2Penalty`` (lam / 2) ||params - c||^2 towards the initial parameters or zero.
The uncertainty features are phi(x) itself, so a policy keeps its own D x D Gram of the
played phi (or of the differences phi(x_i1) - phi(x_i2) of duels), the neural-linear
exploration of [Riquelme2018] and of NVLDB's shallow exploration [Oh2025, Eq. (6)].

References:
    [Riquelme2018] C. Riquelme, G. Tucker, J. Snoek. Deep Bayesian bandits showdown.
        ICLR 2018.
    [Oh2025] Y. Oh, J. Park, T. Paik. Neural variance-aware dueling bandits with deep
        representation and shallow exploration. arXiv:2506.01250 (NVLDB; the weighted
        BTL loss, Eqs. (4)-(5); the Gram of feature differences, Eq. (6)).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from banditkit.core.lazy import torch  # imported at first use
from banditkit.core.validation import (
    check_bool,
    check_choice,
    check_int,
    check_scalar,
)
from banditkit.glm.links import Link, LogisticLink, get_link
from banditkit.policies.parts.history import History, PairHistory, SetHistory
from banditkit.policies.parts.models.device_history import (
    DeviceObservations,
    observations_of,
)
from banditkit.policies.parts.models.rescue import (
    finite_fit,
    rescue,
    saved_lr,
    settled,
)
from banditkit.policies.parts.models.stacking import FitRecipe

if TYPE_CHECKING:
    from banditkit import nn
    from banditkit.nn import L2Penalty, Params
else:
    from banditkit.core.lazy import lazy_import

    nn = lazy_import("banditkit.nn")

__all__ = ["NeuralLinearModel", "observations_of"]

#: The ``banditkit.nn`` loss of each name (its class name) and the history it reads.
LOSSES: dict[str, tuple[str, type]] = {
    "mse": ("MSE", History),
    "bce": ("BCE", History),
    "btl": ("BradleyTerry", PairHistory),
    "mnl": ("MNL", SetHistory),
}
CENTERS = ("init", "zero")
PENALISED = ("all", "head")
OPTIMIZERS = ("gd", "adam")
REDUCTIONS = ("sum", "mean")


def _host(t: torch.Tensor) -> np.ndarray:
    """A float64 host array of ``t``: a free view when it is a float64 CPU tensor."""
    return t.detach().to(device="cpu", dtype=torch.float64).numpy()


class NeuralLinearModel:
    """A representation phi(x) with a linear head, trained on a history by ``nn.fit``.

    The network is ``nn.NeuralLinear(d, width=width, depth=depth)`` (He initialisation,
    biases, ReLU; no sqrt(width) factor), one member. ``fit`` runs ``nn.fit`` on
    ``observations_of(history)`` with the loss named by ``loss``, warm-started from the
    current parameters, and the penalty ``L2Penalty(lam, c, names)``:

        J(params) = sum_i w_i loss_i + (lam / 2) ||params[names] - c[names]||^2   ("sum")
        J / n                                                                      ("mean")

    The centre c is the initial draw params_0 (``center="init"``, stored in the state)
    or zero (``center="zero"``); ``penalised="head"`` puts the penalty on the head only
    (NVLDB's (lam / 2) ||theta - theta_0||^2 [Oh2025, Eq. (4)]), ``"all"`` on every layer.

    The features of the uncertainty are phi(x), the last hidden layer (K, width): a
    policy's Gram is width x width, whatever the number of network parameters. Hence
    ``n_params`` is the feature dimension ``width`` (the protocol's p: the dimension of
    the features a ``Scorer``'s design must have), not the number of weights. With
    ReLU units phi(x) can be 0 (every unit off): such an arm has width 0 under any Gram.

    Args:
        d: Input dimension, >= 1.
        width: Hidden units per layer, the feature dimension D = p, >= 1.
        depth: Linear layers including the head, >= 2 (depth 2: phi is one hidden layer).
        loss: "mse" or "bce" (rows), "btl" (pairs), "mnl" (sets).
        link: The link of the pair loss "btl": "logistic" (default, Bradley-Terry-Luce,
            ``nn.BradleyTerry``), "probit" (Thurstone-Mosteller) or a ``glm.Link``
            (``nn.PairwiseGLM``); other losses take only "logistic".
        lam: Penalty weight, >= 0.
        center: "init" (towards params_0) or "zero".
        penalised: "all" or "head".
        lr: Step size, > 0.
        steps: Steps per ``fit``, >= 1.
        optimizer: "adam" (fresh state at each fit) or "gd".
        reduction: "mean" (J / n, a step size independent of n) or "sum".
        distinct_duels: Fit a ``PairHistory`` on its duels of two different arms only
            (``device_history.distinct_duels``): a duel of an arm with itself has the
            margin f(x) - f(x) = 0 whatever the parameters, so its loss term is a
            constant and its gradient 0; the iterates are the same up to rounding, J
            lower by that constant, and a step costs O(distinct duels) instead of O(n).
            Needs the reduction "sum". False (the default) fits every duel.
        generator: Torch stream of the initial draw (the same draws on any device).
        dtype: "float64" (default) or "float32": the network, its training and its
            passes; what the methods return is float64 on the host either way.
        device: "cpu" (default), "cuda", "cuda:N" or "auto" (``nn.resolve_device``):
            the network, its training and its history (``DeviceObservations``).

    Raises:
        ValueError: On an out-of-range or unknown argument.

    Example:
        >>> model = NeuralLinearModel(3, width=4, generator=torch.Generator().manual_seed(0))
        >>> mean, phi = model.evaluate(np.eye(3))
        >>> mean.shape, phi.shape, model.n_params
        ((3,), (3, 4), 4)
    """

    #: ``predict`` is the network's own output.
    linearised = False
    members = 1

    def __init__(
        self,
        d: int,
        *,
        width: int = 32,
        depth: int = 2,
        loss: str = "mse",
        lam: float = 1.0,
        center: str = "init",
        penalised: str = "all",
        lr: float = 0.01,
        steps: int = 100,
        optimizer: str = "adam",
        reduction: str = "mean",
        distinct_duels: bool = False,
        generator: torch.Generator,
        link: str | Link = "logistic",
        dtype: str = "float64",
        device: str = "cpu",
    ) -> None:
        self.dtype = nn.resolve_dtype(dtype)
        self.device = nn.resolve_device(device)
        self.net = nn.NeuralLinear(
            check_int("d", d, low=1),
            width=width,
            depth=check_int("depth", depth, low=2),
        )
        self.loss = check_choice("loss", loss, tuple(LOSSES))
        self.link = get_link(link)
        if self.loss != "btl" and not isinstance(self.link, LogisticLink):
            raise ValueError(
                f"link applies to the pair loss 'btl' only; got link="
                f"{self.link.name!r} with loss={self.loss!r}."
            )
        self.lam = check_scalar("lam", lam, low=0.0)
        self.center = check_choice("center", center, CENTERS)
        self.penalised = check_choice("penalised", penalised, PENALISED)
        self.lr = check_scalar("lr", lr, low=0.0, low_open=True)
        self._lr0 = self.lr  # a rescued fit lowers lr, which is then saved
        self.steps = check_int("steps", steps, low=1)
        self.optimizer = check_choice("optimizer", optimizer, OPTIMIZERS)
        self.reduction = check_choice("reduction", reduction, REDUCTIONS)
        self.distinct_duels = check_bool("distinct_duels", distinct_duels)
        if self.distinct_duels and self.reduction == "mean":
            raise ValueError(
                "distinct_duels needs reduction='sum' (the mean over the distinct duels "
                "is another objective); got reduction='mean'."
            )
        self.params: Params = self.net.init(
            1, generator, dtype=self.dtype, device=self.device
        )
        self.params0: Params = {k: v.clone() for k, v in self.params.items()}
        self._observations = DeviceObservations(self.dtype, self.device)

    @property
    def n_params(self) -> int:
        """Dimension p of the features phi(x): the width (not the number of weights)."""
        return self.net.width

    def penalties(self) -> list[L2Penalty]:
        """The penalty of ``fit``: none when lam = 0, else one ``L2Penalty``."""
        if self.lam == 0.0:
            return []
        names = self.net.head_names if self.penalised == "head" else None
        center = self.params0 if self.center == "init" else None
        return [nn.L2Penalty(self.lam, center, names)]

    def _evaluate(self, X: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """phi(x_k) (K, width) and f(x_k) (K,) of one member, as ``net.forward``."""
        Xt = torch.as_tensor(np.array(X, dtype=np.float64), device=self.device)
        if Xt.dtype != self.dtype:
            Xt = Xt.to(self.dtype)
        last = self.net.depth - 1
        phi = self.net.features(self.params, Xt)[0]
        head = self.params[f"layers.{last}.weight"][0, 0]
        f = phi.mv(head) + self.params[f"layers.{last}.bias"][0]
        return phi, f

    def predict(self, X: np.ndarray) -> np.ndarray:
        """f(x_k) (K,) for the rows of X."""
        return _host(self._evaluate(X)[1])

    def features(self, X: np.ndarray) -> np.ndarray:
        """phi(x_k) (K, width), the last hidden layer, for the rows of X."""
        return _host(self._evaluate(X)[0])

    def evaluate(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return f(x_k) (K,) and phi(x_k) (K, width) in one pass."""
        phi, f = self._evaluate(X)
        return _host(f), _host(phi)

    @staticmethod
    def evaluate_members(
        models: Sequence[NeuralLinearModel], X: torch.Tensor
    ) -> tuple[np.ndarray, np.ndarray]:
        """Return f (S, N) and phi (S, N, width) of S models of one network, own rows each.

        One stacked pass over X (S, N, d) (the models' dtype and device) with the
        batched kernels of a stack, so each member's values equal its :meth:`evaluate`
        up to rounding, not bit for bit: a seed stack uses it where its fits are batched
        too (float32). Returned as float64 host arrays.
        """
        first = models[0]
        params = {k: torch.cat([m.params[k] for m in models]) for k in first.params}
        last = first.net.depth - 1
        phi = first.net.features(params, X)
        head = params[f"layers.{last}.weight"][:, 0]  # (S, width)
        f = torch.linalg.vecdot(phi, head.unsqueeze(1)) + params[f"layers.{last}.bias"]
        return _host(f), _host(phi)

    def evaluate_tensors(self, X: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """f(x_k) (K,) and phi(x_k) (K, width) as tensors on the model's device."""
        phi, f = self._evaluate(X)
        return f.detach(), phi.detach()

    def observed_features(self, history: PairHistory) -> torch.Tensor:
        """The features phi of the duels' rows [X1; X2] (2n, width), from the device mirror."""
        table = self._observations(history, weighted=False).X
        return self.net.features(self.params, table)[0].detach()

    def evaluate_sq_norms(
        self, X: np.ndarray, inv_diag: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Return f(x_k) and sum_j phi_kj^2 inv_diag_j (the (K, width) block is small)."""
        f, phi = self.evaluate(X)
        return f, (phi * phi) @ inv_diag

    def latent(self, x: np.ndarray) -> float:
        """f(x) for one arm x (d,)."""
        return float(self.predict(np.asarray(x)[None, :])[0])

    def fit(self, history: History | PairHistory | SetHistory) -> list[float]:
        """Run ``nn.fit`` on every observation of ``history``, warm-started.

        Returns:
            J at the start of the first and of the last step (``FitResult.history`` of
            the one member, ``record="ends"``); [] for an empty history, which leaves
            the parameters as they are.

        Raises:
            TypeError: If the history is not the kind ``loss`` reads.
            FloatingPointError: If training diverged (non-finite J or parameters) at
                every step size down to lr / 10^20 (``parts.models.rescue``); the
                parameters are then left as they were.
        """
        loss_name, kind = LOSSES[self.loss]
        if not isinstance(history, kind):
            raise TypeError(
                f"loss={self.loss!r} reads a {kind.__name__}; "
                f"got {type(history).__name__}."
            )
        if history.n == 0:
            return []
        observations = self._observations(history, distinct=self.distinct_duels)

        def fit(lr: float) -> nn.FitResult:
            return nn.fit(
                self.net,
                self.params,
                observations,
                self._loss_object(loss_name),
                penalties=self.penalties(),
                optimizer=self.optimizer,
                lr=lr,
                steps=self.steps,
                reduction=self.reduction,
                record="ends",  # the divergence check reads the first and last J
            )

        # a fit that diverged is retried at lr / 10 (parts.models.rescue), and the
        # parameters change only when one ends finite
        result, self.lr = rescue(
            fit(self.lr),
            self.lr,
            fit,
            finite_fit,
            lambda result, lr: (
                f"on {history.n} observations J went from {result.history[0, 0]:.4g} "
                f"to {result.history[-1, 0]:.4g} in {self.steps} steps; rescale the "
                "features, or use a smaller lr"
            ),
        )
        self.params = result.params
        return [float(v) for v in result.history[:, 0].tolist()]

    def fit_recipe(self, history: History | PairHistory | SetHistory) -> FitRecipe:
        """:meth:`fit`'s first attempt on ``history``, as a stack member reads it.

        ``parts.models.stacking.fit_stack`` trains the members of a seed stack as one.

        Raises:
            TypeError: If the history is not the kind ``loss`` reads.
        """
        loss_name, kind = LOSSES[self.loss]
        if not isinstance(history, kind):
            raise TypeError(
                f"loss={self.loss!r} reads a {kind.__name__}; "
                f"got {type(history).__name__}."
            )
        return FitRecipe(
            net=self.net,
            params=self.params,  # a kept result is copied in
            center=self.params0 if self.center == "init" else None,
            loss=self._loss_object(loss_name),
            lam=self.lam,
            names=tuple(self.net.head_names) if self.penalised == "head" else None,
            optimizer=self.optimizer,
            lr=self.lr,
            steps=self.steps,
            reduction=self.reduction,
            weighted=True,
        )

    def keeps(self, first: float, last: float, params: Params) -> bool:
        """Whether :meth:`fit` keeps a first attempt from J = ``first`` to ``last``.

        Kept when it settled with ``params`` (its result, a stack of one) finite
        (``rescue.finite_fit``).
        """
        return settled(first, last) and all(
            bool(torch.isfinite(p).all()) for p in params.values()
        )

    def _loss_object(self, loss_name: str) -> nn.Loss:
        """The ``nn`` loss of ``loss``; a pair loss through ``link`` unless logistic."""
        if self.loss == "btl" and not isinstance(self.link, LogisticLink):
            return nn.PairwiseGLM(self.link)
        loss: nn.Loss = getattr(nn, loss_name)()
        return loss

    def state_dict(self) -> dict[str, Any]:
        """Arrays only: the parameters and the initial draw, by parameter name."""
        state = {f"params.{k}": _host(v).copy() for k, v in self.params.items()}
        state.update({f"params0.{k}": _host(v).copy() for k, v in self.params0.items()})
        if self.lr != self._lr0:  # a rescued fit lowered it (parts.models.rescue)
            state["lr"] = np.asarray(self.lr)
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from :meth:`state_dict` (bit-identical)."""
        dtype, device = self.dtype, self.device
        params = {
            k: torch.tensor(
                np.asarray(state[f"params.{k}"]), dtype=dtype, device=device
            )
            for k in self.params
        }
        params0 = {
            k: torch.tensor(
                np.asarray(state[f"params0.{k}"]), dtype=dtype, device=device
            )
            for k in self.params
        }
        self.net.check_params(params, "state params")
        self.net.check_params(params0, "state params0")
        lr = saved_lr(state, self._lr0)
        self.params, self.params0, self.lr = params, params0, lr
