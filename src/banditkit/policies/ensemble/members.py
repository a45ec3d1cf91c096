"""Ensemble models: M members fitted together on a ``PerturbedHistory`` [Sun2025, Sec. 4].

Every member j minimises the same regularised loss on its own perturbed targets
y_l + Z_l^j; the members are stacked and fitted in one vectorised computation:

    RidgeEnsemble    theta^j = V^-1 sum_l x_l (y_l + Z_l^j), V = lam I + sum_l x_l x_l^T:
                     one Gram V shared by all members (rank-1 updates) and a (d, M) matrix
                     B of the stacked right-hand sides (Lin-ES)
    GLMEnsemble      theta^j = argmin (lam/2)||theta||^2 + sum_l [b(x_l^T theta)
                     - (y_l + Z_l^j) x_l^T theta]  [Sun2025, Eq. 4.3], by
                     ``glm.fit_glm_stacked`` on the (d, M) stack (GD or Newton) (GLM-ES)
    NeuralEnsemble   theta^j = J GD steps on (1/2) sum_l (f(x_l; theta) - y_l - Z_l^j)^2
                     + (lam N / 2) ||theta - theta_0||^2  [Sun2025, Eq. C.2], by
                     ``nn.fit`` on an ``nn.StackedMLP`` of M members that all start from
                     the same theta_0 (Neural-ES)

Each has ``members``, ``fit(history)`` (warm-started), ``predict(X)`` (M, K),
``predict_member(X, j)`` (K,), ``predict_played(X, j)`` (both: the member played and the
stack the action's law reads) and ``state_dict`` / ``load_state_dict``. The GLM and
neural members read the history grouped by distinct rows (``PerturbedHistory.grouped``):
the same objective and gradient, computed over the distinct rows only.

References:
    In the package's docstring (``banditkit.policies.ensemble``): [Sun2025].
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from banditkit.core.lazy import torch  # imported at first use
from banditkit.core.validation import check_int, check_state_array
from banditkit.glm import fit_glm_stacked, get_link
from banditkit.linalg import Gram
from banditkit.policies.ensemble.history import GroupedRows, PerturbedHistory
from banditkit.policies.parts.models.rescue import finite_fit, rescue, saved_lr

if TYPE_CHECKING:
    from banditkit import nn
else:
    from banditkit.core.lazy import lazy_import

    nn = lazy_import("banditkit.nn")  # PyTorch is imported at first use

__all__ = ["GLMEnsemble", "NeuralEnsemble", "RidgeEnsemble"]


class RidgeEnsemble:
    """M ridge regressions on perturbed targets, sharing one Gram (Lin-ES).

    Args:
        d: Feature dimension.
        lam: Ridge weight, V_0 = lam I.
        members: M.
        prior: None (regulariser lam ||theta||^2, [Sun2025]) or the (d, M) prior draws
            theta_0^j of a perturbed regulariser lam ||theta - theta_0^j||^2 (Lin-ES as in
            Lu & Van Roy 2017, Janz et al. 2024, Lee & Oh 2024): then B starts at lam theta_0
            and theta^j = V^-1 (lam theta_0^j + sum_l x_l (y_l + Z_l^j)).

    Example:
        >>> h = PerturbedHistory(2, 3)
        >>> h.append(np.array([1.0, 0.0]), 1.0, np.array([0.0, 1.0, -1.0]))
        >>> model = RidgeEnsemble(2, 1.0, 3)
        >>> model.fit(h)
        >>> model.predict(np.eye(2))[:, 0].round(12).tolist()  # (1 + Z^j) / 2
        [0.5, 1.0, 0.0]
    """

    linearised = False

    def __init__(
        self, d: int, lam: float, members: int, *, prior: np.ndarray | None = None
    ) -> None:
        self.members = members
        self.gram = Gram(d, lam)
        self.B = np.zeros((d, members))
        if prior is not None:
            prior = np.asarray(prior, dtype=float)
            if prior.shape != (d, members):
                raise ValueError(
                    f"prior must have shape ({d}, {members}); got {prior.shape}."
                )
            self.B = lam * prior
        self._seen = 0
        self._theta: np.ndarray | None = None

    def fit(self, history: PerturbedHistory) -> None:
        """Absorb the new rows: V += x x^T (rank-1), B += x (y + Z)^T."""
        X, y, Z = history.X, history.y, history.Z
        for i in range(self._seen, history.n):
            self.gram.update(X[i])
            self.B += np.outer(X[i], y[i] + Z[i])
        if history.n > self._seen:
            self._theta = None
        self._seen = history.n

    @property
    def theta(self) -> np.ndarray:
        """All members, V^-1 B, (d, M) (one batched solve, cached)."""
        if self._theta is None:
            self._theta = self.gram.solve(self.B)
        return self._theta

    def predict(self, X: np.ndarray) -> np.ndarray:
        """x^T theta^j for every member and arm, (M, K).

        It leaves the cache of ``theta`` as it was: ``predict_member`` then solves for its
        member alone, as it does without a call to ``predict`` (the same last bits).
        """
        theta = self.gram.solve(self.B) if self._theta is None else self._theta
        return np.asarray((X @ theta).T)

    def predict_member(self, X: np.ndarray, j: int) -> np.ndarray:
        """x^T theta^j of member j, (K,)."""
        if self._theta is None:  # one solve for the member in play
            return np.asarray(X @ self.gram.solve(self.B[:, j]))
        return np.asarray(X @ self._theta[:, j])

    def predict_played(self, X: np.ndarray, j: int) -> tuple[np.ndarray, np.ndarray]:
        """Member j's predictions (K,), played on, and every member's (M, K).

        Member j's are solved for it alone, as before the stack of all (the same last bits
        as a run that reads only them).
        """
        return self.predict_member(X, j), self.predict(X)

    def state_dict(self) -> dict[str, Any]:
        """Arrays and scalars only."""
        return {"gram": self.gram.state_dict(), "B": self.B.copy(), "seen": self._seen}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from :meth:`state_dict`."""
        self.gram = Gram.from_state_dict(state["gram"], d=self.gram.d)
        self.B = check_state_array("B", state["B"], self.B.shape)
        self._seen = check_int("seen", state["seen"], low=0)
        self._theta = None


class _GroupedFit:
    """An ensemble refitted on its history's distinct rows (``PerturbedHistory.grouped``)."""

    def fit(self, history: PerturbedHistory, *, steps: int | None = None) -> None:
        """Refit every member on the history's distinct rows, warm-started."""
        self.fit_grouped(history.grouped(), steps=steps)

    def fit_grouped(self, grouped: GroupedRows, *, steps: int | None = None) -> None:
        """Refit on distinct rows X (U, d), counts c (U,) and target sums S (U, M)."""
        raise NotImplementedError


class GLMEnsemble(_GroupedFit):
    """M regularised GLM fits on perturbed targets, as one (d, M) stack (GLM-ES).

    Args:
        d: Feature dimension.
        lam: Ridge weight lambda of the NLL.
        members: M.
        link: The known link ("logistic", "probit" or "identity").
        solver: "gd" (``steps`` steps of size ``lr``, the paper's practical solver) or
            "newton" (to convergence, the exact minimiser of Eq. 4.3).
        steps: GD steps per fit.
        lr: GD step size.
        reduction: "mean" (GD on the objective / n) or "sum".
        prior: None (regulariser (lam/2)||theta||^2, Eq. 4.2) or the (d, M) prior draws
            theta_0^j of a perturbed regulariser (lam/2)||theta - theta_0^j||^2. Its linear
            part -lam theta_0^T theta enters as d extra unit rows of count 0 and target sums
            lam theta_0 (the grouped loss sum_u c_u b(x_u^T theta) - S_u x_u^T theta), so
            the GLM solver is unchanged and n (the mean reduction) counts real rows only.

    Example:
        >>> h = PerturbedHistory(1, 2)
        >>> for _ in range(5):
        ...     h.append(np.array([1.0]), 1.0, np.array([0.0, 0.0]))
        >>> model = GLMEnsemble(1, 1.0, 2, solver="newton")
        >>> model.fit(h)
        >>> bool(model.theta[0, 0] > 0) and bool(model.theta[0, 0] == model.theta[0, 1])
        True
    """

    linearised = False

    def __init__(
        self,
        d: int,
        lam: float,
        members: int,
        *,
        link: str = "logistic",
        solver: str = "gd",
        steps: int = 100,
        lr: float = 0.01,
        reduction: str = "mean",
        prior: np.ndarray | None = None,
    ) -> None:
        self.members = members
        self.lam = lam
        self.link = get_link(link)
        self.solver, self.steps, self.lr, self.reduction = solver, steps, lr, reduction
        self.theta = np.zeros((d, members))
        self.prior: np.ndarray | None = None
        if prior is not None:
            prior = np.asarray(prior, dtype=float)
            if prior.shape != (d, members):
                raise ValueError(
                    f"prior must have shape ({d}, {members}); got {prior.shape}."
                )
            self.prior = prior.copy()

    def fit_grouped(self, grouped: GroupedRows, *, steps: int | None = None) -> None:
        """Refit on distinct rows X, counts c and target sums S (U, M)."""
        X, counts, sums = grouped
        if self.prior is not None:  # -lam theta_0^T theta as unit rows of count 0
            d = self.theta.shape[0]
            X = np.vstack([X, np.eye(d)])
            counts = np.concatenate([counts, np.zeros(d)])
            sums = np.vstack([sums, self.lam * self.prior])
        self.theta = fit_glm_stacked(
            X,
            counts,
            sums,
            self.theta,
            lam=self.lam,
            link=self.link,
            solver=self.solver,
            steps=self.steps if steps is None else steps,
            lr=self.lr,
            reduction=self.reduction,
        )

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Linear predictors x^T theta^j, (M, K) (the link is increasing)."""
        return np.asarray((X @ self.theta).T)

    def predict_member(self, X: np.ndarray, j: int) -> np.ndarray:
        """x^T theta^j of member j, (K,)."""
        return np.asarray(X @ self.theta[:, j])

    def predict_played(self, X: np.ndarray, j: int) -> tuple[np.ndarray, np.ndarray]:
        """Member j's predictions (K,), played on, and every member's (M, K)."""
        return self.predict_member(X, j), self.predict(X)

    def state_dict(self) -> dict[str, Any]:
        """Arrays only."""
        state = {"theta": self.theta.copy()}
        if self.prior is not None:
            state["prior"] = self.prior.copy()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from :meth:`state_dict`."""
        shape = self.theta.shape
        self.theta = check_state_array("theta", state["theta"], shape)
        if state.get("prior") is not None:
            self.prior = check_state_array("prior", state["prior"], shape)


class NeuralEnsemble(_GroupedFit):
    """M networks of the same architecture and the same theta_0, fitted as one stack.

    The network is ``nn.StackedMLP(d, width=N, depth=L)``: bias-free, output scaled by
    sqrt(N), mirrored initialisation (f(x; theta_0) = 0 for every x) [Sun2025, Sec. 4.3].
    Member j's loss is (1/2) sum_l (f(x_l; theta) - y_l - Z_l^j)^2 + (lam N / 2)
    ||theta - theta_0||^2; on distinct rows this is the weighted squared loss
    (1/2) sum_u c_u (f(x_u; theta) - S_uj / c_u)^2 (the same gradient). ``reduction="mean"``
    takes the GD steps on the objective divided by n, the number of observations.

    Args:
        d: Input dimension.
        members: M.
        width: N, hidden units per layer (even).
        depth: L, number of linear layers (>= 2).
        lam: lambda; the penalty weight is lam * N.
        steps: GD steps J per fit.
        lr: GD step size eta.
        reduction: "mean" or "sum".
        generator: Draws theta_0 (one network, copied to every member).
        independent_init: False (default, [Sun2025, Sec. 4.3]): one theta_0 for every
            member. True: member j starts from, and is regularised towards, its own draw
            theta_0^j of the same initialisation (a different algorithm; an option).
        dtype: "float64" (default) or "float32": the networks, their training and
            their passes (``predict`` returns float64 either way).
        device: "cpu" (default), "cuda", "cuda:N" or "auto" (``nn.resolve_device``):
            the networks, their training and the distinct rows of the history (a
            ``nn.GrowingBuffer`` that receives each new distinct row once) live there.
    """

    linearised = False

    def __init__(
        self,
        d: int,
        members: int,
        *,
        width: int,
        depth: int,
        lam: float,
        steps: int,
        lr: float,
        reduction: str,
        generator: torch.Generator,
        independent_init: bool = False,
        dtype: str = "float64",
        device: str = "cpu",
    ) -> None:
        self.members = members
        self.dtype = nn.resolve_dtype(dtype)
        self.device = nn.resolve_device(device)
        self.net = nn.StackedMLP(d, width=width, depth=depth)
        # theta_0: (1, ...) shared by every member, or (M, ...) one draw per member
        self.params0 = self.net.init(
            members if independent_init else 1,
            generator,
            dtype=self.dtype,
            device=self.device,
        )
        #: The distinct rows on the device (float64 on the CPU: the history's own).
        self._rows: nn.GrowingBuffer | None = None
        self._last = np.empty(0)  # host copy of the last distinct row sent
        if (self.dtype, self.device.type) != (torch.float64, "cpu"):
            self._rows = nn.GrowingBuffer((d,), self.dtype, self.device)
        self.params = {
            k: v.expand(members, *v.shape[1:]).clone() for k, v in self.params0.items()
        }
        self.penalty = nn.L2Penalty(lam * width, self.params0)
        self.steps, self.lr, self.reduction = steps, lr, reduction
        self._lr0 = lr  # a rescued fit lowers lr, which is then saved

    def fit_grouped(self, grouped: GroupedRows, *, steps: int | None = None) -> None:
        """J GD steps for every member at once on the distinct rows, warm-started."""
        X, counts, sums = grouped

        n = float(counts.sum())
        targets = np.ascontiguousarray((sums / counts[:, None]).T)
        if self._rows is None:
            rows = nn.Rows(
                torch.from_numpy(X), torch.from_numpy(targets), torch.from_numpy(counts)
            )
        else:  # the new distinct rows cross once; counts and targets change: whole
            held = self._rows.n
            if X.shape[0] < held or (
                held and not np.array_equal(X[held - 1], self._last)
            ):
                self._rows.truncate(0)  # rows of another history (a restored state)
            self._rows.extend(X[self._rows.n :])
            self._last = X[-1].copy()
            rows = nn.Rows(
                self._rows.view(),
                targets,
                counts,
                dtype=self.dtype,
                device=self.device,
            )

        def fit(base: float) -> nn.FitResult:
            return nn.fit(
                self.net,
                self.params,
                rows,
                nn.MSE(),
                penalties=[self.penalty],
                lr=self.step_size(n, base),
                steps=self.steps if steps is None else steps,
                reduction="sum",
                record="ends",  # the divergence check reads the last J
            )

        # a fit that diverged is retried at lr / 10 (parts.models.rescue); the
        # parameters change only when one ends finite
        result, self.lr = rescue(
            fit(self.lr),
            self.lr,
            fit,
            finite_fit,
            lambda result, lr: f"the objective ended at {result.history[-1, 0]:.4g}",
        )
        self.params = result.params

    def step_size(self, n: float, base: float | None = None) -> float:
        """The GD step on the summed objective of n observations, from lr (or ``base``).

        GD on J / n with step lr is GD on J with step lr / n (n counts repeats).
        """
        lr = self.lr if base is None else base
        return lr / max(n, 1.0) if self.reduction == "mean" else lr

    def _host(self, f: torch.Tensor) -> np.ndarray:
        """A float64 host copy of f: one crossing from the device."""
        return f.to(device="cpu", dtype=torch.float64).numpy().copy()

    def predict(self, X: np.ndarray) -> np.ndarray:
        """f(x; theta^j) for every member and arm, (M, K)."""
        rows = torch.tensor(X, dtype=self.dtype, device=self.device)
        with torch.no_grad():
            return self._host(self.net.forward(self.params, rows))

    def predict_member(self, X: np.ndarray, j: int) -> np.ndarray:
        """f(x; theta^j) of member j, (K,)."""
        one = {k: v[j : j + 1] for k, v in self.params.items()}
        rows = torch.tensor(X, dtype=self.dtype, device=self.device)
        with torch.no_grad():
            return self._host(self.net.forward(one, rows)[0])

    def predict_played(self, X: np.ndarray, j: int) -> tuple[np.ndarray, np.ndarray]:
        """Member j's predictions (K,), played on, and every member's (M, K): one pass.

        Row j of the stack's forward pass (which the exact law of the action needs
        anyway), not a second pass of member j alone: 91 us for both at m = 10, K = 50,
        width 20 against 59 + 91 us (one thread). The two passes round differently (no
        row of 330 compared was bitwise equal), so an action at a near-tie can differ
        from the code before 2026-12-07; in five runs of 600 rounds none did.
        """
        every = self.predict(X)
        return every[j].copy(), every

    def state_dict(self) -> dict[str, Any]:
        """Arrays only: params.<name>, params0.<name> (networks' dtype), lr once lowered."""
        out = {f"params.{k}": v.cpu().numpy().copy() for k, v in self.params.items()}
        out.update(
            {f"params0.{k}": v.cpu().numpy().copy() for k, v in self.params0.items()}
        )
        if self.lr != self._lr0:
            out["lr"] = np.asarray(self.lr)
        return out

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from :meth:`state_dict`."""
        for k in self.params:
            for prefix, params in (("params", self.params), ("params0", self.params0)):
                name = f"{prefix}.{k}"
                value = check_state_array(name, state[name], tuple(params[k].shape))
                params[k] = torch.tensor(value, dtype=self.dtype, device=self.device)
        self.penalty = nn.L2Penalty(self.penalty.lam, self.params0)
        self.lr = saved_lr(state, self._lr0)
