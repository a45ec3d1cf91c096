"""The per-round work of the public UCB-MNL, TS-MNL and OFU-MNL+ code, for paired timing.

Written for the ``mnl_reference`` benchmark from the computations the public code of Lee &
Oh (2024) performs each round (github.com/oh-lab/OFU-MNL-plus, ``models_uniform.py``); this
is not that code, only the same work in the same order, so that its loop can be timed and
its regret measured on *our* seeds (same theta*, contexts and choice draws) beside
banditkit's policies, interleaved, on one core. Its own published times on its own seeds
(0.142 / 3.59 / 4.15 s) are quoted in ``mnl_reference``.

What each loop does per round (K = capacity, d = dimension):

* UCB-MNL / TS-MNL: alpha = (1 / (2 kappa)) sqrt(2 d log(1 + 1/d)) evaluated at t = 1,
  kappa = e^-1 / (1 + K e)^2; UCB scores ``x^T theta + alpha sqrt(x^T inv(V) x)``
  (``np.linalg.inv`` every round), TS scores ``x^T theta~`` with
  ``theta~ ~ N(theta, alpha^2 inv(V))`` drawn by ``multivariate_normal`` (SVD); the K best
  by ``argsort(u)[::-1][:K]`` (``ties="reference"``; ``"low"``: the lower index wins, as
  banditkit); ``V += X_S^T X_S``; then the whole history, re-stacked into (t, K, d) and
  (t, K + 1) arrays, is refit by ``scipy.optimize.fmin_tnc`` from the previous estimate on
  the code's objective ``(1/t) [NLL + lam ||theta||]`` with the gradient
  ``(1/t) [grad NLL + lam theta]`` (lam = 1; the gradient is that of (lam/2)||theta||^2).
* OFU-MNL+: eta = 2 + log(K + 1) / 2, lam = 84 sqrt(2) eta d, beta at t = 1; scores
  ``x^T theta + beta sqrt(x^T H^-1 x)``; the Hessians by the code's 3- and 4-index
  einsums, the gradient by repeating (p - y) d times; ``theta <- theta - inv(H / (2 eta) +
  hess / 2) grad``; when the step leaves the unit ball the code solves a projection by
  SLSQP and discards it (done here too, as it costs time); ``H += hess(theta_new)``;
  ``inv(H)``; the code's squeezes and its (d, 1) start for theta are kept.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

import banditkit as bk

__all__ = ["TIES", "run_banditkit", "run_reference"]

TIES = ("reference", "low")


def _top(u: np.ndarray, k: int, ties: str) -> np.ndarray:
    if ties == "reference":
        return np.argsort(u)[::-1][:k]
    return np.argsort(-u, kind="stable")[:k]


def _probabilities(theta: np.ndarray, x: np.ndarray) -> np.ndarray:
    """(..., K + 1) choice probabilities, the outside option last (weight 1)."""
    w = np.exp(x @ theta)
    w = np.concatenate([w, np.ones((*w.shape[:-1], 1))], axis=-1)
    return w / w.sum(axis=-1, keepdims=True)


def _cost(theta: np.ndarray, x: np.ndarray, y: np.ndarray, lam: float) -> float:
    m = x.shape[0]
    nll = -float(np.sum(y * np.log(_probabilities(theta, x))))
    return (nll + lam * float(np.linalg.norm(theta))) / m


def _gradient(
    theta: np.ndarray, x: np.ndarray, y: np.ndarray, lam: float
) -> np.ndarray:
    m = x.shape[0]
    resid = (_probabilities(theta, x) - y)[:, :-1]
    return (np.tensordot(resid, x, axes=([1, 0], [1, 0])) + lam * theta) / m


class ReferenceLinearMNL:
    """UCB-MNL (``sampling=False``) or TS-MNL (``True``) as the public code runs them."""

    def __init__(
        self, d: int, capacity: int, *, sampling: bool, ties: str, seed: int
    ) -> None:
        self.d, self.k, self.sampling, self.ties = d, capacity, sampling, ties
        self.theta = np.zeros(d)
        self.V = np.eye(d)
        self.lam = 1.0
        kappa = math.exp(-1) / (1 + capacity * math.e) ** 2
        self.alpha = 1 / (2 * kappa) * math.sqrt(2 * d * math.log(1 + 1 / d))
        self.X: list[np.ndarray] = []
        self.Y: list[np.ndarray] = []
        self.rng = np.random.default_rng(seed)
        self.offered = np.zeros(0, dtype=np.int64)

    def act(self, x: np.ndarray) -> np.ndarray:
        if self.sampling:
            cov = self.alpha**2 * np.linalg.inv(self.V)
            u = x @ self.rng.multivariate_normal(self.theta, cov)
        else:
            width = np.sqrt(((x @ np.linalg.inv(self.V)) * x).sum(axis=1))
            u = x @ self.theta + self.alpha * width
        self.offered = _top(u, self.k, self.ties)
        chosen = x[self.offered]
        self.X.append(chosen)
        self.V += chosen.T @ chosen
        return self.offered

    def update(self, choice: int) -> None:
        from scipy.optimize import fmin_tnc

        y = np.zeros(self.k + 1)
        y[self.k if choice < 0 else self.offered.tolist().index(choice)] = 1.0
        self.Y.append(y)
        x, ys = np.array(self.X), np.array(self.Y)  # the code re-stacks every round
        self.theta = fmin_tnc(
            func=_cost,
            x0=self.theta,
            fprime=_gradient,
            args=(x, ys, self.lam),
            disp=False,
        )[0]


class ReferenceOFUMNLPlus:
    """OFU-MNL+ as the public code runs it (module docstring)."""

    def __init__(self, d: int, capacity: int, *, ties: str) -> None:
        self.d, self.k, self.ties = d, capacity, ties
        self.eta = 2 + math.log(capacity + 1) / 2
        lam = self.lam = 84 * math.sqrt(2) * self.eta * d
        self.W: np.ndarray = np.zeros(d)[:, None]  # (d, 1) until the first update
        self.H: np.ndarray = lam * np.eye(d)
        self.H_inv = np.eye(d) / lam
        t, eta = 1, self.eta
        lg = math.log(2 * math.sqrt(1 + 2 * t))
        inner = (3 * math.log(1 + (capacity + 1) * t) + 3) * (
            17 / 16 * lam + 2 * math.sqrt(lam) * lg + 16 * lg**2
        )
        inner += 2 + math.sqrt(6) * 7 / 6 * eta * d * math.log(1 + (t + 1) / (2 * lam))
        self.beta = math.sqrt(2 * eta * inner + 4 * lam)
        self.offered = np.zeros(0, dtype=np.int64)
        self.X = np.zeros((0, d))

    @staticmethod
    def _probabilities(W: np.ndarray, X: np.ndarray) -> np.ndarray:
        """The code's probabilities: exp(X W) / (sum + 1), W of shape (d,) or (d, 1)."""
        w = np.exp(np.matmul(X, W))
        return w / (w.sum(axis=0) + 1.0)

    @staticmethod
    def _hessian(p: np.ndarray, X: np.ndarray) -> np.ndarray:
        """The set's Hessian by the code's 3- and 4-index einsums."""
        first = np.sum(p[:, None, None] * np.einsum("ki,kj->kij", X, X), axis=0)
        pp = np.einsum("i,j->ij", p, p)[:, :, None, None]
        second = np.sum(pp * np.einsum("ik,jl->ijkl", X, X), axis=(0, 1))
        return np.asarray(first - second)

    def act(self, x: np.ndarray) -> np.ndarray:
        means = np.squeeze(np.dot(x, self.W))
        width = np.sqrt((np.matmul(x, self.H_inv) * x).sum(axis=1))
        self.offered = _top(means + self.beta * width, self.k, self.ties)
        self.X = x[self.offered, :]
        return self.offered

    def update(self, choice: int) -> None:
        from scipy.optimize import NonlinearConstraint, minimize

        X, d = self.X, self.d
        feedback = np.zeros(
            self.k + 1
        )  # the code's one-hot choice, outside option last
        feedback[self.k if choice < 0 else self.offered.tolist().index(choice)] = 1.0
        # the estimator step, as the code's update_estimator
        y = np.squeeze(feedback[:-1])
        p = np.squeeze(self._probabilities(self.W, X))
        grad = np.sum(np.multiply(np.repeat((p - y)[..., None], d, axis=1), X), axis=0)
        M = self.H / (2 * self.eta) + self._hessian(p, X) / 2
        step = np.squeeze(self.W) - np.dot(np.linalg.inv(M), grad)
        if np.linalg.norm(step) > 1.0:
            # the code's projection, computed and discarded; its constraint reads entries
            # d..2d of the d-vector (none), so it never binds: mirrored as it is
            minimize(
                lambda v: float(np.dot(v - step, np.dot(M, v - step))),
                x0=np.zeros(d),
                method="SLSQP",
                constraints=[
                    NonlinearConstraint(lambda v: np.linalg.norm(v[d : 2 * d]), 0, 1.0)
                ],
            )
        self.W = step
        # then the Hessian at the new estimate, as the code's update_state
        self.H += self._hessian(self._probabilities(self.W, X), X)
        self.H_inv = np.linalg.inv(self.H)


def run_reference(
    name: str, env_params: dict[str, Any], horizon: int, seed: int, ties: str
) -> dict[str, Any]:
    """One run of the reference loop of ``name`` on the ``mnl`` environment and ``seed``.

    Returns CPU seconds of its act + update work (``time.process_time``), the final
    regret and the offered sets (sorted tuples).
    """
    env = bk.make_env("mnl", **env_params)
    env.reset(seed)
    d, k = int(env_params["d"]), int(env_params["capacity"])
    agent: ReferenceLinearMNL | ReferenceOFUMNLPlus
    if name == "ofu-mnl-plus":
        agent = ReferenceOFUMNLPlus(d, k, ties=ties)
    else:
        agent = ReferenceLinearMNL(
            d, k, sampling=name == "ts-mnl", ties=ties, seed=seed
        )
    return _loop(env, horizon, agent.act, agent.update, reference=True)


def run_banditkit(
    name: str, env_params: dict[str, Any], horizon: int, seed: int
) -> dict[str, Any]:
    """One run of banditkit's ``name`` (defaults) timed like :func:`run_reference`."""
    env = bk.make_env("mnl", **env_params)
    env.reset(seed)
    policy = bk.make_policy(name, seed=seed)
    policy.begin(horizon)
    ctx_box: list[Any] = []

    def act(x: Any) -> Any:
        return policy.act(x)

    def update(choice: int) -> None:
        ctx, action = ctx_box
        policy.update(ctx, action, choice)

    return _loop(env, horizon, act, update, reference=False, box=ctx_box)


def _loop(
    env: Any,
    horizon: int,
    act: Any,
    update: Any,
    *,
    reference: bool,
    box: list[Any] | None = None,
) -> dict[str, Any]:
    clock = time.process_time
    cpu, regret = 0.0, 0.0
    actions: list[tuple[int, ...]] = []
    for _ in range(horizon):
        ctx = env.context()
        started = clock()
        chosen = act(ctx.arms if reference else ctx)
        cpu += clock() - started
        action = tuple(sorted(int(i) for i in chosen))
        step = env.step(action)
        if box is not None:
            box[:] = [ctx, chosen]
        started = clock()
        update(int(step.feedback))
        cpu += clock() - started
        regret += float(step.regret)
        actions.append(action)
    return {"cpu_s": cpu, "regret": regret, "actions": actions}
