"""The composed base of the neural and logistic policies: mean + nu * B * ||z||_{A^-1}.

Every policy of ``policies.neural``, ``policies.neurallog`` and ``policies.logistic`` is
one choice of

    model        NeuralModel (f, g by nn.forward_and_grads, nn.Trainer) or
                 LinearLogisticModel (x^T theta by glm.fit_glm)     [policies.neural_parts]
    uncertainty  A = ridge * I + sum_i w_i z_i z_i^T, a linalg Gram or DiagonalGram of the
                 features z_i = g(x_i; theta_{i-1}) (or x_i) stored when x_i was played,
                 and a radius B(d_eff) from the EffectiveDimension tracker
    selection    optimistic_argmax (UCB) or gaussian_sample (TS)    [policies.selection]
    schedule     Periodic(update_every)                             [policies.schedules]

A subclass states its formulas through small hooks (``_make_model``, ``_make_design``,
``_ridge``, ``_feature_scale``, ``_effdim_scale``, ``_mean``, ``_radius``, ``_weight``,
``_advance``) and two class attributes; the loop below is shared.

References:
    [Bae2025] S. Bae, D. Lee. Neural logistic bandits. arXiv:2505.02069.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import torch

from banditkit.core import Context, Policy
from banditkit.core.types import Action, Feedback
from banditkit.glm import LogisticLink
from banditkit.linalg import EffectiveDimension, GramLike, make_gram
from banditkit.nn import make_generator
from banditkit.policies.neural_parts import LinearLogisticModel, NeuralModel
from banditkit.policies.schedules import Periodic
from banditkit.policies.selection import gaussian_sample, optimistic_argmax

__all__ = ["R_LOGISTIC", "ScoredPolicy"]

#: Upper bound R on the slope of the sigmoid, mu' <= 1/4 [Bae2025, Sec. 2].
R_LOGISTIC = 0.25
_LINK = LogisticLink()
_TINY = float(np.finfo(np.float64).tiny)


class ScoredPolicy(Policy):
    """Shared loop: score each arm by mean + nu * B * ||z||_{A^-1}, or sample around it.

    In round t, with theta = theta_{t-1} (the parameter in force):

        latent_k, z_k = model.evaluate(x_k)          f(x_k; theta), g(x_k; theta)
        width_k       = ||feature_scale * z_k||_{A^-1}
        UCB:  play argmax_k mean(latent_k) + nu * B(d_eff) * width_k
        TS:   play argmax_k of N(latent_k, (nu * B(d_eff) * width_k)^2)

    After observing r_t: record (x_t, r_t), d_eff += z_t (with the tracker's scale),
    ``_advance`` (round-dependent constants such as lam_t), refit when the schedule is
    due, then A += w_t * z_t z_t^T with z_t computed at selection time ([Bae2025, Sec. 2.5];
    specs/logistic.md Sec. 7.4) and w_t = 1 or mu'(latent(x_t; theta_t)) with theta_t
    the parameter AFTER this round's refit (frozen once added; Sec. 7.5).

    Subclasses set ``sampling`` (False: UCB, True: TS) and ``weighted`` (True for the
    variance-weighted A of NeuralLog-UCB-2 / TS-2 / ada-OFU-ECOLog), and implement
    ``_make_model``, ``_ridge``, ``_mean`` and ``_radius``; ``_effdim_scale`` returns
    None when the radius does not use d_eff.
    """

    sampling: ClassVar[bool] = False
    weighted: ClassVar[bool] = False
    gram: str
    nu: float
    update_every: int

    # ------------------------------------------------------------------ hooks
    def _make_model(
        self, d: int, generator: torch.Generator
    ) -> NeuralModel | LinearLogisticModel:
        """The model; ``generator`` draws a network's theta_0."""
        raise NotImplementedError

    def _ridge(self) -> float:
        """A_0 = ridge * I."""
        raise NotImplementedError

    def _make_design(self, p: int) -> GramLike:
        """The design A (p x p): a fixed-ridge ``make_gram(self.gram, p, ridge)``."""
        return make_gram(self.gram, p, self._ridge())

    def _advance(self) -> None:
        """Update round-dependent constants after d_eff has seen z_t (no-op here)."""

    def _feature_scale(self) -> float:
        """Factor applied to z before it enters A and the norms (1 in practical mode)."""
        return 1.0

    def _effdim_scale(self) -> float | None:
        """Scale a of d_eff = logdet(I + a sum z z^T), or None if unused."""
        return R_LOGISTIC

    def _mean(self, latent: np.ndarray) -> np.ndarray:
        """The mean the bonus is added to (latent by default)."""
        return latent

    def _radius(self, d_eff: float) -> float:
        """B(d_eff), the width multiplier besides nu."""
        raise NotImplementedError

    def _weight(self, latent: float) -> float:
        """w_t of the new term of A: mu'(latent) if weighted, else 1."""
        if not self.weighted:
            return 1.0
        return max(float(_LINK.deriv(np.array(latent))), _TINY)

    # ------------------------------------------------------------------ loop
    def _setup(self, ctx: Context) -> None:
        assert self.d is not None
        self.schedule = Periodic(self.update_every)
        self._build(self.d, make_generator(self.rng))

    def _build(self, d: int, generator: torch.Generator) -> None:
        self.model = self._make_model(d, generator)
        p = self.model.n_params
        self.design: GramLike = self._make_design(p)
        scale = self._effdim_scale()
        self.effdim = None if scale is None else EffectiveDimension(p, scale, self.gram)
        self._cache: tuple[np.ndarray, np.ndarray, np.ndarray | None] | None = None

    def scores(self, ctx: Context) -> tuple[np.ndarray, np.ndarray]:
        """Return the means and the widths nu * B * ||z_k||_{A^-1} of the K arms.

        For UCB policies the index is their sum; TS policies use the widths as the
        standard deviations. With a diagonal A the squared widths come straight from
        the model (``evaluate_diagonal``, no (K, p) block); with a full A the features
        are built and cached for the following ``update``.
        """
        self._check_context(ctx)
        return self._scores(ctx)

    def _scores(self, ctx: Context) -> tuple[np.ndarray, np.ndarray]:
        """``scores`` on a context already validated by ``Policy.act``."""
        scale = self._feature_scale()
        if self.design.is_diagonal:
            inv_diag = (scale * scale) / self.design.diagonal
            latent, sq = self.model.evaluate_diagonal(ctx.arms, inv_diag)
            self._cache = (ctx.arms, latent, None)
            norms = np.sqrt(sq)
        else:
            latent, feats = self.model.evaluate(ctx.arms)
            self._cache = (ctx.arms, latent, feats)
            z = feats if scale == 1.0 else scale * feats
            norms = self.design.norms_unchecked(z)  # z comes from the model
        radius = self._radius(0.0 if self.effdim is None else self.effdim.value)
        mean = latent if self.sampling else self._mean(latent)
        return mean, (self.nu * radius) * norms

    def _act(self, ctx: Context) -> Action:
        mean, width = self._scores(ctx)
        if self.sampling:
            return gaussian_sample(mean, width, 1.0, self.rng)
        return optimistic_argmax(mean, width, 1.0, self.rng)

    def _update(self, ctx: Context, action: Action, feedback: Feedback) -> None:
        assert isinstance(action, int)
        x = ctx.arms[action]
        cache = self._cache
        if cache is not None and cache[0] is ctx.arms:
            latent = float(cache[1][action])
            # z at the parameter in force at selection (before this round's refit)
            z = (
                self.model.features(x)
                if cache[2] is None
                else np.array(cache[2][action])
            )
        else:  # update without a preceding act on this context
            lat, feats = self.model.evaluate(x[None, :])
            latent, z = float(lat[0]), np.array(feats[0])
        self._cache = None
        self.model.add(x, float(feedback))
        if self.effdim is not None:
            self.effdim.update(z)
        self._advance()
        refitted = self.schedule.due(self.model.history.n)
        if refitted:
            self.model.refit()
            self._n_updates += 1
        if self.weighted and (refitted or self.model.linearised):
            latent = self.model.latent(x)  # f(x_t; theta_t), after this round's refit
        scale = self._feature_scale()
        self.design.update(z if scale == 1.0 else scale * z, self._weight(latent))

    # ------------------------------------------------------------------ state
    def _state(self) -> dict[str, Any]:
        state = {"model": self.model.state_dict(), "design": self.design.state_dict()}
        if self.effdim is not None:
            state["effdim"] = self.effdim.state_dict()
        return state

    def _load_state(self, state: dict[str, Any]) -> None:
        assert self.d is not None
        self.schedule = Periodic(self.update_every)
        # theta_0 and theta come from the state: leave self.rng (already restored) alone.
        self._build(self.d, torch.Generator().manual_seed(0))
        self.model.load_state_dict(state["model"])
        self.design.load_state_dict(state["design"])
        if self.effdim is not None:
            self.effdim.load_state_dict(state["effdim"])
        self._advance()
