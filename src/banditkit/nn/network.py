"""Functional networks over parameters stacked along a member axis.

A network here holds hyper-parameters only; its parameters are an explicit ``Params``
dict of tensors whose leading dimension is the member axis M (ensemble members, or
seeds of one configuration). Every member is an independent network; one call evaluates
or differentiates all M members as one batched computation.

    StackedMLP    f(x; theta) = s * (W_L a(... a(W_1 x + b_1) ...) + b_L)   (nn.MLP's map)
    NeuralLinear  f(x; theta) = w^T phi(x) + b, phi(x) the last hidden layer
                  [Riquelme2018]: a representation with a linear (GLM) head

Parameter names and shapes (``StackedMLP.shapes``), in the order of ``nn.MLP``'s
``named_parameters()`` so that ``stack_params(model)`` is a stack of one:

    "layers.0.weight"  (M, width, d)        "layers.0.bias"  (M, width)   (bias only)
    "layers.l.weight"  (M, width, width)    ...
    "layers.{L-1}.weight" (M, 1, width)     "layers.{L-1}.bias" (M, 1)

The last layer is the head (``head_names``), the others the representation
(``representation_names``); penalties act on such named groups.

Gradients (``forward_vjp``): depth 2 in closed form, generalising ``nn.forward_vjp`` to the
stack; with z = W_1 x + b_1, h = a(z), c = s * W_2[0] * a'(z) per member,

    dW_1 = (v * c)^T X,   db_1 = sum_k v_k c_k,   dW_2 = s v^T h,   db_2 = s sum_k v_k,

and the explicit reverse pass of ``nn._passes`` for any other depth (members do not mix,
so one vjp over the stack is M independent vjps).

The depth-2 closed form lives in ``nn._kernels``: members with M = 1 run on the 2-D
products of the single-network code (``mm``, ``mv``) so that a stack of one equals
``nn.train`` on an ``nn.MLP`` bitwise; M > 1 runs one GEMM per layer for all members over
cache-sized blocks of rows, which rounds differently (tests: within 1e-12).

References:
    [Zhou2020] D. Zhou, L. Li, Q. Gu. Neural contextual bandits with UCB-based
        exploration. ICML 2020.
    [Riquelme2018] C. Riquelme, G. Tucker, J. Snoek. Deep Bayesian bandits showdown.
        ICLR 2018.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch

from banditkit.core.validation import check_choice, check_int
from banditkit.nn._kernels import (
    activation_slope,
    depth2_forward_vjp,
    stack_mm,
    stack_mv,
)
from banditkit.nn._passes import Dense2, Pass, reverse_pass
from banditkit.nn.params import before_write

__all__ = [
    "NeuralLinear",
    "Params",
    "StackedMLP",
    "activation_slope",
    "draw_layers",
    "stack_params",
]

ACTIVATIONS = ("relu", "sigmoid")
INITS = ("mirrored", "mirrored-blockdiag", "standard")
METHODS = ("auto", "closed-form", "torch.func", "backprop")

#: Parameters of a stack of M networks: name -> tensor (M, ...).
Params = dict[str, torch.Tensor]
VJP = Callable[[torch.Tensor], Params]


def draw_layers(
    sizes: Sequence[int], init: str, bias: bool, gen: torch.Generator
) -> list[tuple[torch.Tensor, torch.Tensor | None]]:
    """Draw one network's initial (weight, bias) per layer, float64 on ``gen``'s device.

    The initialisations of ``nn.MLP`` (its docstring has the formulas): "mirrored"
    [Zhou2020, Sec. 3] (W_1 = [W; W], W_l = diag(B, B), W_L = [w, -w], zero biases),
    "mirrored-blockdiag" (W_1 = diag(W, W) as well) and "standard" (He normal hidden
    weights, N(0, 1/width) output weights, torch.nn.Linear biases). Draws happen layer by
    layer in this order, so a generator gives the same network whatever the dtype.

    Args:
        sizes: Layer sizes [d, width, ..., width, 1].
        init: "mirrored", "mirrored-blockdiag" or "standard".
        bias: Whether the layers have biases.
        gen: The source of the draws; advanced.

    Returns:
        One (weight (n_out, n_in), bias (n_out,) or None) per layer.
    """

    def normal(var: float, *shape: int) -> torch.Tensor:
        z = torch.randn(*shape, generator=gen, dtype=torch.float64, device=gen.device)
        return z * math.sqrt(var)

    m = sizes[1]
    half = m // 2
    depth = len(sizes) - 1
    layers: list[tuple[torch.Tensor, torch.Tensor | None]] = []
    for i in range(depth):
        n_in, n_out = sizes[i], sizes[i + 1]
        last = i == depth - 1
        b = torch.zeros(n_out, dtype=torch.float64, device=gen.device) if bias else None
        if init == "standard":
            w = normal((1.0 if last else 2.0) / n_in, n_out, n_in)
            if b is not None:
                bound = 1.0 / math.sqrt(n_in)
                u = torch.rand(
                    n_out, generator=gen, dtype=torch.float64, device=gen.device
                )
                b = (2.0 * u - 1.0) * bound
        elif last:  # [Zhou2020, Sec. 3]: W_L = [w, -w], w ~ N(0, 2/m)
            v = normal(2.0 / m, 1, half)
            w = torch.cat([v, -v], dim=1)
        elif i == 0 and init == "mirrored":  # W_1 = [W; W], W ~ N(0, 4/m)
            block = normal(4.0 / m, half, n_in)
            w = torch.cat([block, block], dim=0)
        else:  # W_l = [[W, 0], [0, W]], W ~ N(0, 4/m)
            block = normal(4.0 / m, half, n_in // 2)
            w = torch.block_diag(block, block)
        layers.append((w, b))
    return layers


def stack_params(model: torch.nn.Module) -> Params:
    """Return the parameters of one module as a stack of one member (views, no copy).

    Args:
        model: Typically an ``nn.MLP``.

    Returns:
        {name: p.detach()[None]} in ``named_parameters()`` order; writing into these
        views writes into the model.

    Example:
        >>> from banditkit.nn import MLP
        >>> {k: tuple(v.shape) for k, v in stack_params(MLP(3, width=4)).items()}
        {'layers.0.weight': (1, 4, 3), 'layers.1.weight': (1, 1, 4)}
    """
    before_write(model)  # the views may be written: an open transaction copies first
    return {name: p.detach().unsqueeze(0) for name, p in model.named_parameters()}


class StackedMLP:
    """M independent fully connected networks of ``nn.MLP``'s form, evaluated as one.

    f_k(x) = s * (W_L^k a(... a(W_1^k x + b_1^k) ...) + b_L^k) for member k, with
    s = sqrt(width) when ``scale_output`` (the NTK scaling of [Zhou2020]) else 1.
    Symbols: width = m, depth = L.

    Args:
        d: Input dimension, >= 1.
        width: Hidden units per layer, >= 1 (even for the mirrored inits).
        depth: Number of linear layers, >= 2.
        activation: "relu" or "sigmoid".
        init: "mirrored", "mirrored-blockdiag" or "standard" (see ``nn.MLP``).
        scale_output: Multiply the output by sqrt(width).
        bias: Give every layer a bias.

    Shapes:
        params: ``shapes`` with a leading M; X (N, d) shared by all members;
        ``forward`` gives (M, N), ``features`` (M, N, width).

    Raises:
        ValueError: On out-of-range sizes, an unknown activation or init, or an odd
            width under a mirrored init.

    Example:
        >>> net = StackedMLP(3, width=4)
        >>> params = net.init(5, torch.Generator().manual_seed(0))
        >>> net.forward(params, torch.ones(2, 3, dtype=torch.float64)).shape
        torch.Size([5, 2])
    """

    def __init__(
        self,
        d: int,
        *,
        width: int = 20,
        depth: int = 2,
        activation: str = "relu",
        init: str = "mirrored",
        scale_output: bool = True,
        bias: bool = False,
    ) -> None:
        self.d = check_int("d", d, low=1)
        self.width = check_int("width", width, low=1)
        self.depth = check_int("depth", depth, low=2)
        self.activation = check_choice("activation", activation, ACTIVATIONS)
        self.init_name = check_choice("init", init, INITS)
        if self.init_name != "standard" and self.width % 2:
            raise ValueError(
                f"width must be an even int >= 2 for init={init!r}; got {width!r}."
            )
        if self.init_name == "mirrored-blockdiag" and self.d % 2:
            raise ValueError(
                f"d must be even for init='mirrored-blockdiag'; got {d!r}. "
                "Use init='mirrored', which works for any d."
            )
        self.scale_output = bool(scale_output)
        self.bias = bool(bias)
        self.out_scale = math.sqrt(self.width) if self.scale_output else 1.0
        self.sizes = [self.d] + [self.width] * (self.depth - 1) + [1]

    @property
    def shapes(self) -> dict[str, tuple[int, ...]]:
        """Shape of each parameter of one member, in flattening order."""
        out: dict[str, tuple[int, ...]] = {}
        for i in range(self.depth):
            out[f"layers.{i}.weight"] = (self.sizes[i + 1], self.sizes[i])
            if self.bias:
                out[f"layers.{i}.bias"] = (self.sizes[i + 1],)
        return out

    @property
    def head_names(self) -> list[str]:
        """Names of the last (linear head) layer's parameters."""
        last = self.depth - 1
        return [n for n in self.shapes if n.startswith(f"layers.{last}.")]

    @property
    def representation_names(self) -> list[str]:
        """Names of the parameters of phi(x), all layers but the last."""
        return [n for n in self.shapes if n not in self.head_names]

    def init(
        self,
        n_members: int,
        generator: torch.Generator | Sequence[torch.Generator],
        *,
        dtype: torch.dtype = torch.float64,
        device: torch.device | str = "cpu",
    ) -> Params:
        """Draw M independent initial networks.

        One generator draws the members in turn (member k gets the draws an ``nn.MLP``
        built from the same generator after k earlier ones would get); a sequence of M
        generators gives member k the draws of ``nn.MLP(..., generator=generator[k])``.

        Args:
            n_members: M, >= 1.
            generator: One torch generator, or M of them.
            dtype: Floating dtype of the parameters (draws are float64, then cast).
            device: Device of the parameters.

        Returns:
            Params, each (M, ...).

        Raises:
            ValueError: On M < 1 or a sequence of generators of another length.
        """
        n_members = check_int("n_members", n_members, low=1)
        if isinstance(generator, torch.Generator):
            gens = [generator] * n_members
        else:
            gens = list(generator)
            if len(gens) != n_members:
                raise ValueError(
                    f"generator must be one generator or {n_members}; got {len(gens)}."
                )
        members = [draw_layers(self.sizes, self.init_name, self.bias, g) for g in gens]
        params: Params = {}
        for i in range(self.depth):
            w = torch.stack([layers[i][0] for layers in members])
            params[f"layers.{i}.weight"] = w.to(dtype=dtype, device=device)
            if self.bias:
                b = torch.stack([layers[i][1] for layers in members])  # type: ignore[misc]
                params[f"layers.{i}.bias"] = b.to(dtype=dtype, device=device)
        return params

    def _act(self, z: torch.Tensor) -> torch.Tensor:
        return torch.relu(z) if self.activation == "relu" else torch.sigmoid(z)

    def _affine(self, params: Params, i: int, h: torch.Tensor) -> torch.Tensor:
        z = stack_mm(h, params[f"layers.{i}.weight"].mT)
        bias = params.get(f"layers.{i}.bias")
        return z if bias is None else z + bias.unsqueeze(1)

    def features(self, params: Params, X: torch.Tensor) -> torch.Tensor:
        """Return phi(x), the last hidden layer a(W_{L-1} ... a(W_1 x + b_1) ...), (M, N, width).

        The head then gives f = s * (phi(x) @ W_L^T + b_L); a policy can build its own
        Gram on phi (neural-linear).
        """
        h = self._act(self._affine(params, 0, X))
        for i in range(1, self.depth - 1):
            h = self._act(self._affine(params, i, h))
        return h

    def forward(self, params: Params, X: torch.Tensor) -> torch.Tensor:
        """Return f for every member and row, (M, N); X (N, d) is shared by the members."""
        last = self.depth - 1
        f = stack_mv(self.features(params, X), params[f"layers.{last}.weight"][:, 0])
        bias = params.get(f"layers.{last}.bias")
        if bias is not None:
            f = f + bias
        return f * self.out_scale

    def forward_vjp(
        self,
        params: Params,
        X: torch.Tensor,
        *,
        method: str = "auto",
        workspace: dict[str, torch.Tensor] | None = None,
    ) -> tuple[torch.Tensor, VJP]:
        """Return f (M, N) and the map v (M, N) -> {name: sum_k v[., k] df[., k]/dparam}.

        Args:
            params: The stack (M, ...).
            X: Rows (N, d), shared by the members.
            method: "auto" (the trainer's passes: the closed form for depth 2, the
                explicit reverse pass of ``nn._passes`` otherwise), "closed-form"
                (depth 2 only), "backprop" (the explicit reverse pass at any depth) or
                "torch.func" (``torch.func.vjp`` of ``forward``, the reference). None
                keeps an autograd graph.
            workspace: None, or a dict the caller keeps across calls: the depth-2
                closed form of a sigmoid stack (M > 1) then reuses its hidden blocks
                instead of allocating them,
                and the next call with the same dict overwrites what this call's vjp
                reads (call vjp before the next forward_vjp).

        Returns:
            f (M, N), detached, and the vjp map, whose value has the keys of params.

        Raises:
            ValueError: On an unknown method, or "closed-form" with depth > 2.
        """
        method = check_choice("method", method, METHODS)
        if method == "closed-form" and self.depth != 2:
            raise ValueError(f"method='closed-form' needs depth 2; got {self.depth}.")
        if method == "torch.func":
            detached = {k: p.detach() for k, p in params.items()}
            f, pull = torch.func.vjp(lambda p: self.forward(p, X), detached)[:2]

            def vjp_func(v: torch.Tensor) -> Params:
                (grads,) = pull(v)
                return dict(grads)

            return f.detach(), vjp_func
        grads = {k: torch.empty_like(p) for k, p in params.items()}
        network: Pass
        if self.depth == 2 and method != "backprop" and X.ndim == 2:
            members = next(iter(params.values())).shape[0]
            if members > 1 and self.activation != "relu":
                return depth2_forward_vjp(params, X, self.out_scale, workspace)
            # the trainer's pass, keeping h for the vjp's every call
            network = Dense2(self, params, grads, X, keep_hidden=True)
        else:
            network = reverse_pass(self, params, grads, X)
        with torch.no_grad():
            f = network.forward()

        def backward(v: torch.Tensor) -> Params:
            with torch.no_grad():
                network.backward(v)
            return {k: g.clone() for k, g in grads.items()}

        return f, backward

    def check_params(self, params: Any, name: str = "params") -> int:
        """Return M after checking that ``params`` has every shape of ``shapes``.

        Raises:
            ValueError: On a missing or extra name, or a wrong shape.
        """
        if not isinstance(params, dict) or set(params) != set(self.shapes):
            got = sorted(params) if isinstance(params, dict) else type(params).__name__
            raise ValueError(
                f"{name} must have the keys {list(self.shapes)}; got {got}."
            )
        first = next(iter(params.values()))
        M = first.shape[0] if first.ndim else 0
        for key, shape in self.shapes.items():
            if tuple(params[key].shape) != (M, *shape):
                raise ValueError(
                    f"{name}[{key!r}] must have shape (M, *{shape}) with M = {M}; "
                    f"got {tuple(params[key].shape)}."
                )
        return M


class NeuralLinear(StackedMLP):
    """A representation phi(x) with a linear head: f(x) = w^T phi(x) + b [Riquelme2018].

    phi(x) = a(W_{L-1} ... a(W_1 x + b_1) ...) is the last hidden layer (``features``),
    (w, b) the head ("layers.{L-1}.weight" (M, 1, width), "layers.{L-1}.bias" (M, 1);
    ``head_names``). A GLM head comes from the loss (BCE gives a logistic head on phi).
    It is ``StackedMLP`` with the defaults of a plain network: no sqrt(width) factor,
    biases, and the "standard" (He) initialisation, so that phi is not symmetric.

    Args:
        d: Input dimension.
        width: Dimension of phi(x).
        depth: Linear layers including the head, >= 2 (depth 2: one hidden layer).
        activation: "relu" or "sigmoid".
        init: See ``nn.MLP`` ("standard" by default).
        bias: Biases on every layer (True by default).

    Example:
        >>> net = NeuralLinear(3, width=8)
        >>> params = net.init(2, torch.Generator().manual_seed(0))
        >>> net.features(params, torch.ones(4, 3, dtype=torch.float64)).shape
        torch.Size([2, 4, 8])
    """

    def __init__(
        self, d: int, *, init: str = "standard", bias: bool = True, **options: Any
    ) -> None:
        # options: StackedMLP's width, depth and activation
        super().__init__(d, init=init, bias=bias, scale_output=False, **options)
