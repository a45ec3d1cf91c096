"""Neural networks for bandits: networks, per-sample gradients and the trainer.

Functional core (parameters as explicit tensors stacked along a member axis M):

    StackedMLP, NeuralLinear      M networks as one; phi(x) = features  (nn.network)
    stack_params, Params          a module's parameters as a stack of one (nn.network)
    Rows, Pairs, Sets             observations over a feature table     (nn.observations)
    BCE, Gaussian, MSE,           losses with value_and_dloss_df        (nn.losses)
    BradleyTerry, MNL,
    PairwiseGLM
    RowSlope                      a loss's derivative block by block    (nn.losses)
    L2Penalty                     L2 to a centre on a parameter group   (nn.penalties)
    fit, FitResult                full-batch GD / Adam on M members     (nn.fit)

One network as a torch module, and the per-arm features of the policies:

    MLP                           f(x; theta), mirrored NTK init   (nn.mlp)
    flat_params, set_flat_params  theta as one vector              (nn.params)
    make_generator                torch stream from a numpy one    (nn.params)
    per_sample_grads              g(x_k; theta) for all K arms      (nn.grads)
    forward_and_grads             f and g in one call               (nn.grads)
    forward_vjp                   f and v -> sum_k v_k g_k          (nn.grads)
    forward_and_sq_norms          f and sum_j g_kj^2 u_j, no (K, p)  (nn.grads)
    ArmPass                       the per-round passes: f, g, q and the (nn.grads)
                                  played arm's g, the kernel chosen by
                                  the network and its device
    train, Trainer                ``fit`` on one MLP, in place      (nn.train)

Compute options (nn.device): ``resolve_dtype`` ("float32" | "float64"), ``resolve_device``
("cpu" | "cuda" | "cuda:N" | "auto"; a missing device is a ValueError naming it) and
``GrowingBuffer`` (rows kept in one preallocated device tensor, grown geometrically).

Flattening order of theta everywhere: vec(W_1), b_1, vec(W_2), b_2, ..., vec(W_L), b_L
(biases only with bias=True), vec row-major (W.reshape(-1)); the order of
``model.parameters()`` and of the keys of ``Params``.

The fast kernels are private (``nn._kernels``, ``nn._fused``, ``nn._blocks``,
``nn._arms``) and chosen inside ``nn`` by the network, the data's shape, dtype and
device: a caller never names one.
"""

from banditkit.nn.device import GrowingBuffer, resolve_device, resolve_dtype
from banditkit.nn.fit import FitResult, fit
from banditkit.nn.grads import (
    ArmPass,
    forward_and_grads,
    forward_and_sq_norms,
    forward_vjp,
    per_sample_grads,
)
from banditkit.nn.losses import (
    BCE,
    MNL,
    MSE,
    BradleyTerry,
    Gaussian,
    Loss,
    PairwiseGLM,
    RowSlope,
    loss_and_derivative,
)
from banditkit.nn.mlp import MLP
from banditkit.nn.network import NeuralLinear, Params, StackedMLP, stack_params
from banditkit.nn.observations import Pairs, Rows, Sets
from banditkit.nn.params import flat_params, make_generator, set_flat_params
from banditkit.nn.penalties import L2Penalty
from banditkit.nn.train import Trainer, train

__all__ = [
    "BCE",
    "MLP",
    "MNL",
    "MSE",
    "ArmPass",
    "BradleyTerry",
    "FitResult",
    "Gaussian",
    "GrowingBuffer",
    "L2Penalty",
    "Loss",
    "NeuralLinear",
    "Pairs",
    "PairwiseGLM",
    "Params",
    "RowSlope",
    "Rows",
    "Sets",
    "StackedMLP",
    "Trainer",
    "fit",
    "flat_params",
    "forward_and_grads",
    "forward_and_sq_norms",
    "forward_vjp",
    "loss_and_derivative",
    "make_generator",
    "per_sample_grads",
    "resolve_device",
    "resolve_dtype",
    "set_flat_params",
    "stack_params",
    "train",
]
