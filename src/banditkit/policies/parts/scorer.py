"""The scorer part: a model and an uncertainty, giving means and widths for a batch of arms.

    mean_k   = mean(f(x_k; theta))                         (identity or a link's mean)
    width_k  = nu * B(d_eff) * ||scale * z(x_k)||_{A^-1}    A a ``linalg.GramLike``

z(x) are the model's features (x, g(x; theta), g(x; theta_0)); B(d_eff) is a radius the
policy states (1 by default) and d_eff = logdet(I + a sum z z^T) the optional
``linalg.EffectiveDimension`` of the played features. With a diagonal A the squared
widths come straight from the model (``Model.evaluate_sq_norms``, no (K, p) block).
A full ``linalg.Gram`` of a model on an accelerator is kept there instead
(``models.device_gram.DeviceGram``): the (K, p) features stay on the device and the
round reads the K means and widths in one transfer.
A selection rule (``policies.parts.selection``) turns the two arrays into an action.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from banditkit.core.validation import check_scalar
from banditkit.linalg import EffectiveDimension, Gram, GramLike
from banditkit.policies.parts.models import Model
from banditkit.policies.parts.models.device_gram import (
    DeviceGram,
    on_accelerator,
    to_host,
)
from banditkit.policies.parts.selection import RadiusRange

__all__ = ["Scorer"]


def _one(d_eff: float) -> float:
    return 1.0


def _identity(latent: np.ndarray) -> np.ndarray:
    return latent


def _is_checked(z: object, d: int) -> bool:
    """Whether z is a float64 (d,) array, as a model's features are (finite)."""
    return isinstance(z, np.ndarray) and z.dtype == np.float64 and z.shape == (d,)


class Scorer:
    """Means and widths nu * B(d_eff) * ||scale * z||_{A^-1} of a batch of arms.

    The features of the last scored batch are kept, so that ``played`` returns the
    z(x_t) of the arm played at the parameter in force when it was selected.

    Args:
        model: A ``policies.parts.models.Model``.
        design: The Gram A of the features (``linalg.Gram``, ``DiagonalGram`` or
            ``ShiftedGram``), p = ``model.n_params``.
        nu: Exploration scale, >= 0.
        radius: B(d_eff) (a constant 1 by default).
        feature_scale: z is multiplied by this before it enters A and the norms
            (e.g. 1/sqrt(m) for NeuralUCB).
        mean: Map from the model's latent to the reported mean (identity by default;
            e.g. the logistic mean).
        effdim: The effective-dimension tracker B reads, or None.

    Example:
        >>> from banditkit.linalg import Gram
        >>> from banditkit.policies.parts.models import RidgeModel
        >>> scorer = Scorer(RidgeModel(2, 1.0), Gram(2, 1.0), nu=2.0)
        >>> mean, width = scorer.score(np.eye(2))
        >>> mean.tolist(), width.tolist()
        ([0.0, 0.0], [2.0, 2.0])
    """

    #: What an update changes inside (``core.transaction``); the cache is replaced.
    _undo_parts: ClassVar[tuple[str, ...]] = ("model", "design", "effdim")

    def __init__(
        self,
        model: Model,
        design: GramLike,
        *,
        nu: float = 1.0,
        radius: Callable[[float], float] = _one,
        feature_scale: float = 1.0,
        mean: Callable[[np.ndarray], np.ndarray] = _identity,
        effdim: EffectiveDimension | None = None,
    ) -> None:
        self.model = model
        if type(design) is Gram and on_accelerator(getattr(model, "device", None)):
            # a full Gram of a model on an accelerator lives next to its features
            design = DeviceGram(design.d, design.lam, device=model.device)  # type: ignore[attr-defined]
        self.design = design
        self.nu = nu
        self.radius = radius
        self.feature_scale = feature_scale
        self.mean = mean
        self.effdim = effdim
        self._cache: tuple[np.ndarray, np.ndarray, np.ndarray | None] | None = None

    @property
    def d_eff(self) -> float:
        """The current d_eff (0 without a tracker)."""
        return 0.0 if self.effdim is None else self.effdim.value

    def score(self, arms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return mean(f(x_k)) (K,) and nu * B * ||scale * z_k||_{A^-1} (K,)."""
        mean, norms = self.score_parts(arms)
        radius = self.radius(self.d_eff)
        return mean, (self.nu * radius) * norms

    def radius_range(self) -> RadiusRange:
        """The width factor nu * B(d_eff) of this round, on the bounds of a pending d_eff.

        A blocked tracker (``EffectiveDimension(block=...)``) brackets d_eff until it is
        read; a rule decides on B(low) and B(high) when it can
        (``selection.Optimistic.select_bracketed``) and reads B(d_eff) otherwise.
        """
        if self.effdim is not None:
            low, high = self.effdim.bounds()
            if low != high:
                return RadiusRange(
                    self.nu,
                    self.radius(low),
                    self.radius(high),
                    True,
                    lambda: self.radius(self.d_eff),
                )
        return RadiusRange.known(self.nu, self.radius(self.d_eff))

    def score_parts(self, arms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return mean(f(x_k)) (K,) and ||scale * z_k||_{A^-1} (K,): ``score`` without B.

        For a caller that decides on bounds of B(d_eff) before reading d_eff.
        """
        scale = self.feature_scale
        if self.design.is_diagonal:
            inv_diag = (scale * scale) / self.design.diagonal
            latent, sq = self.model.evaluate_sq_norms(arms, inv_diag)
            self._cache = (arms, latent, None)
            norms = np.sqrt(sq)
        elif isinstance(self.design, DeviceGram):  # features and widths on the device
            latent_t, feats_t = self.model.evaluate_tensors(arms)  # type: ignore[attr-defined]
            z_t = feats_t if scale == 1.0 else scale * feats_t
            latent, norms = to_host(latent_t, self.design.norms_tensor(z_t))
            self._cache = (arms, latent, feats_t)
        else:
            latent, feats = self.model.evaluate(arms)
            self._cache = (arms, latent, feats)
            z = feats if scale == 1.0 else scale * feats
            norms = self.design.norms_unchecked(z)  # z comes from the model
        return self.mean(latent), norms

    def pair_scores(self, arms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return the means (K,) and nu * B * ||scale (z_k - z_k')||_{A^-1} (K, K).

        The widths of a duel of k against k' under a model of utility differences
        (BTL): the rule ``selection.OptimisticPair`` adds them to mean_k + mean_k'.
        """
        latent, feats = self.model.evaluate(arms)
        self._cache = (arms, latent, feats)
        # ||scale (z_k - z_k')|| = |scale| ||z_k - z_k'||: the scale enters once, on
        # the (K, K) result, and the norms come from Z A^-1 Z^T in O(K p^2 + K^2 p).
        norms = self.design.pair_norms_unchecked(feats)  # feats come from the model
        factor = self.nu * self.radius(self.d_eff) * abs(self.feature_scale)
        return self.mean(latent), factor * norms

    def played(self, arms: np.ndarray, k: int) -> tuple[np.ndarray, float, np.ndarray]:
        """The row x_k, its latent and its unscaled features z(x_k) as scored.

        From the last ``score`` of this very ``arms`` array (the parameter in force at
        selection); recomputed at the current parameter otherwise.
        """
        x = arms[k]
        cache = self._cache
        if cache is not None and cache[0] is arms:
            latent = float(cache[1][k])
            if isinstance(cache[2], np.ndarray):
                z = np.array(cache[2][k])
            elif cache[2] is not None:  # a device row (DeviceGram): it stays there
                z = cache[2][k]
            else:  # from the model's scoring pass if it kept one, else afresh
                kept = getattr(self.model, "scored_features", None)
                scored = None if kept is None else kept(k)
                # afresh on every arm, as the pass did: a product of another shape may
                # round otherwise (float32), and an undone update must replay bitwise
                z = self.model.features(arms)[k] if scored is None else scored
        else:  # an update without a preceding score of this context
            lat, feats = self.model.evaluate(x[None, :])
            latent, z = float(lat[0]), np.array(feats[0])
        self._cache = None
        return x, latent, z

    def track(self, z: np.ndarray) -> None:
        """d_eff += the played features z (no-op without a tracker)."""
        if self.effdim is not None:
            if not isinstance(
                z, np.ndarray
            ):  # a device row: the tracker is on the host
                z = np.asarray(z.cpu(), dtype=np.float64)
            if _is_checked(z, self.effdim.gram.d):  # z comes from the model
                self.effdim.update_unchecked(z)
            else:
                self.effdim.update(z)

    def add(self, z: np.ndarray, weight: float = 1.0) -> None:
        """A += weight * (scale z)(scale z)^T."""
        scale = self.feature_scale
        z = z if scale == 1.0 else scale * z
        unchecked = getattr(self.design, "update_unchecked", None)
        if unchecked is None or not _is_checked(z, self.design.d):
            self.design.update(z, weight)
        else:  # z comes from the model (finite): the same arithmetic, no checks
            unchecked(z, check_scalar("weight", weight, low=0.0, low_open=True))

    def state_dict(self) -> dict[str, Any]:
        """The model, the design and the tracker (arrays and scalars only)."""
        state = {"model": self.model.state_dict(), "design": self.design.state_dict()}
        if self.effdim is not None:
            state["effdim"] = self.effdim.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from :meth:`state_dict`."""
        self.model.load_state_dict(state["model"])
        self.design.load_state_dict(state["design"])
        if self.effdim is not None:
            self.effdim.load_state_dict(state["effdim"])
