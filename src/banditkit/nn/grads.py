"""Per-sample gradients g(x_k; theta) = grad_theta f(x_k; theta) for all arms at once.

The gradient feature of [Zhou2020, Alg. 1] and [Bae2025, Sec. 4] for each of the K arms,
flattened in the order of ``flat_params`` (see ``banditkit.nn.mlp``), computed in one
call without a per-arm backward loop:

* depth 2 (any activation, with or without biases): closed form. With
  z = W_1 x + b_1, h = a(z), s = sqrt(width) or 1, v = W_2[0] and c = s * v * a'(z),

      df/dW_1 = c x^T (row-major),   df/db_1 = c,   df/dW_2 = s h^T,   df/db_2 = s,

  where a'(z) = 1[z > 0] for relu (the subgradient torch uses) and h (1 - h) for sigmoid.
* any depth: the same reverse pass per arm [Rumelhart1986], delta_{L-2} = c and
  delta_{i-1} = a'(z_{i-1}) * (delta_i W_i), with df/dW_i = delta_i h_i^T and
  df/db_i = delta_i for the input h_i of layer i (``_reverse_pass``); at depth 2 it is
  the closed form above, operation for operation. ``torch.func.vmap(torch.func.grad(...))``
  over ``functional_call`` is the reference (``method="torch.func"``; tests: 1e-10 in
  float64), about 10x slower at the ensemble paper's sizes (K = 50, width 20, depth 3;
  ``benchmarks/arm_pass.py``).

Two contractions of the (K, p) block that never build it (the hot paths of training and
of diagonal-Gram selection), closed form for depth 2 and the explicit passes otherwise:

* ``forward_vjp``: f and the vector-Jacobian product v -> sum_k v_k g(x_k; theta), i.e. the
  gradient of any loss sum_k l_k(f_k) given v_k = l_k'(f_k). Depth 2:
  dW_1 = (v * c)^T X, db_1 = sum_k v_k c_k, dW_2 = s v^T h, db_2 = s sum_k v_k.
* ``forward_and_sq_norms``: f and q_k = sum_j g_kj^2 u_j for a weight vector u (the
  squared norm ||g_k||^2_{D^-1} of a diagonal Gram D = diag(1/u)). Depth 2:
  q_k = sum_i c_ki^2 [(x_k^2)^T U_1]_i + sum_i c_ki^2 u_b1,i + s^2 sum_i h_ki^2 u_2,i
  + s^2 u_b2, with U_1 the W_1 block of u reshaped (width, d): O(K width d), no (K, p);
  deeper, the same sum over every hidden layer with its delta_i and input h_i.

``ArmPass`` is the one entry of the per-round passes (f, G, q and the played arm's g
from the scoring pass): it chooses the kernel by the network and its device, NumPy
(``nn._arms``) for a depth-2 network without biases on the CPU, where PyTorch's
per-operation dispatch would cost more than the arithmetic, and the explicit torch pass
above otherwise. ``forward_and_grads`` and ``forward_and_sq_norms`` with method "auto" are
its function forms.

References:
    [Rumelhart1986] D. Rumelhart, G. Hinton, R. Williams. Learning representations by
        back-propagating errors. Nature 323, 1986.
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
from banditkit.nn._arms import NumpyArms
from banditkit.nn._arms import supports as numpy_supports
from banditkit.nn._kernels import activation_slope, depth2_slopes
from banditkit.nn.mlp import MLP
from banditkit.nn.network import METHODS, stack_params

__all__ = [
    "ArmPass",
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


def _reverse_pass(
    model: MLP, X: torch.Tensor
) -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor]]:
    """Return f (K,), the layers' inputs and, per arm, df/dz of every hidden layer.

    With h_0 = X, h_{i+1} = a(z_i), z_i = h_i W_i^T + b_i (layers i = 0..L-1, 0-based),
    f = s (h_{L-1} W_{L-1}^T + b_{L-1}):

        delta_{L-2} = a'(z_{L-2}) * s W_{L-1}[0],  delta_{i-1} = a'(z_{i-1}) * (delta_i W_i),

    row k for arm k; the gradient of f(x_k) is then delta_i[k] h_i[k]^T for W_i and
    delta_i[k] for b_i (module docstring). At depth 2 delta_0 is the c of the closed
    form (``nn._kernels.depth2_slopes``, shared with the trainer). f comes from
    ``model.forward_with_layers``, bitwise equal to ``model(X)`` (so that
    f(x; theta_0) = 0 exactly; see ``MLP``).

    Returns:
        f (K,), [h_0 = X, h_1, ..., h_{L-1}] and [delta_0, ..., delta_{L-2}] (K, width).
    """
    with torch.no_grad():
        f, hidden = model.forward_with_layers(X)
        head = model.layer(model.depth - 1)[0]
        delta = depth2_slopes(model.activation, hidden[-1], model.out_scale * head[0])
        deltas = [delta]
        for i in range(model.depth - 2, 0, -1):
            slope = activation_slope(model.activation, hidden[i - 1])
            delta = slope.mul_(delta @ model.layer(i)[0])
            deltas.append(delta)
    deltas.reverse()
    return f, [X, *hidden], deltas


def _explicit_grads(model: MLP, X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """F and the (K, p) block G from the reverse pass (``_reverse_pass``), any depth."""
    f, inputs, deltas = _reverse_pass(model, X)
    s, K = model.out_scale, X.shape[0]
    # Written into one preallocated (K, p) block: a concatenation would copy the
    # K * m * n_in outer products a second time.
    G = torch.empty(K, model.n_params, dtype=X.dtype, device=X.device)
    col = 0  # df/dW_i = delta_i h_i^T (row-major), then df/db_i = delta_i
    with torch.no_grad():
        for delta, h in zip(deltas, inputs[:-1], strict=True):
            n_out, n_in = delta.shape[1], h.shape[1]
            block = G[:, col : col + n_out * n_in].view(K, n_out, n_in)
            torch.mul(delta[:, :, None], h[:, None, :], out=block)
            col += n_out * n_in
            if model.bias:
                G[:, col : col + n_out] = delta
                col += n_out
        G[:, col : col + model.width] = s * inputs[-1]  # df/dW_L = s h_{L-1}^T
        if model.bias:
            G[:, col + model.width] = s
    return f, G


def _explicit_sq_norms(
    model: MLP, X: torch.Tensor, u: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """F and q_k = sum_j g_kj^2 u_j from the reverse pass, without the (K, p) block.

    Per hidden layer i, sum_{a,b} delta_i[k,a]^2 h_i[k,b]^2 U_i[a,b] is
    (delta_i^2 * (h_i^2 U_i^T)).sum(1), U_i the W_i block of u reshaped (n_out, n_in):
    O(K width n_in) a layer.
    """
    f, inputs, deltas = _reverse_pass(model, X)
    s2 = model.out_scale**2
    col = 0
    q = torch.zeros_like(f)
    with torch.no_grad():
        for delta, h in zip(deltas, inputs[:-1], strict=True):
            n_out, n_in = delta.shape[1], h.shape[1]
            d2 = delta * delta
            U = u[col : col + n_out * n_in].view(n_out, n_in)
            q += (d2 * ((h * h) @ U.mT)).sum(1)
            col += n_out * n_in
            if model.bias:
                q += d2 @ u[col : col + n_out]
                col += n_out
        h = inputs[-1]
        q += s2 * ((h * h) @ u[col : col + model.width])
        if model.bias:
            q += s2 * u[col + model.width]
    return f, q


def _torch_func(model: MLP, X: torch.Tensor) -> torch.Tensor:
    """vmap(grad) over rows of X; columns in the order of model.named_parameters()."""
    params = {name: p.detach() for name, p in model.named_parameters()}
    buffers = dict(model.named_buffers())

    def f_one(theta: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        return functional_call(model, (theta, buffers), (x.unsqueeze(0),)).squeeze(0)

    grads = vmap(grad(f_one), in_dims=(None, 0))(params, X)
    return torch.cat([grads[name].reshape(X.shape[0], -1) for name in params], dim=1)


def _resolve(model: MLP, method: str) -> str:
    """The method that runs: "auto" is "closed-form" at depth 2, "backprop" deeper."""
    method = check_choice("method", method, METHODS)
    if method == "closed-form" and model.depth != 2:
        raise ValueError(
            f"method='closed-form' needs depth 2; got depth={model.depth}. "
            "Use method='backprop', 'torch.func' or 'auto'."
        )
    if method == "auto":
        return "closed-form" if model.depth == 2 else "backprop"
    return method


def _params_key(model: MLP) -> tuple[int, ...]:
    """Storage and version of every parameter: changes whenever theta does."""
    return tuple(v for p in model.parameters() for v in (p.data_ptr(), p._version))


def _torch_grads(
    model: MLP, X: torch.Tensor, method: str
) -> tuple[torch.Tensor, torch.Tensor]:
    """F and G by the explicit reverse pass, or by torch.func (``method``)."""
    if _resolve(model, method) != "torch.func":
        return _explicit_grads(model, X)
    with torch.no_grad():
        f = model(X)
    return f, _torch_func(model, X)


def _torch_sq_norms(
    model: MLP, X: torch.Tensor, u: torch.Tensor, method: str
) -> tuple[torch.Tensor, torch.Tensor]:
    """F and q_k = sum_j g_kj^2 u_j by the explicit pass, or from torch.func's G."""
    if _resolve(model, method) != "torch.func":
        return _explicit_sq_norms(model, X, u)
    f, G = _torch_grads(model, X, method)
    return f, (G * G) @ u


class ArmPass:
    """The per-round passes of one network over K arms, the kernel chosen here.

    f(x_k; theta), the gradients g(x_k; theta) (K, p) and the squared widths
    q_k = sum_j g_kj^2 u_j of a diagonal Gram (module docstring) for the K arms of a
    round, and the gradient of the arm then played, from the scoring pass itself. The
    kernel follows the network: a depth-2 network without biases on the CPU runs in
    NumPy (``nn._arms``: a dozen small products, about 5x less time than through
    PyTorch's dispatch at K = 5); any other network (biases, depth > 2, another device)
    runs the explicit reverse pass in torch (``_reverse_pass``), on its device. The two
    kernels agree to rounding.

    Bound to one ``nn.MLP``; it reads the live parameters, so training in place needs
    no notice. ``ArmPass.of(model)`` returns the one kept with the model.

    Args:
        model: The network.

    Shapes:
        X (K, d); f (K,), G (K, p), q (K,), g (p,); tensors of the model's dtype and
        device (NumPy results are wrapped without a copy).

    Example:
        >>> model = MLP(3, width=4, generator=torch.Generator().manual_seed(0))
        >>> arms = ArmPass(model)
        >>> f, q = arms.sq_norms(np.eye(3), np.ones(model.n_params))
        >>> f.tolist()  # the mirrored initialisation: f(x; theta_0) = 0
        [0.0, 0.0, 0.0]
        >>> bool(torch.allclose(arms.grad(1), per_sample_grads(model, np.eye(3))[1]))
        True
    """

    def __init__(self, model: MLP) -> None:
        if not isinstance(model, MLP):
            raise TypeError(f"model must be an nn.MLP; got {type(model).__name__}.")
        self.model = model
        self._numpy = NumpyArms(model) if numpy_supports(model) else None
        self._np_dtype = np.dtype(str(model.theta0.dtype).removeprefix("torch."))
        # the torch kernel's last rows, with the parameters they were scored under
        self._kept: tuple[torch.Tensor, tuple[int, ...]] | None = None

    @classmethod
    def of(cls, model: MLP) -> ArmPass:
        """The ``ArmPass`` kept with ``model`` (made at the first call)."""
        arms = model.__dict__.get("_arm_pass")
        if arms is None or arms.model is not model:
            arms = cls(model)
            model.__dict__["_arm_pass"] = arms
        return arms

    def _rows(self, X: Any, validate: bool) -> Any:
        """X as the kernel reads it: NumPy (K, d) for NumPy, else a model tensor."""
        model = self.model
        if validate:
            X = as_model_tensor(model, X, "X", 2)
        if self._numpy is None:
            ref = model.theta0
            if isinstance(X, np.ndarray) and not X.flags.writeable:
                X = np.array(X)  # torch wraps writable arrays only
            return torch.as_tensor(X, dtype=ref.dtype, device=ref.device)
        if isinstance(X, torch.Tensor):
            X = X.detach().numpy()
        return np.asarray(X, dtype=self._np_dtype)

    def _weights(self, u: Any) -> Any:
        ref = self.model.theta0
        p = ref.shape[0]  # theta_0 is flat: p entries (``MLP.n_params`` walks modules)
        w: Any
        if self._numpy is None:
            w = torch.as_tensor(u, dtype=ref.dtype, device=ref.device)
        else:
            if isinstance(u, torch.Tensor):
                u = u.detach().numpy()
            w = np.asarray(u, dtype=self._np_dtype)
        if w.shape != (p,):
            raise ValueError(f"weights must have shape ({p},); got {tuple(w.shape)}.")
        return w

    def forward(self, X: Any, *, validate: bool = True) -> torch.Tensor:
        """f(x_k; theta) (K,) for rows X (K, d)."""
        rows = self._rows(X, validate)
        if self._numpy is not None:
            return torch.from_numpy(self._numpy.forward(rows)[0])
        with torch.no_grad():
            return self.model(rows)

    def grads(
        self, X: Any, *, validate: bool = True
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """F (K,) and G (K, p), row k = g(x_k; theta) in the order of ``flat_params``."""
        rows = self._rows(X, validate)
        if self._numpy is not None:
            f, G = self._numpy.grads(rows)
            return torch.from_numpy(f), torch.from_numpy(G)
        self._kept = (rows, _params_key(self.model))
        return _torch_grads(self.model, rows, "auto")

    def sq_norms(
        self, X: Any, weights: Any, *, validate: bool = True
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """F (K,) and q_k = sum_j g_kj^2 u_j (K,) for weights u (p,), without (K, p)."""
        rows = self._rows(X, validate)
        u = self._weights(weights)
        if self._numpy is not None:
            f, q = self._numpy.sq_norms(rows, u)
            return torch.from_numpy(f), torch.from_numpy(q)
        self._kept = (rows, _params_key(self.model))
        return _torch_sq_norms(self.model, rows, u, "auto")

    def grad(self, k: int) -> torch.Tensor | None:
        """g(x_k; theta) (p,) of row k of the last ``grads`` or ``sq_norms``.

        None when there was none, or theta changed since (the caller then computes the
        gradient afresh).
        """
        if self._numpy is not None:
            g = self._numpy.grad(k)
            return None if g is None else torch.from_numpy(g)
        kept = self._kept
        if kept is None or kept[1] != _params_key(self.model):
            return None
        return _torch_grads(self.model, kept[0][k : k + 1], "auto")[1][0]


def forward_and_grads(
    model: MLP,
    X: torch.Tensor | np.ndarray,
    *,
    method: str = "auto",
    validate: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Return f(x_k; theta) and g(x_k; theta) = grad_theta f(x_k; theta) for all K rows.

    "auto" runs ``ArmPass.of(model).grads``, whose kernel follows the network (NumPy for
    a depth-2 network without biases on the CPU, the explicit torch pass otherwise);
    "closed-form" (depth 2) and "backprop" (any depth) force the explicit torch pass,
    "torch.func" the reference (``vmap(grad)``, for tests). f equals ``model(X)`` up to
    rounding, and is exactly 0 at a mirrored theta_0.

    Args:
        model: The network.
        X: Arm features (K, d); converted to the model's dtype and device.
        method: "auto", "closed-form" (depth 2 only), "backprop" or "torch.func".
        validate: False skips the checks of X, for callers that pass an already
            validated array of the model's dtype and shape (K, d).

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
    if method == "auto":
        return ArmPass.of(model).grads(X, validate=validate)
    X = as_model_tensor(model, X, "X", 2) if validate else torch.as_tensor(X)
    return _torch_grads(model, X, method)


def per_sample_grads(
    model: MLP, X: torch.Tensor | np.ndarray, *, method: str = "auto"
) -> torch.Tensor:
    """Return G with row k = g(x_k; theta) = grad_theta f(x_k; theta) [Zhou2020, Alg. 1].

    All K rows come from one vectorised call (no per-arm backward loop).

    Args:
        model: The network.
        X: Arm features (K, d); converted to the model's dtype and device.
        method: "auto", "closed-form" (depth 2 only), "backprop" or "torch.func"; see
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
    return forward_and_grads(model, X, method=method)[1]


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
    (module docstring). It is the trainer's pass (``StackedMLP.forward_vjp``) on a
    stack of one.

    Args:
        model: The network.
        X: Inputs (K, d); converted to the model's dtype and device.
        method: "auto" (closed form for depth 2, else the explicit reverse pass),
            "closed-form" (depth 2 only), "backprop" (the explicit reverse pass) or
            "torch.func" (``torch.func.vjp``); each is
            ``model.network.forward_vjp`` on ``stack_params(model)``, a stack of one.
        validate: False skips the checks of X (see ``forward_and_grads``).

    Returns:
        f (K,), detached, equal to ``model(X)`` up to rounding (the trainer's dense
        products, not the block-exact forward of ``MLP``), and ``vjp``: v (K,) -> a
        tuple of tensors shaped like ``model.parameters()`` (same order).

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
    Depth 2 costs O(K width d), depth L O(K width (d + (L - 2) width)) (module
    docstring; only "torch.func" builds G). "auto"
    runs ``ArmPass.of(model).sq_norms`` (its kernel follows the network, see
    ``forward_and_grads``).

    Args:
        model: The network.
        X: Inputs (K, d).
        weights: u (p,), in the order of ``flat_params(model)``.
        method: "auto", "closed-form" (depth 2 only), "backprop" or "torch.func".
        validate: False skips the checks of X (see ``forward_and_grads``).

    Returns:
        f (K,) and q (K,), detached.

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
    if method == "auto":
        return ArmPass.of(model).sq_norms(X, weights, validate=validate)
    X = as_model_tensor(model, X, "X", 2) if validate else torch.as_tensor(X)
    ref = model.theta0
    u = torch.as_tensor(weights, dtype=ref.dtype, device=ref.device)
    if u.shape != (model.n_params,):
        raise ValueError(
            f"weights must have shape ({model.n_params},); got {tuple(u.shape)}."
        )
    return _torch_sq_norms(model, X, u, method)
