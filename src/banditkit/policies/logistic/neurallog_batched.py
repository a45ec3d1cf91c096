"""S seeds of one practical NeuralLog configuration as one stacked computation.

``BatchedNeuralLog`` plays S policies of one class of ``policies.neurallog`` (the same
hyper-parameters, their own seeds) in lockstep (``core.batched``): every per-round
quantity of the shared loop of ``ScoredPolicy`` (docs/logistic.md, "Shared loop") carries
a leading axis of S members. The training, whose products dominate, is one stacked
computation; the per-round passes are a few NumPy operations on (S, K, .) blocks; the
effective dimension and the random draws are the members' own:

    network        W_1 (S, m, d), w_2 (S, m); h = relu(X W_1^T), f = h (s w_2) per member,
                   on the members' own arms X (S, K, d), in NumPy (``nn.ArmPass``'s
                   arithmetic with a member axis: halves of the mirrored init apart)
    widths         ||z_k / sqrt(m)||_{A^-1}^2 = sum_j g_kj^2 u_j, u = 1 / (m diag A) (S, p)
                   in O(K m d) without the (K, p) gradient block
    A              diagonal, (S, p): A += w_t z_t^2 / m
    d_eff          logdet(I + a sum z z^T) by the members' own trackers
                   (``batched_logdets.MemberLogdets``: blocked and lazy for p <= 512,
                   ``linalg.KernelLogdet`` above; "diagonal": ``DiagonalLogdets``)
    training       ``steps`` full-batch GD steps on the (S, n, d) rows of all members,
                   the arithmetic of ``nn.fused`` with a member axis (``fit_stacked``)
    selection      argmax of mean + nu B(d_eff) width per member, decided on the bounds
                   of d_eff when they suffice (``selection.argmax_on_bounds``, as the
                   separate run); ties and Thompson draws from each member's own stream

The members themselves are built as for a separate run (their first ``act`` draws theta_0
from their stream), so the initial networks and every random draw are those of the
separate runs; the radius B(d_eff) and the mean map are the members' methods (one
configuration: the first member's). Results equal the separate runs' up to the order of
floating-point operations (batched products round differently): the same actions on the
tested horizons, regrets equal to 1e-9 (tests/policies/logistic/test_neurallog_batched.py).

Supported (``BatchedNeuralLog.supports``): practical mode with a diagonal A, depth 2,
``lambda_schedule="fixed"``, ``reg_center="zero"``, ``keep_log_factors=False``, any
effective dimension, either
dtype, UCB and TS (the radius B increases with d_eff, which ``act`` relies on). Other
configurations run seed by seed.

References:
    [Bae2025] S. Bae, D. Lee. Neural logistic bandits. arXiv:2505.02069.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from banditkit.core import Context
from banditkit.policies.logistic.batched_logdets import DiagonalLogdets, MemberLogdets
from banditkit.policies.parts.selection import (
    BOUND_MARGIN,
    Optimistic,
    argmax_on_bounds,
    argmax_random_tie,
)

if TYPE_CHECKING:
    import torch

    from banditkit.core import Policy
    from banditkit.policies.logistic.neurallog_base import NeuralLogPolicy
else:
    from banditkit.core.lazy import lazy_import

    torch = lazy_import("torch")  # imported at first use (banditkit.core.lazy)

__all__ = ["BatchedNeuralLog", "fit_stacked"]

_TINY = float(np.finfo(np.float64).tiny)
#: Relative margin by which a selection decided on bounds must win (``_decide``).
_MARGIN = BOUND_MARGIN


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
    W_1 = w1[s] (S, m, d), w_2 = w2[s] (S, m), updated in place; per step, the operations
    of the trainer's units steps for one member with a member axis (reduction
    "sum" of the loss; ``step`` is lr / n for the mean-scaled objective):

        h = relu(X W_1^T),  sw = s w_2,  f = h sw,  v = sigmoid(f) - y,
        dW_1 = sw * (1[h > 0] v)^T X,  dw_2 = (s v)^T h,
        grad = [dW_1, dw_2] + lam theta,  theta -= step * grad,

    ``nn.fit`` on per-member rows (``nn._fused.members_units_steps``): theta and its
    gradient in flat buffers (the L2 term and the update one operation each), the
    hidden layer kept transposed, (S, m, n), so that f, the mask 1[h > 0] v (one pass,
    v broadcast along n) and dw_2 read it along the rows; sw multiplies the (m, d)
    product rather than the (n, m) block. Batched products and that order round
    differently from one member's steps, so the iterates agree with them up to rounding.
    """
    from banditkit import nn

    net = nn.StackedMLP(X.shape[-1], width=w1.shape[1], scale_output=out_scale != 1.0)
    assert net.out_scale == out_scale
    nn.fit(  # the trainer's units steps with a member axis (nn._fused)
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


class BatchedNeuralLog:
    """S practical NeuralLog policies of one configuration stepped together.

    Built by ``NeuralLogPolicy.batched`` (``core.batched``); the module docstring has the
    stacked loop. ``act`` takes the members' arms (S, K, d) and returns their actions
    (S,); ``update`` takes the actions and the rewards (S,).

    The batch holds the state: after the first round the members' own networks, Grams
    and histories are not updated (their random streams and round counters are), so a
    member is not a policy to save or continue on its own after a batched run.

    Args:
        members: S fresh policies of one class and configuration that ``supports``.
    """

    def __init__(self, members: list[NeuralLogPolicy]) -> None:
        for member in members:
            reason = self.supports(member)
            if reason is not None:
                raise ValueError(f"members cannot be batched: {reason}.")
        self.members = members
        self.size = len(members)
        first = members[0]
        self._first = first
        self._torch_dtype = None  # set up at the first act (the members' d)
        self._n = 0
        self._n_updates = np.zeros(self.size, dtype=np.int64)
        self._cache: tuple[np.ndarray, ...] | None = None
        self._sampling = bool(first.sampling)

    @classmethod
    def of(cls, members: list[Policy]) -> BatchedNeuralLog | None:
        """A batch of ``members``, or None unless every one is a NeuralLog policy it supports."""
        from banditkit.policies.logistic.neurallog_base import NeuralLogPolicy

        policies = [m for m in members if isinstance(m, NeuralLogPolicy)]
        if len(policies) != len(members) or any(
            cls.supports(m) is not None for m in policies
        ):
            return None
        return cls(policies)

    @staticmethod
    def supports(policy: NeuralLogPolicy) -> str | None:
        """None when ``policy``'s configuration can be batched, else the reason."""
        if policy.mode != "practical":
            return "mode must be 'practical'"
        if policy.gram != "diagonal":
            return "gram must be 'diagonal'"
        if policy.depth != 2:
            return "depth must be 2"
        if policy.lambda_schedule != "fixed":
            return "lambda_schedule must be 'fixed'"
        if policy.keep_log_factors:
            return "keep_log_factors must be False (the radius would read the round)"
        if policy.reg_center != "zero":
            return "reg_center must be 'zero'"
        return None

    @property
    def n_updates(self) -> np.ndarray:
        """Refits of each member so far (S,)."""
        return self._n_updates

    # ------------------------------------------------------------------ setup
    def _setup(self, arms: np.ndarray) -> None:
        from banditkit import nn

        S, _, d = arms.shape
        for s, member in enumerate(self.members):
            # the member's own first-round setup: theta_0 from its stream
            member._check_context(Context(arms=arms[s]))
        first = self._first
        mlp = first.model.mlp  # type: ignore[attr-defined]
        self.d, self.m = d, first.width
        self.p = mlp.n_params
        self.s = float(mlp.out_scale)
        if (
            mlp.activation != "relu"
            or mlp.bias
            or self.p != self.m * d + self.m
            or first.model.linearised
        ):
            raise ValueError("members cannot be batched: the network is not supported.")
        self._torch_dtype = getattr(torch, first.dtype)
        self._np_dtype = np.dtype(first.dtype)
        layers = [m.model.mlp for m in self.members]  # type: ignore[attr-defined]
        self.w1 = torch.stack([nn.flat_params(mlp)[: self.m * d] for mlp in layers])
        self.w1 = self.w1.reshape(S, self.m, d).contiguous()
        self.w2 = torch.stack([nn.flat_params(mlp)[self.m * d :] for mlp in layers])
        self._W1, self._W2 = self.w1.numpy(), self.w2.numpy()  # views: fits in place
        self._half = self.m // 2 if mlp.init == "mirrored" else 0
        self._kept_params: tuple[np.ndarray, ...] | None = None
        self.diag = np.stack([m.design.diagonal for m in self.members])
        self.feature_scale = first._feature_scale()
        scale = first._effdim_scale()
        self.effdim: DiagonalLogdets | MemberLogdets | None
        if scale is None:
            self.effdim = None
        else:
            kind = first.effdim.kind  # type: ignore[union-attr]
            if kind == "diagonal":
                self.effdim = DiagonalLogdets(S, self.p, scale)
            else:  # "full" (blocked, lazy) or "kernel": the members' own trackers
                self.effdim = MemberLogdets([m.effdim for m in self.members])  # type: ignore[misc]
        capacity = first.horizon or 1024
        self._X = torch.empty((S, capacity, d), dtype=self._torch_dtype)
        self._y = torch.empty((S, capacity), dtype=self._torch_dtype)
        self._X_np, self._y_np = self._X.numpy(), self._y.numpy()
        self._lam = 2.0 * first._lam_now  # the trainer's lam' = 2 lam [Bae2025, Sec. 7]
        assert first.lr is not None
        self._lr = first.lr
        self._mean_scaled = first.loss_reduction == "mean_scaled"

    # ------------------------------------------------------------------ loop
    def _params(self) -> tuple[np.ndarray, ...]:
        """W_1^T blocks (S, d, m') of the halves, sw = s w_2 (S, m) and sw^2, per refit."""
        if self._kept_params is None:
            W1, sw = self._W1, self.s * self._W2
            half = self._half
            blocks = (
                (W1[:, :half].transpose(0, 2, 1), W1[:, half:].transpose(0, 2, 1))
                if half
                else (W1.transpose(0, 2, 1),)
            )
            self._kept_params = (*blocks, sw, sw * sw)
        return self._kept_params

    def _forward(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The members' f (S, K) and h (S, K, m) on their rows X (S, K, d), in NumPy.

        As ``nn.ArmPass.forward`` per member: under the mirrored initialisation the two
        halves of the hidden layer come from products of identical shapes and f sums
        their two terms, so f(x; theta_0) = 0 exactly.
        """
        params = self._params()
        sw = params[-2]
        half = self._half
        h = np.empty((*X.shape[:2], self.m), dtype=X.dtype)
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

    def act(self, arms: np.ndarray) -> np.ndarray:
        """The members' actions (S,) for their arms (S, K, d) (module docstring)."""
        arms = np.asarray(arms, dtype=np.float64)
        if arms.ndim != 3 or arms.shape[0] != self.size:
            raise ValueError(
                f"arms must have shape ({self.size}, K, d); got {arms.shape}."
            )
        if self._torch_dtype is None:
            self._setup(arms)
        elif arms.shape[2] != self.d:
            raise ValueError(f"arms must have d={self.d}; got {arms.shape[2]}.")
        S, m, d = self.size, self.m, self.d
        X = arms if self._np_dtype == np.float64 else arms.astype(self._np_dtype)
        f, h = self._forward(X)
        # q = ||g / sqrt(m)||^2_{A^-1} = sum_j g_j^2 u_j, u = scale^2 / diag A (ArmPass)
        u = ((self.feature_scale**2) / self.diag).astype(self._np_dtype, copy=False)
        md = m * d
        c2 = np.sign(h)
        c2 *= self._params()[-1][:, None, :]
        q = np.vecdot(
            c2, np.matmul(X * X, u[:, :md].reshape(S, m, d).transpose(0, 2, 1))
        )
        q += np.vecdot(h * h, (self.s * self.s) * u[:, None, md:])
        self._cache = (X, f, h)
        latent = f.astype(np.float64, copy=False)
        norms = np.sqrt(q.astype(np.float64, copy=False))
        members = self.members
        mean = latent if self._sampling else self._first._mean(latent)
        # Thompson: each member's draws xi, as gaussian_sample makes them
        xi = (
            np.stack([mb.rng.standard_normal(latent.shape[1]) for mb in members])
            if self._sampling
            else None
        )
        if self.effdim is None:
            return self._select(mean, norms, xi, np.zeros(S), np.full(S, -1))
        low, high = self.effdim.bounds()
        pending = high > low
        decided = np.full(S, -1, dtype=np.int64)
        if pending.any():
            decided = self._decide(mean, norms, xi, low, high, pending)
            left = pending & (decided < 0)
            if left.any():
                self.effdim.resolve(left)
                low = self.effdim.bounds()[0]
        return self._select(mean, norms, xi, low, decided)

    def _select(
        self,
        mean: np.ndarray,
        norms: np.ndarray,
        xi: np.ndarray | None,
        d_eff: np.ndarray,
        decided: np.ndarray,
    ) -> np.ndarray:
        """The actions: ``decided`` where >= 0, else each member's exact selection."""
        exact = np.flatnonzero(decided < 0)
        if exact.size == 0:
            return decided.astype(np.int64, copy=True)
        actions = decided.astype(np.int64, copy=True)
        members, radius_of = self.members, self._first._radius
        radius = np.array([radius_of(float(d_eff[i])) for i in exact])
        width = (self._first.nu * radius)[:, None] * norms[exact]
        scores = mean[exact] + (width if xi is None else width * xi[exact])
        best = scores.argmax(1)
        top = scores[np.arange(exact.size), best]
        ties = np.count_nonzero(scores == top[:, None], axis=1) != 1
        for row, i in enumerate(exact):
            if ties[row] or top[row] != top[row]:  # a member's own tie-break
                rule = members[i].rule
                rtol = rule.rtol if isinstance(rule, Optimistic) else 0.0
                best[row] = argmax_random_tie(scores[row], members[i].rng, rtol)
            actions[i] = best[row]
        return actions

    def _decide(
        self,
        mean: np.ndarray,
        norms: np.ndarray,
        xi: np.ndarray | None,
        low: np.ndarray,
        high: np.ndarray,
        pending: np.ndarray,
    ) -> np.ndarray:
        """Actions fixed by the bounds on d_eff (-1 where they are not).

        The score of arm k, mean_k + B slope_k, is linear in the radius B, and B(d_eff)
        increases with d_eff, so an arm that is the unique best, by a margin, at both
        ends of [B(low), B(high)] is the best at the exact d_eff, with no tie: the
        member's exact selection would be that arm and would draw nothing more.
        """
        decided = np.full(self.size, -1, dtype=np.int64)
        rows = np.flatnonzero(pending)
        slope = self._first.nu * norms[rows]
        if xi is not None:
            slope = slope * xi[rows]
        radius_of = self._first._radius  # one configuration: the members' radius
        low_radius = np.array([radius_of(float(low[i])) for i in rows])
        high_radius = np.array([radius_of(float(high[i])) for i in rows])
        decided[rows] = argmax_on_bounds(
            mean[rows], slope, low_radius, high_radius, _MARGIN
        )
        return decided

    def update(
        self, arms: np.ndarray, actions: np.ndarray, rewards: np.ndarray
    ) -> None:
        """Learn from the rewards (S,) of ``actions`` (S,) on ``arms`` (S, K, d)."""
        actions = np.asarray(actions, dtype=np.int64)
        rewards = np.asarray(rewards, dtype=np.float64)
        if self._cache is None or not (actions.shape == rewards.shape == (self.size,)):
            raise ValueError(
                f"update needs the act of this round and ({self.size},) actions and "
                f"rewards; got {actions.shape} and {rewards.shape}."
            )
        if not np.all((rewards >= 0.0) & (rewards <= 1.0)):
            raise ValueError(f"rewards must lie in [0, 1]; got {rewards}.")
        X, f, h = self._cache
        self._cache = None
        S, m, d = self.size, self.m, self.d
        rows = np.arange(S)
        x, h_t = X[rows, actions], h[rows, actions]
        # z = g(x_t; theta_{t-1}) = [c x^T (row-major), s h] at selection (ArmPass.grad)
        c = np.sign(h_t)
        c *= self._params()[-2]
        z = np.empty((S, self.p), dtype=X.dtype)
        np.multiply(c[:, :, None], x[:, None, :], out=z[:, : m * d].reshape(S, m, d))
        np.multiply(h_t, self.s, out=z[:, m * d :])
        Z = z.astype(np.float64, copy=False)
        latent = f[rows, actions].astype(np.float64)
        n = self._n
        if n == self._X.shape[1]:  # grow the history (no horizon given)
            self._X = torch.cat([self._X, torch.empty_like(self._X)], dim=1)
            self._y = torch.cat([self._y, torch.empty_like(self._y)], dim=1)
            self._X_np, self._y_np = self._X.numpy(), self._y.numpy()
        self._X_np[:, n] = x
        self._y_np[:, n] = rewards
        self._n = n = n + 1
        if self.effdim is not None:
            self.effdim.update(Z)
        first = self._first
        refitted = n % first.update_every == 0
        if refitted:
            self._fit(n)
            self._n_updates += 1
        if first.weighted:
            if refitted:  # f(x_t; theta_t) after this round's refit
                latent = self._forward(x[:, None, :])[0][:, 0].astype(np.float64)
            weight = np.maximum(first.link.deriv(latent), _TINY)
        else:
            weight = np.ones(S)
        scaled = self.feature_scale * Z
        scaled *= scaled
        scaled *= weight[:, None]
        self.diag += scaled
        for member in self.members:
            member.t += 1

    def _fit(self, n: int) -> None:
        step = self._lr / n if self._mean_scaled else self._lr
        fit_stacked(
            self._X[:, :n].contiguous(),
            self._y[:, :n].contiguous(),
            self.w1,
            self.w2,
            out_scale=self.s,
            lam=self._lam,
            step=step,
            steps=self._first.steps,
        )
        self._kept_params = None  # theta changed: sw again (``_params``)
        finite = torch.isfinite(self.w1).flatten(1).all(1) & torch.isfinite(
            self.w2
        ).all(1)
        if not bool(finite.all()):
            bad = [self.members[i].seed for i in np.flatnonzero(~finite.numpy())]
            raise FloatingPointError(
                f"training diverged on {n} observations for the seeds {bad} at "
                f"lr={self._lr:g}; use a smaller lr."
            )
