"""Per-arm (disjoint) generalised linear bandits: GLM-UCB and GLM-TS with one MLE per arm.

Each arm a keeps its own regularised MLE theta_a (Newton's method, ``glm.fit_glm``, warm
started) on the rounds it was played, its design Gram A_a = lam I + sum x x^T as a (K, d, d)
stack of inverses updated by Sherman-Morrison (as the per-arm ridge policies,
:mod:`banditkit.policies.baselines.perarm`), and, for Thompson sampling, the inverse Laplace precision
H_a^-1, H_a = sum mu'(x^T theta_a) x x^T + lam I, over the rows of its last fit. The MLE of the
block-encoded model is separable (each observation touches one block, the ridge penalty is
separable), so these are the block-encoded ``glm-ucb`` / ``glm-ts`` estimates without the
(K d)-dimensional problem.

Every ``update_every`` observations (of the policy, as ``glm-ucb``) the arms played since the
last refit are refitted; the others have no new data. Scoring is batched over arms.

References:
    In the package's docstring (``banditkit.policies.baselines``): [Filippi2010], [Kveton2020].
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from banditkit.core import POLICIES, Context
from banditkit.core.params import POSITIVE, Choice, Int, Real, learned, param
from banditkit.core.types import Action
from banditkit.core.validation import check_state_array
from banditkit.glm import LINKS, fit_glm, glm_hessian
from banditkit.policies.baselines.catalogue import PerArmPolicy, drop_logged_arm
from banditkit.policies.baselines.perarm import linear_scores
from banditkit.policies.parts.history import Buffers, BufferView
from banditkit.policies.parts.selection import (
    TIE_RTOL,
    ArmRule,
    Optimistic,
    Sampled,
    play,
)

__all__ = ["PerArmGLMPolicy", "PerArmGLMTS", "PerArmGLMUCB"]


class PerArmGLMPolicy(PerArmPolicy):
    """Shared part of the per-arm GLM policies: the logged rows, the refits and the stacks.

    Args:
        nu: Exploration scale, >= 0; 0 is greedy.
        lam: MLE ridge weight and design-Gram start, > 0.
        link: "logistic" (default), "probit" or "identity".
        update_every: Refit the arms played since the last refit after every this many
            observations, >= 1 (default 10, as ``glm-ucb``).
        rewards: "auto" (rewards in [0, 1] for the logistic and probit links, real rewards
            for the identity link) or "real".
        seed: Seed of the policy's own stream.

    Attributes:
        theta: (K, d) the per-arm MLEs.
        H_inv: (K, d, d) inverse Laplace precisions at the last fit of each arm.
    """

    nu: float = param(Real(low=0.0), default=1.0)
    lam: float = param(POSITIVE, default=1.0)
    link: str = param(Choice(LINKS), default="logistic")
    update_every: int = param(Int(low=1), default=10)
    rewards: str = param(Choice("auto", "real"), default="auto")

    A_inv: np.ndarray = learned()
    H_inv: np.ndarray = learned()
    theta: np.ndarray = learned()
    counts: np.ndarray = learned()
    dirty: np.ndarray = learned()

    _stacks: ClassVar[tuple[str, ...]] = ("A_inv", "H_inv", "theta", "counts", "dirty")
    _spd_stacks: ClassVar[tuple[str, ...]] = ("A_inv", "H_inv")

    #: The selection rule, and the stack of inverse matrices its widths read: a UCB and a
    #: TS variant differ by these two (``nu * ||x_a||`` in that matrix is the width).
    rule: ClassVar[ArmRule]
    spread: ClassVar[str]

    def _act(self, ctx: Context) -> Action:
        inverse = getattr(self, self.spread)
        mean, var = linear_scores(self.theta, inverse, ctx.arms, ctx.is_shared)
        return play(self, self.rule, mean, self.nu * np.sqrt(var))

    def _resolve(self) -> None:
        super()._resolve()
        real = self.link == "identity" or self.rewards == "real"
        self.reward_kind = "real" if real else "binary"

    def _fresh_arm(self) -> dict[str, np.ndarray]:
        assert self.d is not None
        d = self.d
        eye = np.eye(d) / self.lam
        return {
            "A_inv": eye,
            "H_inv": eye.copy(),
            "theta": np.zeros(d),
            "counts": np.zeros((), dtype=np.int64),
            "dirty": np.zeros((), dtype=bool),
        }

    rows = BufferView(
        "rows", "(n, d) features of the rounds learned from, in order", "_log"
    )
    targets = BufferView("targets", "(n,) their rewards", "_log")
    row_arms = BufferView("row_arms", "(n,) the arm of each", "_log")

    def _allocate(self, n_arms: int) -> None:
        super()._allocate(n_arms)
        self._log = self._empty_log()

    def _empty_log(self) -> Buffers:
        """The log of learned rounds, each arm's MLE reading its rows (grown by doubling)."""
        assert self.d is not None
        return Buffers(
            {
                "rows": ((self.d,), float),
                "targets": ((), float),
                "row_arms": ((), np.int64),
            }
        )

    def _learn(self, arm: int, x: np.ndarray, reward: float) -> None:
        """Design-Gram update (Sherman-Morrison) and the row logged for the arm's MLE."""
        A_inv = self.A_inv[arm]
        u = A_inv @ x
        A_inv -= np.outer(u, u / (1.0 + x @ u))
        self.counts[arm] += 1
        self.dirty[arm] = True
        self._log.push(rows=x, targets=reward, row_arms=arm)

    def _learned(self) -> None:
        if self._log.n % self.update_every == 0:
            self._refit()
            self._n_updates += 1

    def _refit(self) -> None:
        """Re-estimate the MLE and the Laplace precision of every arm with new rows."""
        for a in np.flatnonzero(
            self.dirty
        ):  # only the arms played since the last refit
            mine = self.row_arms == a
            X, y = self.rows[mine], self.targets[mine]
            theta = fit_glm(
                X, y, link=self.link, lam=self.lam, theta0=self.theta[a]
            ).theta
            self.theta[a] = theta
            self.H_inv[a] = np.linalg.inv(
                glm_hessian(X, theta, link=self.link, lam=self.lam)
            )
        self.dirty[:] = False

    def _removed(self, arm: int) -> None:
        drop_logged_arm(self._log, arm)

    def _state(self) -> dict[str, Any]:
        return {**super()._state(), **self._log.state_dict()}

    def _load_state(self, state: dict[str, Any]) -> None:
        super()._load_state(state)
        assert self.d is not None
        rows = check_state_array("rows", state["rows"], (None, self.d))
        n, K = rows.shape[0], self.counts.shape[0]
        targets = check_state_array("targets", state["targets"], (n,))
        row_arms = check_state_array(
            "row_arms", state["row_arms"], (n,), dtype=np.int64
        )
        if n and (row_arms.min() < 0 or row_arms.max() >= K):
            raise ValueError(f"row_arms must be arms in [0, {K}).")
        self._log = self._empty_log()
        self._log.load({"rows": rows, "targets": targets, "row_arms": row_arms})


@POLICIES.register("glm-ucb-per-arm")
class PerArmGLMUCB(PerArmGLMPolicy):
    """Disjoint GLM-UCB [Filippi2010, Alg. 1]: one MLE and one design Gram per arm.

        score(a) = x_a^T theta_a + nu * sqrt(x_a^T A_a^-1 x_a)

    ``make_policy("glm-ucb", per_arm=True)``; the linear predictor ranks as the mean (the
    link is increasing). Deviations as ``glm-ucb``: a regularised MLE, the constant radius nu.

    Example:
        >>> PerArmGLMUCB().act(Context.from_shared(np.ones(2), n_arms=3)) in range(3)
        True
    """

    rule: ClassVar[ArmRule] = Optimistic(TIE_RTOL)
    spread: ClassVar[str] = "A_inv"  # the design Gram A_a = lam I + sum x x^T


@POLICIES.register("glm-ts-per-arm")
class PerArmGLMTS(PerArmGLMPolicy):
    """Disjoint GLM Thompson sampling [Kveton2020, Alg. 1] with a Laplace posterior per arm.

        s_a ~ N(x_a^T theta_a, nu^2 x_a^T H_a^-1 x_a),   a = argmax_a s_a

    The scalar x_a^T theta_a~, theta_a~ ~ N(theta_a, nu^2 H_a^-1), is drawn directly.
    ``make_policy("glm-ts", per_arm=True)``.

    Example:
        >>> PerArmGLMTS().act(Context.from_shared(np.ones(2), n_arms=3)) in range(3)
        True
    """

    rule: ClassVar[ArmRule] = Sampled(TIE_RTOL)
    spread: ClassVar[str] = "H_inv"  # the Laplace precision H_a at the arm's last fit
