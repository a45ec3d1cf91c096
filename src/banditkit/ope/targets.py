"""Target policies: the (n, K) action probabilities of the policy a log is evaluated for.

The estimators take the target as an array with one row of action probabilities per logged
round. This module builds that array from what a user names: the uniform-random policy, a
``.npy`` file, or any banditkit policy, written on a command line as ``NAME[:k=v,...]``
(``linucb:nu=0.5,lam=2``; :func:`parse_policy`, which ``banditkit evaluate --target`` reads
and the decision service's candidates can share).

A banditkit policy is *replayed* on the log, as Open Bandit Pipeline's
``run_bandit_simulation`` does for its online policies [Saito2021]: the rows are read in
order; at each one the policy sees the row's context and picks an action, and it learns from
the row only when that action is the logged one (the feedback it would have observed); its
target row is the one-hot vector of its pick. For a stochastic policy the pick is a draw of
its distribution, so the estimate is unbiased with a little more variance than the exact
distribution would give.

The contexts: with per-row features (scaled to [0, 1] per column, as ``log-replay`` does),
arm k is the features in block k of a K d vector (``encoding="block"``) or the features
followed by the one-hot id of k (``"onehot-id"``); a log without features gives each arm its
one-hot id, a K-armed bandit without context.

References:
    [Saito2021] Y. Saito, S. Aihara, M. Matsutani, Y. Narita. Open Bandit Dataset and
        Pipeline: towards realistic and reproducible off-policy evaluation. NeurIPS 2021
        Datasets and Benchmarks.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from banditkit.core import POLICIES, Context, Policy, make_policy
from banditkit.core.errors import UnknownNameError
from banditkit.core.safe_yaml import yaml_value
from banditkit.core.threads import limit_threads
from banditkit.core.validation import check_choice
from banditkit.datasets.preprocess import scale_features
from banditkit.envs.classification import encode_arms
from banditkit.ope.logs import BanditLog

__all__ = ["ENCODINGS", "parse_policy", "policy_target", "target_probabilities"]

#: How a log's features become the arms a policy sees.
ENCODINGS = ("block", "onehot-id")


def parse_policy(text: str) -> tuple[str, dict[str, Any]]:
    """``"NAME[:k=v,...]"`` -> (registered name, hyper-parameters).

    Values are read as YAML scalars (``0.5``, ``true``, ``diagonal``, ``null``).

    Raises:
        UnknownNameError: For a name no policy has (close names suggested).
        ValueError: For a malformed ``k=v``.

    Example:
        >>> parse_policy("LinUCB:nu=0.5,lam=2")
        ('linucb', {'nu': 0.5, 'lam': 2})
    """
    name, _, rest = str(text).partition(":")
    name = POLICIES.canonical(name.strip())
    POLICIES.get(name)  # an unknown name raises, suggesting close ones
    params: dict[str, Any] = {}
    for item in filter(None, (part.strip() for part in rest.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key.strip().isidentifier():
            raise ValueError(
                f"policy parameters must read k=v, separated by commas; got {item!r} "
                f"in {text!r}."
            )
        params[key.strip()] = yaml_value(value, repr(text)) if value.strip() else None
    return name, params


def _arms(log: BanditLog, encoding: str) -> tuple[np.ndarray | None, str]:
    """The scaled features (None without any) and the encoding actually used."""
    if log.features is None or log.features.shape[1] == 0:
        return None, "onehot-id"
    return scale_features(
        np.asarray(log.features, dtype=np.float64), "minmax"
    ), encoding


def policy_target(
    policy: Policy, log: BanditLog, *, encoding: str = "block"
) -> np.ndarray:
    """Replay ``policy`` on ``log`` (see the module docstring); its (n, K) one-hot picks.

    Args:
        policy: A fresh contextual policy; it learns from the rows it agrees with.
        log: The logged rounds, in order.
        encoding: "block" or "onehot-id": how per-row features become arms.

    Raises:
        ValueError: If the policy is not contextual, reads the environment (an oracle),
            or ``encoding`` is unknown.

    Example:
        >>> import banditkit as bk
        >>> log = BanditLog(rewards=np.array([1.0, 0.0, 1.0]), actions=np.array([0, 1, 0]),
        ...                 propensities=np.full(3, 0.5), n_actions=2)
        >>> policy_target(bk.make_policy("oracle"), log)
        Traceback (most recent call last):
        ...
        ValueError: oracle plays from the environment itself (Policy.attach); a log has no environment: choose a policy that learns.
    """
    check_choice("encoding", encoding, ENCODINGS)
    name = policy.registry_name or type(policy).__name__
    if policy.family != "contextual":
        raise ValueError(
            f"a log of single actions evaluates contextual policies; {name} is a "
            f"{policy.family} policy."
        )
    if type(policy).attach is not Policy.attach:
        raise ValueError(
            f"{name} plays from the environment itself (Policy.attach); a log has no "
            "environment: choose a policy that learns."
        )
    features, encoding = _arms(log, encoding)
    k = log.n_actions
    ids = np.eye(k)
    target = np.zeros((log.n, k))
    policy.begin(log.n)
    with limit_threads(1, torch=policy.needs_torch):
        for i in range(log.n):
            arms = ids if features is None else encode_arms(features[i], k, encoding)
            ctx = Context(arms=arms)
            action = policy.act(ctx)
            assert isinstance(action, int)
            target[i, action] = 1.0
            if action == log.actions[i]:
                policy.update(ctx, action, float(log.rewards[i]))
    return target


def target_probabilities(
    target: str | os.PathLike[str] | Mapping[str, Any],
    log: BanditLog,
    *,
    encoding: str = "block",
    seed: int = 0,
) -> np.ndarray:
    """The (n, K) action probabilities of ``target`` on ``log``.

    Args:
        target: "uniform"; a ``.npy`` file of (n, K) probabilities; a policy as
            ``"NAME[:k=v,...]"``; or a mapping ``{"name": ..., **params}`` (a config's
            policy entry; ``label`` is ignored).
        log: The logged rounds.
        encoding: How per-row features become arms for a policy (:func:`policy_target`).
        seed: The policy's seed.

    Raises:
        UnknownNameError: For a target that is none of these (a ``ValueError``).
        ValueError: For a file of the wrong shape, or bad policy parameters.

    Example:
        >>> log = BanditLog(rewards=np.array([1.0, 0.0, 1.0]), actions=np.array([0, 1, 0]),
        ...                 propensities=np.full(3, 0.5), n_actions=2)
        >>> target_probabilities("uniform", log)[0].tolist()
        [0.5, 0.5]
        >>> target_probabilities("ucb1", log).sum(axis=1).tolist()
        [1.0, 1.0, 1.0]
    """
    if isinstance(target, Mapping):
        params = {k: v for k, v in target.items() if k not in ("name", "label")}
        policy = make_policy(str(target["name"]), **params, seed=seed)
        return policy_target(policy, log, encoding=encoding)
    if str(target) == "uniform":
        return log.uniform_target()
    path = Path(target)
    if path.suffix == ".npy":
        if not path.is_file():
            raise ValueError(f"target file {str(target)!r} does not exist.")
        probabilities = np.asarray(np.load(path), dtype=np.float64)
        if probabilities.shape != (log.n, log.n_actions):
            raise ValueError(
                f"target file {str(target)!r} must hold (n, K) = ({log.n}, "
                f"{log.n_actions}) probabilities; got shape {probabilities.shape}."
            )
        return probabilities
    try:
        name, params = parse_policy(str(target))
    except UnknownNameError as exc:
        raise UnknownNameError(
            f"target must be 'uniform', a .npy file or a policy NAME[:k=v,...]; "
            f"{str(target)!r} is none: {exc}"
        ) from None
    policy = make_policy(name, **params, seed=seed)
    return policy_target(policy, log, encoding=encoding)
