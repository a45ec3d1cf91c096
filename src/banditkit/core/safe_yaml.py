r"""Bounded, strict YAML: what every config, tuned file and ``k=v`` value is read with.

PyYAML's safe loader builds no objects but plain data, yet a hostile text can still cost
without bound: an alias bomb (``&a [x, x, ...]`` nested nine deep) is a few hundred bytes that
expand to a billion values once something walks them; 5,000 nested brackets exhaust Python's
recursion; ``1e99999999`` read as an integer takes hours and ``10**5000`` cannot be printed.
:func:`load_yaml` reads a text with ``yaml.SafeLoader`` and these rules, each a
``yaml.YAMLError`` whose mark gives the line and column:

    size        at most MAX_YAML_BYTES characters
    nesting     at most MAX_YAML_DEPTH nested sequences and mappings
    aliases     at most MAX_YAML_NODES values once every alias is expanded (a recursive
                alias is refused)
    integers    within +-MAX_YAML_INT (64 bits), bounded before conversion
    floats      finite (``.inf``, ``.nan`` and ``1.0e999`` are refused)
    keys        a key repeated within one mapping is an error (PyYAML keeps the last one
                silently); keys merged in with ``<<:`` may be overridden
    exponents   ``1e5`` is the integer 100000 and ``2.5e-3`` a float (YAML 1.1 reads both
                as strings, wanting a dot)

Example:
    >>> load_yaml("seeds: 1e3\nlam: 2.5e-3")
    {'seeds': 1000, 'lam': 0.0025}
    >>> load_yaml("horizon: 1e5000")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    yaml.constructor.ConstructorError: integer out of range: ...
"""

from __future__ import annotations

import math
import os
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from banditkit.core.errors import BanditkitError

__all__ = [
    "MAX_YAML_BYTES",
    "MAX_YAML_DEPTH",
    "MAX_YAML_INT",
    "MAX_YAML_NODES",
    "YamlFileError",
    "load_yaml",
    "read_yaml_file",
    "yaml_problem",
    "yaml_value",
]

MAX_YAML_BYTES = 1 << 20
"""Longest text read (1 MiB; the largest shipped config is under 8 KiB)."""

MAX_YAML_DEPTH = 64
"""Deepest nesting of sequences and mappings."""

MAX_YAML_NODES = 100_000
"""Most values (scalars, sequences, mappings) a document holds with its aliases expanded."""

MAX_YAML_INT = 2**63 - 1
"""Largest magnitude of an integer."""

_MAX_NUMBER_CHARS = 100
"""Longest number literal converted (a 64-bit integer in binary with underscores fits)."""

_EXPONENT = re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$")


class _Loader(yaml.SafeLoader):
    """``yaml.SafeLoader`` with the bounds and rules of the module docstring."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        if self.check_event(yaml.AliasEvent):  # an alias nests nothing new
            return super().compose_node(parent, index)
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise ComposerError(
                    None,
                    None,
                    f"nested more than {MAX_YAML_DEPTH} levels deep",
                    self.peek_event().start_mark,
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def compose_document(self) -> Node | None:
        root: Node | None = super().compose_document()
        if root is not None:
            _check_expanded_size(root)
        return root

    def construct_mapping(
        self, node: MappingNode, deep: bool = False
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
                raise ConstructorError(
                    None,
                    None,
                    f"duplicate key {key!r} (first given on line {first + 1})",
                    key_node.start_mark,
                )
        return super().construct_mapping(node, deep=deep)


def _check_expanded_size(root: Node) -> None:
    """Refuse a document of more than MAX_YAML_NODES values with its aliases expanded.

    An alias is the very node its anchor names, so the nodes form a graph; the expanded
    size of a node is 1 plus that of its children, computed once per node (depth-first,
    without recursion: the nesting is bounded, the graph's size is not).
    """
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        children = _children(node)
        if children_done:
            open_nodes.discard(key)
            sizes[key] = 1 + sum(sizes[id(c)] for c in children)
            if sizes[key] > MAX_YAML_NODES:
                raise ComposerError(
                    None,
                    None,
                    f"more than {MAX_YAML_NODES:,} values once its aliases are expanded "
                    "(an alias bomb?)",
                    node.start_mark,
                )
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            raise ComposerError(
                None,
                None,
                "an alias refers to a value that contains it",
                node.start_mark,
            )
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in children if id(c) not in sizes)


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _literal(loader: yaml.SafeLoader, node: ScalarNode, what: str) -> str:
    text = str(loader.construct_scalar(node))
    if len(text) > _MAX_NUMBER_CHARS:
        raise ConstructorError(
            None,
            None,
            f"{what} out of range: a literal of {len(text):,} characters",
            node.start_mark,
        )
    return text


def _bounded_int(value: int, node: ScalarNode) -> int:
    if abs(value) > MAX_YAML_INT:
        raise ConstructorError(
            None,
            None,
            "integer out of range: integers must lie within +-(2**63 - 1)",
            node.start_mark,
        )
    return value


def _finite(value: float, node: ScalarNode) -> float:
    if not math.isfinite(value):
        raise ConstructorError(
            None,
            None,
            f"number out of range: numbers must be finite (got {value})",
            node.start_mark,
        )
    return value


def _int(loader: yaml.SafeLoader, node: ScalarNode) -> int:
    _literal(loader, node, "integer")
    return _bounded_int(loader.construct_yaml_int(node), node)


def _float(loader: yaml.SafeLoader, node: ScalarNode) -> float:
    _literal(loader, node, "number")
    return _finite(loader.construct_yaml_float(node), node)


def _exponent_number(loader: yaml.SafeLoader, node: ScalarNode) -> int | float:
    text = _literal(loader, node, "number").replace("_", "")
    mantissa, exponent = re.split("[eE]", text)
    if "." in mantissa or exponent.startswith("-"):
        return _finite(float(text), node)
    # An integer: bound its number of digits before Decimal makes it exact.
    significant = mantissa.lstrip("+-").lstrip("0")
    power = exponent.lstrip("+").lstrip("0")
    if significant and (len(power) > 4 or len(significant) + int(power or 0) > 19):
        return _bounded_int(MAX_YAML_INT + 1, node)  # raises: out of range
    return _bounded_int(int(Decimal(text)), node)


_Loader.add_constructor("tag:yaml.org,2002:int", _int)
_Loader.add_constructor("tag:yaml.org,2002:float", _float)
_Loader.add_implicit_resolver("!banditkit/exponent", _EXPONENT, list("-+0123456789"))
_Loader.add_constructor("!banditkit/exponent", _exponent_number)


def load_yaml(text: str) -> Any:
    """Parse YAML ``text`` with the bounds and rules of the module docstring.

    Raises:
        yaml.YAMLError: For invalid YAML, a duplicate key, or a text beyond a bound; its
            ``problem_mark`` (when there is one) gives the line and column.
    """
    if len(text) > MAX_YAML_BYTES:
        raise yaml.YAMLError(
            f"longer than {MAX_YAML_BYTES:,} characters ({len(text):,})"
        )
    return yaml.load(text, Loader=_Loader)  # a SafeLoader subclass


def yaml_problem(exc: yaml.YAMLError) -> str:
    """One line for a YAML error: ``line L, column C: problem``."""
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
    problem = getattr(exc, "problem", None) or str(exc)
    return f"{where}{problem}"


class YamlFileError(BanditkitError, ValueError):
    """A YAML file that cannot be read: missing, unreadable, too large, not UTF-8, invalid.

    Attributes:
        path: The file.
        problem: What is wrong, one line (with the line and column for invalid YAML).
    """

    def __init__(self, path: str | os.PathLike[str], problem: str) -> None:
        self.path = Path(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


def read_yaml_file(path: str | os.PathLike[str]) -> Any:
    """Read a YAML file with :func:`load_yaml`.

    At most ``MAX_YAML_BYTES`` + 1 bytes are read, so a device such as ``/dev/zero``
    given as a file is refused rather than read for ever; the bytes must be UTF-8.

    Raises:
        YamlFileError: Naming the file and the problem ("file not found", "not UTF-8
            text: ...", "invalid YAML: line 3, column 5: ...").
    """
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_YAML_BYTES + 1)
    except FileNotFoundError:
        raise YamlFileError(path, "file not found") from None
    except OSError as exc:
        raise YamlFileError(path, f"cannot read: {exc.strerror or exc}") from None
    if len(data) > MAX_YAML_BYTES:
        raise YamlFileError(
            path, f"larger than {MAX_YAML_BYTES:,} bytes; expected a short text"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise YamlFileError(
            path, f"not UTF-8 text: byte {data[exc.start]:#04x} at offset {exc.start}"
        ) from None
    try:
        return load_yaml(text)
    except yaml.YAMLError as exc:
        raise YamlFileError(path, f"invalid YAML: {yaml_problem(exc)}") from None


def yaml_value(value: str, where: str) -> Any:
    """The value of a command line's ``k=v`` read with :func:`load_yaml`.

    Raises:
        ValueError: Naming ``where`` (the option and its text) and the problem.

    Example:
        >>> yaml_value("1e-3", "--candidate linucb:lam=1e-3")
        0.001
    """
    try:
        return load_yaml(value)
    except yaml.YAMLError as exc:
        raise ValueError(
            f"{where}: cannot read {value!r}: {yaml_problem(exc)}"
        ) from None
