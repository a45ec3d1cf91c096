"""The speed benchmarks that ``banditkit bench`` runs (docs/benchmarks.md).

Each public module here (names not starting with "_") defines ``main(quick: bool, out: Path)``
returning a JSON-able dict and writing ``out/result.json`` and ``out/result.md``. They ship
with the package, so ``banditkit bench --out DIR`` works from any directory. Importing this package imports no benchmark (nor PyTorch); :func:`names` lists them.
"""

from __future__ import annotations

import pkgutil

__all__ = ["names"]


def names() -> list[str]:
    """The shipped benchmarks (module names), sorted.

    Example:
        >>> "assortment_opt" in names()
        True
    """
    return sorted(
        m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")
    )
