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

On a log of pairs (duels) or sets (assortments) the target is a dueling or assortment policy,
replayed the same way; its target value at row i is its probability of the logged pair or set,
``propensity_of`` (exact, or a Monte Carlo estimate for samplers), which is the mean of the
one-hot of its pick given its state: unbiased, with less variance (:func:`structured_target`).

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

__all__ = [
    "ENCODINGS",
    "LOG_FAMILIES",
    "parse_policy",
    "policy_target",
    "structured_target",
    "target_probabilities",
]

#: How a log's features become the arms a policy sees.
ENCODINGS = ("block", "onehot-id")

#: The policy family whose actions a log's kind holds.
LOG_FAMILIES = {"arm": "contextual", "pair": "dueling", "set": "assortment"}


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


def _check_replayable(policy: Policy, log: BanditLog) -> None:
    """A policy of the log's family that learns (not one that reads the environment)."""
    name = policy.registry_name or type(policy).__name__
    family = LOG_FAMILIES[log.kind]
    if policy.family != family:
        raise ValueError(
            f"a log of {log.kind}s evaluates {family} policies; {name} is a "
            f"{policy.family} policy."
        )
    if type(policy).attach is not Policy.attach:
        raise ValueError(
            f"{name} plays from the environment itself (Policy.attach); a log has no "
            "environment: choose a policy that learns."
        )


def policy_target(
    policy: Policy, log: BanditLog, *, encoding: str = "block"
) -> np.ndarray:
    """Replay ``policy`` on ``log`` (see the module docstring): its target probabilities.

    On a log of arms, the (n, K) one-hot vectors of its picks. On a log of pairs or sets
    (:func:`structured_target`), the (n,) probabilities of the logged actions.

    Args:
        policy: A fresh policy of the log's family (contextual for arms, dueling for pairs,
            assortment for sets); it learns from the rows it agrees with.
        log: The logged rounds, in order.
        encoding: "block" or "onehot-id": how per-row features become arms.

    Raises:
        ValueError: If the policy is of another family than the log's actions, reads the
            environment (an oracle), or ``encoding`` is unknown.

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
    _check_replayable(policy, log)
    if log.kind != "arm":
        return structured_target(policy, log, encoding=encoding)
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


def structured_target(
    policy: Policy, log: BanditLog, *, encoding: str = "block"
) -> np.ndarray:
    """Replay a dueling or assortment ``policy`` on a log of pairs or sets.

    At row i the policy sees the row's arms (as :func:`policy_target`; a set log's rounds
    offer at most ``log.capacity`` items, at equal revenues: a log holds no per-item
    revenues) and picks its pair or set; its target value is its
    probability of the *logged* action, ``policy.propensity_of`` (exact for exact laws, a
    Monte Carlo estimate from ``propensity_samples`` draws for samplers; docs/ope.md), or,
    where the policy knows no law, 1 when its pick is the logged action and 0 otherwise. It
    learns from row i, with the logged ``feedback``, only when its pick is the logged action.
    The probability is the mean of the one-hot of the pick given the policy's state, so the
    estimate stays unbiased, with less variance than the pick itself would give.

    Returns:
        (n,) the target's probabilities of the logged actions.

    Raises:
        ValueError: If the log has no ``feedback`` to learn from.
    """
    if log.feedback is None:
        raise ValueError(
            f"a policy target learns from the log's feedback, and this log of {log.kind}s "
            "has none (the duels' outcomes or the chosen items): give it, or evaluate "
            "'uniform' or a .npy file of the target's probabilities."
        )
    features, encoding = _arms(log, encoding)
    k = log.n_actions
    ids = np.eye(k)
    capacity = (log.capacity or k) if log.kind == "set" else None
    probabilities = np.zeros(log.n)
    policy.begin(log.n)
    with limit_threads(1, torch=policy.needs_torch):
        for i in range(log.n):
            arms = ids if features is None else encode_arms(features[i], k, encoding)
            ctx = Context(arms=arms, max_size=capacity)
            action, logged = policy.act(ctx), log.action(i)
            known = policy.propensity_of(logged)
            probabilities[i] = float(action == logged) if known is None else known
            if action == logged:
                policy.update(ctx, action, int(log.feedback[i]))
    return probabilities


def target_probabilities(
    target: str | os.PathLike[str] | Mapping[str, Any],
    log: BanditLog,
    *,
    encoding: str = "block",
    seed: int = 0,
) -> np.ndarray:
    """The target's probabilities on ``log``: (n, K) on arms, (n,) of the logged pairs or sets.

    Args:
        target: "uniform"; a ``.npy`` file of (n, K) probabilities (on pairs or sets: (n,)
            probabilities of the logged actions); a policy as
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
        shape = (log.n, log.n_actions) if log.kind == "arm" else (log.n,)
        if probabilities.shape != shape:
            what = (
                f"(n, K) = {shape} action" if log.kind == "arm" else f"(n,) = {shape}"
            )
            raise ValueError(
                f"target file {str(target)!r} must hold {what} probabilities (of the "
                f"logged {log.kind}s); got shape {probabilities.shape}."
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
