"""Modules imported on first use: ``import banditkit`` must not pay for PyTorch.

A user of the linear, GLM, assortment or rare-update policies never needs PyTorch, and importing
it is slow (so are pandas, ``scipy.linalg`` and ``scipy.special``). Modules that need one of them
at run time but are imported when the registry is built take its stand-in from here::

    from banditkit.core.lazy import torch

and use ``torch.<name>`` inside functions and methods only (never at module level, where it would
import PyTorch at once). The stand-ins below are typed as the real modules; another module is
deferred with ``name = lazy_import("package.module")`` under ``if not TYPE_CHECKING``. The real module is imported at the first attribute access, after which its
attributes are copied onto the stand-in so later accesses cost a plain attribute lookup.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd
    import scipy.linalg as sla
    import scipy.special as special
    import torch

__all__ = ["LazyModule", "lazy_import", "pd", "sla", "special", "torch"]


class LazyModule(types.ModuleType):
    """A stand-in for the module *name*, importing it at the first attribute access."""

    def __getattr__(self, attr: str) -> Any:
        module = importlib.import_module(self.__name__)
        # Later look-ups find the attributes in the stand-in's own namespace.
        self.__dict__.update(module.__dict__)
        return getattr(module, attr)

    def __repr__(self) -> str:
        loaded = "loaded" if self.__name__ in sys.modules else "not yet imported"
        return f"<lazy module {self.__name__!r} ({loaded})>"


def lazy_import(name: str) -> types.ModuleType:
    """The module *name* if already imported, else a :class:`LazyModule` standing in for it."""
    return sys.modules.get(name) or LazyModule(name)


if (
    not TYPE_CHECKING
):  # the stand-ins; type checkers see the real modules imported above
    pd = lazy_import("pandas")
    sla = lazy_import("scipy.linalg")
    special = lazy_import("scipy.special")
    torch = lazy_import("torch")
