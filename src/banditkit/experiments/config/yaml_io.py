"""Strict, bounded YAML for configs: :func:`read_yaml` reads a file, errors name it.

The rules are those of :func:`banditkit.core.safe_yaml.load_yaml`: duplicate keys are
errors (naming both lines; keys merged in with ``<<:`` may still be overridden), ``1e5``
reads as the integer 100000 and ``2.5e-3`` as a float, integers lie within 64 bits and
floats are finite (bounded before conversion), and the text, its nesting and its aliases
expanded are bounded (``MAX_YAML_BYTES``, ``MAX_YAML_DEPTH``, ``MAX_YAML_NODES``). A file
that is not UTF-8 is refused too. Each is a
:class:`~banditkit.experiments.config.errors.ConfigError` naming the file, the line and
the column.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from banditkit.core.safe_yaml import YamlFileError, read_yaml_file
from banditkit.experiments.config.errors import ConfigError

__all__ = ["read_yaml"]


def read_yaml(path: str | Path) -> Any:
    """Read a YAML file with the rules of the module docstring.

    Raises:
        ConfigError: Naming the file and the problem (the line and column for invalid
            YAML).
    """
    try:
        return read_yaml_file(path)
    except YamlFileError as exc:
        raise ConfigError(exc.problem, source=str(path)) from None
