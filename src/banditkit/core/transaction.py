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
A PyTorch module is recorded by its attributes, parameters, buffers and children (not its
hooks). The environment a privileged policy was attached to is not part of the policy and
is not recorded.

That walk discovers at every update what a class could have said once. A class declares
what its update changes in one of two ways, and the snapshot records only that:

- ``_undo_parts``, read from the exact class (a subclass that declares nothing is walked,
  as its update may change more): the names of the attributes whose *contents* its update
  changes (an array written in place, a part that learns). Each is recorded as the walk
  would record it (an array copied, a part by its own declaration); every other attribute
  is kept by reference, as the update only rebinds it (a counter, an array replaced by a
  new one). The policies declare their learning parts this way (``linucb``: its history
  and model).
- ``_transaction()``, for parts with their own way of undoing: a method returning the
  function that undoes what comes next, or the pair (undo, done) when the object keeps a
  journal until the update ends (``done`` runs after a successful update,
  :meth:`Snapshot.commit`). :func:`journal` is that pair for an object that writes parts
  of its arrays in place: it saves the attributes and opens a journal into which the
  object copies each region just before writing it (:func:`overwrites`). Append-only buffers (``parts.history``) record their length,
  not their rows; caches that can be rebuilt (device mirrors of a history) are dropped; an
  ``InPlaceGram`` journals the blocks its rank-1 update is about to overwrite (one block
  of a block-encoded Gram, not the whole matrix); an ``nn.MLP`` copies its parameters into
  one flat buffer that it reuses.

A class also lists in ``_append_only`` the attributes that are lists only ever appended to
(a Gram's queued rank-1 rows): they are undone by their length.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from banditkit.core.environment import Environment

__all__ = ["Snapshot", "journal", "overwrites", "snapshot"]

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
        self._done: list[Callable[[], None]] = []
        self._seen: set[int] = set()
        self._keep: list[Any] = []  # keeps recorded objects alive (ids stay unique)

    def restore(self) -> None:
        """Put every recorded object back as it was at the snapshot (in place)."""
        for undo in reversed(self._undo):
            undo()

    def commit(self) -> None:
        """The update succeeded: close the journals that objects opened for it."""
        for done in self._done:
            done()

    def _record(self, value: Any) -> None:
        kind = type(value)
        if kind in _SCALARS or id(value) in self._seen:
            return
        record = _RECORDERS.get(kind)
        if record is None:
            record = _RECORDERS[kind] = _recorder(kind)
        if record is not _atom:
            self._seen.add(id(value))
            self._keep.append(value)
            record(self, value)

    def _list(self, value: list[Any]) -> None:
        items = list(value)
        self._undo.append(lambda: value.__setitem__(slice(None), items))
        self._walk(items)

    def _set(self, value: set[Any]) -> None:
        members = set(value)
        self._undo.append(lambda: _refill(value, members))
        self._walk(members)

    def _object(self, value: Any) -> None:
        self._dict(vars(value), getattr(type(value), "_append_only", ()))

    def _hook(self, obj: Any) -> None:
        """What the object's ``_transaction()`` returns: undo, or (undo, done)."""
        undo = obj._transaction()
        if isinstance(undo, tuple):
            undo, done = undo
            self._done.append(done)
        self._undo.append(undo)

    def _walk(self, values: Any) -> None:
        record, ndarray = self._record, np.ndarray
        for item in values:
            # fast path: read-only arrays (a Gram's queued rows) need no record
            if type(item) is ndarray and not item.flags.writeable:
                continue
            record(item)

    def _tuple(self, value: tuple[Any, ...] | frozenset[Any]) -> None:
        self._walk(value)

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


def _atom(snap: Snapshot, value: Any) -> None:
    """Immutable: nothing to record."""


#: How each type is recorded, decided once per type (a snapshot is taken at every update).
_RECORDERS: dict[type, Callable[[Snapshot, Any], None]] = {}


def _recorder(kind: type) -> Callable[[Snapshot, Any], None]:
    """How a value of type ``kind`` is recorded (module docstring)."""
    if issubclass(kind, _ATOMS):
        return _atom
    if "_undo_parts" in kind.__dict__:  # the exact class declares it
        return _declared(
            kind.__dict__["_undo_parts"], getattr(kind, "_append_only", ())
        )
    checks: tuple[tuple[Any, Callable[[Snapshot, Any], None]], ...] = (
        (lambda k: hasattr(k, "_transaction"), Snapshot._hook),
        (lambda k: issubclass(k, np.ndarray), Snapshot._array),
        (lambda k: issubclass(k, np.random.Generator), Snapshot._generator),
        (lambda k: _is_torch(k, "Tensor"), Snapshot._tensor),
        (lambda k: issubclass(k, dict), Snapshot._dict),
        (lambda k: issubclass(k, list), Snapshot._list),
        (lambda k: issubclass(k, set), Snapshot._set),
        (lambda k: issubclass(k, tuple | frozenset), Snapshot._tuple),
        (lambda k: _is_torch(k, "nn.Module"), Snapshot._module),
        (lambda k: k.__dictoffset__ != 0, Snapshot._object),  # instances have __dict__
    )
    return next((record for test, record in checks if test(kind)), _atom)


def _declared(
    parts: tuple[str, ...], append_only: tuple[str, ...]
) -> Callable[[Snapshot, Any], None]:
    """The recorder of a class that declares ``_undo_parts``: its attributes, its parts."""

    def record(snap: Snapshot, obj: Any) -> None:
        attributes = vars(obj)
        saved = attributes.copy()
        snap._undo.append(lambda: _refill(attributes, saved))
        for name in append_only:
            snap._undo.append(_truncate(saved[name]))
        for name in parts:
            if name in saved:  # a part made by the first update is not there yet
                snap._record(saved[name])

    return record


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


def _is_torch(kind: type, name: str) -> bool:
    """Whether ``kind`` is a PyTorch ``Tensor`` or ``nn.Module`` (without importing PyTorch)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    base = torch.nn.Module if name == "nn.Module" else torch.Tensor
    return issubclass(kind, base)


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


def journal(
    obj: Any, also: Callable[[], None] | None = None
) -> tuple[Callable[[], None], Callable[[], None]]:
    """The (undo, done) of a ``_transaction`` that journals in-place writes.

    Saves ``obj``'s attributes (counters, and the arrays an update may replace rather
    than write) and opens ``obj._journal``, into which the object copies every region
    of an array just before writing it in place during the update (:func:`overwrites`;
    ``_journal`` is None, a class attribute, outside an update). ``undo`` writes the
    copies back, newest first, runs ``also`` and puts back the attributes; ``done``
    closes the journal. An update then costs a copy of what it writes, not of every
    array the object holds (``linalg.InPlaceGram``: the blocks a rank-1 update touches;
    ``linalg.BlockedLogdet``: one row, and V^-1 when a block is folded in).

    Example:
        >>> import numpy as np
        >>> class Rows:
        ...     _journal = None
        ...     def __init__(self):
        ...         self.x, self.n = np.zeros((3, 2)), 0
        ...     def _transaction(self):
        ...         return journal(self)
        ...     def add(self, row):
        ...         overwrites(self, self.x[self.n])
        ...         self.x[self.n], self.n = row, self.n + 1
        >>> rows = Rows()
        >>> taken = snapshot(rows)
        >>> rows.add([1.0, 2.0])
        >>> taken.restore()
        >>> rows.n, bool(rows.x.any()), "_journal" in vars(rows)
        (0, False, False)
    """
    attributes = vars(obj)
    saved = dict(attributes)
    entries: list[tuple[np.ndarray, np.ndarray]] = []
    obj._journal = entries

    def undo() -> None:
        for region, copy in reversed(entries):
            np.copyto(region, copy)
        if also is not None:
            also()
        attributes.clear()
        attributes.update(saved)

    def done() -> None:
        if attributes.get("_journal") is entries:
            del obj._journal  # back to the class's None

    return undo, done


def overwrites(obj: Any, *regions: np.ndarray | None) -> None:
    """Regions (views) of ``obj``'s arrays about to be written in place: journal them.

    A no-op outside an update (``obj._journal`` is None) and for None.
    """
    entries = obj._journal
    if entries is not None:
        entries.extend((r, r.copy()) for r in regions if r is not None)
