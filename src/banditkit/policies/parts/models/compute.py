"""The compute options of every neural policy: ``dtype`` and ``device``, declared once.

A neural policy declares them with these two lines and hands them to its model, which
resolves them (``nn.resolve_dtype``, ``nn.resolve_device``) and keeps its network, its
training, its history's mirror and its Gram there; the policy never handles them:

    dtype: str = DTYPE       "float32" (default) or "float64"
    device: str = DEVICE     "cpu" (default), "cuda", "cuda:N" or "auto"

``device`` is a ``quiet`` parameter (``core.params.param``): at its default it stays out
of ``get_params``, so the run ids of every configuration stored before it existed do not
move, and a run on another device has its own id. ``dtype`` defaults to float32 since
2026-12-06 (float64 before: its ``before``), chosen by the rule "float32 wherever the
reproduction configurations' regrets stay equal within their paired intervals"
(docs/performance.md, "The default dtype"): it is in every run id, and a run or state
stored without it was float64. NDB, whose regret moved in float32, keeps float64
(``DTYPE_FLOAT64``). A device that is not there is a ``ValueError`` naming it when the
policy is built (not at its first round). Each run's metadata records the dtype and the
device it ran on (``compute_options``).

Written without PyTorch: the registry reads the declarations before torch is imported.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from banditkit.core.params import Check, Choice, param

if TYPE_CHECKING:
    from banditkit import nn
else:
    from banditkit.core.lazy import lazy_import

    nn = lazy_import("banditkit.nn")  # PyTorch only for a device other than the CPU

__all__ = [
    "DEVICE",
    "DEVICES",
    "DTYPE",
    "DTYPES",
    "DTYPE_FLOAT64",
    "check_device",
    "compute_options",
]

#: Compute dtypes of the neural models, the names ``nn.resolve_dtype`` takes.
DTYPES = ("float64", "float32")
#: Device names of the neural models (``nn.resolve_device``; "cuda:N" too).
DEVICES = ("cpu", "cuda", "auto")

_CUDA_N = re.compile(r"cuda:\d+")


def check_device(name: str, value: Any) -> str:
    """``value`` if it names a device this machine has ("cpu" and "auto" always do).

    Raises:
        ValueError: For another name, or a CUDA device that is not there (the message
            names it and the devices PyTorch sees; ``nn.resolve_device``).

    Example:
        >>> check_device("device", "auto")
        'auto'
        >>> check_device("device", "gpu")
        Traceback (most recent call last):
        ...
        ValueError: device must be 'cpu', 'cuda', 'cuda:N' or 'auto'; got 'gpu'.
    """
    if not isinstance(value, str) or not (value in DEVICES or _CUDA_N.fullmatch(value)):
        raise ValueError(
            f"{name} must be 'cpu', 'cuda', 'cuda:N' or 'auto'; got {value!r}."
        )
    if value not in ("cpu", "auto"):
        nn.resolve_device(value)
    return value


#: The ``dtype`` of a neural policy: its network, training and passes (module docstring).
DTYPE: Any = param(Choice(DTYPES), default="float32", before="float64")
#: The ``dtype`` of a neural policy that stays float64 by default (NDB), left out of its
#: run ids at float64 as before.
DTYPE_FLOAT64: Any = param(Choice(DTYPES), default="float64", quiet=True)
#: The ``device`` of a neural policy: network, training, history and Gram live there.
DEVICE: Any = param(Check(check_device), default="cpu", quiet=True)


def compute_options(policy: object) -> dict[str, str]:
    """The dtype and the device a policy computes in, as a run's metadata records them.

    A policy without these options computes in float64 on the CPU (NumPy); "auto" is
    resolved to the device it stands for on this machine.

    Example:
        >>> from banditkit.policies import LinUCB
        >>> compute_options(LinUCB())
        {'dtype': 'float64', 'device': 'cpu'}
    """
    dtype = getattr(policy, "dtype", "float64")
    device = getattr(policy, "device", "cpu")
    if not isinstance(dtype, str) or dtype not in DTYPES:
        dtype = "float64"
    if not isinstance(device, str):
        device = "cpu"
    elif device != "cpu":
        device = str(nn.resolve_device(device))
    return {"dtype": dtype, "device": device}
