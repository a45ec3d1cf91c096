"""Registries of policies and environments, looked up by the names of DESIGN.md section 4.

A class registers itself with a decorator::

    @POLICIES.register("linucb")
    class LinUCB(Policy): ...

and users build instances by name (``make_policy("linucb", nu=0.5)``). An unknown name raises a
``ValueError`` that lists the closest known names.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

from banditkit.core.validation import suggest

__all__ = ["Registry"]

T = TypeVar("T")


class Registry(Generic[T]):
    """A name -> class mapping with helpful errors.

    Args:
        kind: What the registry holds ("policy", "environment"), for messages.

    Example:
        >>> reg: Registry[type] = Registry("thing")
        >>> @reg.register("a-thing")
        ... class AThing: ...
        >>> reg.get("a-thing") is AThing
        True
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator registering a class (or factory) under ``name``."""

        def decorate(obj: T) -> T:
            if name in self._entries and self._entries[name] is not obj:
                raise ValueError(f"{self.kind} name {name!r} is already registered.")
            self._entries[name] = obj
            if isinstance(obj, type):
                obj.registry_name = name  # type: ignore[attr-defined]
            return obj

        return decorate

    def get(self, name: str) -> T:
        """Return the entry registered as ``name``; unknown names list close matches."""
        if not isinstance(name, str):
            raise TypeError(f"{self.kind} name must be a string; got {name!r}.")
        try:
            return self._entries[name]
        except KeyError:
            known = sorted(self._entries)
            raise ValueError(
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
        """All registered names, sorted."""
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._entries)
