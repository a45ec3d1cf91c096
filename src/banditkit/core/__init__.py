"""Core contracts: records, base classes, registries, seeding, validation and the loop.

``core`` imports nothing else from banditkit; every other package builds on it.
"""

from __future__ import annotations

from typing import Any

from banditkit.core.caller import HorizonWarning
from banditkit.core.environment import (
    AssortmentEnvironment,
    ContextualEnvironment,
    DuelingEnvironment,
    Environment,
)
from banditkit.core.policy import (
    MAX_ABS_REWARD,
    AssortmentPolicy,
    ContextualPolicy,
    DuelingPolicy,
    Policy,
    check_feedback,
)
from banditkit.core.records import LOOP_RECORDS, Record
from banditkit.core.registry import Registry
from banditkit.core.seeding import STREAMS, make_rng, spawn_seeds
from banditkit.core.simulate import RunResult, simulate, simulate_seeds
from banditkit.core.types import (
    FAMILIES,
    MAX_ABS_FEATURE,
    Action,
    Context,
    Family,
    Feedback,
    Step,
    check_action,
)

__all__ = [
    "ENVIRONMENTS",
    "FAMILIES",
    "LOOP_RECORDS",
    "MAX_ABS_FEATURE",
    "MAX_ABS_REWARD",
    "POLICIES",
    "STREAMS",
    "Action",
    "AssortmentEnvironment",
    "AssortmentPolicy",
    "Context",
    "ContextualEnvironment",
    "ContextualPolicy",
    "DuelingEnvironment",
    "DuelingPolicy",
    "Environment",
    "Family",
    "Feedback",
    "HorizonWarning",
    "Policy",
    "Record",
    "Registry",
    "RunResult",
    "Step",
    "check_action",
    "check_feedback",
    "list_envs",
    "list_policies",
    "make_env",
    "make_policy",
    "make_rng",
    "policy_name",
    "simulate",
    "simulate_seeds",
    "spawn_seeds",
]

POLICIES: Registry[type[Policy]] = Registry(
    "policy", group="banditkit.policies", listing="banditkit list policies"
)
ENVIRONMENTS: Registry[type[Environment]] = Registry(
    "environment", group="banditkit.envs", listing="banditkit list envs"
)


def make_policy(name: str, *, per_arm: bool = False, **params: Any) -> Policy:
    """Build the policy registered as ``name`` (``banditkit list policies``) with its hyper-parameters.

    Args:
        name: A registered policy name.
        per_arm: True builds the per-arm (disjoint) variant of ``name``, one model per arm,
            registered as ``"<name>-per-arm"`` (``linucb``, ``lints``, ``eps-greedy``,
            ``glm-ucb``, ``glm-ts``).
        **params: The policy's hyper-parameters.

    Raises:
        ValueError: ``per_arm=True`` for a policy without a per-arm variant.

    Example:
        >>> import banditkit as bk
        >>> bk.make_policy("linucb", nu=0.5, seed=1).nu
        0.5
        >>> bk.make_policy("linucb", per_arm=True).registry_name
        'linucb-per-arm'
    """
    policy: Policy = POLICIES.make(policy_name(name, per_arm=per_arm), **params)
    return policy


def policy_name(name: str, *, per_arm: bool = False) -> str:
    """The registered name :func:`make_policy` builds for ``name`` and ``per_arm``.

    Raises:
        ValueError: ``per_arm=True`` for a policy without a per-arm variant.

    Example:
        >>> policy_name("linucb", per_arm=True)
        'linucb-per-arm'
    """
    if not isinstance(per_arm, bool):
        raise ValueError(f"per_arm must be True or False; got {per_arm!r}.")
    if per_arm:
        variants = [n for n in POLICIES.names() if n.endswith("-per-arm")]
        if name in variants:
            pass
        elif f"{name}-per-arm" in variants:
            name = f"{name}-per-arm"
        else:
            bases = sorted(n.removesuffix("-per-arm") for n in variants)
            raise ValueError(
                f"per_arm=True: policy {name!r} has no per-arm variant; those that do: {bases}."
            )
    return name


def make_env(name: str, **params: Any) -> Environment:
    """Build the environment registered as ``name`` with its parameters."""
    env: Environment = ENVIRONMENTS.make(name, **params)
    return env


def list_policies(family: str | None = None) -> list[str]:
    """Registered policy names, optionally of one family."""
    return [
        n
        for n in POLICIES.names()
        if family is None or POLICIES.get(n).family == family
    ]


def list_envs(family: str | None = None) -> list[str]:
    """Registered environment names, optionally of one family."""
    return [
        n
        for n in ENVIRONMENTS.names()
        if family is None or ENVIRONMENTS.get(n).family == family
    ]
