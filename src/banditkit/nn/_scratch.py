"""Memory that the trainer's buffers reuse from one fit to the next.

A private part of ``nn.fit``. A fit allocates its network pass's buffers once (the
hidden blocks, their backward factors, copies of the rows), megabytes at the papers'
sizes, and frees them when it returns. Allocated afresh at every fit, such blocks come
from the system as new pages (the C allocator hands large freed blocks back), and every
fit pays for zero-filling and mapping them on their first touch: 330-380 us of a 20-step
fit of 3.4-3.8 ms at width 100 on 1,000 rows in float64 (docs/performance.md).
``scratch`` keeps one flat block per thread, dtype and device and carves a fit's
buffers from it, so that a policy refitting every round touches the same pages.

The buffers are uninitialised, like ``torch.empty``, and valid only inside the ``with``
block: nothing carved from the scratch may outlive it (the trainer returns copies). A
nested ``scratch`` of the same thread (a fit inside a fit) and any device but the CPU
(whose tensors PyTorch's own caching allocator already reuses) get plain new tensors.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch

__all__ = ["Allocator", "copy_into", "scratch"]

#: ``new(shape)``: an uninitialised contiguous tensor of the scratch's dtype and device.
Allocator = Callable[[tuple[int, ...]], torch.Tensor]

#: Every buffer starts on a multiple of this many bytes (a cache line; what the BLAS
#: kernels' packed loads prefer).
_ALIGN_BYTES = 64
#: A block that proved too small is replaced by one this much larger than what the fit
#: used, so that rows arriving one a round regrow it rarely.
_GROWTH = 1.5


class _Arena:
    """One fit's allocations from a block (``scratch``)."""

    def __init__(self, block: torch.Tensor | None, like: torch.Tensor) -> None:
        self.like = like
        self.block = block
        self.offset = 0
        self.used = 0  # elements carved in all, with the alignment padding
        self.grew = False
        self.align = max(1, _ALIGN_BYTES // like.element_size())

    def empty(self, shape: tuple[int, ...]) -> torch.Tensor:
        """An uninitialised contiguous (shape) tensor carved from the block."""
        numel = math.prod(shape)
        padded = -(-numel // self.align) * self.align
        self.used += padded
        block = self.block
        if block is None or self.offset + padded > block.numel():
            # too small: a fresh block for this and the later requests of the fit
            size = max(padded, 0 if block is None else block.numel())
            block = self.block = self.like.new_empty(size)
            self.offset, self.grew = 0, True
        out = block[self.offset : self.offset + numel].view(shape)
        self.offset += padded
        return out


class _Blocks(threading.local):
    """The blocks of this thread, by (dtype, device), and whether a fit holds them."""

    def __init__(self) -> None:
        self.blocks: dict[tuple[torch.dtype, torch.device], torch.Tensor] = {}
        self.busy = False


_THREAD = _Blocks()


@contextmanager
def scratch(like: torch.Tensor) -> Iterator[Allocator]:
    """An allocator of buffers of ``like``'s dtype and device for one fit (module doc).

    On the CPU the buffers are views of this thread's block, which is kept for the next
    fit; when the fit needed more, the block kept is ``_GROWTH`` times what it used.
    """
    state = _THREAD
    if like.device.type != "cpu" or state.busy:
        yield like.new_empty
        return
    key = (like.dtype, like.device)
    arena = _Arena(state.blocks.get(key), like)
    state.busy = True
    try:
        yield arena.empty
    finally:
        state.busy = False
        if arena.grew:
            state.blocks[key] = like.new_empty(math.ceil(_GROWTH * arena.used))


def copy_into(new: Allocator, t: torch.Tensor) -> torch.Tensor:
    """A contiguous copy of t in a buffer from ``new`` (``t.contiguous()`` that copies)."""
    return new(tuple(t.shape)).copy_(t)
