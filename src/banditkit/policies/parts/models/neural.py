"""Neural models: an MLP f(x; theta) trained by the library trainer on a history.

    NeuralModel   f(x; theta) by an nn.MLP and its nn.Trainer; ``evaluate`` returns f
                  and the gradient features g for all K arms in one
                  ``nn.forward_and_grads`` call.
    TangentModel  theory mode: mean from the trained f(x; theta) (or its linearisation
                  g(x; theta_0)^T (theta - theta_0)) and the fixed features
                  g(x; theta_0); TrainNN restarted from theta_0.

Both answer the ``Model`` protocol of ``policies.models``, as the linear models do.

References:
    [Bae2025] S. Bae, D. Lee. Neural logistic bandits. arXiv:2505.02069.
    [Zhou2020] D. Zhou, L. Li, Q. Gu. Neural contextual bandits with UCB-based
        exploration. ICML 2020.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from banditkit.core.lazy import torch  # imported at first use
from banditkit.core.validation import check_bool, check_state_array
from banditkit.glm.links import LogisticLink, get_link
from banditkit.policies.parts.history import History, PairHistory, SetHistory
from banditkit.policies.parts.models.compute import DEVICES, DTYPES
from banditkit.policies.parts.models.device_history import (
    DeviceObservations,
    GroupedRows,
)
from banditkit.policies.parts.models.rescue import (
    improved,
    rescue,
    rounding_rtol,
    saved_lr,
    settled,
)
from banditkit.policies.parts.models.stacking import FitRecipe

if TYPE_CHECKING:
    from banditkit import nn
    from banditkit.nn import Trainer
else:
    from banditkit.core.lazy import lazy_import

    nn = lazy_import("banditkit.nn")

__all__ = ["DEVICES", "DTYPES", "NeuralModel", "TangentModel"]


def _float64(t: torch.Tensor) -> np.ndarray:
    """A float64 host array of ``t``: a free view when it is a float64 CPU tensor."""
    return t.to(device="cpu", dtype=torch.float64).numpy()


class NeuralModel:
    """An MLP f(x; theta) with its trainer, refitted on a history on demand.

    ``evaluate``, ``evaluate_sq_norms``, ``predict`` and ``latent`` run the network's
    per-round passes (``nn.ArmPass``, which chooses the kernel) once for all K arms and
    return float64 numpy arrays (views when the network is float64); the played arm's
    features come from the scoring pass (``scored_features``). ``fit`` runs the library trainer
    ``nn.Trainer`` on every observation of the history, warm-started from the current
    theta ([Bae2025, Sec. 7]): rows (x, y) for "bce" / "mse", offered sets (padded,
    with their mask) and choices for "mnl"; weights for "weighted-bce".

    Args:
        d: Input dimension.
        width: Hidden units m (even).
        depth: Layers L >= 2.
        trainer: The trainer's settings (loss, lam, center, lr, steps, reduction).
        generator: Torch stream of the initialisation theta_0.
        init: Initialisation of the MLP (``nn.MLP``): "mirrored" (default; the NTK
            initialisation of [Zhou2020] and [Bae2025], f(x; theta_0) = 0) or "standard"
            (hidden weights N(0, 2/fan_in), output weights N(0, 1/width)).
        backtrack: Retries of a refit that ends above the objective it started from
            (or overflows): each restarts from the parameters before the refit with the
            trainer's lr divided by 10, which is kept for later refits (0: none, the
            fit is taken as it ends).
        grouped: Fit a row ``History`` with loss "mse" on its distinct rows x_u, with
            counts c_u and mean targets ybar_u: (1/2) sum_u c_u (f(x_u) - ybar_u)^2 has the
            gradient of (1/2) sum_l (f(x_l) - y_l)^2, so the iterates are the same up to
            rounding ("mean" steps still divide by the number of observations) and a GD
            step costs O(distinct rows) instead of O(t) on a fixed arm set. False (the
            default) fits every row.

        distinct_duels: Fit a ``PairHistory`` on its duels of two different arms only
            (``device_history.distinct_duels``): a duel of an arm with itself has the
            margin f(x) - f(x) = 0 whatever theta, so its loss term is a constant and its
            gradient 0; the iterates are the same up to rounding, the objective lower by
            that constant, and a step costs O(distinct duels) instead of O(t). Needs the
            reduction "sum". False (the default) fits every duel.
        pair_link: The link of the duel loss on a ``PairHistory``: "logistic" (default,
            Bradley-Terry-Luce, ``nn.BradleyTerry``), "probit" (Thurstone-Mosteller) or
            a ``glm.Link`` (``nn.PairwiseGLM``).
        dtype: "float64" (default) or "float32": the dtype of the network, its
            training and its forward/gradient passes. What ``evaluate`` and the other
            methods return is float64 either way, so the Grams built on g (and their
            log-determinants) stay float64.
        device: "cpu" (default), "cuda", "cuda:N" or "auto" (``nn.resolve_device``;
            a device that is not there is a ``ValueError`` naming it): the network,
            its training and its history's mirror (``DeviceObservations``) live there.

    Notes:
        Assumption: float64 by default. The per-round cost is dominated by the
        (K, p) gradient block, which float32 would halve, but the Grams keep float64
        (their log-determinants and rank-1 updates need it), so a float32 block is
        copied to float64 on every round; float64 keeps ``.numpy()`` a free view.
        float32 pays off in training (full-batch GD on all rows, ``steps`` times per
        refit); docs/performance.md has the measurements.
    """

    #: The latent returned by ``evaluate`` is f(x; theta) itself.
    linearised = False
    members = 1

    #: What an update changes inside (``core.transaction``): the network's parameters
    #: (trained in place), the device mirror of the history and the per-round passes'
    #: caches; the trainer is replaced, not changed.
    _undo_parts: ClassVar[tuple[str, ...]] = (
        "mlp",
        "_observations",
        "_groups",
        "_arms",
    )

    def __init__(
        self,
        d: int,
        *,
        width: int,
        depth: int,
        trainer: Trainer,
        generator: torch.Generator,
        backtrack: int = 0,
        dtype: str = "float64",
        grouped: bool = False,
        distinct_duels: bool = False,
        pair_link: Any = "logistic",
        init: str = "mirrored",
        device: str = "cpu",
    ) -> None:
        #: The dtype of the network and its training ("float64" or "float32").
        self._torch_dtype = nn.resolve_dtype(dtype)
        self.dtype = "float64" if self._torch_dtype == torch.float64 else "float32"
        self._np_dtype = np.dtype(self.dtype)
        #: The device of the network, its training and its history (``torch.device``).
        self.device = nn.resolve_device(device)
        self.mlp = nn.MLP(
            d,
            width=width,
            depth=depth,
            init=init,
            generator=generator,
            dtype=self._torch_dtype,
            device=self.device,
        )
        #: The history's observations on the device (``DeviceObservations``).
        self._observations = DeviceObservations(self._torch_dtype, self.device)
        #: The distinct rows of the history with their counts (``grouped``).
        self._groups = GroupedRows()
        self.trainer = trainer
        #: The step size the model was built with (a backtracked or rescued fit lowers
        #: the trainer's, which is then saved with the state).
        self._lr0 = trainer.lr
        self.pair_link = get_link(pair_link)
        self.grouped = check_bool("grouped", grouped)
        self.distinct_duels = check_bool("distinct_duels", distinct_duels)
        if self.distinct_duels and trainer.reduction == "mean":
            raise ValueError(
                "distinct_duels needs the reduction 'sum' (the mean over the distinct "
                "duels is another objective); got reduction='mean'."
            )
        if isinstance(backtrack, bool) or int(backtrack) != backtrack or backtrack < 0:
            raise ValueError(f"backtrack must be an int >= 0; got {backtrack!r}.")
        #: Retries of a diverging fit, each from the parameters before it at lr / 10.
        self.backtrack = int(backtrack)
        #: The per-round passes of the network (f, g, widths; ``nn.ArmPass``).
        self._arms = nn.ArmPass(self.mlp)

    @property
    def n_params(self) -> int:
        """Number p of network parameters (the dimension of g)."""
        return self.mlp.n_params

    def _rows(self, X: np.ndarray) -> np.ndarray:
        """The arms X (K, d) as an array of the network's dtype (a copy only to cast)."""
        return np.asarray(X, dtype=self._np_dtype)

    def evaluate(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return f(x_k; theta) (K,) and g(x_k; theta) (K, p) for the rows of X."""
        f, G = self._arms.grads(self._rows(X), validate=False)
        return _float64(f), _float64(G)

    def evaluate_tensors(self, X: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """f(x_k; theta) (K,) and g(x_k; theta) (K, p) as tensors on the model's device."""
        return self._arms.grads(self._rows(X), validate=False)

    def predict(self, X: np.ndarray) -> np.ndarray:
        """f(x_k; theta) (K,) for the rows of X (no gradients)."""
        return _float64(self._arms.forward(self._rows(X), validate=False))

    def evaluate_sq_norms(
        self, X: np.ndarray, inv_diag: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Return f(x_k; theta) and sum_j g_kj^2 inv_diag_j for the rows of X.

        The squared widths of a diagonal Gram without the (K, p) gradient block
        (``nn.ArmPass.sq_norms``); X comes validated from the policy's context.
        """
        f, q = self._arms.sq_norms(
            self._rows(X), np.asarray(inv_diag, dtype=self._np_dtype), validate=False
        )
        return _float64(f), _float64(q)

    def features(self, X: np.ndarray) -> np.ndarray:
        """g(x_k; theta) (K, p) for the rows of X."""
        return self.evaluate(X)[1]

    def scored_features(self, k: int) -> np.ndarray | None:
        """g(x_k; theta) (p,) of row k of the last ``evaluate_sq_norms``, from its pass.

        None when theta changed since (``nn.ArmPass.grad``); the caller then computes
        the features afresh.
        """
        g = self._arms.grad(k)
        return None if g is None else _float64(g)

    def latent(self, x: np.ndarray) -> float:
        """f(x; theta) for one arm x (d,)."""
        return float(self.predict(np.asarray(x)[None, :])[0])

    def fit(self, history: History | PairHistory | SetHistory) -> None:
        """Run the trainer on all observations of ``history`` (warm start).

        A ``PairHistory`` with loss "bce" (or "weighted-bce", weights w) is a
        Bradley-Terry-Luce model of duels: ``nn.fit`` with ``BradleyTerry`` on
        f(x_i1; theta) - f(x_i2; theta) and the trainer's lam, center, optimizer, lr,
        steps and reduction.

        Raises:
            TypeError: For a history the trainer's loss does not read (pairs need
                "bce" or "weighted-bce").
            FloatingPointError: If GD diverged (a non-finite objective or parameter)
                at every step size down to lr / 10^20 (``parts.models.rescue``), with
                what to change, instead of NaN scores later on. A fit that raises
                leaves the parameters and the trainer as they were.
        """
        loss = self.trainer.loss
        pairs = isinstance(history, PairHistory)
        if not isinstance(history, History | PairHistory | SetHistory) or (
            pairs and loss not in ("bce", "weighted-bce")
        ):
            raise TypeError(
                "history must be a History (rows), a SetHistory (sets, loss 'mnl') or a "
                f"PairHistory (duels, loss 'bce' or 'weighted-bce'); got "
                f"{type(history).__name__} with loss={loss!r}."
            )
        before, trainer = nn.flat_params(self.mlp).clone(), self.trainer
        try:
            objective = self._fit_once(history)
            rtol = rounding_rtol(self.dtype)
            for _ in range(self.backtrack):
                if improved(objective[0], objective[-1], rtol):
                    break
                # GD that ends above its start (or overflows) took too long a step:
                # restart this fit from the parameters before it with lr / 10, and keep it.
                objective = self._refit(history, before, self.trainer.lr / 10.0)
            # still diverged: smaller steps until it is finite (parts.models.rescue)
            rescue(
                objective,
                self.trainer.lr,
                lambda lr: self._refit(history, before, lr),
                lambda objective: self._finite(objective),
                lambda objective, lr: self._divergence(history, objective, lr),
            )
        except BaseException:  # nothing of a failed fit is kept
            nn.set_flat_params(self.mlp, before)
            self.trainer = trainer
            raise

    def _refit(
        self,
        history: History | PairHistory | SetHistory,
        before: torch.Tensor,
        lr: float,
    ) -> list[float]:
        """The fit again from the parameters ``before`` it, at ``lr`` (kept)."""
        nn.set_flat_params(self.mlp, before)
        self.trainer = dataclasses.replace(self.trainer, lr=lr)
        return self._fit_once(history)

    def _finite(self, objective: list[float]) -> bool:
        """Whether a fit settled (``rescue.settled``) with finite parameters."""
        return settled(objective[0], objective[-1]) and bool(
            torch.isfinite(nn.flat_params(self.mlp)).all()
        )

    def _divergence(
        self,
        history: History | PairHistory | SetHistory,
        objective: list[float],
        lr: float,
    ) -> str:
        """What a diverged fit did, and what to change."""
        hint = (
            "; or loss_reduction='mean_scaled'"
            if self.trainer.reduction == "sum"
            else ""
        )
        return (
            f"on {history.n} observations the objective went from {objective[0]:.4g} "
            f"to {objective[-1]:.4g} in {self.trainer.steps} GD steps at lr={lr:g}; "
            f"rescale the features or rewards, or use a smaller lr{hint}"
        )

    def _check_weights(self, history: History | PairHistory | SetHistory) -> None:
        """Weights other than 1 need the weighted loss."""
        loss = self.trainer.loss
        if loss != "weighted-bce" and history.n and np.any(history.w != 1.0):
            raise ValueError(
                f"history has weights other than 1, which loss={loss!r} would ignore; "
                "use loss='weighted-bce' (or NeuralLinearModel, which weights every loss)."
            )

    def fit_recipe(self, history: PairHistory) -> FitRecipe:
        """The trainer's next run on the duels of ``history``, as a stack member reads it.

        ``parts.models.stacking.fit_stack`` trains the members of a seed stack as one;
        the recipe is :meth:`fit`'s first attempt (``_fit_once``) on a ``PairHistory``.

        Raises:
            TypeError: For another history (rows may be ``grouped``; sets are not stacked).
        """
        if not isinstance(history, PairHistory) or self.trainer.loss not in (
            "bce",
            "weighted-bce",
        ):
            raise TypeError(
                "a stacked fit reads duels (a PairHistory, loss 'bce' or "
                f"'weighted-bce'); got {type(history).__name__} with "
                f"loss={self.trainer.loss!r}."
            )
        self._check_weights(history)
        trainer = self.trainer
        return FitRecipe(
            net=self.mlp.network,
            params=nn.stack_params(self.mlp),  # views: a kept result is copied in
            center=self.mlp.initial_params() if trainer.center == "init" else None,
            loss=self._loss(history),
            lam=trainer.lam,
            names=None,
            optimizer=trainer.optimizer,
            lr=trainer.lr,
            steps=trainer.steps,
            reduction=trainer.reduction,
            weighted=trainer.loss == "weighted-bce",
        )

    def keeps(self, first: float, last: float, params: nn.Params) -> bool:
        """Whether :meth:`fit` keeps a first attempt from J = ``first`` to ``last``.

        Kept when it did not climb (or the model does not backtrack), settled and left
        ``params`` (the attempt's result, a stack of one) finite.
        """
        return (
            (
                self.backtrack == 0
                or bool(improved(first, last, rounding_rtol(self.dtype)))
            )
            and settled(first, last)
            and all(bool(torch.isfinite(p).all()) for p in params.values())
        )

    def _fit_once(self, history: History | PairHistory | SetHistory) -> list[float]:
        """One run of the trainer on ``history``; the objective at its ends."""
        trainer = self.trainer
        loss = trainer.loss
        self._check_weights(history)
        lr, reduction, n = trainer.lr, trainer.reduction, float(history.n)
        grouped = (
            self.grouped and loss == "mse" and isinstance(history, History) and n > 0
        )
        obs: nn.Rows | nn.Pairs | nn.Sets
        if grouped:
            assert isinstance(history, History)
            obs = self._grouped_rows(history)
            # GD on J / n with step lr is GD on J with step lr / n (n counts repeats)
            lr, reduction = (lr / n if reduction == "mean" else lr), "sum"
        else:
            obs = self._observations(
                history, weighted=loss == "weighted-bce", distinct=self.distinct_duels
            )
        center = self.mlp.initial_params() if trainer.center == "init" else None
        result = nn.fit(
            self.mlp.network,
            nn.stack_params(self.mlp),  # views: trained in place
            obs,
            self._loss(history),
            penalties=[nn.L2Penalty(trainer.lam, center)] if trainer.lam > 0.0 else [],
            optimizer=trainer.optimizer,
            lr=lr,
            steps=trainer.steps,
            reduction=reduction,
            inplace=True,
            record="ends",  # the backtracking reads the first and last J
        )
        objective = result.history[:, 0]
        if grouped and trainer.reduction == "mean":
            objective = objective / n
        return [float(v) for v in objective.tolist()]

    def _loss(self, history: History | PairHistory | SetHistory) -> nn.Loss:
        """The ``nn`` loss of the trainer's loss name on this kind of history."""
        if isinstance(history, SetHistory):
            return nn.MNL()
        if isinstance(history, PairHistory):
            if isinstance(self.pair_link, LogisticLink):
                return nn.BradleyTerry()
            return nn.PairwiseGLM(self.pair_link)
        return nn.MSE() if self.trainer.loss == "mse" else nn.BCE()

    def _grouped_rows(self, history: History) -> nn.Rows:
        """The distinct rows x_u, their mean targets ybar_u and counts c_u (``grouped``).

        Kept as the history grows (``GroupedRows``): O(d) a new row and O(u log u) for
        the u distinct rows, not np.unique over the t rows at every refit.
        """
        X_u, ybar, counts = self._groups(history)
        return nn.Rows(X_u, ybar, counts, dtype=self._torch_dtype, device=self.device)

    def state_dict(self) -> dict[str, Any]:
        """Arrays only: theta and theta_0 (the history belongs to the policy).

        With ``lr`` too when a backtracked or rescued fit lowered the trainer's step.
        """
        state: dict[str, Any] = {
            "theta": nn.flat_params(self.mlp).cpu().numpy().copy(),
            "theta0": self.mlp.theta0.cpu().numpy().copy(),
        }  # in the model's dtype
        if self.trainer.lr != self._lr0:
            state["lr"] = np.asarray(self.trainer.lr)
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from :meth:`state_dict`.

        Raises:
            ValueError: If theta or theta0 is not a finite real (p,) vector of this
                network's p parameters, or lr is not in (0, the lr it was built with].
        """
        p, dtype = (self.n_params,), self.mlp.theta0.numpy().dtype
        theta = check_state_array("theta", state["theta"], p, dtype=dtype)
        theta0 = check_state_array("theta0", state["theta0"], p, dtype=dtype)
        lr = saved_lr(state, self._lr0)
        nn.set_flat_params(self.mlp, torch.as_tensor(theta))
        self.mlp.theta0.copy_(torch.as_tensor(theta0))
        self.trainer = dataclasses.replace(self.trainer, lr=lr)
        self._groups = GroupedRows()  # the history is loaded beside: counted afresh


class TangentModel(NeuralModel):
    """Theory-mode network [Bae2025, Algs. 1-2]: fixed features g(x; theta_0).

    ``evaluate`` returns the features g(x; theta_0) of the network at its initial
    parameter (a frozen copy, never trained) and, as the latent, f(x; theta) of the
    trained network (``linearised=False``, Alg. 1) or its first-order expansion
    g(x; theta_0)^T (theta - theta_0) (``linearised=True``, Alg. 2, Eq. (5)).
    ``latent`` always returns f(x; theta) (the variance weights mu'(f(x_t; theta_t))
    of Alg. 2). ``fit`` is TrainNN: GD restarted from theta_0 on all data.

    Args: as ``NeuralModel``, plus ``linearised``.

    Example:
        >>> from banditkit.nn import Trainer
        >>> model = TangentModel(3, width=4, depth=2, trainer=Trainer(center="init"),
        ...     generator=torch.Generator().manual_seed(0), linearised=True)
        >>> latent, feats = model.evaluate(np.eye(3))
        >>> latent.tolist(), feats.shape
        ([0.0, 0.0, 0.0], (3, 16))
    """

    def __init__(self, d: int, *, linearised: bool, **options: Any) -> None:
        super().__init__(d, **options)  # NeuralModel's keywords
        self.linearised = linearised
        self.mlp0 = copy.deepcopy(self.mlp)  # frozen at theta_0
        for param in self.mlp0.parameters():
            param.requires_grad_(False)
        self._arms0 = nn.ArmPass(self.mlp0)
        self._shift = np.zeros(self.n_params)  # theta - theta_0 (host, float64)

    def evaluate(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return the latent (K,) and g(x_k; theta_0) (K, p)."""
        rows = self._rows(X)
        feats = _float64(self._arms0.grads(rows, validate=False)[1])
        if self.linearised:
            return feats @ self._shift, feats
        return _float64(self._arms.forward(rows, validate=False)), feats

    def predict(self, X: np.ndarray) -> np.ndarray:
        """The latent of ``evaluate`` (K,)."""
        return self.evaluate(X)[0]

    def evaluate_sq_norms(
        self, X: np.ndarray, inv_diag: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Return the latent and sum_j g_kj(theta_0)^2 inv_diag_j."""
        latent, feats = self.evaluate(X)
        return latent, (feats * feats) @ inv_diag

    def fit(self, history: History | PairHistory | SetHistory) -> None:
        """TrainNN [Bae2025, Alg. 1]: restart at theta_0, then the trainer's GD steps."""
        nn.set_flat_params(self.mlp, self.mlp.theta0)
        super().fit(history)
        self._shift = _float64(nn.flat_params(self.mlp) - self.mlp.theta0).copy()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from :meth:`state_dict` (theta_0 also resets the frozen copy)."""
        super().load_state_dict(state)
        nn.set_flat_params(self.mlp0, self.mlp.theta0)
        self.mlp0.theta0.copy_(self.mlp.theta0)
        self._shift = _float64(nn.flat_params(self.mlp) - self.mlp.theta0).copy()
