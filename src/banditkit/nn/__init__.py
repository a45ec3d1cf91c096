"""Neural networks for bandits: the MLP, per-sample gradients and the trainer.

    MLP                           f(x; theta), mirrored NTK init   (nn.mlp)
    flat_params, set_flat_params  theta as one vector              (nn.params)
    make_generator                torch stream from a numpy one    (nn.params)
    per_sample_grads              g(x_k; theta) for all K arms      (nn.grads)
    forward_and_grads             f and g in one call               (nn.grads)
    forward_vjp                   f and v -> sum_k v_k g_k          (nn.grads)
    forward_and_sq_norms          f and sum_j g_kj^2 u_j, no (K, p)  (nn.grads)
    train, Trainer                full-batch GD / Adam              (nn.train)

Flattening order of theta everywhere: vec(W_1), b_1, vec(W_2), b_2, ..., vec(W_L), b_L
(biases only with bias=True), vec row-major (W.reshape(-1)); the order of
``model.parameters()``.
"""

from banditkit.nn.grads import (
    forward_and_grads,
    forward_and_sq_norms,
    forward_vjp,
    per_sample_grads,
)
from banditkit.nn.mlp import MLP
from banditkit.nn.params import flat_params, make_generator, set_flat_params
from banditkit.nn.train import Trainer, train

__all__ = [
    "MLP",
    "Trainer",
    "flat_params",
    "forward_and_grads",
    "forward_and_sq_norms",
    "forward_vjp",
    "make_generator",
    "per_sample_grads",
    "set_flat_params",
    "train",
]
