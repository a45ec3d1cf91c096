"""The composed base of the neural and logistic policies: mean + nu * B * ||z||_{A^-1}.

Every policy of ``policies.neural``, ``policies.neurallog`` and ``policies.logistic`` is
one composition of the parts

    history      rows (x_i, r_i)                                    [policies.history]
    scorer       a Model (NeuralModel, TangentModel or GLMModel)    [policies.models]
                 and its uncertainty: A = ridge * I + sum_i w_i z_i z_i^T, a linalg
                 GramLike of the features z_i = g(x_i; theta_{i-1}) (or x_i) stored when
                 x_i was played, and a radius B(d_eff) from an EffectiveDimension
                                                                    [policies.scorer]
    selection    Optimistic (UCB) or Sampled (TS)                   [policies.selection]
    schedule     Periodic(update_every)                             [policies.schedules]

A subclass states its formulas (the model, A_0, B, the mean, the weights) through small
hooks (``_make_model``, ``_make_design``, ``_ridge``, ``_feature_scale``,
``_effdim_scale``, ``_effdim_kind``, ``_effdim_block``, ``_mean``, ``_radius``,
``_weight``, ``_advance``) and two class attributes; ``_build`` composes the parts and
the loop below is shared.

References:
    [Bae2025] S. Bae, D. Lee. Neural logistic bandits. arXiv:2505.02069.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, cast

import numpy as np

from banditkit.core import Context, ContextualPolicy
from banditkit.core.types import Action, Feedback
from banditkit.glm import Link, LogisticLink
from banditkit.linalg import EffectiveDimension, GramLike, make_gram
from banditkit.policies.parts.history import History
from banditkit.policies.parts.models import Model
from banditkit.policies.parts.schedules import Periodic
from banditkit.policies.parts.scorer import Scorer
from banditkit.policies.parts.selection import (
    Optimistic,
    Rule,
    Sampled,
    argmax_on_bounds,
    argmax_random_tie,
)

if TYPE_CHECKING:
    import torch

__all__ = ["R_LOGISTIC", "ScoredPolicy"]

#: Upper bound R on the slope of the sigmoid, mu' <= 1/4 [Bae2025, Sec. 2].
R_LOGISTIC = 0.25
_TINY = float(np.finfo(np.float64).tiny)


class ScoredPolicy(ContextualPolicy):
    """Shared loop: score each arm by mean + nu * B * ||z||_{A^-1}, or sample around it.

    In round t, with theta = theta_{t-1} (the parameter in force):

        latent_k, z_k = model.evaluate(x_k)          f(x_k; theta), g(x_k; theta)
        width_k       = ||feature_scale * z_k||_{A^-1}
        UCB:  play argmax_k mean(latent_k) + nu * B(d_eff) * width_k
        TS:   play argmax_k of N(latent_k, (nu * B(d_eff) * width_k)^2)

    After observing r_t: record (x_t, r_t), d_eff += z_t (with the tracker's scale),
    ``_advance`` (round-dependent constants such as lam_t), refit when the schedule is
    due, then A += w_t * z_t z_t^T with z_t computed at selection time ([Bae2025, Algs. 1-2];
    docs/logistic.md, section "Shared loop") and w_t = 1 or mu'(latent(x_t; theta_t)) with
    theta_t the parameter AFTER this round's refit (frozen once added; [Bae2025, Alg. 2]).

    The parts are ``self.history``, ``self.scorer`` (``model``, ``design`` and ``effdim``
    are its model, Gram and tracker), ``self.rule`` and ``self.schedule``.

    Subclasses set ``sampling`` (False: UCB, True: TS) and ``weighted`` (True for the
    variance-weighted A of NeuralLog-UCB-2 / TS-2 / ada-OFU-ECOLog), and implement
    ``_make_model``, ``_ridge``, ``_mean`` and ``_radius``; ``_effdim_scale`` returns
    None when the radius does not use d_eff.
    """

    sampling: ClassVar[bool] = False
    #: False when ``_make_model`` builds no network (a GLM): its ``generator`` is then None
    #: and PyTorch is never imported; the seed's one draw from ``rng`` is made either way.
    needs_torch = True
    weighted: ClassVar[bool] = False
    #: The link of the reward model; its slope mu' weights A when ``weighted``.
    link: ClassVar[Link] = LogisticLink()
    gram: str
    nu: float
    update_every: int

    # ------------------------------------------------------------------ hooks
    def _make_model(self, d: int, generator: torch.Generator) -> Model:
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

    def _effdim_kind(self) -> str:
        """How d_eff is computed (``linalg.EFFDIMS``): like A (``self.gram``) here."""
        return self.gram

    def _effdim_block(self) -> int:
        """Rows per BLAS-3 fold of an exact d_eff (``linalg.EffectiveDimension``); 1 here.

        Above 1 the tracker brackets d_eff between reads and ``_act`` selects on the
        bounds when they suffice, which requires ``_radius`` nondecreasing in d_eff.
        """
        return 1

    def _mean(self, latent: np.ndarray) -> np.ndarray:
        """The mean the bonus is added to (latent by default)."""
        return latent

    def _radius(self, d_eff: float) -> float:
        """B(d_eff), the width multiplier besides nu."""
        raise NotImplementedError

    def _weight(self, latent: float) -> float:
        """w_t of the new term of A: mu'(latent) of ``link`` if weighted, else 1."""
        if not self.weighted:
            return 1.0
        return max(float(self.link.deriv(np.array(latent))), _TINY)

    # ------------------------------------------------------------------ parts
    def _setup(self, ctx: Context) -> None:
        assert self.d is not None
        # One integer from the policy's stream seeds the network (nn.make_generator's draw).
        self._build(self.d, self._generator(int(self.rng.integers(0, 2**63 - 1))))

    def _generator(self, seed: int) -> torch.Generator:
        """A torch generator seeded with ``seed``; None when the class ``needs_torch`` not."""
        if not self.needs_torch:
            return cast("torch.Generator", None)
        import torch

        return torch.Generator().manual_seed(seed)

    def _build(self, d: int, generator: torch.Generator) -> None:
        """Compose the parts: history, scorer (model + uncertainty), rule, schedule."""
        self.history = History(d)
        model = self._make_model(d, generator)
        p = model.n_params
        scale = self._effdim_scale()
        self.scorer = Scorer(
            model,
            self._make_design(p),
            nu=self.nu,
            radius=self._radius,
            feature_scale=self._feature_scale(),
            mean=(lambda latent: latent) if self.sampling else self._mean,
            effdim=None
            if scale is None
            else EffectiveDimension(
                p, scale, self._effdim_kind(), block=self._effdim_block()
            ),
        )
        self.rule: Rule = Sampled() if self.sampling else Optimistic()
        self.schedule = Periodic(self.update_every)

    @property
    def model(self) -> Model:
        """The scorer's model."""
        return self.scorer.model

    @property
    def design(self) -> GramLike:
        """The scorer's Gram A."""
        return self.scorer.design

    @property
    def effdim(self) -> EffectiveDimension | None:
        """The scorer's d_eff tracker (None when B does not use it)."""
        return self.scorer.effdim

    # ------------------------------------------------------------------ loop
    def scores(self, ctx: Context) -> tuple[np.ndarray, np.ndarray]:
        """Return the means and the widths nu * B * ||z_k||_{A^-1} of the K arms.

        For UCB policies the index is their sum; TS policies use the widths as the
        standard deviations. With a diagonal A the squared widths come straight from
        the model (no (K, p) block); with a full A the features are built and cached
        for the following ``update``.
        """
        self._check_context(ctx)
        return self.scorer.score(ctx.arms)

    def _act(self, ctx: Context) -> Action:
        effdim = self.scorer.effdim
        if effdim is not None:
            low, high = effdim.bounds()
            if low != high:
                return self._act_on_bounds(ctx, low, high)
        mean, width = self.scorer.score(ctx.arms)
        return self.rule.select(mean, width, self.rng)

    def _act_on_bounds(self, ctx: Context, low: float, high: float) -> Action:
        """The selection, decided on bounds low <= d_eff <= high when they suffice.

        A blocked d_eff tracker (``_effdim_block`` > 1) brackets d_eff until it is read.
        B(d_eff) does not decrease with d_eff and every score is linear in B, so an arm
        that is the unique best, by a margin, at both ends of [B(low), B(high)] is the
        exact selection (``selection.argmax_on_bounds``), and d_eff is not computed this
        round; otherwise it is, and the rule selects as usual. The actions are those of
        the exact computation; Thompson draws are made first, as ``Sampled`` makes them.
        """
        mean, norms = self.scorer.score_parts(ctx.arms)
        slope = self.nu * norms
        xi = None
        if self.sampling:  # gaussian_sample's draws, before the decision
            xi = self.rng.standard_normal(mean.shape)
            slope = slope * xi
        arm = int(argmax_on_bounds(mean, slope, self._radius(low), self._radius(high)))
        if arm >= 0:
            return arm
        width = (self.nu * self._radius(self.scorer.d_eff)) * norms
        if xi is None:
            return self.rule.select(mean, width, self.rng)
        return argmax_random_tie(mean + 1.0 * width * xi, self.rng)

    def _update(self, ctx: Context, action: Action, feedback: Feedback) -> None:
        assert isinstance(action, int)
        x = ctx.arms[action]
        # z at the parameter in force at selection (before this round's refit)
        latent, z = self.scorer.played(ctx.arms, action)
        self.history.append(x, float(feedback))
        self.scorer.track(z)
        self._advance()
        refitted = self.schedule.due(self.history.n, self.design)
        if refitted:
            self.model.fit(self.history)
            self._n_updates += 1
        if self.weighted and (refitted or self.model.linearised):
            latent = self.model.latent(x)  # f(x_t; theta_t), after this round's refit
        self.scorer.add(z, self._weight(latent))

    # ------------------------------------------------------------------ state
    def _state(self) -> dict[str, Any]:
        return {
            "history": self.history.state_dict(),
            "schedule": self.schedule.state_dict(),
            **self.scorer.state_dict(),
        }

    def _load_state(self, state: dict[str, Any]) -> None:
        assert self.d is not None
        # theta_0 and theta come from the state: leave self.rng (already restored) alone.
        self._build(self.d, self._generator(0))
        self.history.load_state_dict(state["history"])
        self.schedule.load_state_dict(state["schedule"])
        self.scorer.load_state_dict(state)
        self._advance()
