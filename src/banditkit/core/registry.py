"""Registries of policies and environments, looked up by name (``banditkit list``).

A class registers itself with a decorator::

    @POLICIES.register("linucb")
    class LinUCB(Policy): ...

and users build instances by name (``make_policy("linucb", nu=0.5)``). Names are matched
ignoring case and ``_`` versus ``-`` ("LinUCB", "Neural_UCB"); an unknown name raises an
``UnknownNameError`` (a ``ValueError``) that lists the closest known names.

Plugins (docs/own-policy.md): a registry with an entry-point ``group`` also holds the classes
that installed distributions declare under that group, and every registry holds those of the
modules and files named in the :data:`IMPORTS_VARIABLE` environment variable. Both are loaded
lazily, the first time a lookup misses or the names are listed, so worker processes (which
inherit the environment variable) find the same plugins as the process that started them.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import importlib.util
import inspect
import os
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, Generic, TypeVar

from banditkit.core.errors import UnknownNameError
from banditkit.core.validation import suggest

__all__ = ["IMPORTS_VARIABLE", "Registry", "import_module", "imports_from_environment"]

T = TypeVar("T")

IMPORTS_VARIABLE = "BANDITKIT_IMPORTS"
"""Environment variable: modules or ``.py`` files to import before a lookup, separated by
``os.pathsep`` (``:`` on POSIX, ``;`` on Windows)."""

_IMPORTED: set[str] = set()


def _is_path(spec: str) -> bool:
    return spec.endswith(".py") or "/" in spec or os.sep in spec


def import_module(spec: str) -> ModuleType:
    """Import a module by name (``my_pkg.policies``) or a ``.py`` file by path.

    A file is imported under a name derived from its resolved path
    (``banditkit_plugin_<stem>_<hash>``), so importing it again, here or in a worker
    process, returns the same module instead of running it twice.

    Raises:
        FileNotFoundError: ``spec`` looks like a path and names no file.
        ImportError: The module cannot be found.
        Exception: Whatever executing the module raised.
    """
    if not _is_path(spec):
        return importlib.import_module(spec)
    path = Path(spec).expanduser().resolve()
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {spec}")
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:10]
    name = f"banditkit_plugin_{path.stem.replace('-', '_')}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    spec_ = importlib.util.spec_from_file_location(name, path)
    if spec_ is None or spec_.loader is None:  # pragma: no cover - never for a .py file
        raise ImportError(f"cannot import {spec}")
    module = importlib.util.module_from_spec(spec_)
    sys.modules[name] = module
    try:
        spec_.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def imports_from_environment() -> list[str]:
    """The modules and files named in :data:`IMPORTS_VARIABLE`, in order."""
    value = os.environ.get(IMPORTS_VARIABLE, "")
    return [s for s in value.split(os.pathsep) if s.strip()]


def _import_from_environment() -> None:
    for spec in imports_from_environment():
        if spec in _IMPORTED:
            continue
        try:
            import_module(spec)
        except Exception as exc:
            raise ImportError(
                f"{IMPORTS_VARIABLE} names {spec!r}, which failed to import: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        _IMPORTED.add(spec)


class Registry(Generic[T]):
    """A name -> class mapping with helpful errors.

    Args:
        kind: What the registry holds ("policy", "environment"), for messages.
        group: Entry-point group whose entries are registered lazily
            ("banditkit.policies"): each entry point's name is the registry name and its
            object the class (or a module whose import registers classes itself).

    Example:
        >>> reg: Registry[type] = Registry("thing")
        >>> @reg.register("a-thing")
        ... class AThing: ...
        >>> reg.get("a-thing") is AThing
        True
    """

    def __init__(self, kind: str, group: str | None = None) -> None:
        self.kind = kind
        self.group = group
        self._entries: dict[str, T] = {}
        self._entry_points_loaded = group is None
        self._broken: dict[str, str] = {}

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator registering a class (or factory) under ``name``.

        Registering a taken name raises ``ValueError``, unless it is the same object, or the
        same class imported again (same module and qualified name, e.g. after a reload),
        which replaces it.
        """
        if not isinstance(name, str) or not name:
            raise ValueError(
                f"{self.kind} name must be a non-empty string; got {name!r}."
            )

        def decorate(obj: T) -> T:
            old = self._entries.get(name)
            if old is not None and old is not obj and _origin(old) != _origin(obj):
                raise ValueError(
                    f"{self.kind} name {name!r} is already registered "
                    f"(by {_origin(old)}); choose another name for {_origin(obj)}."
                )
            self._entries[name] = obj
            if isinstance(obj, type):
                obj.registry_name = name  # type: ignore[attr-defined]
            return obj

        return decorate

    def unregister(self, name: str) -> T:
        """Remove and return the entry registered as ``name`` (for tests and notebooks)."""
        return self._entries.pop(name)

    def discover(self) -> None:
        """Load the plugins not loaded yet: imports first, then entry points (once).

        The modules named in :data:`IMPORTS_VARIABLE` are imported (an ``ImportError``
        names the one that fails). An entry point that fails to load is skipped and
        reported when its name is looked up, so one broken distribution does not break
        every lookup; one whose name is taken by another class is skipped with a warning.
        """
        _import_from_environment()
        if self._entry_points_loaded:
            return
        self._entry_points_loaded = True
        assert self.group is not None
        for ep in importlib.metadata.entry_points(group=self.group):
            try:
                obj = ep.load()
                if isinstance(obj, ModuleType) or self._entries.get(ep.name) is obj:
                    continue  # a module, or a class that registered itself
                if ep.name in self._entries:
                    warnings.warn(
                        f"the entry point {ep.value!r} of group {self.group!r} is "
                        f"ignored: {self.kind} name {ep.name!r} is already registered by "
                        f"{_origin(self._entries[ep.name])}.",
                        stacklevel=2,
                    )
                    continue
                self.register(ep.name)(obj)
            except Exception as exc:
                self._broken[ep.name] = (
                    f"{self.kind} {ep.name!r} is declared by the entry point "
                    f"{ep.value!r} of group {self.group!r}, which failed to load: "
                    f"{type(exc).__name__}: {exc}"
                )

    def canonical(self, name: str) -> str:
        """The registered spelling of ``name`` ("LinUCB" -> "linucb").

        ``name`` itself if registered, else the one registered name equal to it ignoring
        case and ``_`` versus ``-``, else ``name`` unchanged.
        """
        if not isinstance(name, str) or name in self._entries:
            return name
        self.discover()
        if name in self._entries:
            return name
        matches = [n for n in self._entries if _fold(n) == _fold(name)]
        return matches[0] if len(matches) == 1 else name

    def get(self, name: str) -> T:
        """Return the entry registered as ``name`` (matched as :meth:`canonical` does).

        Raises:
            UnknownNameError: For an unknown name, listing close matches.
        """
        if not isinstance(name, str):
            raise TypeError(f"{self.kind} name must be a string; got {name!r}.")
        name = self.canonical(name)
        try:
            return self._entries[name]
        except KeyError:
            if name in self._broken:
                raise UnknownNameError(self._broken[name]) from None
            known = sorted(self._entries)
            raise UnknownNameError(
                f"unknown {self.kind} {name!r}.{suggest(name, known)} "
                f"Known {self.kind} names: {', '.join(known)}."
            ) from None

    def make(self, name: str, **kwargs: Any) -> Any:
        """Instantiate the entry registered as ``name`` with keyword arguments.

        Raises:
            ValueError: For an unknown name or an unknown keyword, with close matches.
        """
        factory: Any = self.get(name)
        sig = inspect.signature(factory)
        accepts_any = any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
        if not accepts_any:
            known = [n for n in sig.parameters if n != "self"]
            for key in kwargs:
                if key not in known:
                    raise ValueError(
                        f"{self.kind} {name!r} has no parameter {key!r}.{suggest(key, known)} "
                        f"Its parameters: {', '.join(known)}."
                    )
        return factory(**kwargs)

    def names(self) -> list[str]:
        """All registered names (plugins included), sorted."""
        self.discover()
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        if name not in self._entries and isinstance(name, str):
            self.discover()
            name = self.canonical(name)
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())


def _fold(name: str) -> str:
    """``name`` for a match ignoring case and ``_`` versus ``-``."""
    return name.casefold().replace("_", "-")


def _origin(obj: object) -> str:
    """``module.qualname`` of a class or function, for messages and re-import checks."""
    module = getattr(obj, "__module__", "?")
    return f"{module}.{getattr(obj, '__qualname__', repr(obj))}"
