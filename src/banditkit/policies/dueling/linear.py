"""Linear contextual dueling baselines of [Oh2025, Sec. 6]: CoLSTIM [Bengs2022], VACDB [Di2023].

Both model u(x) = theta^T x under a preference link g (``link``: BTL by default, or
Thurstone / any glm link), fitted as a binary GLM with that link on the differences
z = x_1 - x_2 of the played pairs (``GLMModel`` on a ``PairHistory``, Newton's method), with
Gram matrices of those differences (``linalg.Gram``) and the pair norms
||x_k - x_k'||_{M^-1} (``Gram.pair_norms_unchecked``).

CoLSTIM [Bengs2022] (its outline as in the public VACDB code base):

    c = sqrt(d log T),  beta = 2 sqrt(d log T),  p_t = min(1, d log(d T) / sqrt(t))
    eps_k ~ Gumbel(0, 1) clipped to [-c, c]; with probability p_t one draw for every arm
    k1 = argmax_k theta^T x_k + eps_k ||x_k||_{M^-1}
    k2 = argmax_k theta^T (x_k - x_k1) + beta ||x_k - x_k1||_{M^-1}
    theta = argmin (1/t) sum_s nll(z_s^T theta, o_s) + kappa lam ||theta||^2,  M = lam_M I + sum z z^T

VACDB [Di2023] (SupLinUCB-type, variance-aware by the weights w = 2^-l / ||z||):
L = ceil(log2(1 / alpha)) layers, layer l with Sigma_l = 2^-2l I + sum w^2 z z^T and its own
weighted MLE (penalty kappa 2^-2l ||theta||^2). Per round, from A = all arms and l = 1:
(i) every pair of A has ||x_i - x_j||_{Sigma_l^-1} <= alpha: play
argmax_{i, j in A} theta_l^T (x_i + x_j) + beta ||x_i - x_j|| and learn nothing; (ii) every
pair <= 2^-l: keep the arms within 2^-l beta of the best theta_l^T x and go to layer l + 1;
(iii) otherwise play the pair of largest norm (> 2^-l) and add it to layer l with w.

Our simplifications (the paper gives no baseline settings, [Oh2025, Sec. 6]): beta of VACDB
is a constant (its theory value needs constants of the analysis); T is the horizon when
known, else the current round.

References:
    [Bengs2022] V. Bengs, A. Saha, E. Hüllermeier. Stochastic contextual dueling bandits under
        linear stochastic transitivity models. ICML 2022.
    [Di2023] Q. Di, T. Jin, Y. Wu, H. Zhao, F. Farnoud, Q. Gu. Variance-aware regret bounds for
        stochastic contextual dueling bandits. ICLR 2024.
    [Oh2025] Y. Oh, J. Park, T. Paik. Neural variance-aware dueling bandits with deep
        representation and shallow exploration. arXiv:2506.01250 (AISTATS 2026).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from banditkit.core import POLICIES, Context, DuelingPolicy
from banditkit.core.params import POSITIVE, Maybe, Real, param
from banditkit.core.types import Action, Feedback
from banditkit.glm.duel_links import get_duel_link
from banditkit.linalg import Gram
from banditkit.policies.dueling.network import DUEL_LINK
from banditkit.policies.parts.history import PairHistory
from banditkit.policies.parts.propensity import (
    MonteCarlo,
    PointLaw,
    SampledLaw,
    monte_carlo,
)

if TYPE_CHECKING:
    from banditkit.policies.parts.models import GLMModel

__all__ = ["VACDB", "CoLSTIM"]


def _colstim_law(
    f: np.ndarray,
    norms: np.ndarray,
    seconds: np.ndarray,
    p_t: float,
    c: float,
    chosen: tuple[int, int],
    mc: MonteCarlo,
) -> SampledLaw:
    """CoLSTIM's law over pairs from ``mc.samples`` further draws of its coin and Gumbels.

    The first arm is argmax_k f_k + eps_k ||x_k||, eps the clipped Gumbel perturbation
    (shared by the arms with probability p_t); the second is ``seconds[k1]``.
    """
    K, n, rng = f.shape[0], mc.samples, mc.rng()
    shared = rng.random(n) < p_t
    gumbel = -np.log(-np.log(rng.uniform(1e-12, 1.0 - 1e-12, size=(n, K))))
    eps = np.clip(np.where(shared[:, None], gumbel[:, :1], gumbel), -c, c)
    firsts = np.argmax(f + eps * norms, axis=1)
    flat = firsts * K + seconds[firsts]
    counts = np.bincount(flat, minlength=K * K).reshape(K, K).astype(float)
    return SampledLaw(counts, n, chosen)


def _first_pair(scores: np.ndarray) -> tuple[int, int]:
    flat = int(np.argmax(scores))
    return flat // scores.shape[1], flat % scores.shape[1]


@POLICIES.register("colstim")
class CoLSTIM(DuelingPolicy):
    """CoLSTIM [Bengs2022]: a perturbed first arm, an optimistic challenger (module docstring).

    Args:
        lam: Ridge lambda of the MLE (with kappa), > 0 (0.001).
        kappa: Factor of the MLE penalty, > 0 (0.1).
        gram_lam: M_0 = gram_lam I, > 0 (1.0).
        beta: Confidence width of the challenger; None: 2 sqrt(d log T).
        link: The preference link of the MLE: "btl" (alias "logistic", the default),
            "thurstone" (alias "probit") or a ``glm.Link`` / ``DuelLink``.
        seed: Seed of the policy's stream.

    Example:
        >>> from banditkit.core import Context
        >>> i, j = CoLSTIM(seed=0).act(Context(arms=np.eye(3)))
        >>> 0 <= i < 3 and 0 <= j < 3
        True
    """

    lam: float = param(POSITIVE, default=0.001)
    kappa: float = param(POSITIVE, default=0.1)
    gram_lam: float = param(POSITIVE, default=1.0)
    beta: float | None = param(Maybe(Real(low=0.0)), default=None)
    link: Any = param(DUEL_LINK, default="btl")

    def _resolve(self) -> None:
        self._link = get_duel_link(self.link)

    def _setup(self, ctx: Context) -> None:
        # imported here: banditkit.policies.parts.models also holds the (PyTorch) neural models
        from banditkit.policies.parts.models import GLMModel

        assert self.d is not None
        self.model: GLMModel = GLMModel(self.d, lam=self.lam, link=self._link.glm)
        self.design = Gram(self.d, self.gram_lam)
        self.history = PairHistory(self.d)

    def _log_T(self) -> float:
        T = self.horizon if self.horizon is not None else self.t + 1
        return math.log(max(T, 2))

    def _act(self, ctx: Context) -> Action:
        assert self.d is not None
        X, K, t = ctx.arms, ctx.n_arms, self.t + 1
        log_T = self._log_T()
        c = math.sqrt(self.d * log_T)
        p_t = min(1.0, self.d * (math.log(self.d) + log_T) / math.sqrt(t))
        shared = self.rng.random() < p_t
        gumbel = -np.log(-np.log(self.rng.uniform(1e-12, 1.0 - 1e-12, size=K)))
        eps = np.clip(np.full(K, gumbel[0]) if shared else gumbel, -c, c)
        f = X @ self.model.theta
        norms = self.design.norms_unchecked(np.array(X))
        k1 = int(np.argmax(f + eps * norms))
        beta = 2.0 * math.sqrt(self.d * log_T) if self.beta is None else self.beta
        pair_norms = self.design.pair_norms_unchecked(np.array(X))
        k2 = int(np.argmax(f - f[k1] + beta * pair_norms[:, k1]))
        mc = monte_carlo(self)
        if mc is not None:
            # k2 is a function of k1: the second arm of every first one, (K,)
            seconds = np.argmax(f[:, None] - f[None, :] + beta * pair_norms, axis=0)
            self.propose(_colstim_law(f, norms, seconds, p_t, c, (k1, k2), mc))
        return (k1, k2)

    def _update(self, ctx: Context, action: Action, feedback: Feedback) -> None:
        assert isinstance(action, tuple)
        i, j = action
        self.history.append(ctx.arms[i], ctx.arms[j], float(feedback), arms=(i, j))
        self.design.update(ctx.arms[i] - ctx.arms[j])
        # (1/t) sum nll + kappa lam ||theta||^2  <=>  sum nll + (lam' / 2) ||theta||^2
        self.model.lam = 2.0 * self.kappa * self.lam * self.history.n
        self.model.fit(self.history)
        self._n_updates += 1

    def _state(self) -> dict[str, Any]:
        return {
            "history": self.history.state_dict(),
            "design": self.design.state_dict(),
            "model": self.model.state_dict(),
            "model_lam": self.model.lam,
        }

    def _load_state(self, state: dict[str, Any]) -> None:
        self._setup(Context(arms=np.zeros((1, self.d or 1))))
        self.history.load_state_dict(state["history"])
        self.design = Gram.from_state_dict(state["design"], d=self.design.d)
        self.model.load_state_dict(state["model"])
        self.model.lam = float(state["model_lam"])


@POLICIES.register("vacdb")
class VACDB(DuelingPolicy):
    """VACDB [Di2023]: layered elimination with variance-aware weights (module docstring).

    Args:
        alpha: Accuracy of the last layer, in (0, 1) (L = ceil(log2(1 / alpha)) layers).
        beta: Confidence width beta_{t, l}, a constant >= 0 (1.0).
        kappa: Factor of the per-layer MLE penalty kappa 2^-2l ||theta||^2, > 0.
        link: The preference link of the MLE: "btl" (alias "logistic", the default),
            "thurstone" (alias "probit") or a ``glm.Link`` / ``DuelLink``.
        seed: Seed of the policy's stream.
    """

    contract_params: ClassVar[dict[str, Any]] = {"alpha": 0.25}

    alpha: float = param(
        Real(low=0.0, high=1.0, low_open=True, high_open=True), default=0.01
    )
    beta: float = param(Real(low=0.0), default=1.0)
    kappa: float = param(POSITIVE, default=0.1)
    link: Any = param(DUEL_LINK, default="btl")

    def _resolve(self) -> None:
        self._link = get_duel_link(self.link)
        self.n_layers = max(1, math.ceil(math.log2(1.0 / self.alpha)))

    def _setup(self, ctx: Context) -> None:
        from banditkit.policies.parts.models import GLMModel

        assert self.d is not None
        scales = [2.0 ** (-2 * (ell + 1)) for ell in range(self.n_layers)]
        self.grams = [Gram(self.d, s) for s in scales]
        self.histories = [PairHistory(self.d) for _ in scales]
        self.models: list[GLMModel] = [
            GLMModel(self.d, lam=2.0 * self.kappa * s, link=self._link.glm)
            for s in scales
        ]
        self._pending: tuple[int, int, int, float] | None = None

    def _act(self, ctx: Context) -> Action:
        X = np.array(ctx.arms)
        active = np.arange(ctx.n_arms)
        self._pending = None
        for ell in range(self.n_layers):
            Xa = X[active]
            N = self.grams[ell].pair_norms_unchecked(Xa)
            r = Xa @ self.models[ell].theta
            width = 2.0 ** (-(ell + 1))
            if N.max() <= self.alpha or (ell == self.n_layers - 1 and N.max() <= width):
                i, j = _first_pair(r[:, None] + r[None, :] + self.beta * N)
                return self._certain((int(active[i]), int(active[j])))
            if N.max() <= width:
                active = active[r >= r.max() - width * self.beta]
                continue
            i, j = _first_pair(N)
            self._pending = (ell, int(active[i]), int(active[j]), width / N[i, j])
            return self._certain((int(active[i]), int(active[j])))
        raise AssertionError("unreachable: the last layer always returns")

    def _certain(self, pair: tuple[int, int]) -> tuple[int, int]:
        """A pair chosen without a draw (ties to the first pair): propensity 1."""
        self.propose(PointLaw(pair))
        return pair

    def _update(self, ctx: Context, action: Action, feedback: Feedback) -> None:
        assert isinstance(action, tuple)
        pending, self._pending = self._pending, None
        if pending is None or (pending[1], pending[2]) != action:
            return  # an exploit round (or a pair this policy did not choose)
        ell, i, j, w = pending
        z = ctx.arms[i] - ctx.arms[j]
        self.grams[ell].update(z, w * w)
        self.histories[ell].append(
            ctx.arms[i], ctx.arms[j], float(feedback), weight=w * w, arms=(i, j)
        )
        self.models[ell].fit(self.histories[ell])
        self._n_updates += 1

    def _state(self) -> dict[str, Any]:
        state: dict[str, Any] = {}
        for ell in range(self.n_layers):
            state[f"gram{ell}"] = self.grams[ell].state_dict()
            state[f"history{ell}"] = self.histories[ell].state_dict()
            state[f"model{ell}"] = self.models[ell].state_dict()
        return state

    def _load_state(self, state: dict[str, Any]) -> None:
        self._setup(Context(arms=np.zeros((1, self.d or 1))))
        for ell in range(self.n_layers):
            self.grams[ell] = Gram.from_state_dict(
                state[f"gram{ell}"], d=self.grams[ell].d
            )
            self.histories[ell].load_state_dict(state[f"history{ell}"])
            self.models[ell].load_state_dict(state[f"model{ell}"])
