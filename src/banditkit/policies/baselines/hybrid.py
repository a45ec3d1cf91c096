"""LinUCB with the hybrid linear model [Li2010, Sec. 3.2, Alg. 2]: shared and per-arm features.

Each arm's feature row is [z_a, x_a]: its first ``n_shared`` = k columns z_a enter a
parameter beta shared by all arms, the other d columns x_a a parameter theta_a of its own,

    E[r | a] = z_a^T beta + x_a^T theta_a                                  [Li2010, Eq. (6)].

Algorithm 2 of [Li2010] keeps, with lam = 1 there,

    A_0 = lam I_k + sum z z^T - sum_a B_a^T A_a^-1 B_a,   b_0 = sum r z - sum_a B_a^T A_a^-1 b_a,
    A_a = lam I_d + sum x x^T,   B_a = sum x z^T,   b_a = sum r x      (rounds of arm a),

and scores arm a by

    beta = A_0^-1 b_0,   theta_a = A_a^-1 (b_a - B_a beta),
    s_a  = z^T A_0^-1 z - 2 z^T A_0^-1 B_a^T A_a^-1 x + x^T A_a^-1 x
           + x^T A_a^-1 B_a A_0^-1 B_a^T A_a^-1 x,
    p_a  = z^T beta + x^T theta_a + alpha sqrt(s_a).

This is ridge regression on the joint design [z, e_a (x) x] (beta and every theta_a, ridge
weight lam on each): A_0 is the Schur complement of the per-arm blocks in its Gram, beta and
theta_a are its estimate and s_a = phi_a^T M^-1 phi_a its squared width. We compute s_a as
the same quantity written with one k-vector per arm,

    s_a = ||z_a - B_a^T A_a^-1 x_a||^2_{A_0^-1} + ||x_a||^2_{A_a^-1},

which expands to the four terms above. The per-arm quantities are (K, d, d), (K, d, k) and
(K, d) stacks scored by batched products (no Python loop over arms); A_a^-1 is updated by
Sherman-Morrison on the played arm and A_0 by the two Schur steps of Alg. 2 (lines 17-18 and
22-23), then inverted (O(k^3), k is small).

References:
    In the package's docstring (``banditkit.policies.baselines``): [Li2010].
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from banditkit.core import POLICIES, Context
from banditkit.core.environment import Environment
from banditkit.core.params import POSITIVE, Int, Real, learned, param
from banditkit.core.types import Action
from banditkit.core.validation import check_spd, check_state_array
from banditkit.policies.baselines.catalogue import PerArmPolicy
from banditkit.policies.parts.selection import TIE_RTOL, Optimistic, play

__all__ = ["HybridLinUCB"]


@POLICIES.register("linucb-hybrid")
class HybridLinUCB(PerArmPolicy):
    """Hybrid LinUCB [Li2010, Alg. 2]: beta shared by all arms, theta_a per arm.

        p_a = z_a^T beta + x_a^T theta_a + nu * sqrt(s_a)   (see the module docstring)

    The first ``n_shared`` columns of an arm's row are z_a, the others x_a. With
    ``n_shared=0`` it is disjoint LinUCB (``linucb-per-arm``); with all columns shared, LinUCB
    on z. Arms come and go (:meth:`add_arm`, :meth:`remove_arm`) and logs are learned in one
    call (:meth:`fit`, :meth:`partial_fit`) as for the per-arm policies.

    Removing arm a marginalises theta_a out of the joint ridge posterior: beta keeps what it
    learned from a's rounds (A_0, b_0 do not change), and the other arms keep their state, so
    their decisions are those of the same policy in which a is still modelled but no longer
    offered. A new arm starts at A_a = lam I, B_a = 0, b_a = 0 and is scored through beta at
    once (the point of the shared features).

    Args:
        n_shared: k, the leading columns of each row that are shared features z, >= 0 (at
            most the row's dimension, checked at the first round). The default 0 has no
            shared features: disjoint LinUCB; give the k of your rows.
        nu: Exploration scale (alpha of [Li2010]), >= 0; 0 is greedy.
        lam: Ridge weight of beta and of every theta_a (1 in [Li2010]), > 0.
        seed: Seed of the policy's own stream (ties are broken at random).

    Attributes:
        A_inv: (K, d, d) A_a^-1.   B: (K, d, k).   b: (K, d).   counts: (K,).
        A0: (k, k) A_0.   A0_inv: its inverse.   b0: (k,) b_0.

    Example:
        >>> p = HybridLinUCB(n_shared=1, nu=0.5)
        >>> p.act(Context(arms=np.ones((3, 2)))) in range(3)
        True
    """

    contract_params: ClassVar[dict[str, Any]] = {"n_shared": 1}

    n_shared: int = param(Int(low=0), default=0)
    nu: float = param(Real(low=0.0), default=1.0)
    lam: float = param(POSITIVE, default=1.0)

    A_inv: np.ndarray = learned()
    B: np.ndarray = learned()
    b: np.ndarray = learned()
    counts: np.ndarray = learned()
    A0: np.ndarray = learned()
    A0_inv: np.ndarray = learned()
    b0: np.ndarray = learned()

    _stacks: ClassVar[tuple[str, ...]] = ("A_inv", "B", "b", "counts")
    _spd_stacks: ClassVar[tuple[str, ...]] = ("A_inv",)

    # ------------------------------------------------------------------ state
    @property
    def _dx(self) -> int:
        assert self.d is not None
        return self.d - self.n_shared

    def _fresh_arm(self) -> dict[str, np.ndarray]:
        dx, k = self._dx, self.n_shared
        return {
            "A_inv": np.eye(dx) / self.lam,
            "B": np.zeros((dx, k)),
            "b": np.zeros(dx),
            "counts": np.zeros((), dtype=np.int64),
        }

    def _allocate(self, n_arms: int) -> None:
        assert self.d is not None
        if self.n_shared > self.d:
            d, self.d = self.d, None
            raise ValueError(
                f"n_shared={self.n_shared} but the arms have only {d} features."
            )
        super()._allocate(n_arms)
        k = self.n_shared
        self.A0 = self.lam * np.eye(k)
        self.A0_inv = np.eye(k) / self.lam
        self.b0 = np.zeros(k)

    def _state(self) -> dict[str, Any]:
        state = super()._state()
        state.update(A0=self.A0, A0_inv=self.A0_inv, b0=self.b0)
        return state

    def _load_state(self, state: dict[str, Any]) -> None:
        super()._load_state(state)  # the per-arm stacks, checked (K, dx, ...)
        k = self.n_shared
        self.A0 = check_spd("A0", state["A0"], k)
        self.A0_inv = check_spd("A0_inv", state["A0_inv"], k)
        self.b0 = check_state_array("b0", state["b0"], (k,))

    def attach(self, env: Environment) -> None:
        """Nothing to ask of the environment (its rows carry both feature groups)."""

    # ------------------------------------------------------------------ estimates
    @property
    def beta(self) -> np.ndarray:
        """(k,) the shared estimate A_0^-1 b_0 (zeros before the first round)."""
        if self.d is None:
            return np.zeros(self.n_shared)
        return self.A0_inv @ self.b0

    @property
    def theta(self) -> np.ndarray:
        """(K, d) the per-arm estimates theta_a = A_a^-1 (b_a - B_a beta)."""
        if self.d is None:
            return np.zeros((0, 0))
        resid = self.b - self.B @ self.beta
        return np.einsum("kij,kj->ki", self.A_inv, resid)

    def _learn(self, arm: int, x: np.ndarray, reward: float) -> None:
        """Alg. 2, lines 17-23, on the played arm's row ``x`` = [z, x_a] and ``reward``."""
        k = self.n_shared
        z, xa = x[:k], x[k:]
        A_inv, B, b = self.A_inv[arm], self.B[arm], self.b[arm]
        BtAinv = B.T @ A_inv  # (k, d)
        A0 = self.A0 + BtAinv @ B  # lines 17-18: add the arm's old Schur terms back
        b0 = self.b0 + BtAinv @ b
        u = A_inv @ xa  # Sherman-Morrison on A_a (line 19)
        A_inv -= np.outer(u, u / (1.0 + xa @ u))
        B += np.outer(xa, z)  # line 20
        b += reward * xa  # line 21
        BtAinv = B.T @ A_inv
        A0 += np.outer(z, z) - BtAinv @ B  # lines 22-23
        b0 += reward * z - BtAinv @ b
        self.A0 = 0.5 * (A0 + A0.T)
        self.b0 = b0
        self.A0_inv = _sym_inverse(self.A0)
        self.counts[arm] += 1

    def _means_widths2(
        self, X: np.ndarray, shared: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        """Means z^T beta + x^T theta_a and squared widths s_a of every arm, at once."""
        k = self.n_shared
        Z, Xa = X[:, :k], X[:, k:]
        beta = self.A0_inv @ self.b0
        U = np.einsum("kij,kj->ki", self.A_inv, Xa)  # A_a^-1 x_a
        V = np.einsum("kij,ki->kj", self.B, U)  # B_a^T A_a^-1 x_a
        resid = self.b - self.B @ beta  # b_a - B_a beta
        mean = Z @ beta + np.einsum("ki,ki->k", U, resid)  # x^T A^-1 (b - B beta)
        W = Z - V
        width2 = np.einsum("ki,ij,kj->k", W, self.A0_inv, W) + np.einsum(
            "ki,ki->k", Xa, U
        )
        return mean, np.maximum(width2, 0.0)

    def _learned(self) -> None:
        """The estimates are re-computed every round."""
        self._n_updates += 1

    def _act(self, ctx: Context) -> Action:
        mean, width2 = self._means_widths2(ctx.arms, ctx.is_shared)
        return play(self, Optimistic(TIE_RTOL), mean, self.nu * np.sqrt(width2))


def _sym_inverse(A: np.ndarray) -> np.ndarray:
    """The inverse of a symmetric positive definite (k, k) matrix, symmetrised."""
    if A.shape[0] == 0:
        return A.copy()
    inv = np.linalg.inv(A)
    return 0.5 * (inv + inv.T)
