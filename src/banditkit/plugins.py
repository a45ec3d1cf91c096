"""Plugins: your own policies and environments, by name, in configs and on the command line.

A class joins the registries in one of two ways (docs/own-policy.md):

- **the decorator**, in a module or ``.py`` file that you import (``banditkit run --import
  my_policies.py``, or :func:`import_plugins` from Python)::

      from banditkit.core import POLICIES, ContextualPolicy

      @POLICIES.register("greedy-mean")
      class GreedyMean(ContextualPolicy): ...

- **an entry point** of an installed distribution, in the group ``banditkit.policies`` or
  ``banditkit.envs`` (:data:`ENTRY_POINT_GROUPS`)::

      [project.entry-points."banditkit.policies"]
      greedy-mean = "my_package.policies:GreedyMean"

  loaded the first time a name is not found or the names are listed.

:func:`import_plugins` also appends what it imported to the ``BANDITKIT_IMPORTS``
environment variable (:data:`IMPORTS_VARIABLE`), which the registries read on a lookup miss:
worker processes of the ``process`` backend inherit it and import the same plugins before
building a run. Setting the variable yourself (``BANDITKIT_IMPORTS=my_policies.py banditkit
list policies``) has the same effect for any command.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

from banditkit.core import ENVIRONMENTS, POLICIES
from banditkit.core.errors import BanditkitError
from banditkit.core.registry import (
    IMPORTS_VARIABLE,
    Registry,
    import_module,
    imports_from_environment,
)

__all__ = [
    "ENTRY_POINT_GROUPS",
    "IMPORTS_VARIABLE",
    "PluginError",
    "import_plugins",
]

ENTRY_POINT_GROUPS = {"policy": "banditkit.policies", "environment": "banditkit.envs"}
"""Entry-point group of each registry."""


class PluginError(BanditkitError, ValueError):
    """A plugin could not be imported, or registered nothing."""


def _registries() -> tuple[Registry[type], ...]:
    return (POLICIES, ENVIRONMENTS)


def _snapshot() -> dict[str, dict[str, object]]:
    return {reg.kind: dict(reg._entries) for reg in _registries()}


def _registered_by(module_name: str, before: dict[str, dict[str, object]]) -> list[str]:
    """Names added since ``before``, or whose class lives in ``module_name`` (re-import)."""
    found = []
    for reg in _registries():
        for name, obj in reg._entries.items():
            home = getattr(obj, "__module__", "")
            new = before[reg.kind].get(name) is not obj
            if new or home == module_name or home.startswith(module_name + "."):
                found.append(f"{reg.kind} {name!r}")
    return found


def import_plugins(specs: Sequence[str] | Iterable[str]) -> dict[str, list[str]]:
    """Import modules (``my_pkg.policies``) or ``.py`` files whose classes register themselves.

    Each must register at least one policy or environment. What was imported is appended to
    ``BANDITKIT_IMPORTS`` so that worker processes started afterwards import it too.

    Args:
        specs: Module names or paths of ``.py`` files, imported in order.

    Returns:
        For each spec, what it registered (``["policy 'greedy-mean'"]``).

    Raises:
        PluginError: A missing file or module, an exception raised by the import (its type
            and message are kept), or a module that registered nothing.

    Example:
        >>> import_plugins([])
        {}
    """
    found: dict[str, list[str]] = {}
    for spec in specs:
        if not isinstance(spec, str) or not spec.strip():
            raise PluginError(f"import must name a module or a .py file; got {spec!r}.")
        before = _snapshot()
        try:
            module = import_module(spec)
        except FileNotFoundError:
            raise PluginError(f"cannot import {spec!r}: no such file.") from None
        except ModuleNotFoundError as exc:
            hint = (
                f" Did you mean the file {spec}.py?"
                if os.path.isfile(spec + ".py")
                else " Give a module on the Python path or the path of a .py file."
            )
            raise PluginError(f"cannot import {spec!r}: {exc}.{hint}") from None
        except Exception as exc:
            raise PluginError(
                f"importing {spec!r} failed: {type(exc).__name__}: {exc}"
            ) from exc
        names = _registered_by(module.__name__, before)
        if not names:
            raise PluginError(
                f"{spec!r} registered no policy or environment; decorate a class with "
                '@POLICIES.register("name") or @ENVIRONMENTS.register("name") '
                "(from banditkit.core)."
            )
        found[spec] = names
        # a file is passed on by its absolute path: workers may start elsewhere
        entry = module.__file__ if module.__name__ != spec and module.__file__ else spec
        if entry not in imports_from_environment():
            os.environ[IMPORTS_VARIABLE] = os.pathsep.join(
                [*imports_from_environment(), entry]
            )
    return found
