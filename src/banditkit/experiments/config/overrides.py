"""``env_overrides``: policy parameters set on one environment, for the policies named.

Per environment label, a config names the policies an override is for (a label, a registry
name used by one entry, or ``all``: every policy that has the parameter), or gives the
parameters alone where exactly one policy has each of them (docs/experiments.md, section 7).
:func:`scope_overrides` turns either form into env label -> policy label -> parameters, the
form the resolved ``config.yaml`` keeps.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from banditkit.core import POLICIES
from banditkit.core.validation import suggest
from banditkit.experiments.config.errors import ConfigError
from banditkit.experiments.config.resolved import PolicyEntry

__all__ = ["ALL_POLICIES", "Overrides", "scope_overrides"]


Overrides = dict[str, dict[str, dict[str, Any]]]
"""``env_overrides`` scoped: env label -> policy label -> {parameter: value}."""

ALL_POLICIES = "all"
"""The ``env_overrides`` key that sets parameters on every policy that has them."""


def scope_overrides(
    overrides: Mapping[str, Mapping[str, Any]],
    policies: list[PolicyEntry],
    source: str,
    *,
    unnamed: Literal["error", "every"] = "error",
) -> Overrides:
    """``env_overrides`` as env label -> policy label -> parameters, each policy named.

    Per environment label, the mapping either names policies (a label, a registry name
    used by one entry, or ``all``: every policy that has the parameter) with their
    parameters, ``{POLICY: {param: value}}``, or gives the parameters alone,
    ``{param: value}``, which is allowed only where one policy of the config has the
    parameter: a parameter two policies share (OFU-MNL+ and ONL-MNL both have
    ``beta_scale``) must say which policy it is for. A policy named and ``all`` may both set
    a parameter; the named policy's value wins.

    Args:
        overrides: The config's ``env_overrides`` (environment labels already checked).
        policies: The config's policies.
        source: The config's name in messages.
        unnamed: ``"error"``: a parameter without its policy that several policies have is
            an error. ``"every"``: it is set on every policy that has it (how a stored
            ``config.yaml`` written before overrides were scoped was computed).

    Raises:
        ConfigError: Naming ``env_overrides.<env>...`` and the problem.

    Example:
        >>> ps = [PolicyEntry("linucb", "LinUCB", {}, "contextual"),
        ...       PolicyEntry("lints", "LinTS", {}, "contextual")]
        >>> scope_overrides({"e": {"LinUCB": {"lam": 2.0}}}, ps, "x.yaml")
        {'e': {'LinUCB': {'lam': 2.0}}}
        >>> scope_overrides({"e": {"all": {"lam": 2.0}}}, ps, "x.yaml")
        {'e': {'LinUCB': {'lam': 2.0}, 'LinTS': {'lam': 2.0}}}
        >>> scope_overrides({"e": {"lam": 2.0}}, ps, "x.yaml")
        Traceback (most recent call last):
        ...
        banditkit.experiments.config.errors.ConfigError: x.yaml: env_overrides.e.lam: parameter 'lam' belongs to 2 policies of this config (LinUCB, LinTS); name the policies it is for, e.g. `e: {LinUCB: {lam: 2.0}}`, or `all:` for every policy that has it, e.g. `e: {all: {lam: 2.0}}`
    """
    names = {
        p.label: [n for n in POLICIES.get(p.name).param_names() if n != "seed"]
        for p in policies
    }
    out: Overrides = {}
    for env, mapping in overrides.items():
        per_policy: dict[str, dict[str, Any]] = {}
        for label, params in _named_overrides(
            env, mapping, policies, names, source, unnamed
        ):
            per_policy.setdefault(label, {}).update(params)
        if per_policy:
            out[env] = {
                p.label: per_policy[p.label] for p in policies if p.label in per_policy
            }
    return out


def _named_overrides(
    env: str,
    mapping: Mapping[str, Any],
    policies: list[PolicyEntry],
    names: Mapping[str, list[str]],
    source: str,
    unnamed: str,
) -> list[tuple[str, dict[str, Any]]]:
    """(policy label, parameters) pairs of one environment's overrides, ``all`` first."""
    by_ref: dict[str, list[PolicyEntry]] = {ALL_POLICIES: list(policies)}
    for p in policies:
        by_ref.setdefault(p.name, [])
        by_ref[p.name].append(p)
    by_ref = {k: v for k, v in by_ref.items() if len(v) == 1 or k == ALL_POLICIES}
    by_ref.update({p.label: [p] for p in policies})
    param_names = {n for ns in names.values() for n in ns}
    refs = [k for k in mapping if k in by_ref]
    flat = [k for k in mapping if k not in by_ref]
    where = f"env_overrides.{env}"
    for key in refs:
        if key in param_names:
            raise ConfigError(
                f"{key!r} is both a policy of this config and a parameter; give the "
                "policy another `label:`",
                source=source,
                field=f"{where}.{key}",
            )
    if refs and flat:
        raise ConfigError(
            f"mixes policies ({', '.join(refs)}) with parameters ({', '.join(flat)}); "
            "put each parameter under the policies it is for",
            source=source,
            field=where,
        )
    pairs: list[tuple[str, dict[str, Any]]] = []
    if flat:
        for param, value in mapping.items():
            owners = _owners(param, list(policies), names, source, f"{where}.{param}")
            if len(owners) > 1 and unnamed == "error":
                listed = ", ".join(p.label for p in owners)
                raise ConfigError(
                    f"parameter {param!r} belongs to {len(owners)} policies of this "
                    f"config ({listed}); name the policies it is for, e.g. "
                    f"`{env}: {{{owners[0].label}: {{{param}: {value}}}}}`, or "
                    f"`{ALL_POLICIES}:` for every policy that has it, e.g. "
                    f"`{env}: {{{ALL_POLICIES}: {{{param}: {value}}}}}`",
                    source=source,
                    field=f"{where}.{param}",
                )
            pairs += [(p.label, {param: value}) for p in owners]
        return pairs
    for key in sorted(refs, key=lambda k: k != ALL_POLICIES):
        params = mapping[key]
        if not isinstance(params, Mapping):
            raise ConfigError(
                f"expected the parameters of {key!r} as a mapping {{param: value}}; "
                f"got {params!r}",
                source=source,
                field=f"{where}.{key}",
            )
        for param, value in params.items():
            owners = _owners(
                param, by_ref[key], names, source, f"{where}.{key}.{param}"
            )
            pairs += [(p.label, {param: value}) for p in owners]
    return pairs


def _owners(
    param: str,
    candidates: list[PolicyEntry],
    names: Mapping[str, list[str]],
    source: str,
    field_name: str,
) -> list[PolicyEntry]:
    """The policies among ``candidates`` that have ``param`` (at least one)."""
    owners = [p for p in candidates if param in names[p.label]]
    if owners:
        return owners
    if len(candidates) == 1:
        only = candidates[0]
        message = f"policy {only.label!r} ({only.name}) has no parameter {param!r}."
        known = names[only.label]
    else:
        message = f"no policy of this config has a parameter {param!r}."
        known = sorted({n for p in candidates for n in names[p.label]})
        known += [p.label for p in candidates] + [ALL_POLICIES]
    raise ConfigError(
        message + suggest(param, known),
        source=source,
        field=field_name,
    )
