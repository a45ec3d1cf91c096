"""S depth-2 networks of one configuration as one model part with a member axis.

``StackedNetwork`` answers the model methods that the scored round reads
(``policies.parts.scored``) for S members at once, each on its own arms X (S, K, d):

    network    W_1 (S, m, d), w_2 (S, m); h = relu(X W_1^T), f = h (s w_2) per member,
               in NumPy (``nn.ArmPass``'s arithmetic with a member axis: the halves of the
               mirrored initialisation apart, so f(x; theta_0) = 0 exactly)
    widths     ||z_k||^2_{A^-1} scaled = sum_j g_kj^2 u_j with u = scale^2 / diag A (S, p),
               in O(K m d) without the (K, p) gradient block
    features   z = g(x_t; theta) = [c x^T (row-major), s h], c = 1[h > 0] s w_2, of the
               played arm as it was scored
    training   ``steps`` full-batch GD steps on the (S, n, d) rows of all members: one
               ``nn.fit`` of the stack with each member's own rows, targets and L2
               centre (``fit_members``); a member whose fit ends above its start is
               backtracked, and one that diverged rescued, at its own lr / 10, as its
               ``NeuralModel.fit`` would (``parts.models.rescue``)

It is built from the S members' own ``NeuralModel``s (``StackedNetwork.of``), so the
initial networks are those of the separate runs; results equal theirs up to the order of
floating-point operations (batched products round differently). Supported: a bias-free
relu network of depth 2, not linearised, not ``grouped``, on the CPU, trained by GD on
the BCE or the squared loss with (lam / 2) ||theta - c||^2, c = 0 or theta_0 (the
practical NeuralLog networks, NeuralUCB and NeuralTS).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from banditkit.core.lazy import torch  # imported at first use
from banditkit.policies.parts.models import NeuralModel
from banditkit.policies.parts.models.rescue import (
    RESCUES,
    improved,
    rounding_rtol,
    settled_members,
)

if TYPE_CHECKING:
    from banditkit import nn
else:  # PyTorch: imported at first use, not with the registry (``core.lazy``)
    from banditkit.core.lazy import lazy_import

    nn = lazy_import("banditkit.nn")

__all__ = ["StackedNetwork", "StackedRows", "fit_members"]


class StackedRows(Protocol):
    """The members' training rows (``parts.stacked.StackedHistory``)."""

    def tensors(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The rows (S, n, d) and rewards (S, n) so far, contiguous."""
        ...


def fit_members(
    net: nn.StackedMLP,
    w1: torch.Tensor,
    w2: torch.Tensor,
    rows: tuple[torch.Tensor, torch.Tensor],
    *,
    loss: str,
    lam: float,
    center: tuple[torch.Tensor, torch.Tensor] | None,
    lr: float,
    steps: int,
    reduction: str,
) -> torch.Tensor:
    """``steps`` GD steps of S depth-2 networks, each on its own rows, in place.

    Member s has its own rows X[s] (S, n, d), targets y[s] (S, n), parameters
    W_1 = w1[s] (S, m, d), w_2 = w2[s] (S, m) and L2 centre (c_1[s], c_2[s]) (zero
    without ``center``): ``nn.fit`` of the stack, as each member's ``NeuralModel``
    fits its own network (the same loss, penalty, step and reduction), so the
    iterates agree with the separate runs' up to rounding.

    Returns:
        The objective of each member at the first and the last step, (2, S) ((1, S)
        for one step).
    """
    X, y = rows
    if X.shape[0] == 1:  # one member: its rows as a separate run's (n, d), (n,)
        X, y = X[0], y[0]
    penalties = []
    if lam > 0.0:
        c = (
            None
            if center is None
            else {"layers.0.weight": center[0], "layers.1.weight": center[1][:, None]}
        )
        penalties = [nn.L2Penalty(lam, c)]
    result = nn.fit(
        net,
        {"layers.0.weight": w1, "layers.1.weight": w2.unsqueeze(1)},
        nn.Rows(X, y, validate=False),
        nn.BCE() if loss == "bce" else nn.MSE(),
        penalties=penalties,
        lr=lr,
        steps=steps,
        reduction=reduction,
        inplace=True,
        record="ends",
    )
    return result.history


def _stackable(model: Any) -> bool:
    """Whether ``model`` is a network ``StackedNetwork`` can hold (module docstring)."""
    if type(model) is not NeuralModel:  # not a TangentModel (theory mode)
        return False
    mlp, trainer = model.mlp, model.trainer
    return (
        mlp.depth == 2
        and mlp.activation == "relu"
        and not mlp.bias
        and not model.grouped
        and model.device.type == "cpu"
        and trainer.loss in ("bce", "mse")
        and trainer.center in ("zero", "init")
        and trainer.optimizer == "gd"
    )


class StackedNetwork:
    """S networks of one configuration, each on its own arms (module docstring).

    Args:
        models: The members' own ``NeuralModel``s, fresh (their theta_0 is kept).
        capacity: Rows of the members' histories to expect (grown when exceeded).

    Raises:
        ValueError: For models it cannot hold (``of`` returns None for them instead).
    """

    #: ``predict`` is the network itself (no linearisation).
    linearised = False

    def __init__(self, models: Sequence[NeuralModel]) -> None:
        if not all(_stackable(m) for m in models):
            raise ValueError(
                "models must be bias-free relu networks of depth 2 on the CPU, not "
                "grouped, trained by GD on BCE or the squared loss."
            )
        first = models[0]
        mlp = first.mlp
        self.members = len(models)
        self.width = m = mlp.width
        self.d = mlp.d
        self.n_params = mlp.n_params
        self.out_scale = float(mlp.out_scale)
        self.dtype = first.dtype
        self._np_dtype = np.dtype(first.dtype)
        self._net = mlp.network
        trainer = first.trainer
        self.trainer = trainer
        self.backtrack = first.backtrack
        #: Each member's step size (a backtracked or rescued fit lowers its own).
        self.lrs = np.array([model.trainer.lr for model in models], dtype=np.float64)
        self.w1, self.w2 = _split([nn.flat_params(model.mlp) for model in models], m)
        self._center = (
            _split([model.mlp.theta0 for model in models], m)
            if trainer.center == "init"
            else None
        )
        self._W1, self._W2 = self.w1.numpy(), self.w2.numpy()  # views: fits in place
        self._half = m // 2 if mlp.init == "mirrored" else 0
        self._kept: tuple[np.ndarray, ...] | None = None
        self._cache: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    @classmethod
    def of(cls, models: Sequence[Any]) -> StackedNetwork | None:
        """The stack of ``models``, or None unless each is a network it can hold."""
        return cls(models) if all(_stackable(m) for m in models) else None

    # ------------------------------------------------------------------ passes
    def _params(self) -> tuple[np.ndarray, ...]:
        """W_1^T blocks (S, d, m') of the halves, sw = s w_2 (S, m) and sw^2, per refit."""
        if self._kept is None:
            W1, sw = self._W1, self.out_scale * self._W2
            half = self._half
            blocks = (
                (W1[:, :half].transpose(0, 2, 1), W1[:, half:].transpose(0, 2, 1))
                if half
                else (W1.transpose(0, 2, 1),)
            )
            self._kept = (*blocks, sw, sw * sw)
        return self._kept

    def _forward(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The members' f (S, K) and h (S, K, m) on their rows X (S, K, d).

        As ``nn.ArmPass.forward`` per member: under the mirrored initialisation the two
        halves of the hidden layer come from products of identical shapes and f sums
        their two terms, so f(x; theta_0) = 0 exactly.
        """
        params = self._params()
        sw = params[-2]
        half = self._half
        h = np.empty((*X.shape[:2], self.width), dtype=X.dtype)
        if half:
            np.matmul(X, params[0], out=h[..., :half])
            np.matmul(X, params[1], out=h[..., half:])
        else:
            np.matmul(X, params[0], out=h)
        np.maximum(h, 0.0, out=h)
        if half:
            f = np.vecdot(h[..., :half], sw[:, None, :half])
            f += np.vecdot(h[..., half:], sw[:, None, half:])
        else:
            f = np.vecdot(h, sw[:, None, :])
        return f, h

    def evaluate_sq_norms(
        self, arms: np.ndarray, inv_diag: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The members' f (S, K) and sum_j g_kj^2 inv_diag_j (S, K) on their arms (S, K, d)."""
        S, m, d = self.members, self.width, self.d
        X = arms if self._np_dtype == np.float64 else arms.astype(self._np_dtype)
        f, h = self._forward(X)
        u = inv_diag.astype(self._np_dtype, copy=False)
        md = m * d
        c2 = np.sign(h)
        c2 *= self._params()[-1][:, None, :]
        q = np.vecdot(
            c2, np.matmul(X * X, u[:, :md].reshape(S, m, d).transpose(0, 2, 1))
        )
        q += np.vecdot(h * h, (self.out_scale * self.out_scale) * u[:, None, md:])
        self._cache = (X, f, h)
        return f.astype(np.float64, copy=False), q.astype(np.float64, copy=False)

    def played(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The rows x (S, d), latents (S,) and features z (S, p) of ``actions`` as scored.

        z = g(x_t; theta_{t-1}) = [c x^T (row-major), s h], c = 1[h > 0] s w_2
        (``nn.ArmPass``'s gradient), from the last ``evaluate_sq_norms``.

        Raises:
            ValueError: Without a scoring pass since the last call.
        """
        if self._cache is None:
            raise ValueError("played needs the scoring pass of this round first.")
        X, f, h = self._cache
        self._cache = None
        S, m, d = self.members, self.width, self.d
        rows = np.arange(S)
        x, h_t = X[rows, actions], h[rows, actions]
        c = np.sign(h_t)
        c *= self._params()[-2]
        z = np.empty((S, self.n_params), dtype=X.dtype)
        np.multiply(c[:, :, None], x[:, None, :], out=z[:, : m * d].reshape(S, m, d))
        np.multiply(h_t, self.out_scale, out=z[:, m * d :])
        latent = f[rows, actions].astype(np.float64)
        return x, latent, z.astype(np.float64, copy=False)

    def latent(self, x: np.ndarray) -> np.ndarray:
        """f(x_s; theta) of one row per member, (S, d) -> (S,)."""
        X = x if self._np_dtype == np.float64 else x.astype(self._np_dtype)
        return self._forward(X[:, None, :])[0][:, 0].astype(np.float64)

    # ------------------------------------------------------------------ training
    def fit(self, history: StackedRows) -> None:
        """``steps`` GD steps of every member on its own rows (``fit_members``).

        As each member's ``NeuralModel.fit``: a member whose objective ends above its
        start (or overflows) is refitted from the parameters before the fit at its lr
        / 10, up to ``backtrack`` times, then, while it has not settled, at lr / 10
        again (``parts.models.rescue``); the lowered lr is kept for its later fits.

        Raises:
            FloatingPointError: If a member's training diverged at every step size
                down to lr / 10^RESCUES; the parameters and step sizes are then put
                back as they were before the fit.
        """
        rows = history.tensors()
        before, lrs = (self.w1.clone(), self.w2.clone()), self.lrs.copy()
        everyone = np.arange(self.members)
        first, last = self._fit(rows, everyone)
        try:
            for _ in range(self.backtrack):
                redo = everyone[~improved(first, last, rounding_rtol(self.dtype))]
                if not redo.size:
                    break
                self._refit(rows, redo, before, first, last)
            for retry in range(RESCUES + 1):
                redo = everyone[~self._settled(first, last)]
                if not redo.size:
                    break
                if retry == RESCUES:
                    raise FloatingPointError(
                        f"training diverged for the members {redo.tolist()} on "
                        f"{rows[0].shape[1]} observations even at lr="
                        f"{self.lrs[redo].min():g} ({RESCUES} retries at lr / 10); "
                        "rescale the features or rewards, or use a smaller lr."
                    )
                self._refit(rows, redo, before, first, last)
        except BaseException:  # nothing of a failed fit is kept
            self.w1.copy_(before[0])
            self.w2.copy_(before[1])
            self.lrs = lrs
            raise
        finally:
            self._kept = None  # theta changed: sw again (``_params``)

    def _fit(
        self, rows: tuple[torch.Tensor, torch.Tensor], members: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Fit ``members`` (those of one lr together); their objective at the ends."""
        trainer = self.trainer
        first = np.empty(len(members))
        last = np.empty(len(members))
        for lr in np.unique(self.lrs[members]):
            chosen = np.flatnonzero(self.lrs[members] == lr)
            subset = members[chosen]
            whole = len(subset) == self.members
            index = torch.as_tensor(subset)
            w1 = self.w1 if whole else self.w1[index]
            w2 = self.w2 if whole else self.w2[index]
            center = self._center
            if center is not None and not whole:
                center = (center[0][index], center[1][index])
            objective = fit_members(
                self._net,
                w1,
                w2,
                rows if whole else (rows[0][index], rows[1][index]),
                loss=trainer.loss,
                lam=trainer.lam,
                center=center,
                lr=float(lr),
                steps=trainer.steps,
                reduction=trainer.reduction,
            ).numpy()
            if not whole:
                self.w1[index] = w1
                self.w2[index] = w2
            first[chosen], last[chosen] = objective[0], objective[-1]
        return first, last

    def _refit(
        self,
        rows: tuple[torch.Tensor, torch.Tensor],
        members: np.ndarray,
        before: tuple[torch.Tensor, torch.Tensor],
        first: np.ndarray,
        last: np.ndarray,
    ) -> None:
        """``members`` again from ``before`` at lr / 10 (kept); their objective updated."""
        index = torch.as_tensor(members)
        self.w1[index] = before[0][index]
        self.w2[index] = before[1][index]
        self.lrs[members] = self.lrs[members] / 10.0
        first[members], last[members] = self._fit(rows, members)

    def _settled(self, first: np.ndarray, last: np.ndarray) -> np.ndarray:
        """Each member's fit settled with finite parameters (``rescue.settled``)."""
        finite = torch.isfinite(self.w1).flatten(1).all(1) & torch.isfinite(
            self.w2
        ).all(1)
        return settled_members(first, last) & finite.numpy()


def _split(thetas: Sequence[torch.Tensor], m: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Flat parameters (p,) of S members as W_1 (S, m, d) and w_2 (S, m), contiguous."""
    stacked = torch.stack(list(thetas))
    md = stacked.shape[1] - m
    return stacked[:, :md].reshape(len(thetas), m, -1).contiguous(), stacked[
        :, md:
    ].contiguous()
