"""Undo for a policy's update: a light snapshot of everything it holds, put back in place.

:meth:`Policy.update <banditkit.core.Policy.update>` takes a :func:`snapshot` of the policy
before ``_update`` and, when ``_update`` raises (a failing solve, a refit that diverged, a
``MemoryError`` half-way), puts it back with :func:`Snapshot.restore` before the exception
goes on: the policy is then exactly as it was (its state dict, its random stream, every
cache), and a later ``act`` plays as an untouched copy would.

The snapshot walks the policy's attributes once: containers (dicts, lists, sets, objects'
``__dict__``) are recorded shallowly, writeable NumPy arrays and PyTorch tensors are copied,
random generators keep their bit-generator state; what is immutable (numbers, strings,
read-only arrays such as a ``Context``'s) is kept by reference. Restoring writes the
records back into the very same objects, so parts that share an object keep sharing it.
Two kinds of object say themselves what to record, through a ``_transaction()`` method that
returns the function undoing the update: append-only buffers (``parts.history``: their
length and arrays, no copy of the rows, so the snapshot costs O(1) in the history's length)
and caches that can be rebuilt (device mirrors of a history: dropped). A class lists in
``_append_only`` the attributes that are lists only ever appended to (a Gram's queued rank-1
rows): they are undone by their length. A PyTorch module is recorded by its attributes,
parameters, buffers and children (not its hooks). The environment a privileged policy was
attached to is not part of the policy and is not recorded.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from banditkit.core.environment import Environment

__all__ = ["Snapshot", "snapshot"]

_ATOMS = (
    type(None),
    bool,
    int,
    float,
    complex,
    str,
    bytes,
    range,
    type,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.ModuleType,
    np.generic,
    np.dtype,
    Environment,
)

#: The common atoms, checked by type first (a snapshot is taken at every update).
_SCALARS = frozenset({type(None), bool, int, float, str, np.float64, np.int64})


class Snapshot:
    """What :func:`snapshot` recorded: one undo function per mutable object, in order."""

    def __init__(self) -> None:
        self._undo: list[Callable[[], None]] = []
        self._seen: set[int] = set()
        self._keep: list[Any] = []  # keeps recorded objects alive (ids stay unique)

    def restore(self) -> None:
        """Put every recorded object back as it was at the snapshot (in place)."""
        for undo in reversed(self._undo):
            undo()

    def _record(self, value: Any) -> None:
        if (
            type(value) in _SCALARS
            or isinstance(value, _ATOMS)
            or id(value) in self._seen
        ):
            return
        self._seen.add(id(value))
        self._keep.append(value)
        hook = getattr(type(value), "_transaction", None)
        if hook is not None and not isinstance(value, type):
            self._undo.append(hook(value))
        elif isinstance(value, np.ndarray):
            self._array(value)
        elif isinstance(value, np.random.Generator):
            self._generator(value)
        elif _is_tensor(value):
            self._tensor(value)
        elif isinstance(value, dict):
            self._dict(value)
        elif isinstance(value, list):
            items = list(value)
            self._undo.append(lambda: value.__setitem__(slice(None), items))
            self._walk(items)
        elif isinstance(value, set):
            members = set(value)
            self._undo.append(lambda: _refill(value, members))
            self._walk(members)
        elif isinstance(value, tuple | frozenset):
            self._walk(value)
        elif _is_module(value):
            self._module(value)
        elif hasattr(value, "__dict__"):
            self._dict(vars(value), getattr(type(value), "_append_only", ()))

    def _walk(self, values: Any) -> None:
        record, ndarray = self._record, np.ndarray
        for item in values:
            # fast path: read-only arrays (a Gram's queued rows) need no record
            if type(item) is ndarray and not item.flags.writeable:
                continue
            record(item)

    def _dict(self, mapping: dict[Any, Any], append_only: tuple[str, ...] = ()) -> None:
        items = dict(mapping)
        self._undo.append(lambda: _refill(mapping, items))
        walked = dict(items)
        for name in append_only:  # lists of read-only rows: their length is enough
            rows = walked.pop(name)
            self._seen.add(id(rows))
            self._keep.append(rows)
            self._undo.append(_truncate(rows))
        self._walk(walked.values())

    def _module(self, module: Any) -> None:
        """A PyTorch module: its attributes, and its parameters, buffers and children."""
        attributes = dict(vars(module))
        self._undo.append(lambda: _refill(vars(module), attributes))
        for name in ("_parameters", "_buffers", "_modules"):  # not its hooks
            self._record(attributes[name])

    def _array(self, array: np.ndarray) -> None:
        if not array.flags.writeable:
            return  # nothing can change it in place
        saved = array.copy()
        self._undo.append(lambda: np.copyto(array, saved))
        if array.dtype == object:
            self._walk(array.flat)

    def _generator(self, rng: np.random.Generator) -> None:
        state = rng.bit_generator.state

        def undo() -> None:
            rng.bit_generator.state = state

        self._undo.append(undo)

    def _tensor(self, tensor: Any) -> None:
        torch = sys.modules["torch"]
        saved = tensor.detach().clone()

        def undo() -> None:
            if not torch.equal(tensor, saved):  # keep the version of what it kept
                with torch.no_grad():
                    tensor.copy_(saved)

        self._undo.append(undo)


def _refill(container: Any, contents: Any) -> None:
    """Put ``contents`` back into a dict or set, in place."""
    container.clear()
    container.update(contents)


def _truncate(rows: list[Any]) -> Callable[[], None]:
    """Undo appends to ``rows``: back to its present length."""
    n = len(rows)

    def undo() -> None:
        del rows[n:]

    return undo


def _is_module(value: object) -> bool:
    """Whether ``value`` is a PyTorch module (without importing PyTorch)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.nn.Module)


def _is_tensor(value: object) -> bool:
    """Whether ``value`` is a PyTorch tensor (without importing PyTorch)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def snapshot(obj: object) -> Snapshot:
    """A :class:`Snapshot` of ``obj`` and everything it holds (module docstring).

    Example:
        >>> import numpy as np
        >>> class Part:
        ...     def __init__(self):
        ...         self.a, self.seen = np.zeros(2), [1]
        >>> part = Part()
        >>> before = snapshot(part)
        >>> part.a += 1.0; part.seen.append(2); part.t = 5
        >>> before.restore()
        >>> part.a.tolist(), part.seen, hasattr(part, "t")
        ([0.0, 0.0], [1], False)
    """
    taken = Snapshot()
    taken._record(obj)
    return taken
