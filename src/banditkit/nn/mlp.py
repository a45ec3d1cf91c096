"""Fully connected network f(x; theta) with the mirrored (NTK) initialisation.

Network [Bae2025, Sec. 2], [Zhou2020, Sec. 3]:

    f(x; theta) = s * (W_L a(W_{L-1} a( ... a(W_1 x + b_1) ... ) + b_{L-1}) + b_L)

with a = relu (the papers) or sigmoid, s = sqrt(width) when ``scale_output`` (the NTK
scaling of both papers) and s = 1 otherwise, W_1 (width x d), W_l (width x width) for
2 <= l <= L-1, W_L (1 x width). The biases b_l exist only with ``bias=True``; the papers'
network has none. Symbols: width = m, depth = L.

Parameter vector and flattening order (used by ``flat_params``, ``set_flat_params``, the
columns of ``per_sample_grads`` and ``MLP.theta0``; it is also ``model.parameters()``):

    theta = [vec(W_1); b_1; vec(W_2); b_2; ...; vec(W_L); b_L]    (b_l only with bias)

where vec(W) = W.reshape(-1) is row-major: entry (i, j) of a layer with n_in inputs is
at offset i * n_in + j of that layer's block. Without biases
p = width * d + (depth - 2) * width^2 + width [Bae2025, Sec. 2] (the paper's printed
count has one width^2 too many); biases add
(depth - 1) * width + 1.

References:
    [Zhou2020] D. Zhou, L. Li, Q. Gu. Neural contextual bandits with UCB-based
        exploration. ICML 2020.
    [Bae2025] S. Bae, D. Lee. Neural logistic bandits. arXiv:2505.02069.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, cast

import torch

from banditkit.nn.network import Params, StackedMLP, draw_layers
from banditkit.nn.params import flat_params, owe_copy

__all__ = ["MLP"]

#: Each network's flat copy of its parameters for ``MLP._transaction`` (scratch space
#: reused at every update, not part of the network: kept outside it).
_UNDO_BUFFERS: weakref.WeakKeyDictionary[MLP, torch.Tensor] = (
    weakref.WeakKeyDictionary()
)
#: The buffers an open transaction holds (a nested one takes a fresh buffer).
_BUFFERS_IN_USE: set[torch.Tensor] = set()


def _undo_buffer(model: MLP, params: list[torch.nn.Parameter]) -> torch.Tensor:
    """A flat buffer for the parameters of ``model``: its reused one unless in use."""
    n, first = sum(p.numel() for p in params), params[0]
    flat = _UNDO_BUFFERS.get(model)
    if flat is None or (flat.numel(), flat.dtype, flat.device) != (
        n,
        first.dtype,
        first.device,
    ):
        flat = torch.empty(n, dtype=first.dtype, device=first.device)
        _UNDO_BUFFERS[model] = flat
    elif flat in _BUFFERS_IN_USE:
        return torch.empty_like(flat)
    _BUFFERS_IN_USE.add(flat)
    return flat


class _Affine(torch.nn.Module):
    """Weight (n_out x n_in) and optional bias (n_out,) of one layer; no forward."""

    def __init__(
        self,
        n_in: int,
        n_out: int,
        bias: bool,
        dtype: torch.dtype,
        device: torch.device,
    ) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(
            torch.zeros(n_out, n_in, dtype=dtype, device=device)
        )
        self.bias: torch.nn.Parameter | None
        if bias:
            self.bias = torch.nn.Parameter(
                torch.zeros(n_out, dtype=dtype, device=device)
            )
        else:
            self.register_parameter("bias", None)


class MLP(torch.nn.Module):
    """Neural network f(x; theta) of [Bae2025, Sec. 2] / [Zhou2020, Sec. 3].

    The forward map is

        f(x; theta) = s * (W_L a(... a(W_1 x + b_1) ...) + b_L),    s = sqrt(width) or 1,

    see the module docstring for the shapes and the flattening order of theta.

    Initialisations (``init``):

    * "mirrored" (default) [Zhou2020, Sec. 3], [Bae2025, Sec. 4], stacked variant for any
      d (Reconstruction: W_1 stacks one block twice instead of the block-diagonal):
          W_1 = [W; W]                 W (width/2 x d),       entries N(0, 4/width)
          W_l = [[B, 0], [0, B]]       B (width/2 x width/2), entries N(0, 4/width)
          W_L = [w, -w]                w (1 x width/2),       entries N(0, 2/width)
      and zero biases. Then f(x; theta_0) = 0 for every x.
    * "mirrored-blockdiag": the paper's literal construction, W_1 = [[W, 0], [0, W]] with W
      (width/2 x d/2); needs even d, and gives f(x; theta_0) = 0 for symmetrised inputs
      x = [u; u] (e.g. [u; u] / sqrt(2), [Bae2025, Assumption 4.2]), which the caller
      builds. Other layers as "mirrored".
    * "standard" (Assumption: torch-like defaults, no symmetry): hidden weights He normal
      N(0, 2/fan_in), output weights N(0, 1/width), biases U(-1/sqrt(fan_in),
      1/sqrt(fan_in)) as in torch.nn.Linear.

    The variances do not depend on ``scale_output``: they are those of [Zhou2020] and
    [Bae2025], whose network carries the sqrt(width) factor; without it the same draws
    give f / sqrt(width).

    Symbols: width = m, depth = L, theta_0 = ``theta0``.

    Args:
        d: Input dimension, >= 1.
        width: Hidden units per layer, >= 1; even and >= 2 for the mirrored inits.
        depth: Number of linear layers L, >= 2 (depth 2 is one hidden layer).
        activation: "relu" or "sigmoid".
        init: "mirrored", "mirrored-blockdiag" or "standard" (see above).
        scale_output: Multiply the output by sqrt(width) (NTK scaling).
        bias: Give every layer a bias (zero-initialised under the mirrored inits).
        generator: Source of the initial draws. None uses a fresh generator seeded with 0,
            so the default is deterministic; library code passes the policy's generator
            (see ``make_generator``).
        dtype: Floating dtype of the parameters (float64 by default).
        device: Device of the parameters.

    Attributes:
        d, width, depth, activation, init, scale_output, bias: The arguments.
        layers: ``torch.nn.ModuleList`` of depth layers with ``weight`` and ``bias``.
        theta0: Buffer (p,) holding flat_params at construction (theta_0).

    Shapes:
        forward maps x (n, d) to f (n,).

    Raises:
        ValueError: On an out-of-range d, width or depth, an odd width under a mirrored
            init, an odd d under "mirrored-blockdiag", an unknown activation or init, or
            a non-floating dtype.

    Notes:
        Exactness of f(x; theta_0) = 0: under the mirrored inits the forward pass keeps
        each hidden layer as two halves (top, bottom) and computes every block product
        separately, on operands of identical shapes copied to fresh contiguous storage.
        Equal operands then give bitwise equal results (one product with the stacked
        matrix usually does too, but BLAS kernels may treat rows differently). Zero
        off-diagonal blocks add an exact 0. The output is
        s * (h_top @ w_top + h_bot @ w_bot) with w_bot = -w_top, and IEEE rounding is
        symmetric under negation, so the two terms cancel to exactly 0.0 for every input.
        The plain relu(x @ W_1^T) @ W_L^T does not: its sum interleaves the w and -w
        terms and leaves a rounding-level residue (non-zero in 50 of 50 trials).
        After training the halves differ and the blocks are just a partition of the same
        product.

    Example:
        >>> import numpy as np
        >>> from banditkit.nn import make_generator
        >>> gen = make_generator(np.random.default_rng(0))
        >>> model = MLP(3, width=4, generator=gen)
        >>> model.n_params  # 4 * 3 + 4
        16
        >>> x = torch.randn(5, 3, generator=gen, dtype=torch.float64)
        >>> model(x)
        tensor([0., 0., 0., 0., 0.], dtype=torch.float64, grad_fn=<MulBackward0>)
    """

    theta0: torch.Tensor

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
        generator: torch.Generator | None = None,
        dtype: torch.dtype = torch.float64,
        device: torch.device | str = "cpu",
    ) -> None:
        super().__init__()
        #: The functional form of this network (validates the hyper-parameters); the
        #: trainer runs on it with ``stack_params(self)``, a stack of one member.
        self.network = StackedMLP(
            d,
            width=width,
            depth=depth,
            activation=activation,
            init=init,
            scale_output=scale_output,
            bias=bias,
        )
        self.d, self.width, self.depth = d, width, depth
        self.activation, self.init = activation, init
        if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
            raise ValueError(f"dtype must be a floating torch dtype; got {dtype!r}.")
        self.scale_output = bool(scale_output)
        self.bias = bool(bias)
        self._split = self.init != "standard"
        dev = torch.device(device)
        sizes = self.network.sizes
        self.layers = torch.nn.ModuleList(
            _Affine(sizes[i], sizes[i + 1], self.bias, dtype, dev)
            for i in range(self.depth)
        )
        if generator is None:
            generator = torch.Generator().manual_seed(0)
        self._initialise(generator)
        self.register_buffer("theta0", flat_params(self))

    @classmethod
    def plain(
        cls,
        d: int,
        *,
        width: int,
        activation: str = "relu",
        generator: torch.Generator | None = None,
    ) -> MLP:
        """A conventional one-hidden-layer network: biases, He init, no sqrt(width) factor.

        The defaults of a plain network (as ``NeuralLinear``'s) rather than the NTK
        parametrisation of the bandit papers; the MNL utility networks are of this kind.
        """
        return cls(
            d,
            width=width,
            depth=2,
            activation=activation,
            init="standard",
            scale_output=False,
            bias=True,
            generator=generator,
        )

    @property
    def n_params(self) -> int:
        """Number p of trainable parameters."""
        return sum(p.numel() for p in self.parameters())

    def initial_params(self) -> Params:
        """theta_0 (``theta0``) as a stack of one, shaped like ``stack_params(self)``.

        The centre of an L2 penalty towards the initialisation [Zhou2020, Alg. 1].
        """
        shapes = {name: p.shape for name, p in self.named_parameters()}
        pieces = torch.split(self.theta0, [p.numel() for p in self.parameters()])
        return {
            name: c.view(1, *shape)
            for (name, shape), c in zip(shapes.items(), pieces, strict=True)
        }

    @property
    def out_scale(self) -> float:
        """The output factor s: sqrt(width) with ``scale_output``, else 1."""
        return self.network.out_scale

    def _initialise(self, gen: torch.Generator) -> None:
        """Draw theta_0 from ``gen`` (``nn.network.draw_layers``), cast to the model."""
        drawn = draw_layers(self.network.sizes, self.init, self.bias, gen)
        with torch.no_grad():
            for layer, (w, b) in zip(self.layers, drawn, strict=True):
                layer.weight.copy_(w)  # type: ignore[operator]
                if b is not None:
                    layer.bias.copy_(b)  # type: ignore[operator]

    def layer(self, index: int) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(weight, bias or None) of layer ``index`` (0-based), the live parameters."""
        affine = self._layer(index)
        return affine.weight, affine.bias

    def _layer(self, index: int) -> _Affine:
        # A plain tuple: indexing the ModuleList costs microseconds per call, which
        # adds up in the per-step training loop.
        affines: tuple[_Affine, ...] | None = self.__dict__.get("_affines")
        if affines is None:
            affines = tuple(cast(_Affine, layer) for layer in self.layers)
            self.__dict__["_affines"] = affines
        return affines[index]

    def activate(self, z: torch.Tensor) -> torch.Tensor:
        """The activation a(z), elementwise."""
        return torch.relu(z) if self.activation == "relu" else torch.sigmoid(z)

    def _input_parts(self, x: torch.Tensor) -> list[torch.Tensor]:
        """Split x into the column blocks the first layer multiplies separately."""
        if self.init != "mirrored-blockdiag":
            return [x]
        half = self.d // 2
        return [
            x[:, :half].clone(memory_format=torch.contiguous_format),
            x[:, half:].clone(memory_format=torch.contiguous_format),
        ]

    def _affine(
        self, layer: _Affine, parts: list[torch.Tensor], split_out: bool
    ) -> list[torch.Tensor]:
        """Block product of ``layer`` with the column blocks ``parts`` (see Notes)."""
        weight, bias = layer.weight, layer.bias
        if not self._split:
            out = parts[0] @ weight.mT
            return [out if bias is None else out + bias]
        n_out = weight.shape[0]
        row_ranges = (
            [(0, n_out // 2), (n_out // 2, n_out)] if split_out else [(0, n_out)]
        )
        outs = []
        for r0, r1 in row_ranges:
            acc: torch.Tensor | None = None
            c0 = 0
            for part in parts:
                c1 = c0 + part.shape[-1]
                block = self._block(weight, r0, r1, c0, c1)
                term = part @ block.mT
                acc = term if acc is None else acc + term
                c0 = c1
            assert acc is not None
            outs.append(acc if bias is None else acc + bias[r0:r1])
        return outs

    def _block(
        self, weight: torch.Tensor, r0: int, r1: int, c0: int, c1: int
    ) -> torch.Tensor:
        """The contiguous copy weight[r0:r1, c0:c1] that ``_affine`` multiplies.

        Without gradients, the copies of the module's own parameters are kept until the
        parameter changes (its version counter moves): the per-round passes of a policy
        (``nn.forward_and_grads``, ``nn.forward_and_sq_norms``) then skip four copies
        per call between refits. The same values either way.
        """
        if torch.is_grad_enabled() or not isinstance(weight, torch.nn.Parameter):
            return weight[r0:r1, c0:c1].clone(memory_format=torch.contiguous_format)
        cache: dict[tuple[int, int, int, int, int], Any] = self.__dict__.setdefault(
            "_block_cache", {}
        )
        key = (id(weight), r0, r1, c0, c1)
        hit = cache.get(key)
        # the same tensor, storage (not a copy of the module) and version
        stamp = (weight, weight.data_ptr(), weight._version)
        if hit is not None and hit[0] is weight and hit[1:3] == stamp[1:]:
            return hit[3]
        block = weight[r0:r1, c0:c1].clone(memory_format=torch.contiguous_format)
        cache[key] = (*stamp, block)
        return block

    def _preactivation(
        self, index: int, parts: list[torch.Tensor]
    ) -> list[torch.Tensor]:
        """Pre-activation blocks of hidden layer ``index`` (0-based) from its input."""
        return self._affine(self._layer(index), parts, split_out=self._split)

    def _head(self, hidden: list[torch.Tensor]) -> torch.Tensor:
        """Output s * (W_L h + b_L), shape (n,), from the last hidden blocks."""
        (out,) = self._affine(self._layer(self.depth - 1), hidden, split_out=False)
        return out.squeeze(-1) * self.out_scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Evaluate f(x; theta) row by row.

        Args:
            x: Inputs (n, d) of the model's dtype and device.

        Returns:
            f (n,).

        Raises:
            ValueError: If x is not (n, d).
        """
        if x.ndim != 2 or x.shape[1] != self.d:
            raise ValueError(f"x must have shape (n, {self.d}); got {tuple(x.shape)}.")
        parts = self._preactivation(0, self._input_parts(x))
        for index in range(1, self.depth - 1):
            parts = self._preactivation(index, [self.activate(z) for z in parts])
        return self._head([self.activate(z) for z in parts])

    def forward_with_layers(
        self, x: torch.Tensor
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """f(x; theta) as ``forward`` (bitwise), with the activations of every hidden layer.

        Args:
            x: Inputs (n, d) of the model's dtype and device.

        Returns:
            f (n,) and [h_1, ..., h_{L-1}], h_l = a(z_l) (n, width) the output of hidden
            layer l, each computed block by block as in ``forward`` (see Notes).
        """
        if x.ndim != 2 or x.shape[1] != self.d:
            raise ValueError(f"x must have shape (n, {self.d}); got {tuple(x.shape)}.")
        parts = self._preactivation(0, self._input_parts(x))
        layers = [[self.activate(z) for z in parts]]
        for index in range(1, self.depth - 1):
            parts = self._preactivation(index, layers[-1])
            layers.append([self.activate(z) for z in parts])
        f = self._head(layers[-1])
        return f, [h[0] if len(h) == 1 else torch.cat(h, dim=1) for h in layers]

    def _transaction(self) -> tuple[Callable[[], None], Callable[[], None]]:
        """Undo what comes next (``banditkit.core.transaction``): the parameters only.

        Training writes into the parameters and nothing else, and every write access
        goes through ``nn.params.before_write`` (``stack_params``, ``set_flat_params``):
        the parameters are copied there, at the first write, into one flat buffer
        (allocated once and reused), so an update that does not train copies nothing.
        Undoing copies back those that changed (the others keep their version counters,
        which the per-round passes' caches are keyed on).

        Raises:
            RuntimeError: When undoing, if a parameter changed without a copy (a write
                that bypassed ``before_write``): the update cannot be undone.
        """
        params = list(self.parameters())
        versions = [p._version for p in params]
        copy: list[torch.Tensor] = []

        def take() -> None:
            copy.append(_undo_buffer(self, params))
            torch.cat([p.detach().reshape(-1) for p in params], out=copy[0])

        withdraw = owe_copy(self, take)

        def undo() -> None:
            withdraw()
            if not copy:
                if [p._version for p in params] != versions:
                    raise RuntimeError(
                        "an MLP's parameters were written in an update without "
                        "nn.params.before_write: the update cannot be undone."
                    )
                return
            with torch.no_grad():
                pieces = copy[0].split([p.numel() for p in params])
                for p, piece in zip(params, pieces, strict=True):
                    saved = piece.view_as(p)
                    if not torch.equal(p, saved):  # the others keep their versions
                        p.copy_(saved)
            _BUFFERS_IN_USE.discard(copy[0])

        def done() -> None:
            withdraw()
            if copy:
                _BUFFERS_IN_USE.discard(copy[0])

        return undo, done

    def extra_repr(self) -> str:
        """Hyper-parameters shown by ``repr(model)``."""
        return (
            f"d={self.d}, width={self.width}, depth={self.depth}, "
            f"activation={self.activation!r}, init={self.init!r}, "
            f"scale_output={self.scale_output}, bias={self.bias}"
        )
