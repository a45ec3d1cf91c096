"""Compute options of the model toolkit: dtype, device, and growing device buffers.

Every neural model takes ``dtype`` ("float32" | "float64") and ``device`` ("cpu" |
"cuda" | "cuda:N" | "auto") as strings and resolves them here, once, when it is built;
a policy hands them to its model and never handles them itself. "auto" is the first
CUDA device when PyTorch sees one, else the CPU. A device that is not there is a
``ValueError`` naming it, before anything is allocated.

``GrowingBuffer`` keeps rows that arrive one round at a time (a history) in one
preallocated tensor on the device, grown geometrically: n appends cost O(n) amortised
copies on the device and each row crosses from the host once, instead of the whole
history being converted (or concatenated) again at every refit.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

__all__ = ["DTYPES", "GrowingBuffer", "resolve_device", "resolve_dtype"]

#: The compute dtypes of the toolkit, by name.
DTYPES = ("float64", "float32")
#: Rows of a new buffer.
_CAPACITY = 256


def resolve_dtype(dtype: str | torch.dtype) -> torch.dtype:
    """The torch dtype of "float32" or "float64" (a torch dtype of those passes through).

    Raises:
        ValueError: For any other value.

    Example:
        >>> resolve_dtype("float32")
        torch.float32
    """
    if isinstance(dtype, torch.dtype) and dtype in (torch.float32, torch.float64):
        return dtype
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {list(DTYPES)}; got {dtype!r}.")
    return torch.float64 if dtype == "float64" else torch.float32


def resolve_device(device: str | torch.device) -> torch.device:
    """The torch device of "cpu", "cuda", "cuda:N" or "auto", checked to be there.

    "auto" is ``cuda:0`` when PyTorch sees a CUDA device, else the CPU; "cuda" is the
    current CUDA device.

    Raises:
        ValueError: For another name, or a CUDA device this machine does not have (the
            message names it and the devices there are).

    Example:
        >>> resolve_device("cpu")
        device(type='cpu')
    """
    name = str(device) if isinstance(device, torch.device) else device
    if not isinstance(name, str):
        raise ValueError(
            f"device must be 'cpu', 'cuda', 'cuda:N' or 'auto'; got {device!r}."
        )
    if name == "auto":
        return torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    if name == "cpu":
        return torch.device("cpu")
    index: int | None = None
    if name.startswith("cuda:") and name[5:].isdigit():
        index = int(name[5:])
    elif name != "cuda":
        raise ValueError(
            f"device must be 'cpu', 'cuda', 'cuda:N' or 'auto'; got {device!r}."
        )
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count == 0 or (index is not None and index >= count):
        raise ValueError(
            f"device {name!r} is not available: PyTorch sees {count} CUDA device(s) "
            "on this machine; use device='cpu' or 'auto'."
        )
    return torch.device(name)


class GrowingBuffer:
    """Rows of shape ``row_shape`` in one preallocated tensor, grown by doubling.

    Args:
        row_shape: Shape of one row (() for scalars).
        dtype: Tensor dtype.
        device: Tensor device.
        capacity: Rows allocated at first, >= 1.

    Attributes:
        n: Rows held.

    Example:
        >>> buf = GrowingBuffer((2,), torch.float64, torch.device("cpu"), capacity=1)
        >>> buf.extend(np.ones((3, 2)))
        >>> buf.view().shape, buf.capacity
        (torch.Size([3, 2]), 4)
    """

    def __init__(
        self,
        row_shape: tuple[int, ...],
        dtype: torch.dtype,
        device: torch.device,
        capacity: int = _CAPACITY,
    ) -> None:
        self.row_shape = tuple(row_shape)
        self._data = torch.empty(
            (max(int(capacity), 1), *self.row_shape), dtype=dtype, device=device
        )
        self.n = 0

    @property
    def capacity(self) -> int:
        """Rows allocated."""
        return self._data.shape[0]

    def reserve(self, n: int) -> None:
        """Room for n rows in total: the capacity doubles until it fits."""
        cap = self.capacity
        if n <= cap:
            return
        while cap < n:
            cap *= 2
        grown = self._data.new_empty((cap, *self.row_shape))
        grown[: self.n] = self._data[: self.n]
        self._data = grown

    def extend(self, rows: Any) -> None:
        """Append rows (m, *row_shape) (a NumPy array or a tensor): one copy to the device."""
        if isinstance(rows, torch.Tensor):
            block = rows
        else:
            array = np.asarray(rows)
            if not array.flags.writeable:
                array = array.copy()  # torch wraps writable arrays only
            block = torch.from_numpy(array)
        m = block.shape[0]
        self.reserve(self.n + m)
        self._data[self.n : self.n + m].copy_(block)  # casts; crosses to the device
        self.n += m

    def truncate(self, n: int = 0) -> None:
        """Keep the first n rows (the allocation stays)."""
        self.n = min(max(int(n), 0), self.n)

    def view(self) -> torch.Tensor:
        """The rows held, (n, *row_shape): a view of the buffer (no copy)."""
        return self._data[: self.n]
