"""Registries of policies and environments, looked up by name (``banditkit list``).

A class registers itself with a decorator::

    @POLICIES.register("linucb")
    class LinUCB(Policy): ...

and users build instances by name (``make_policy("linucb", nu=0.5)``). Names are matched
ignoring case and ``_`` versus ``-`` ("LinUCB", "Neural_UCB"); an unknown name raises an
``UnknownNameError`` (a ``ValueError``) that lists the closest known names.

:meth:`Registry.describe` reads what ``banditkit list`` and ``banditkit describe`` print about
an entry: the summary line of its docstring, the papers it cites, and each parameter's default
(from the constructor's signature), paper symbol and meaning with its valid range (from the
docstrings' ``Symbols:`` line and ``Args:`` section).

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
import re
import sys
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Generic, TypeVar

from banditkit.core.caller import warn
from banditkit.core.errors import UnknownNameError
from banditkit.core.validation import suggest

__all__ = [
    "IMPORTS_VARIABLE",
    "REQUIRED",
    "Description",
    "Parameter",
    "Registry",
    "describe",
    "import_module",
    "imports_from_environment",
]

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
        listing: Where a user finds every name ("banditkit list policies"), for the
            message of an unknown name.

    Example:
        >>> reg: Registry[type] = Registry("thing")
        >>> @reg.register("a-thing")
        ... class AThing: ...
        >>> reg.get("a-thing") is AThing
        True
    """

    def __init__(
        self, kind: str, group: str | None = None, *, listing: str = ""
    ) -> None:
        self.kind = kind
        self.group = group
        self.listing = listing
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
                    warn(
                        f"the entry point {ep.value!r} of group {self.group!r} is "
                        f"ignored: {self.kind} name {ep.name!r} is already registered by "
                        f"{_origin(self._entries[ep.name])}."
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
            raise UnknownNameError(self.unknown(name)) from None

    def unknown(self, name: str) -> str:
        """The message for an unknown ``name``: up to five close names, and where all are.

        Example:
            >>> reg: Registry[type] = Registry("thing", listing="things --all")
            >>> for n in ("linucb", "lints", "random"):
            ...     _ = reg.register(n)(type(n, (), {}))
            >>> reg.unknown("linucbb")
            "unknown thing 'linucbb'. Did you mean 'linucb', 'lints'? `things --all` lists all 3."
        """
        known = self.names()
        where = f"`{self.listing}`" if self.listing else "Registry.names()"
        return (
            f"unknown {self.kind} {name!r}.{suggest(name, known, n=5)} {where} lists "
            f"all {len(known)}."
        )

    def describe(self, name: str, *, resolve: bool = False) -> Description:
        """What the entry registered as ``name`` declares (:func:`describe`).

        Raises:
            UnknownNameError: For an unknown name, listing close matches.
        """
        name = self.canonical(name)
        return describe(self.get(name), name, kind=self.kind, resolve=resolve)

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


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


#: The default of a parameter that has none (it must be given).
REQUIRED: Any = _Required()


@dataclass(frozen=True)
class Parameter:
    """One keyword parameter of a registered class, as its docstrings declare it.

    Attributes:
        name: The keyword.
        default: Its default in the constructor's signature (:data:`REQUIRED`: none).
        resolved: What an instance built with every default reports for it
            (``get_params``): differs from ``default`` when the class resolves it (a
            ``None`` that a mode fills in); ``default`` when not asked or not buildable.
        symbol: The paper's name for it (the docstring's ``Symbols:`` line), or "".
        doc: Its ``Args:`` entry: meaning and valid range ("" when undocumented).
    """

    name: str
    default: Any
    resolved: Any
    symbol: str
    doc: str


@dataclass(frozen=True)
class Description:
    """What ``banditkit list`` and ``banditkit describe`` show of a registered class.

    Attributes:
        name: The registry name.
        kind: The registry's kind ("policy", "environment").
        family: "contextual", "dueling" or "assortment" ("" when the class has none).
        origin: ``module.qualname`` of the class.
        summary: The first line of its docstring.
        papers: The citation keys of the summary line ("Zhou2020"), in order.
        references: Key -> full reference, from the ``References:`` sections of the
            modules of the class and its bases, for the keys of ``papers``.
        parameters: Its keyword parameters, in signature order.
        design_horizon: The horizon T its defaults are made for (``Policy.design_horizon``),
            or None.
        horizon_params: The parameters that adapt it to a shorter run
            (``Policy.horizon_params``).
    """

    name: str
    kind: str
    family: str
    origin: str
    summary: str
    papers: tuple[str, ...]
    references: dict[str, str]
    parameters: tuple[Parameter, ...]
    design_horizon: int | None = None
    horizon_params: tuple[str, ...] = ()


_CITATION_KEY = re.compile(r"^[A-Z][\w-]*\d{4}[a-z]?$")


def describe(
    obj: Any, name: str = "", *, kind: str = "policy", resolve: bool = False
) -> Description:
    """Describe a registered class from its signature and docstrings.

    The defaults come from the constructor's signature; the meaning and valid range of each
    parameter from the first ``Args:`` entry naming it in the docstrings of the class, its
    ``__init__`` and its bases; the paper symbols from a ``Symbols: lam = λ, nu = ν`` line;
    the papers from the citation keys of the docstring's first line
    (``NeuralUCB [Zhou2020, Alg. 1]: ...``) and the ``References:`` sections of the modules
    and of the packages above them.

    Args:
        obj: The registered class (or factory).
        name: Its registry name (default: its ``registry_name`` or ``__name__``).
        kind: What the registry holds, for the description.
        resolve: Also build an instance with every default (cheap for banditkit's classes:
            dimensions are set at the first round) and record what it reports for each
            parameter (``Parameter.resolved``).

    Example:
        >>> from banditkit.core import POLICIES
        >>> import banditkit.policies  # registers the built-in policies
        >>> d = POLICIES.describe("linucb")
        >>> d.papers, [(p.name, p.default) for p in d.parameters][:2]
        (('Abbasi-Yadkori2011', 'Li2010'), [('nu', 1.0), ('lam', 1.0)])
        >>> d.parameters[0].doc
        'Exploration scale, >= 0; 0 is greedy.'
    """
    docs = [_cleandoc(k) for k in _documented(obj)]
    own = docs[0] if docs else ""
    summary = own.strip().splitlines()[0].strip() if own.strip() else ""
    args: dict[str, str] = {}
    symbols: dict[str, str] = {}
    for doc in docs:
        for key, text in _args(doc).items():
            args.setdefault(key, text)
        for key, text in _symbols(doc).items():
            symbols.setdefault(key, text)
    papers = _citations(summary)
    known: dict[str, str] = {}
    for klass in getattr(obj, "__mro__", (obj,)):
        for module in _modules_up(getattr(klass, "__module__", "")):
            for key, text in _references(module.__doc__ or "").items():
                known.setdefault(key, text)
    resolved = _resolved(obj) if resolve else {}
    signature = _signature_parameters(obj)
    parameters = []
    for pname, param in signature:
        default = REQUIRED if param.default is param.empty else param.default
        parameters.append(
            Parameter(
                name=pname,
                default=default,
                resolved=resolved.get(pname, default),
                symbol=symbols.get(pname, ""),
                doc=args.get(pname, ""),
            )
        )
    return Description(
        name=name or getattr(obj, "registry_name", "") or getattr(obj, "__name__", ""),
        kind=kind,
        family=str(getattr(obj, "family", "") or ""),
        origin=_origin(obj),
        summary=summary,
        papers=papers,
        references={k: known[k] for k in papers if k in known},
        parameters=tuple(parameters),
        design_horizon=getattr(obj, "design_horizon", None),
        horizon_params=tuple(
            n for n in getattr(obj, "horizon_params", ()) if n in dict(signature)
        ),
    )


def _modules_up(name: str) -> list[Any]:
    """The module ``name`` and the imported packages above it, nearest first.

    A family's package states the references its modules share.
    """
    parts = name.split(".")
    names = [".".join(parts[:i]) for i in range(len(parts), 0, -1)]
    return [sys.modules[n] for n in names if n in sys.modules]


def _documented(obj: Any) -> list[Any]:
    """The class, its ``__init__`` and those of its bases: whatever holds a docstring."""
    out: list[Any] = []
    for klass in getattr(obj, "__mro__", (obj,)):
        if klass is object:
            continue
        out.append(klass)
        init = vars(klass).get("__init__") if isinstance(klass, type) else None
        if init is not None:
            out.append(init)
    return out


def _cleandoc(obj: Any) -> str:
    doc = vars(obj).get("__doc__") if isinstance(obj, type) else obj.__doc__
    return inspect.cleandoc(doc) if isinstance(doc, str) else ""


def _signature_parameters(obj: Any) -> list[tuple[str, inspect.Parameter]]:
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return []
    kinds = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [(n, p) for n, p in sig.parameters.items() if p.kind in kinds]


def _section(doc: str, title: str) -> list[str]:
    """The lines of a Google-style section (``Args:``), dedented by the section's indent."""
    lines = doc.splitlines()
    for i, line in enumerate(lines):
        if line.strip() == f"{title}:":
            indent = len(line) - len(line.lstrip())
            body = []
            for following in lines[i + 1 :]:
                if (
                    following.strip()
                    and len(following) - len(following.lstrip()) <= indent
                ):
                    break
                body.append(following[indent:])
            return body
    return []


def _entries(body: list[str], pattern: re.Pattern[str]) -> dict[str, str]:
    """Entries of a section: a line matching ``pattern`` (key, text) and its continuation."""
    entries: dict[str, str] = {}
    key, indent = None, None
    for line in body:
        if not line.strip():
            continue
        depth = len(line) - len(line.lstrip())
        match = pattern.match(line.strip())
        if match and (indent is None or depth <= indent):
            key, indent = match.group(1), depth
            entries[key] = match.group(2).strip()
        elif key is not None:
            entries[key] = f"{entries[key]} {line.strip()}".strip()
    return entries


_ARG = re.compile(r"^\**(\w+)(?:\s*\([^)]*\))?:\s*(.*)$")
_REFERENCE = re.compile(r"^\[([^\]]+)\]\s*(.*)$")


def _args(doc: str) -> dict[str, str]:
    return _entries(_section(doc, "Args"), _ARG)


def _references(doc: str) -> dict[str, str]:
    return _entries(_section(doc, "References"), _REFERENCE)


def _symbols(doc: str) -> dict[str, str]:
    """``{"lam": "λ", ...}`` from a ``Symbols: lam = λ, nu = ν.`` line (and its continuation)."""
    match = re.search(r"^Symbols:(.*?)(?:\n\s*\n|\n\w[\w ]*:|\Z)", doc, re.M | re.S)
    if match is None:
        return {}
    text = " ".join(match.group(1).split()).rstrip(".")
    pieces, depth, current = [], 0, ""
    for char in text:
        depth += char in "([{"
        depth -= char in ")]}"
        if char in ",;" and depth == 0:
            pieces.append(current)
            current = ""
        else:
            current += char
    pieces.append(current)
    out = {}
    for piece in pieces:
        left, sep, right = piece.partition("=")
        if sep and left.strip().isidentifier():
            out[left.strip()] = right.strip()
    return out


def _citations(line: str) -> tuple[str, ...]:
    """The citation keys of ``line``: "[Zhou2020, Alg. 1; Li2010]" -> (Zhou2020, Li2010)."""
    keys: list[str] = []
    for group in re.findall(r"\[([^\]]+)\]", line):
        for part in group.split(";"):
            key = part.split(",")[0].strip()
            if _CITATION_KEY.match(key) and key not in keys:
                keys.append(key)
    return tuple(keys)


def _resolved(obj: Any) -> dict[str, Any]:
    """What an instance built with every default reports (``{}`` if it cannot be built)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            params = obj().get_params()
    except Exception:
        return {}
    return dict(params) if isinstance(params, dict) else {}
