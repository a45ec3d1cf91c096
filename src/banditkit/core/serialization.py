"""Saving and loading policies in a safe format: one ``.npz`` file, no pickle.

A state dict (nested dicts and lists of NumPy arrays and JSON scalars) is split into its arrays,
stored as named ``.npz`` members, and a JSON skeleton in which each array is replaced by
``{"__array__": "<member name>"}``. Loading uses ``allow_pickle=False`` throughout.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from banditkit.core.policy import Policy
from banditkit.core.registry import Registry

__all__ = ["load_policy", "save_policy"]

_SKELETON = "__skeleton__"


def _split(obj: Any, arrays: dict[str, np.ndarray]) -> Any:
    if isinstance(obj, np.ndarray):
        name = f"a{len(arrays)}"
        arrays[name] = obj
        return {"__array__": name}
    if isinstance(obj, dict):
        return {str(k): _split(v, arrays) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_split(v, arrays) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def _join(obj: Any, arrays: Any) -> Any:
    if isinstance(obj, dict):
        if set(obj) == {"__array__"}:
            return np.array(arrays[obj["__array__"]])
        return {k: _join(v, arrays) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_join(v, arrays) for v in obj]
    return obj


def save_policy(policy: Policy, path: str | os.PathLike[str]) -> None:
    """Write ``policy.state_dict()`` to ``path`` atomically (temporary file, then rename).

    Example:
        >>> import banditkit as bk, tempfile, os
        >>> p = bk.make_policy("linucb", seed=3)
        >>> f = os.path.join(tempfile.mkdtemp(), "p.bk")
        >>> bk.save_policy(p, f); bk.load_policy(f).seed
        3
    """
    arrays: dict[str, np.ndarray] = {}
    skeleton = _split(policy.state_dict(), arrays)
    target = Path(path)
    fd, tmp = tempfile.mkstemp(
        dir=target.parent or ".", prefix=f".{target.name}.", suffix=".tmp"
    )
    try:
        with os.fdopen(fd, "wb") as fh:
            members: dict[str, Any] = {
                **arrays,
                _SKELETON: np.array(json.dumps(skeleton)),
            }
            np.savez(fh, **members)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_policy(
    path: str | os.PathLike[str], registry: Registry[type[Policy]] | None = None
) -> Policy:
    """Rebuild a policy saved by :func:`save_policy` (same class, parameters and state)."""
    if registry is None:
        from banditkit.core import POLICIES

        registry = POLICIES
    with np.load(path, allow_pickle=False) as data:
        state = _join(json.loads(str(data[_SKELETON])), data)
    policy: Policy = registry.make(state["policy"], **state["params"])
    policy.load_state_dict(state)
    return policy
