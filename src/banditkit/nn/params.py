"""Parameter vectors and random streams: theta as one flat vector, torch generators.

Flattening order: ``model.parameters()`` in registration order, each tensor row-major
(``reshape(-1)``). For ``banditkit.nn.MLP`` this is

    theta = [vec(W_1); b_1; vec(W_2); b_2; ...; vec(W_L); b_L]    (b_l only with bias)

the order of ``flat_params``, ``set_flat_params``, ``MLP.theta0`` and the columns of
``per_sample_grads``.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

import numpy as np
import torch

__all__ = [
    "before_write",
    "flat_params",
    "make_generator",
    "owe_copy",
    "set_flat_params",
]

#: The copies that open transactions (``MLP._transaction``) owe before a module's
#: parameters are next written: ``before_write`` takes them, so an update that does not
#: train copies nothing.
_OWED: weakref.WeakKeyDictionary[torch.nn.Module, list[Callable[[], None]]] = (
    weakref.WeakKeyDictionary()
)


def owe_copy(model: torch.nn.Module, take: Callable[[], None]) -> Callable[[], None]:
    """Have ``take`` run before the parameters of ``model`` are next written.

    Returns:
        A function that withdraws ``take`` if it has not run (the transaction ended).
    """
    _OWED.setdefault(model, []).append(take)

    def withdraw() -> None:
        owed = _OWED.get(model)
        if owed is not None and take in owed:
            owed.remove(take)

    return withdraw


def before_write(model: torch.nn.Module) -> None:
    """Take the copies owed (``owe_copy``) before the parameters of ``model`` change.

    Every write access to a module's parameters goes through here: ``stack_params``
    (the trainers' views) and ``set_flat_params``.
    """
    owed = _OWED.pop(model, None)
    for take in owed or ():
        take()


def make_generator(
    rng: np.random.Generator, device: torch.device | str = "cpu"
) -> torch.Generator:
    """Return a torch.Generator seeded by one integer drawn from ``rng``.

    Draws exactly one integer from ``rng`` (the policy's stream), so the torch stream is a
    deterministic function of the numpy stream's state.

    Args:
        rng: The caller's numpy generator; advanced by one draw.
        device: Device of the returned generator ("cpu", "cuda", ...).

    Returns:
        A new generator on ``device``.

    Raises:
        TypeError: If ``rng`` is not a numpy Generator.

    Example:
        >>> g1 = make_generator(np.random.default_rng(0))
        >>> g2 = make_generator(np.random.default_rng(0))
        >>> g1.initial_seed() == g2.initial_seed()
        True
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"rng must be a numpy.random.Generator; got {type(rng).__name__}."
        )
    seed = int(rng.integers(0, 2**63 - 1))
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    return gen


def flat_params(model: torch.nn.Module) -> torch.Tensor:
    """Return theta, all parameters of ``model`` concatenated in the documented order.

    The order is ``model.parameters()``; for ``MLP`` that is vec(W_1), b_1, ..., vec(W_L),
    b_L with row-major vec (module docstring).

    Args:
        model: Any module; typically an ``MLP``.

    Returns:
        A detached copy (p,).

    Example:
        >>> from banditkit.nn import MLP
        >>> flat_params(MLP(3, width=4)).shape
        torch.Size([16])
    """
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def set_flat_params(model: torch.nn.Module, theta: torch.Tensor) -> None:
    """Overwrite the parameters of ``model`` in place from theta (order of flat_params).

    Args:
        model: Any module; typically an ``MLP``.
        theta: Vector (p,); cast to each parameter's dtype and device.

    Raises:
        ValueError: If theta is not a finite vector of length p.

    Example:
        >>> from banditkit.nn import MLP
        >>> model = MLP(3, width=4)
        >>> set_flat_params(model, torch.zeros(16))
        >>> float(flat_params(model).abs().sum())
        0.0
    """
    params = list(model.parameters())
    p = sum(q.numel() for q in params)
    theta = torch.as_tensor(theta)
    before_write(model)
    if theta.shape != (p,):
        raise ValueError(f"theta must have shape ({p},); got {tuple(theta.shape)}.")
    if not bool(torch.isfinite(theta).all()):
        raise ValueError("theta contains NaN or inf; every entry must be finite.")
    offset = 0
    with torch.no_grad():
        for q in params:
            q.copy_(theta[offset : offset + q.numel()].reshape(q.shape))
            offset += q.numel()
