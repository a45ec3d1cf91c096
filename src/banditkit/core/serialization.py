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

from banditkit.core.errors import BanditkitError, DamagedFileError
from banditkit.core.files import atomic_write
from banditkit.core.policy import Policy
from banditkit.core.registry import Registry

__all__ = [
    "POLICY_FORMAT_VERSION",
    "PolicyFileError",
    "UnsavablePolicyError",
    "load_policy",
    "save_policy",
]

POLICY_FORMAT = "banditkit-policy"
POLICY_FORMAT_VERSION = 1
"""Version of the policy file layout; files of a newer version are refused."""

_SKELETON = "__skeleton__"
_HEADER = "__banditkit__"


class PolicyFileError(DamagedFileError):
    """A policy file cannot be loaded (truncated, foreign, newer or edited)."""


class UnsavablePolicyError(BanditkitError, ValueError):
    """A policy that a file could not bring back as it is (not saved; the message says why)."""


def _same(a: Any, b: Any) -> bool:
    """Whether two attribute values are equal (arrays by content; unknown objects: False)."""
    if a is b:
        return True
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.shape == b.shape
            and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
        )
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, np.random.Generator) and isinstance(b, np.random.Generator):
        return _same(a.bit_generator.state, b.bit_generator.state)
    try:
        return bool(a == b)
    except Exception:
        return False


#: Attributes describing the last round only (not needed to continue).
_TRANSIENT = frozenset({"last_propensity"})


def _check_savable(policy: Policy, registry: Registry[type[Policy]]) -> None:
    """Refuse a policy that :func:`load_policy` would not bring back as it is.

    The file names the policy by its registry name and holds ``state_dict()``, so the
    class must be registered under that name, and a class that keeps learned state must
    save it (``_state`` / ``_load_state``). For a class using the default (empty) ``_state``
    the check rebuilds the policy from its file's content and compares every attribute.
    """
    cls = type(policy)
    name = policy.registry_name or cls.__name__
    if name not in registry or registry.get(name) is not cls:
        raise UnsavablePolicyError(
            f"cannot save a {cls.__name__}: load_policy rebuilds a policy by its registry "
            "name and this class is not registered under one"
            + (
                f" (its parent's, {name!r}, would load another class)"
                if name in registry
                else ""
            )
            + "; register it with @POLICIES.register('my-name') (docs/own-policy.md)."
        )
    if policy.d is None or any(
        "_state" in vars(k) for k in cls.__mro__ if k is not Policy and k is not object
    ):
        return
    try:
        clone = cls(**policy.get_params())
        clone.load_state_dict(policy.state_dict())
    except Exception as exc:
        raise UnsavablePolicyError(
            f"cannot save {name!r}: rebuilding it from its parameters and state fails "
            f"({type(exc).__name__}: {exc})."
        ) from None
    mine, theirs = vars(policy), vars(clone)
    lost = sorted(
        k
        for k in mine
        if k not in _TRANSIENT and (k not in theirs or not _same(mine[k], theirs[k]))
    )
    if lost:
        raise UnsavablePolicyError(
            f"cannot save {name!r}: its attributes {', '.join(lost)} hold learned state "
            "that its state_dict() leaves out, so a loaded copy would not continue "
            "identically; override _state() and _load_state() to save and restore them "
            "(docs/own-policy.md)."
        )


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


def save_policy(
    policy: Policy,
    path: str | os.PathLike[str],
    registry: Registry[type[Policy]] | None = None,
) -> None:
    """Write ``policy.state_dict()`` to ``path`` atomically (temporary file, then rename).

    The file gets the umask mode (like any file the user creates) and carries a header with
    the format version and a digest of its content (see the module docstring).

    A policy that :func:`load_policy` could not bring back to continue identically is
    refused before anything is written: a class not registered (in ``registry``, default
    ``POLICIES``) under its ``registry_name``, or one keeping learned state in attributes
    that its ``state_dict()`` leaves out (checked for classes without their own
    ``_state``).

    Raises:
        UnsavablePolicyError: For such a policy; the message names the attributes.

    Example:
        >>> import banditkit as bk, tempfile, os
        >>> p = bk.make_policy("linucb", seed=3)
        >>> f = os.path.join(tempfile.mkdtemp(), "p.bk")
        >>> bk.save_policy(p, f); bk.load_policy(f).seed
        3
    """
    if registry is None:
        from banditkit.core import POLICIES

        registry = POLICIES
    _check_savable(policy, registry)
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
