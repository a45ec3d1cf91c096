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
    training   ``steps`` full-batch GD steps on the (S, n, d) rows of all members, the
               arithmetic of ``nn.fused`` with a member axis (``fit_stacked``)

It is built from the S members' own ``NeuralModel``s (``StackedNetwork.of``), so the
initial networks are those of the separate runs; results equal theirs up to the order of
floating-point operations (batched products round differently). Supported: a bias-free
relu network of depth 2, not linearised, trained by GD on the BCE loss with
(lam / 2) ||theta||^2 (the practical NeuralLog networks).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from banditkit.core.lazy import torch  # imported at first use
from banditkit.policies.parts.models import NeuralModel

__all__ = ["StackedNetwork", "StackedRows", "fit_stacked"]


class StackedRows(Protocol):
    """The members' training rows (``parts.stacked.StackedHistory``)."""

    def tensors(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The rows (S, n, d) and rewards (S, n) so far, contiguous."""
        ...


def fit_stacked(
    X: torch.Tensor,
    y: torch.Tensor,
    w1: torch.Tensor,
    w2: torch.Tensor,
    *,
    out_scale: float,
    lam: float,
    step: float,
    steps: int,
) -> None:
    """``steps`` GD steps on BCE + (lam / 2) ||theta||^2 for S depth-2 relu networks.

    Member s has its own rows X[s] (S, n, d), labels y[s] (S, n) and parameters
    W_1 = w1[s] (S, m, d), w_2 = w2[s] (S, m), updated in place; per step (reduction
    "sum" of the loss; ``step`` is lr / n for the mean-scaled objective):

        h = relu(X W_1^T),  sw = s w_2,  f = h sw,  v = sigmoid(f) - y,
        dW_1 = sw * (1[h > 0] v)^T X,  dw_2 = (s v)^T h,
        grad = [dW_1, dw_2] + lam theta,  theta -= step * grad.

    This is ``nn.fit`` on per-member rows: the trainer's units steps with a member axis
    (private to ``nn``). Batched products round differently from one member's steps, so
    the iterates agree with the separate runs' up to rounding.
    """
    from banditkit import nn  # PyTorch: imported at first use, not with the registry

    net = nn.StackedMLP(X.shape[-1], width=w1.shape[1], scale_output=out_scale != 1.0)
    assert net.out_scale == out_scale
    nn.fit(
        net,
        {"layers.0.weight": w1, "layers.1.weight": w2.unsqueeze(1)},
        nn.Rows(X, y, validate=False),
        nn.BCE(),
        penalties=[nn.L2Penalty(lam)],
        lr=step,
        steps=steps,
        inplace=True,
        record="none",
    )


def _stackable(model: Any) -> bool:
    """Whether ``model`` is a network ``StackedNetwork`` can hold (module docstring)."""
    if type(model) is not NeuralModel:  # not a TangentModel (theory mode)
        return False
    mlp, trainer = model.mlp, model.trainer
    return (
        mlp.depth == 2
        and mlp.activation == "relu"
        and not mlp.bias
        and trainer.loss == "bce"
        and trainer.center == "zero"
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
                "models must be bias-free relu networks of depth 2 trained by GD on BCE."
            )
        from banditkit import nn  # PyTorch, as in fit_stacked

        first = models[0]
        mlp = first.mlp
        self.members = len(models)
        self.width = m = mlp.width
        self.d = d = mlp.d
        self.n_params = mlp.n_params
        self.out_scale = float(mlp.out_scale)
        self.dtype = first.dtype
        self._np_dtype = np.dtype(first.dtype)
        trainer = first.trainer
        self.lam, self.lr, self.steps = trainer.lam, trainer.lr, trainer.steps
        self._mean_scaled = trainer.reduction == "mean"
        thetas = [nn.flat_params(model.mlp) for model in models]
        self.w1 = (
            torch.stack([t[: m * d] for t in thetas]).reshape(-1, m, d).contiguous()
        )
        self.w2 = torch.stack([t[m * d :] for t in thetas])
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
        """``steps`` GD steps of every member on its own rows (``fit_stacked``).

        Raises:
            FloatingPointError: If a member's training diverged.
        """
        X, y = history.tensors()
        n = X.shape[1]
        step = self.lr / n if self._mean_scaled else self.lr
        fit_stacked(
            X,
            y,
            self.w1,
            self.w2,
            out_scale=self.out_scale,
            lam=self.lam,
            step=step,
            steps=self.steps,
        )
        self._kept = None  # theta changed: sw again (``_params``)
        finite = torch.isfinite(self.w1).flatten(1).all(1) & torch.isfinite(
            self.w2
        ).all(1)
        if not bool(finite.all()):
            bad = np.flatnonzero(~finite.numpy()).tolist()
            raise FloatingPointError(
                f"training diverged on {n} observations for the members {bad} at "
                f"lr={self.lr:g}; use a smaller lr."
            )
