"""Warnings that point at the user's line, not at banditkit's own code.

``warnings.warn(..., stacklevel=2)`` names the caller of the function that warns, which is
often banditkit itself (``make_env`` calls the registry, which calls the constructor that
warns). :func:`warn` walks up the stack past every frame of the banditkit package and
attributes the warning to the first frame outside it: the user's script, test or notebook
cell (as pandas does with ``find_stack_level``).
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

__all__ = ["HorizonWarning", "warn"]

_PACKAGE = str(Path(__file__).resolve().parents[1])


class HorizonWarning(UserWarning):
    """A policy whose defaults are made for a longer horizon runs a far shorter one."""


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    """Issue ``message`` as a ``category`` warning attributed to the first non-banditkit frame.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     warn("careful")
        >>> caught[0].filename.endswith("caller.py")  # this doctest's frame, not warn's
        False
    """
    level, frame = 1, sys._getframe()
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        level += 1
        frame = frame.f_back
    warnings.warn(message, category, stacklevel=level)
