"""Per-sample gradients g(x_k; theta) = grad_theta f(x_k; theta) for all arms at once.

The gradient feature of [Zhou2020, Alg. 1] and [Bae2025, Sec. 4] for each of the K arms,
flattened in the order of ``flat_params`` (see ``banditkit.nn.mlp``), computed in one
call without a per-arm backward loop:

* depth 2 (any activation, with or without biases): closed form. With
  z = W_1 x + b_1, h = a(z), s = sqrt(width) or 1, v = W_2[0] and c = s * v * a'(z),

      df/dW_1 = c x^T (row-major),   df/db_1 = c,   df/dW_2 = s h^T,   df/db_2 = s,

  where a'(z) = 1[z > 0] for relu (the subgradient torch uses) and h (1 - h) for sigmoid.
* any depth: ``torch.func.vmap(torch.func.grad(...))`` over ``functional_call``.

Two contractions of the (K, p) block that never build it (the hot paths of training and
of diagonal-Gram selection), closed form for depth 2 and ``torch.func`` otherwise:

* ``forward_vjp``: f and the vector-Jacobian product v -> sum_k v_k g(x_k; theta), i.e. the
  gradient of any loss sum_k l_k(f_k) given v_k = l_k'(f_k). Depth 2:
  dW_1 = (v * c)^T X, db_1 = sum_k v_k c_k, dW_2 = s v^T h, db_2 = s sum_k v_k.
* ``forward_and_sq_norms``: f and q_k = sum_j g_kj^2 u_j for a weight vector u (the
  squared norm ||g_k||^2_{D^-1} of a diagonal Gram D = diag(1/u)). Depth 2:
  q_k = sum_i c_ki^2 [(x_k^2)^T U_1]_i + sum_i c_ki^2 u_b1,i + s^2 sum_i h_ki^2 u_2,i
  + s^2 u_b2, with U_1 the W_1 block of u reshaped (width, d): O(K width d), no (K, p).

References:
    [Zhou2020] D. Zhou, L. Li, Q. Gu. Neural contextual bandits with UCB-based
        exploration. ICML 2020.
    [Bae2025] S. Bae, D. Lee. Neural logistic bandits. arXiv:2505.02069.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch.func import functional_call, grad, vmap

from banditkit.core.validation import check_choice
from banditkit.nn.kernels import depth2_slopes
from banditkit.nn.mlp import MLP
from banditkit.nn.network import METHODS, stack_params

__all__ = [
    "forward_and_grads",
    "forward_and_sq_norms",
    "forward_vjp",
    "per_sample_grads",
]


def as_model_tensor(
    model: MLP, value: torch.Tensor | np.ndarray | Any, name: str, ndim: int
) -> torch.Tensor:
    """Return ``value`` as a finite tensor of the model's dtype and device, shape (..., d).

    Args:
        model: The network whose dtype, device and d apply.
        value: Array-like features.
        name: Argument name used in messages.
        ndim: Required number of dimensions (2 for (n, d), 3 for (n, S, d)).

    Returns:
        The converted tensor (no copy when it already matches).

    Raises:
        ValueError: On a wrong shape, an empty leading axis, NaN or inf.
    """
    ref = model.theta0
    x = torch.as_tensor(value, dtype=ref.dtype, device=ref.device)
    if x.ndim != ndim or x.shape[-1] != model.d or x.shape[0] < 1:
        lead = "(n, d)" if ndim == 2 else "(n, S, d)"
        raise ValueError(
            f"{name} must have shape {lead} with n >= 1 and d={model.d}; "
            f"got {tuple(x.shape)}."
        )
    if not bool(torch.isfinite(x).all()):
        bad = "NaN" if bool(torch.isnan(x).any()) else "inf"
        raise ValueError(f"{name} contains {bad}; every entry must be finite.")
    return x


def _depth2_pass(
    model: MLP, X: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Return f (K,), the hidden layer h (K, width) and c = s * W_2[0] * a'(z) (K, width).

    f comes from ``model.forward_with_hidden``, bitwise equal to ``model(X)`` (so that
    f(x; theta_0) = 0 exactly; see ``MLP``).
    """
    with torch.no_grad():
        f, _, h = model.forward_with_hidden(X)
        w2 = model.layer(1)[0]
        # c = a'(z) * s W_2[0], the factor the trainer's vjp uses (nn.kernels)
        c = depth2_slopes(model.activation, h, model.out_scale * w2[0])
    return f, h, c


def _closed_form(model: MLP, X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Depth-2 closed form of f and the (K, p) block G."""
    b1, b2 = model.layer(0)[1], model.layer(1)[1]
    f, h, c = _depth2_pass(model, X)
    s = model.out_scale
    K, d, m = X.shape[0], model.d, model.width
    # Written into one preallocated (K, p) block: a concatenation would copy the
    # K * m * d outer products a second time.
    G = torch.empty(K, model.n_params, dtype=X.dtype, device=X.device)
    torch.mul(c[:, :, None], X[:, None, :], out=G[:, : m * d].view(K, m, d))
    col = m * d  # df/dW_1 = c x^T (row-major), then df/db_1 = c
    if b1 is not None:
        G[:, col : col + m] = c
        col += m
    G[:, col : col + m] = s * h  # df/dW_2 = s h^T
    if b2 is not None:
        G[:, col + m] = s
    return f, G


def _torch_func(model: MLP, X: torch.Tensor) -> torch.Tensor:
    """vmap(grad) over rows of X; columns in the order of model.named_parameters()."""
    params = {name: p.detach() for name, p in model.named_parameters()}
    buffers = dict(model.named_buffers())

    def f_one(theta: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        return functional_call(model, (theta, buffers), (x.unsqueeze(0),)).squeeze(0)

    grads = vmap(grad(f_one), in_dims=(None, 0))(params, X)
    return torch.cat([grads[name].reshape(X.shape[0], -1) for name in params], dim=1)


def _resolve(model: MLP, method: str) -> str:
    method = check_choice("method", method, METHODS)
    if method == "closed-form" and model.depth != 2:
        raise ValueError(
            f"method='closed-form' needs depth 2; got depth={model.depth}. "
            "Use method='torch.func' or 'auto'."
        )
    if method == "auto":
        return "closed-form" if model.depth == 2 else "torch.func"
    return method


def forward_and_grads(
    model: MLP,
    X: torch.Tensor | np.ndarray,
    *,
    method: str = "auto",
    validate: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Return f(x_k; theta) and g(x_k; theta) = grad_theta f(x_k; theta) for all K rows.

    The closed form (depth 2) shares one pass between f and G; otherwise f is one batched
    forward and G one ``vmap(grad)`` call. f equals ``model(X)`` bitwise in both cases.

    Args:
        model: The network.
        X: Arm features (K, d); converted to the model's dtype and device.
        method: "auto" (closed form for depth 2, else torch.func), "closed-form" (depth 2
            only) or "torch.func".
        validate: False skips the checks of X, for callers that pass an already
            validated tensor of the model's dtype, device and shape (K, d).

    Returns:
        f (K,) and G (K, p), both detached; column j of G is parameter j of
        ``flat_params(model)``.

    Raises:
        ValueError: On a bad shape, NaN or inf in X, an unknown method, or
            "closed-form" with depth > 2.

    Example:
        >>> model = MLP(3, width=4, generator=torch.Generator().manual_seed(0))
        >>> f, G = forward_and_grads(model, torch.ones(2, 3, dtype=torch.float64))
        >>> f.tolist(), G.shape
        ([0.0, 0.0], torch.Size([2, 16]))
    """
    X = as_model_tensor(model, X, "X", 2) if validate else torch.as_tensor(X)
    if _resolve(model, method) == "closed-form":
        return _closed_form(model, X)
    with torch.no_grad():
        f = model(X)
    return f, _torch_func(model, X)


def per_sample_grads(
    model: MLP, X: torch.Tensor | np.ndarray, *, method: str = "auto"
) -> torch.Tensor:
    """Return G with row k = g(x_k; theta) = grad_theta f(x_k; theta) [Zhou2020, Alg. 1].

    All K rows come from one vectorised call (no per-arm backward loop).

    Args:
        model: The network.
        X: Arm features (K, d); converted to the model's dtype and device.
        method: "auto", "closed-form" (depth 2 only) or "torch.func"; see
            ``forward_and_grads``.

    Returns:
        G (K, p), detached, columns in the order of ``flat_params(model)``.

    Raises:
        ValueError: On a bad shape, NaN or inf in X, or an unknown method.

    Example:
        >>> model = MLP(3, width=4, generator=torch.Generator().manual_seed(0))
        >>> X = torch.ones(2, 3, dtype=torch.float64)
        >>> G = per_sample_grads(model, X)
        >>> G.shape  # (K, p) with p = 4 * 3 + 4
        torch.Size([2, 16])
        >>> torch.allclose(G, per_sample_grads(model, X, method="torch.func"))
        True
    """
    X = as_model_tensor(model, X, "X", 2)
    if _resolve(model, method) == "closed-form":
        return _closed_form(model, X)[1]
    return _torch_func(model, X)


VJP = Callable[[torch.Tensor], tuple[torch.Tensor, ...]]


def forward_vjp(
    model: MLP,
    X: torch.Tensor | np.ndarray,
    *,
    method: str = "auto",
    validate: bool = True,
) -> tuple[torch.Tensor, VJP]:
    """Return f(x_k; theta) (K,) and the map v -> sum_k v_k g(x_k; theta), per parameter.

    The gradient of a loss sum_k l_k(f(x_k; theta)) is ``vjp(l'(f))``: one forward and
    one backward contraction, without building the (K, p) block or an autograd graph
    (module docstring). This is the trainer's gradient routine.

    Args:
        model: The network.
        X: Inputs (K, d); converted to the model's dtype and device.
        method: "auto" (closed form for depth 2, else torch.func), "closed-form" (depth
            2 only) or "torch.func" (``torch.func.vjp``); both are
            ``model.network.forward_vjp`` on ``stack_params(model)``, a stack of one.
        validate: False skips the checks of X (see ``forward_and_grads``).

    Returns:
        f (K,), detached, equal to ``model(X)`` up to rounding (both methods use the
        dense products of ``StackedMLP``, not the block-exact forward of ``MLP``), and
        ``vjp``: v (K,) -> a tuple of tensors shaped like ``model.parameters()`` (same
        order).

    Raises:
        ValueError: On a bad shape, NaN or inf in X, or an unknown method.

    Example:
        >>> model = MLP(3, width=4, generator=torch.Generator().manual_seed(0))
        >>> X = torch.ones(2, 3, dtype=torch.float64)
        >>> f, vjp = forward_vjp(model, X)
        >>> grads = vjp(torch.tensor([1.0, -1.0], dtype=torch.float64))
        >>> [tuple(g.shape) for g in grads]
        [(4, 3), (1, 4)]
    """
    X = as_model_tensor(model, X, "X", 2) if validate else torch.as_tensor(X)
    method = _resolve(model, method)
    f, vjp = model.network.forward_vjp(stack_params(model), X, method=method)
    return f[0], lambda v: tuple(g[0] for g in vjp(v[None]).values())


def forward_and_sq_norms(
    model: MLP,
    X: torch.Tensor | np.ndarray,
    weights: torch.Tensor | np.ndarray,
    *,
    method: str = "auto",
    validate: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Return f(x_k; theta) and q_k = sum_j g_kj^2 u_j for all K rows, without (K, p).

    With u = 1 / diag(D) this is ||g(x_k; theta)||^2_{D^-1} for a diagonal Gram D, the
    width of every practical neural UCB/TS rule ([Zhou2020, Sec. 7], [Bae2025, Sec. 7]).
    Depth 2 costs O(K width d) (module docstring); other depths build G once.

    Args:
        model: The network.
        X: Inputs (K, d).
        weights: u (p,), in the order of ``flat_params(model)``.
        method: "auto", "closed-form" (depth 2 only) or "torch.func".
        validate: False skips the checks of X (see ``forward_and_grads``).

    Returns:
        f (K,), bitwise equal to ``model(X)``, and q (K,), detached.

    Raises:
        ValueError: On a bad shape, NaN or inf in X, a u of the wrong length, or an
            unknown method.

    Example:
        >>> model = MLP(3, width=4, generator=torch.Generator().manual_seed(0))
        >>> X = torch.rand(2, 3, dtype=torch.float64)
        >>> u = torch.rand(model.n_params, dtype=torch.float64)
        >>> f, q = forward_and_sq_norms(model, X, u)
        >>> torch.allclose(q, per_sample_grads(model, X) ** 2 @ u)
        True
    """
    X = as_model_tensor(model, X, "X", 2) if validate else torch.as_tensor(X)
    ref = model.theta0
    u = torch.as_tensor(weights, dtype=ref.dtype, device=ref.device)
    if u.shape != (model.n_params,):
        raise ValueError(
            f"weights must have shape ({model.n_params},); got {tuple(u.shape)}."
        )
    if _resolve(model, method) != "closed-form":
        f, G = forward_and_grads(model, X, method=method, validate=False)
        return f, (G * G) @ u
    f, h, c = _depth2_pass(model, X)
    s2 = model.out_scale**2
    m, d = model.width, model.d
    has_bias = model.bias
    col = m * d
    with torch.no_grad():
        c2 = c * c
        q = (c2 * ((X * X) @ u[:col].view(m, d).mT)).sum(1)
        if has_bias:
            q += c2 @ u[col : col + m]
            col += m
        q += s2 * ((h * h) @ u[col : col + m])
        if has_bias:
            q += s2 * u[col + m]
    return f, q
