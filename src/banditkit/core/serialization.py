"""Saving and loading policies in a safe format: one ``.npz`` file, no pickle.

A state dict (nested dicts and lists of NumPy arrays and JSON scalars) is split into its arrays,
stored as named ``.npz`` members, and a JSON skeleton in which each array is replaced by
``{"__array__": "<member name>"}``. Loading uses ``allow_pickle=False`` throughout.

A header member, ``__banditkit__``, holds the format name and version, the policy's registry
name and a SHA-256 digest of the content (the skeleton, then each array's name, dtype, shape
and bytes in name order). Loading checks all of them, so a truncated file, a file that is not
a banditkit policy, a newer format or a file whose content was edited (for example its
``policy`` label changed from ``linucb`` to ``lints``) raises :class:`PolicyFileError` naming
the file and the problem. The digest guards against damage and edits, not against a
deliberate forgery (it is not a signature).

Files are written atomically (temporary file in the same directory, flush, ``fsync``,
rename) with the mode a plain ``open()`` would give (``0o666`` less the umask).
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from banditkit.core.errors import DamagedFileError
from banditkit.core.files import atomic_write
from banditkit.core.policy import Policy
from banditkit.core.registry import Registry

__all__ = ["POLICY_FORMAT_VERSION", "PolicyFileError", "load_policy", "save_policy"]

POLICY_FORMAT = "banditkit-policy"
POLICY_FORMAT_VERSION = 1
"""Version of the policy file layout; files of a newer version are refused."""

_SKELETON = "__skeleton__"
_HEADER = "__banditkit__"


class PolicyFileError(DamagedFileError):
    """A policy file cannot be loaded (truncated, foreign, newer or edited)."""


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


def _digest(skeleton: str, arrays: dict[str, np.ndarray]) -> str:
    """SHA-256 of the skeleton and of each array (name, dtype, shape, C-order bytes)."""
    h = hashlib.sha256(skeleton.encode("utf-8"))
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(json.dumps([name, a.dtype.str, list(a.shape)]).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def save_policy(policy: Policy, path: str | os.PathLike[str]) -> None:
    """Write ``policy.state_dict()`` to ``path`` atomically (temporary file, then rename).

    The file gets the umask mode (like any file the user creates) and carries a header with
    the format version and a digest of its content (see the module docstring).

    Example:
        >>> import banditkit as bk, tempfile, os
        >>> p = bk.make_policy("linucb", seed=3)
        >>> f = os.path.join(tempfile.mkdtemp(), "p.bk")
        >>> bk.save_policy(p, f); bk.load_policy(f).seed
        3
    """
    arrays: dict[str, np.ndarray] = {}
    state = policy.state_dict()
    skeleton = json.dumps(_split(state, arrays))
    header = {
        "format": POLICY_FORMAT,
        "version": POLICY_FORMAT_VERSION,
        "policy": state.get("policy"),
        "sha256": _digest(skeleton, arrays),
    }
    members: dict[str, Any] = {
        **arrays,
        _SKELETON: np.array(skeleton),
        _HEADER: np.array(json.dumps(header)),
    }
    target = Path(path)
    atomic_write(target, lambda fh: np.savez(fh, **members))


def _read(path: Path) -> tuple[dict[str, Any], str, dict[str, np.ndarray]]:
    """(header, skeleton text, arrays) of a policy file, checked against its digest."""
    try:
        with np.load(path, allow_pickle=False) as data:
            if not isinstance(data, np.lib.npyio.NpzFile):
                raise PolicyFileError(path, "not a banditkit policy file (not an .npz)")
            names = set(data.files)
            if _HEADER not in names or _SKELETON not in names:
                raise PolicyFileError(
                    path,
                    "not a banditkit policy file (no format header; files saved before "
                    f"format version {POLICY_FORMAT_VERSION} must be saved again)",
                )
            header = json.loads(str(data[_HEADER]))
            skeleton = str(data[_SKELETON])
            arrays = {n: data[n] for n in names - {_HEADER, _SKELETON}}
    except FileNotFoundError:
        raise
    except PolicyFileError:
        raise
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, KeyError) as exc:
        raise PolicyFileError(
            path, f"not a readable policy file, truncated or damaged ({exc})"
        ) from None
    if not isinstance(header, dict) or header.get("format") != POLICY_FORMAT:
        raise PolicyFileError(path, "not a banditkit policy file (unknown header)")
    version = header.get("version")
    if not isinstance(version, int) or version > POLICY_FORMAT_VERSION:
        raise PolicyFileError(
            path,
            f"format version {version!r} is newer than this banditkit reads "
            f"({POLICY_FORMAT_VERSION}); upgrade banditkit",
        )
    if _digest(skeleton, arrays) != header.get("sha256"):
        raise PolicyFileError(
            path,
            "its content does not match its digest (the file was edited or damaged)",
        )
    return header, skeleton, arrays


def load_policy(
    path: str | os.PathLike[str], registry: Registry[type[Policy]] | None = None
) -> Policy:
    """Rebuild a policy saved by :func:`save_policy` (same class, parameters and state).

    Raises:
        FileNotFoundError: If ``path`` does not exist.
        PolicyFileError: If the file is truncated or damaged, not a banditkit policy file, of
            a newer format version, edited since it was saved, or holds a state the policy
            refuses; the message names the file and the problem.
    """
    if registry is None:
        from banditkit.core import POLICIES

        registry = POLICIES
    path = Path(path)
    header, skeleton, arrays = _read(path)
    state = _join(json.loads(skeleton), arrays)
    if not isinstance(state, dict) or state.get("policy") != header.get("policy"):
        raise PolicyFileError(path, "the header and the state name different policies")
    try:
        policy: Policy = registry.make(state["policy"], **state["params"])
        policy.load_state_dict(state)
    except (KeyError, TypeError, ValueError) as exc:
        raise PolicyFileError(path, f"cannot restore the policy: {exc}") from None
    return policy
