"""Parts shared by the MNL assortment policies.

The context's revenues and capacity, the uniform random assortment, the exact assortment step, and the sigmoid utility network.

References:
    [Hwang2025] T. Hwang, D. Kim, M. Oh. Tractable multinomial logit contextual bandits with
        non-linear utilities. NeurIPS 2025 (arXiv 2601.06913).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from banditkit.assortment import optimal_assortment
from banditkit.assortment.solvers import top_k
from banditkit.core.lazy import torch  # imported at first use
from banditkit.core.types import Context
from banditkit.core.validation import check_choice
from banditkit.policies.parts.history import SetHistory
from banditkit.policies.parts.models.device_history import (
    DeviceObservations,
    member_sets,
)

if TYPE_CHECKING:
    from banditkit import nn
else:
    from banditkit.core.lazy import lazy_import

    nn = lazy_import("banditkit.nn")  # PyTorch is imported at first use

__all__ = [
    "PHASE1_SAMPLERS",
    "UniformAssortmentLaw",
    "UtilityNet",
    "capacity_of",
    "default_kappa",
    "offered_set",
    "offered_sets",
    "revenues_of",
    "uniform_assortment",
]

#: Random-assortment samplers: "uniform" draws uniformly over all non-empty sets of at most
#: K items ([Hwang2025, Alg. 1], S ~ Unif(S)); "exactly-k" draws a uniform set of min(K, N).
PHASE1_SAMPLERS = ("uniform", "exactly-k")


def _host(t: torch.Tensor) -> np.ndarray:
    """A float64 host array of ``t``: a free view when it is a float64 CPU tensor."""
    return t.detach().to(device="cpu", dtype=torch.float64).numpy()


def capacity_of(ctx: Context) -> int:
    """The capacity K of the round: ``ctx.max_size`` capped at the number of items."""
    n = ctx.n_arms
    return n if ctx.max_size is None else min(ctx.max_size, n)


def revenues_of(ctx: Context) -> np.ndarray | None:
    """The round's revenues (None: all 1), refusing negative ones with a ``ValueError``."""
    r = ctx.revenues
    if r is not None and (r < 0).any():
        raise ValueError(
            f"ctx.revenues must be >= 0 for an MNL assortment policy; got "
            f"{float(r.min())!r} at index {int(r.argmin())}."
        )
    return r


def default_kappa(capacity: int) -> float:
    """Kappa = e^-1 / (1 + K e)^2, a lower bound on p_0 p_i.

    The formula of the public OFU-MNL+ code (Lee & Oh 2024) for utilities in [-1, 1]:
    1.73e-3 for K = 5.
    """
    return math.exp(-1.0) / (1.0 + capacity * math.e) ** 2


def uniform_assortment(
    rng: np.random.Generator, n_items: int, capacity: int, sampler: str = "uniform"
) -> tuple[int, ...]:
    """A random assortment, uniform over the non-empty sets of at most ``capacity`` items.

    The size s is drawn with probability C(N, s) / sum_j C(N, j), then s distinct items;
    with ``sampler="exactly-k"``, a uniform set of exactly ``min(capacity, N)`` items.
    """
    check_choice("sampler", sampler, PHASE1_SAMPLERS)
    k = min(capacity, n_items)
    if sampler == "uniform" and k > 1:
        size = 1 + int(rng.choice(k, p=_size_weights(n_items, k)))
    else:
        size = k
    items = rng.choice(n_items, size=size, replace=False)
    return tuple(sorted(int(i) for i in items))


def _size_weights(n_items: int, k: int) -> np.ndarray:
    """P(size = s), s = 1..k, of the "uniform" sampler: C(N, s) / sum_j C(N, j)."""
    # log C(N, s) for s = 1..k, normalised without overflow
    logc = np.array(
        [
            math.lgamma(n_items + 1) - math.lgamma(s + 1) - math.lgamma(n_items - s + 1)
            for s in range(1, k + 1)
        ]
    )
    p = np.exp(logc - logc.max())
    return p / p.sum()


class UniformAssortmentLaw:
    """The law of :func:`uniform_assortment`: P(size = s) / C(N, s) for a set of s items.

    A policy's random round proposes the law and plays :meth:`draw`.

    Example:
        >>> law = UniformAssortmentLaw(4, 2, "exactly-k")
        >>> round(law((0, 3)), 6), law((1,))
        (0.166667, 0.0)
    """

    def __init__(self, n_items: int, capacity: int, sampler: str = "uniform") -> None:
        self.n_items = n_items
        self.k = min(capacity, n_items)
        self.sampler = sampler
        self.sizes = (
            _size_weights(n_items, self.k)
            if sampler == "uniform" and self.k > 1
            else np.eye(self.k)[-1]
        )

    def __call__(self, action: Any) -> float:
        """The probability of the set ``action`` (distinct items)."""
        s = len(action)
        if not 1 <= s <= self.k:
            return 0.0
        return float(self.sizes[s - 1]) / math.comb(self.n_items, s)

    def draw(self, rng: np.random.Generator) -> tuple[int, ...]:
        """A set drawn from this law (:func:`uniform_assortment`)."""
        return uniform_assortment(rng, self.n_items, self.k, self.sampler)


def offered_set(z: np.ndarray, ctx: Context) -> tuple[int, ...]:
    """The exact MNL-optimal assortment under utilities ``z`` and the round's revenues.

    Top-K by z under equal revenues, Dinkelbach's fixed point otherwise
    (``banditkit.assortment.optimal_assortment``). When no item earns anything (all revenues
    0) every set earns 0 and the item of largest z is offered.
    """
    revenues = revenues_of(ctx)
    if revenues is None:  # equal revenues: the top-K utilities (ties: lower index)
        return tuple(int(i) for i in top_k(z, capacity_of(ctx), positive=False))
    items = optimal_assortment(z, revenues, capacity=capacity_of(ctx)).items
    return items if items else (int(np.argmax(z)),)


def offered_sets(z: np.ndarray, ctx: Context) -> list[tuple[int, ...]]:
    """:func:`offered_set` of each row of utilities z (n, N), vectorised on equal revenues.

    Example:
        >>> ctx = Context(arms=np.eye(3), max_size=2)
        >>> offered_sets(np.array([[0.0, 1.0, 1.0], [2.0, 0.0, 2.0]]), ctx)
        [(1, 2), (0, 2)]
    """
    if revenues_of(ctx) is not None:
        return [offered_set(row, ctx) for row in z]
    # top_k's sets: a stable sort puts the lower index first among ties
    best = np.argsort(-z, axis=1, kind="stable")[:, : capacity_of(ctx)]
    return [tuple(row) for row in np.sort(best, axis=1).tolist()]


def slot_of(action: tuple[int, ...], chosen: int) -> int:
    """The chosen item's position in the offered set, -1 for the outside option."""
    return -1 if chosen < 0 else action.index(chosen)


class UtilityNet:
    """The utility class f_w(x) = a^T sigmoid(W x + b) + c of [Hwang2025, Sec. 4].

    An ``nn.MLP`` of depth 2 with sigmoid activation, biases and no output scaling
    (torch-like "standard" initialisation from the policy's generator). Parameters are
    flattened as W (row-major), b, a, c, the order of the module's ``parameters()``;
    ``evaluate`` returns f and the per-item gradients in closed form (``nn.forward_and_grads``).

    Args:
        d: Item feature dimension.
        width: Hidden units m; the parameter count is d_w = d m + 2 m + 1.
        rng: The policy's generator (one draw seeds the initialisation).
        dtype: "float64" (default) or "float32": the network, its passes and its
            training; what the methods return is float64 on the host either way.
        device: "cpu" (default), "cuda", "cuda:N" or "auto" (``nn.resolve_device``):
            the network, its training and its sets' mirror (``DeviceObservations``).
    """

    def __init__(
        self,
        d: int,
        width: int,
        rng: np.random.Generator,
        *,
        dtype: str = "float64",
        device: str = "cpu",
    ) -> None:
        self.dtype = nn.resolve_dtype(dtype)
        self.device = nn.resolve_device(device)
        self.model: nn.MLP = nn.MLP(
            d,
            width=width,
            depth=2,
            activation="sigmoid",
            init="standard",
            scale_output=False,
            bias=True,
            generator=nn.make_generator(rng),
            dtype=self.dtype,
            device=self.device,
        )
        self.n_params = self.model.n_params
        self._observations = DeviceObservations(self.dtype, self.device)

    @property
    def w(self) -> np.ndarray:
        """The parameters as one float64 vector (p,) (a copy)."""
        return _host(nn.flat_params(self.model)).copy()

    def set_w(self, w: np.ndarray) -> None:
        """Overwrite the parameters from a vector (p,)."""
        nn.set_flat_params(
            self.model,
            torch.as_tensor(
                np.asarray(w, dtype=float), dtype=self.dtype, device=self.device
            ),
        )

    def _rows(self, X: np.ndarray) -> torch.Tensor:
        return torch.tensor(X, dtype=self.dtype, device=self.device)

    def predict(self, X: np.ndarray) -> np.ndarray:
        """f_w(x) for every row of X (n, d) -> (n,)."""
        with torch.no_grad():
            return _host(self.model(self._rows(X)))

    def evaluate(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """f_w(x) (n,) and grad_w f_w(x) (n, p) for every row of X, in closed form."""
        f, G = nn.forward_and_grads(self.model, self._rows(X), validate=False)
        return _host(f), _host(G)

    def fit(self, history: SetHistory, *, lr: float, steps: int) -> float:
        """Minimise the MNL NLL of ``history`` (outside option included) by full-batch Adam.

        Warm-started from the current weights; returns the final mean NLL.
        """
        if history.n == 0:
            return float("nan")
        obs = self._observations(history, weighted=False)
        assert isinstance(obs, nn.Sets)
        return _fit_mnl(
            self.model.network, nn.stack_params(self.model), obs, lr, steps
        )[0]

    @staticmethod
    def fit_stack(
        nets: Sequence[UtilityNet],
        histories: Sequence[SetHistory],
        *,
        lr: float,
        steps: int,
    ) -> list[float]:
        """:meth:`fit` of each net on its own history, the S nets trained as one stack.

        The nets (one configuration: width, dtype, device) become the members of one
        ``nn.fit`` over per-member sets (``member_sets``, each member's own layout), with
        the batched kernels: each member's result equals its own :meth:`fit` up to the
        order of floating-point operations (the per-step work of the S fits is shared).
        The histories must hold as many sets. Returns each member's final mean NLL.
        """
        first = nets[0]
        if histories[0].n == 0:
            return [float("nan")] * len(nets)
        views = [nn.stack_params(net.model) for net in nets]
        params = {name: torch.cat([v[name] for v in views]) for name in views[0]}
        obs = member_sets(list(histories), dtype=first.dtype, device=first.device)
        nll = _fit_mnl(first.model.network, params, obs, lr, steps)
        for s, view in enumerate(views):
            for name, value in view.items():
                value.copy_(params[name][s : s + 1])
        return nll

    def state_dict(self) -> dict[str, Any]:
        """The parameters as one array."""
        return {"w": self.w}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`."""
        self.set_w(np.asarray(state["w"], dtype=float))


def _fit_mnl(
    network: nn.StackedMLP, params: nn.Params, obs: nn.Sets, lr: float, steps: int
) -> list[float]:
    """Full-batch Adam on the mean MNL NLL of ``obs``, in place; each member's last J."""
    result = nn.fit(
        network,
        params,
        obs,
        nn.MNL(),
        optimizer="adam",
        lr=lr,
        steps=steps,
        reduction="mean",
        inplace=True,
        record="ends",  # the last J is read
    )
    return [float(v) for v in result.history[-1]]
