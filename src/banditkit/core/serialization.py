"""Saving and loading policies in a safe format: one ``.npz`` file, no pickle.

The file is a state file (``core.statefile``): the state dict's arrays as named ``.npz``
members and a JSON skeleton, under a header holding the format name and version, the
policy's registry name and a SHA-256 digest of the content. Loading never unpickles and
checks all of them, so a truncated file, a file that is not a banditkit policy, a newer
format or a file whose content was edited (for example its ``policy`` label changed from
``linucb`` to ``lints``) raises :class:`PolicyFileError` naming the file and the problem.

The digest guards against damage and edits, not against a deliberate forgery: anyone can
recompute it. What makes a forged file harmless is checked after it (docs/reliability.md):

- sizes before allocation: the zip directory and each array's ``.npy`` header must agree
  with the member's bytes, members must be stored uncompressed (no zip bombs), and the
  arrays together must fit ``max_bytes``;
- dtypes: booleans, integers and real floats only (no complex, strings, objects, records),
  every float finite;
- names: the policy must be registered (and ``expect``, when given); its parameters go
  through the constructor's checks, which for the scikit-learn learner accept only
  allow-listed estimator classes (``sklearn_arms.ALLOWED_ESTIMATORS``);
- state: the policy checks the state against what it declares (counters, shapes, a
  symmetric positive-definite Gram, ...) before taking it.

Files are written atomically (temporary file in the same directory, flush, ``fsync``,
rename) with the mode a plain ``open()`` would give (``0o666`` less the umask).
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from banditkit.core import POLICIES
from banditkit.core.errors import BanditkitError, DamagedFileError
from banditkit.core.files import atomic_write_bytes
from banditkit.core.params import stored_params
from banditkit.core.policy import Policy
from banditkit.core.registry import Registry
from banditkit.core.statefile import StateFormat, pack_state, read_state

__all__ = [
    "MAX_POLICY_BYTES",
    "POLICY_FORMAT_VERSION",
    "PolicyFileError",
    "UnsavablePolicyError",
    "load_policy",
    "policy_from_bytes",
    "policy_to_bytes",
    "save_policy",
]

POLICY_FORMAT = "banditkit-policy"
POLICY_FORMAT_VERSION = 1
"""Version of the policy file layout; files of a newer version are refused."""


class PolicyFileError(DamagedFileError):
    """A policy file cannot be loaded (truncated, foreign, newer or edited)."""


class UnsavablePolicyError(BanditkitError, ValueError):
    """A policy that a file could not bring back as it is (not saved; the message says why)."""


POLICY_FILE = StateFormat(
    POLICY_FORMAT, POLICY_FORMAT_VERSION, "policy file", PolicyFileError
)


def _difference(a: Any, b: Any, where: str = "value") -> str | None:
    """Where two values first differ (arrays by dtype, shape and content), or None.

    Lists and tuples compare alike (a state read back from JSON holds lists); unknown
    objects differ unless ``a == b``.
    """
    if a is b:
        return None
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        same = (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
        )
        return None if same else where
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return f"{where} (keys {sorted(map(str, a.keys() ^ b.keys()))})"
        found = (_difference(a[k], b[k], f"{where}[{k!r}]") for k in a)
        return next((w for w in found if w is not None), None)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        if len(a) != len(b):
            return where
        found = (
            _difference(x, y, f"{where}[{i}]")
            for i, (x, y) in enumerate(zip(a, b, strict=True))
        )
        return next((w for w in found if w is not None), None)
    if isinstance(a, np.random.Generator) and isinstance(b, np.random.Generator):
        return _difference(a.bit_generator.state, b.bit_generator.state, where)
    try:
        return None if bool(a == b) else where
    except Exception:
        return where


def _same(a: Any, b: Any) -> bool:
    """Whether two attribute values are equal (see :func:`_difference`)."""
    return _difference(a, b) is None


def _array_sides(tree: Any) -> list[int]:
    """Every axis length of every non-empty array in ``tree`` (nested dicts and lists).

    Empty arrays do not count: a (0, d) array costs nothing, whatever its d.
    """
    if isinstance(tree, np.ndarray):
        return list(tree.shape) if tree.size else []
    if isinstance(tree, dict):
        tree = list(tree.values())
    if isinstance(tree, list | tuple):
        return [n for v in tree for n in _array_sides(v)]
    return []


def _keeps_no_state(policy: Policy) -> bool:
    """Whether the class keeps no learned state (its ``_state`` is empty even unset up)."""
    if not any(
        "_state" in vars(k) for k in type(policy).__mro__ if k not in (Policy, object)
    ):
        return True
    try:
        return policy._state() == {}
    except Exception:  # it reads what _setup allocates: it keeps learned state
        return False


def _check_dimension(policy: Policy, state: dict[str, Any]) -> None:
    """Refuse a feature dimension d that the state's own arrays do not account for.

    Setting a policy up allocates memory that grows with d (a d x d Gram) before its
    parts see the arrays, so a forged ``d`` must not get there. A policy that keeps
    learned state holds it once d is set, and when its set-up grows with d
    (``Policy.setup_grows_with_d``), non-empty arrays whose axes account for d: d is at
    most the sum of their distinct axis lengths (a Gram of width d; a hybrid model splits
    d into two blocks), or :data:`_FREE_D`.
    """
    d, learned = state.get("d"), state.get("state")
    if not isinstance(d, int) or _keeps_no_state(policy):
        return
    if not learned:
        raise ValueError(
            "state['state'] is empty, but this policy keeps learned state once d is set."
        )
    bound = max(sum(set(_array_sides(learned))), _FREE_D)
    grows = policy.setup_grows_with_d and getattr(policy, "uses_features", True)
    if grows and d > bound:
        raise ValueError(
            f"state['d'] = {d} is not accounted for by the state's arrays (their axis "
            f"lengths add up to {bound}); a policy of that d keeps arrays of that width "
            "(a class whose set-up allocates nothing that grows with d sets "
            "setup_grows_with_d = False)."
        )


def _restore(cls: Callable[..., Policy], state: dict[str, Any]) -> Policy:
    """Build ``cls`` from a state's parameters and load the state, checked both ways.

    The policy checks the state as it loads it (``load_state_dict``: the base's counters
    and random stream, each part's shapes and invariants); then what it saves again must
    be the state it was given, so no entry was ignored, reshaped or cast on the way in.
    :func:`save_policy` and :func:`load_policy` both go through here.

    Raises:
        ValueError: What the policy refuses, or the first entry that does not come back.
    """
    policy = cls(**state["params"])
    _check_dimension(policy, state)
    policy.load_state_dict(state)
    where = _difference(state, policy.state_dict(), "state")
    if where is not None:
        raise ValueError(
            f"{where} does not come back when the restored policy saves again (an "
            "entry it ignores, or of another shape or dtype than it keeps)."
        )
    return policy


#: Attributes describing the last round only (not needed to continue).
_TRANSIENT = frozenset({"last_propensity", "_law", "_last_law", "_rounds"})


def _check_savable(
    policy: Policy, state: dict[str, Any], registry: Registry[type[Policy]]
) -> None:
    """Refuse a policy that :func:`load_policy` would not bring back as it is.

    The file names the policy by its registry name and holds ``state`` (its
    ``state_dict()``), so the class must be registered under that name, the state must
    pass the checks :func:`load_policy` makes (:func:`_restore`), and a class that keeps
    learned state must save it (``_state`` / ``_load_state``): for a class using the
    default (empty) ``_state`` the check compares every attribute of the rebuilt policy.
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
    try:
        clone = _restore(cls, state)
    except Exception as exc:
        raise UnsavablePolicyError(
            f"cannot save {name!r}: rebuilding it from its parameters and state fails "
            f"({type(exc).__name__}: {exc})."
        ) from None
    if policy.d is None or any(
        "_state" in vars(k) for k in cls.__mro__ if k is not Policy and k is not object
    ):
        return
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
    atomic_write_bytes(Path(path), policy_to_bytes(policy, registry))


def policy_to_bytes(
    policy: Policy, registry: Registry[type[Policy]] | None = None
) -> bytes:
    """The bytes of the file :func:`save_policy` writes, without touching the disk.

    For a store that keeps policy files itself (the decision service keeps its snapshots in
    its database); :func:`policy_from_bytes` reads them back with every check of
    :func:`load_policy`. Refuses the same policies as :func:`save_policy`.

    Example:
        >>> import banditkit as bk
        >>> from banditkit.core.serialization import policy_from_bytes, policy_to_bytes
        >>> data = policy_to_bytes(bk.make_policy("linucb", seed=3))
        >>> policy_from_bytes(data, expect="linucb").seed
        3
    """
    if registry is None:
        registry = POLICIES
    state = policy.state_dict()
    _check_savable(policy, state, registry)
    try:
        members = pack_state(state, POLICY_FILE, policy=state.get("policy"))
    except ValueError:
        raise UnsavablePolicyError(
            f"cannot save {state['policy']!r}: its state holds NaN, inf or non-real "
            "values, which load_policy refuses."
        ) from None
    buffer = io.BytesIO()
    np.savez(buffer, **members)
    return buffer.getvalue()


#: Largest total size, in bytes, of the arrays a policy file may declare (4 GiB); checked
#: against the file's zip directory and each array's header before anything is allocated.
MAX_POLICY_BYTES = 4 * 2**30
#: A feature dimension any policy file may have, whatever its arrays: a d x d float64
#: matrix of this d is 32 MiB.
_FREE_D = 2048


def load_policy(
    path: str | os.PathLike[str],
    expect: str | None = None,
    *,
    registry: Registry[type[Policy]] | None = None,
    max_bytes: int = MAX_POLICY_BYTES,
) -> Policy:
    """Rebuild a policy saved by :func:`save_policy` (same class, parameters and state).

    The file is checked before anything is built from it: its size (``max_bytes``, read
    from the zip directory and each array's header before any array is allocated), its
    dtypes (booleans, integers and real floats only), its digest, every float finite, and
    the policy a registered name (``expect``, when given). The policy then checks the
    state against what it declares (shapes, counters, a positive-definite Gram, ...: see
    docs/reliability.md) before taking it.

    Args:
        path: The policy file.
        expect: The registry name the file must hold (e.g. "linucb"); None takes any.
        registry: Where the name is looked up (default ``POLICIES``).
        max_bytes: Largest total size of the file's arrays, in bytes.

    Raises:
        PolicyFileError: If the file is missing, truncated or damaged, not a banditkit
            policy file, of a newer format version, edited since it was saved, larger than
            ``max_bytes``, holds another policy than ``expect``, or holds a state the
            policy refuses; the message names the file and the problem.

    Example:
        >>> import banditkit as bk, tempfile, os
        >>> f = os.path.join(tempfile.mkdtemp(), "p.bk")
        >>> bk.save_policy(bk.make_policy("linucb"), f)
        >>> bk.load_policy(f, expect="lints")
        Traceback (most recent call last):
        ...
        banditkit.core.serialization.PolicyFileError: '...p.bk': it holds policy 'linucb', not the expected 'lints'
    """
    return _load(Path(path), Path(path), expect, registry, max_bytes)


def policy_from_bytes(
    data: bytes,
    expect: str | None = None,
    *,
    registry: Registry[type[Policy]] | None = None,
    max_bytes: int = MAX_POLICY_BYTES,
    name: str = "<policy bytes>",
) -> Policy:
    """Rebuild a policy from the bytes of a policy file (:func:`policy_to_bytes`).

    Every check of :func:`load_policy` applies; ``name`` stands for the file in messages.

    Raises:
        PolicyFileError: As :func:`load_policy`.
    """
    return _load(data, Path(name), expect, registry, max_bytes)


def _load(
    source: Path | bytes,
    path: Path,
    expect: str | None,
    registry: Registry[type[Policy]] | None,
    max_bytes: int,
) -> Policy:
    if registry is None:
        registry = POLICIES
    known = registry

    def check(header: dict[str, Any]) -> None:
        name = header.get("policy")
        if expect is not None and name != expect:
            raise PolicyFileError(
                path, f"it holds policy {name!r}, not the expected {expect!r}"
            )
        if not isinstance(name, str) or name not in known:
            raise PolicyFileError(
                path, f"it holds policy {name!r}, which is not registered"
            )

    header, state = read_state(
        source, POLICY_FILE, max_bytes=max_bytes, path=path, check=check
    )
    name = header["policy"]
    if not isinstance(state, dict) or state.get("policy") != name:
        raise PolicyFileError(path, "the header and the state name different policies")
    params = state.get("params")
    if not isinstance(params, dict):
        raise PolicyFileError(path, "its state has no parameters")
    # A file saved before a default changed lacks that parameter: it had the old value.
    state = {**state, "params": stored_params(registry.get(name), params)}
    try:
        return _restore(partial(registry.make, name), state)
    except Exception as exc:  # a hostile state may break a policy in any way
        raise PolicyFileError(
            path, f"cannot restore the policy: {type(exc).__name__}: {exc}"
        ) from None
