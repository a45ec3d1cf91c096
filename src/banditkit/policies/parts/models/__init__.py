"""One Model protocol for the ridge, GLM and neural models of every policy family.

    RidgeModel    theta = V^-1 b by rank-1 updates          features x          (linear)
    GLMModel      regularised MLE by Newton (glm.fit_glm)    features x          (linear)
    NeuralModel   nn.MLP trained by nn.Trainer               features g(x; theta)(neural)
    TangentModel  theory-mode network, features g(x; theta_0)                    (neural)
    NeuralLinearModel  nn.NeuralLinear trained by nn.fit     features phi(x), the last
                  hidden layer (neural-linear: a Gram on the representation)

A model is fitted on a history (``policies.parts.history``: rows, pairs or sets, whichever
its loss reads), predicts the means of a batch of arms, and gives the features z(x)
that the uncertainty part turns into widths ||z||_{A^-1}. The policy owns the history
and the Gram matrix; the model owns its parameters.

The neural models take ``dtype`` ("float64" | "float32") and ``device`` ("cpu" | "cuda"
| "cuda:N" | "auto") and resolve them themselves (``nn.resolve_dtype``,
``nn.resolve_device``: a missing device is a ``ValueError`` naming it); a policy only
hands them over. Their network, its training and a mirror of the history
(``DeviceObservations``: preallocated device buffers, grown geometrically, that receive
each row once) live on that device; what the methods return is float64 on the host.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

from banditkit.policies.parts.history import History, PairHistory, SetHistory
from banditkit.policies.parts.models.device_history import (
    DeviceObservations,
    GroupedRows,
    observations_of,
)
from banditkit.policies.parts.models.linear import GLMModel, RidgeModel
from banditkit.policies.parts.models.neural import NeuralModel, TangentModel
from banditkit.policies.parts.models.neural_linear import NeuralLinearModel

__all__ = [
    "DeviceObservations",
    "GLMModel",
    "GroupedRows",
    "HistoryLike",
    "Model",
    "NeuralLinearModel",
    "NeuralModel",
    "RidgeModel",
    "TangentModel",
    "observations_of",
]

#: What a model is fitted on.
HistoryLike = History | PairHistory | SetHistory


@runtime_checkable
class Model(Protocol):
    """A model f(x; theta) of the arms' means, with the features its uncertainty uses.

    Shapes: X (K, d) arms; means (K,) for one member, (M, K) for a model with M
    members (``members`` > 1, e.g. an ensemble); features (K, p), p = ``n_params``.
    """

    #: Number of stacked members (1 for a single model).
    members: int
    #: True when ``predict`` is a linearisation and ``latent`` the model's own output.
    linearised: bool

    @property
    def n_params(self) -> int:
        """Dimension p of the features."""
        ...

    def fit(self, history: Any) -> None:
        """Re-estimate theta on the history (warm-started where the model allows)."""
        ...

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Means f(x_k; theta) on the latent scale, (K,) (or (M, K))."""
        ...

    def features(self, X: np.ndarray) -> np.ndarray:
        """Features z(x_k) of the uncertainty, (K, p): x, g(x; theta), g(x; theta_0), phi(x)."""
        ...

    def evaluate(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``predict`` and ``features`` in one pass."""
        ...

    def evaluate_sq_norms(
        self, X: np.ndarray, inv_diag: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """``predict`` and sum_j z_kj^2 inv_diag_j, without the (K, p) block if possible."""
        ...

    def latent(self, x: np.ndarray) -> float:
        """f(x; theta) of one arm x (d,), the model's own output."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """Arrays and JSON-able scalars only."""
        ...

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from ``state_dict``."""
        ...
