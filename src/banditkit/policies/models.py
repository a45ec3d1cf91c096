"""Models behind the linear and generalised-linear policies.

    RidgeModel   theta = V^-1 b,  V = lam I + sum_s x_s x_s^T,  b = sum_s r_s x_s
                 [Abbasi-Yadkori2011, Eq. (5)], kept current by rank-1 updates of linalg.Gram.
    GLMModel     theta = argmin sum_s nll(x_s^T theta, r_s) + lam/2 ||theta||^2
                 [Filippi2010, Sec. 4] by glm.fit_glm, refitted on a schedule, with the design
                 Gram V (for widths ||x||_{V^-1}) and the Laplace precision H(theta) (for sampling).

References:
    [Abbasi-Yadkori2011] Y. Abbasi-Yadkori, D. Pal, C. Szepesvari. Improved algorithms for linear
        stochastic bandits. NeurIPS 2011.
    [Filippi2010] S. Filippi, O. Cappe, A. Garivier, C. Szepesvari. Parametric bandits: the
        generalized linear case. NeurIPS 2010.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg

from banditkit.glm import fit_glm, get_link, glm_hessian
from banditkit.linalg import Gram
from banditkit.policies.history import History

__all__ = ["GLMModel", "RidgeModel"]


class RidgeModel:
    """Ridge regression statistics with O(d^2) updates.

    Args:
        d: Feature dimension.
        lam: Ridge weight, V_0 = lam * I.
    """

    def __init__(self, d: int, lam: float) -> None:
        self.gram = Gram(d, lam)
        self.b = np.zeros(d)
        self._theta: np.ndarray | None = np.zeros(d)

    def add(self, x: np.ndarray, y: float) -> None:
        """Add one observation: V += x x^T, b += y x."""
        self.gram.update(x)
        self.b += y * x
        self._theta = None

    @property
    def theta(self) -> np.ndarray:
        """The ridge estimate V^-1 b (cached until the next ``add``)."""
        if self._theta is None:
            self._theta = self.gram.solve(self.b)
        return self._theta

    def mean(self, x: np.ndarray) -> np.ndarray:
        """x^T theta for each row of x (K, d)."""
        return np.asarray(x @ self.theta)

    def width(self, x: np.ndarray) -> np.ndarray:
        """||x||_{V^-1} for each row."""
        return self.gram.norms(x)

    def sample_theta(self, rng: np.random.Generator, scale: float) -> np.ndarray:
        """Theta + scale * N(0, V^-1) [Agrawal2013, Alg. 1]."""
        return self.theta + scale * self.gram.sample_normal(rng)

    def state_dict(self) -> dict[str, Any]:
        """Arrays and scalars only."""
        return {"gram": self.gram.state_dict(), "b": self.b.copy()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from :meth:`state_dict`."""
        self.gram = Gram.from_state_dict(state["gram"])
        self.b = np.asarray(state["b"], dtype=float).copy()
        self._theta = None


class GLMModel:
    """Regularised maximum-likelihood GLM with a design Gram and a Laplace posterior.

    Args:
        d: Feature dimension.
        lam: Ridge weight of the MLE and start of the design Gram V_0 = lam * I.
        link: "logistic", "probit" or "identity".
    """

    def __init__(self, d: int, lam: float, link: str) -> None:
        self.lam = lam
        self.link = get_link(link)
        self.gram = Gram(d, lam)
        self.history = History(d)
        self.theta = np.zeros(d)
        self._chol: np.ndarray | None = None

    def add(self, x: np.ndarray, y: float) -> None:
        """Record an observation and update the design Gram (no refit)."""
        self.history.append(x, y)
        self.gram.update(x)

    def refit(self) -> None:
        """Re-estimate theta by Newton's method, warm-started at the previous estimate."""
        fit = fit_glm(
            self.history.X,
            self.history.y,
            link=self.link,
            lam=self.lam,
            theta0=self.theta,
        )
        self.theta = fit.theta
        self._chol = None

    def mean(self, x: np.ndarray) -> np.ndarray:
        """The linear predictor x^T theta (monotone in the expected reward)."""
        return np.asarray(x @ self.theta)

    def width(self, x: np.ndarray) -> np.ndarray:
        """||x||_{V^-1} for each row, V the design Gram."""
        return self.gram.norms(x)

    def sample_theta(self, rng: np.random.Generator, scale: float) -> np.ndarray:
        """Theta + scale * N(0, H^-1), H the regularised NLL Hessian at theta (Laplace)."""
        if self._chol is None:
            h = glm_hessian(self.history.X, self.theta, link=self.link, lam=self.lam)
            self._chol = np.linalg.cholesky(h)
        z = rng.standard_normal(self.theta.shape[0])
        return self.theta + scale * scipy.linalg.solve_triangular(
            self._chol.T, z, lower=False
        )

    def state_dict(self) -> dict[str, Any]:
        """Arrays and scalars only."""
        return {
            "gram": self.gram.state_dict(),
            "history": self.history.state_dict(),
            "theta": self.theta.copy(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from :meth:`state_dict`."""
        self.gram = Gram.from_state_dict(state["gram"])
        self.history.load_state_dict(state["history"])
        self.theta = np.asarray(state["theta"], dtype=float).copy()
        self._chol = None
