"""S seeds of one practical NeuralLog configuration as one stacked computation.

``BatchedNeuralLog`` plays S policies of one class of ``policies.neurallog`` (the same
hyper-parameters, their own seeds) in lockstep (``core.batched``): every per-round
quantity of the shared loop of ``ScoredPolicy`` (docs/logistic.md, "Shared loop") carries
a leading axis of S members, so that a round costs about as many tensor operations for
S seeds as for one:

    network        W_1 (S, m, d), w_2 (S, m); h = relu(X W_1^T), f = s h w_2 per member,
                   on the members' own arms X (S, K, d) (batched products)
    widths         ||z_k / sqrt(m)||_{A^-1}^2 = sum_j g_kj^2 u_j, u = 1 / (m diag A) (S, p)
                   in O(K m d) without the (K, p) gradient block (``nn.forward_and_sq_norms``)
    A              diagonal, (S, p): A += w_t z_t^2 / m
    d_eff          logdet(I + a sum z z^T) exactly, ``policies.batched_logdets`` (p <= 512; above,
                   the members' own ``linalg.KernelLogdet``)
    training       ``steps`` full-batch GD steps on the (S, n, d) rows of all members,
                   the arithmetic of ``nn.fused`` with a member axis (``fit_stacked``)
    selection      argmax of mean + nu B(d_eff) width per member; ties and Thompson
                   draws from each member's own stream, as in its separate run

The members themselves are built as for a separate run (their first ``act`` draws theta_0
from their stream), so the initial networks and every random draw are those of the
separate runs; the radius B(d_eff) and the mean map are the members' own methods.
Results equal the separate runs' up to the order of floating-point operations (batched
products and the blocked log-determinants of ``SeedLogdets`` round differently): the same actions
on the tested horizons, regrets equal to 1e-9 (tests/policies/test_neurallog_batched.py).

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
from banditkit.policies.batched_logdets import (
    DiagonalLogdets,
    MemberLogdets,
    SeedLogdets,
)
from banditkit.policies.selection import (
    BOUND_MARGIN,
    Optimistic,
    argmax_on_bounds,
    argmax_random_tie,
)

if TYPE_CHECKING:
    import torch

    from banditkit.core import Policy
    from banditkit.policies.neurallog_base import NeuralLogPolicy
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
    W_1 = w1[s] (S, m, d), w_2 = w2[s] (S, m), updated in place; per step, as
    ``nn.fused.fused_gd`` for one member (reduction "sum" of the loss; ``step`` is
    lr / n for the mean-scaled objective):

        h = relu(X W_1^T),  f = s h w_2,  v = sigmoid(f) - y,
        dW_1 = (s w_2) * (1[h > 0] * v)^T X + lam W_1,   dw_2 = s v^T h + lam w_2,
        W -= step * dW.

    The order of the products differs from ``fused_gd`` (s w_2 multiplies the (m, d)
    gradient instead of the (n, m) block), so the iterates agree up to rounding.
    """
    S, n, _ = X.shape
    m = w1.shape[1]
    with torch.no_grad():
        h = X.new_empty((S, n, m))
        mask = X.new_empty((S, n, m))
        f = X.new_empty((S, 1, n))
        g1 = torch.empty_like(w1)
        g2 = X.new_empty((S, 1, m))
        labels = y.unsqueeze(1)
        for _ in range(steps):
            torch.bmm(X, w1.mT, out=h)
            h.relu_()
            # f as a (1, m) @ (m, n) product per member: a batched GEMV is slower
            torch.bmm(w2.unsqueeze(1), h.mT, out=f)
            v = torch.sigmoid_(f.mul_(out_scale)).sub_(labels)  # (S, 1, n), in f
            torch.sign(h, out=mask)
            mask.mul_(v.mT)
            torch.bmm(mask.mT, X, out=g1)
            g1.mul_(w2.unsqueeze(-1) * out_scale)
            torch.bmm(v, h, out=g2)
            g1.add_(w1, alpha=lam)
            w1.sub_(g1, alpha=step)
            w2.sub_(g2.squeeze(1).mul_(out_scale).add_(w2, alpha=lam), alpha=step)


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
        self._cache: tuple[torch.Tensor, ...] | None = None
        self._sampling = bool(first.sampling)

    @classmethod
    def of(cls, members: list[Policy]) -> BatchedNeuralLog | None:
        """A batch of ``members``, or None unless every one is a NeuralLog policy it supports."""
        from banditkit.policies.neurallog_base import NeuralLogPolicy

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
        self.diag = np.stack([m.design.diagonal for m in self.members])
        self.feature_scale = first._feature_scale()
        scale = first._effdim_scale()
        self.effdim: SeedLogdets | DiagonalLogdets | MemberLogdets | None
        if scale is None:
            self.effdim = None
        else:
            kind = first.effdim.kind  # type: ignore[union-attr]
            if kind == "diagonal":
                self.effdim = DiagonalLogdets(S, self.p, scale)
            elif kind == "full":
                self.effdim = SeedLogdets(S, self.p, scale)
            else:  # "kernel" (large p): the members' own trackers, one by one
                self.effdim = MemberLogdets([m.effdim for m in self.members])  # type: ignore[misc]
        capacity = first.horizon or 1024
        self._X = torch.empty((S, capacity, d), dtype=self._torch_dtype)
        self._y = torch.empty((S, capacity), dtype=self._torch_dtype)
        self._lam = 2.0 * first._lam_now  # the trainer's lam' = 2 lam [Bae2025, Sec. 7]
        assert first.lr is not None
        self._lr = first.lr
        self._mean_scaled = first.loss_reduction == "mean_scaled"

    # ------------------------------------------------------------------ loop
    def _forward(
        self, X: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The members' f (S, K), h (S, K, m) and c = 1[h > 0] s w_2 (S, K, m)."""
        h = torch.bmm(X, self.w1.mT).relu_()
        f = torch.bmm(h, self.w2.unsqueeze(-1)).squeeze(-1).mul_(self.s)
        c = torch.sign(h).mul_((self.s * self.w2).unsqueeze(1))
        return f, h, c

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
        m, d, s = self.m, self.d, self.s
        X = torch.from_numpy(np.asarray(arms, dtype=self._np_dtype))
        f, h, c = self._forward(X)
        u = torch.from_numpy(
            ((self.feature_scale**2) / self.diag).astype(self._np_dtype)
        )
        u1 = u[:, : m * d].view(self.size, m, d)
        u2 = u[:, m * d :].unsqueeze(-1)
        q = (c * c).mul_(torch.bmm(X * X, u1.mT)).sum(-1)
        q.add_(torch.bmm(h * h, u2).squeeze(-1), alpha=s * s)
        self._cache = (X, f, h, c)
        latent = f.to(torch.float64).numpy()
        norms = np.sqrt(q.to(torch.float64).numpy())
        S = self.size
        members = self.members
        nu = self._first.nu
        mean = latent if self._sampling else self._first._mean(latent)
        # Thompson: each member's draws xi, as gaussian_sample makes them
        xi = (
            np.stack([mb.rng.standard_normal(latent.shape[1]) for mb in members])
            if self._sampling
            else None
        )
        decided = np.full(S, -1, dtype=np.int64)
        if self.effdim is None:
            d_eff = np.zeros(S)
        else:
            low, high = self.effdim.bounds()
            pending = high > low
            if pending.any():
                decided = self._decide(mean, norms, xi, low, high, pending)
                self.effdim.resolve(pending & (decided < 0))
            d_eff = self.effdim.bounds()[0]
        actions = np.empty(S, dtype=np.int64)
        for i in np.flatnonzero(decided >= 0):
            actions[i] = decided[i]
        exact = np.flatnonzero(decided < 0)
        radius = np.array([members[i]._radius(float(d_eff[i])) for i in exact])
        width = (nu * radius)[:, None] * norms[exact]
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
        members = self.members
        decided = np.full(self.size, -1, dtype=np.int64)
        rows = np.flatnonzero(pending)
        slope = self._first.nu * norms[rows]
        if xi is not None:
            slope = slope * xi[rows]
        low_radius, high_radius = (
            np.array([members[i]._radius(float(ends[i])) for i in rows])
            for ends in (low, high)
        )
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
        X, f, h, c = self._cache
        self._cache = None
        rows = torch.arange(self.size)
        index = torch.from_numpy(actions)
        x, h_t, c_t = X[rows, index], h[rows, index], c[rows, index]
        # z = g(x_t; theta_{t-1}) = [c x^T (row-major), s h] at selection
        z = torch.cat(
            [(c_t.unsqueeze(-1) * x.unsqueeze(1)).reshape(self.size, -1), self.s * h_t],
            dim=1,
        )
        Z = z.to(torch.float64).numpy()
        latent = f[rows, index].to(torch.float64).numpy()
        n = self._n
        if n == self._X.shape[1]:  # grow the history (no horizon given)
            self._X = torch.cat([self._X, torch.empty_like(self._X)], dim=1)
            self._y = torch.cat([self._y, torch.empty_like(self._y)], dim=1)
        self._X[:, n] = x
        self._y[:, n] = torch.from_numpy(rewards.astype(self._np_dtype))
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
                refit_f = self._forward(x.unsqueeze(1))[0][:, 0]
                latent = refit_f.to(torch.float64).numpy()
            weight = np.maximum(first.link.deriv(latent), _TINY)
        else:
            weight = np.ones(self.size)
        scaled = self.feature_scale * Z
        self.diag = self.diag + weight[:, None] * (scaled * scaled)
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
        finite = torch.isfinite(self.w1).flatten(1).all(1) & torch.isfinite(
            self.w2
        ).all(1)
        if not bool(finite.all()):
            bad = [self.members[i].seed for i in np.flatnonzero(~finite.numpy())]
            raise FloatingPointError(
                f"training diverged on {n} observations for the seeds {bad} at "
                f"lr={self._lr:g}; use a smaller lr."
            )
