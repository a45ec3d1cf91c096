"""Strict YAML for configs: duplicate keys are errors, ``1e5`` is a number.

PyYAML's safe loader keeps the last of two equal keys silently and reads ``1e5`` as the
string "1e5" (YAML 1.1 wants a dot). Configs are read with :func:`strict_load` instead:
a key repeated within one mapping raises (naming both lines; keys merged in with ``<<:``
may still be overridden), ``1e5`` reads as the integer 100000 and ``2.5e-3`` as a float.
"""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml

from banditkit.experiments.config.errors import ConfigError

__all__ = ["read_yaml", "strict_load"]


class _Loader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses duplicate keys and reads ``1e5`` as a number."""

    def construct_mapping(
        self, node: yaml.MappingNode, deep: bool = False
    ) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *base` merges; explicit keys may override merged ones
            key = self.construct_object(key_node, deep=deep)
            try:
                first = seen.get(key)
            except TypeError:  # unhashable key: construct_mapping reports it
                continue
            if first is None:
                seen[key] = key_node.start_mark.line
            else:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"duplicate key {key!r} (first given on line {first + 1})",
                    key_node.start_mark,
                )
        return super().construct_mapping(node, deep=deep)


def _exponent_number(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int | float:
    text = str(loader.construct_scalar(node)).replace("_", "")
    mantissa, exponent = re.split("[eE]", text)
    if "." not in mantissa and not exponent.startswith("-"):
        return int(Decimal(text))
    return float(text)


_EXPONENT = re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$")
_Loader.add_implicit_resolver("!banditkit/exponent", _EXPONENT, list("-+0123456789"))
_Loader.add_constructor("!banditkit/exponent", _exponent_number)


def strict_load(text: str) -> Any:
    """Parse YAML ``text`` with the rules of the module docstring.

    Raises:
        yaml.YAMLError: For invalid YAML or a duplicate key.

    Example:
        >>> strict_load("seeds: 1e3")
        {'seeds': 1000}
    """
    return yaml.load(text, Loader=_Loader)  # a SafeLoader subclass


def read_yaml(path: str | Path) -> Any:
    """Read a YAML file; errors name the file (and the line for syntax errors).

    A key repeated within one mapping is an error; ``1e5`` reads as the integer 100000 and
    ``2.5e-3`` as a float (:func:`strict_load`).
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("file not found", source=str(path)) from None
    except OSError as exc:
        raise ConfigError(
            f"cannot read: {exc.strerror or exc}", source=str(path)
        ) from None
    try:
        return strict_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"invalid YAML: {where}{problem}", source=str(path)) from None
