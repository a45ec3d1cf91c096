"""Every check of a config against its environments and policies, each a ConfigError.

``config.schema`` declares the shape and types of a config and ``config.limits`` bounds its
size; the checks here need what resolution learned from the registries (``config.resolve``
builds every environment and policy once): labels are unique and families match, the tuning
grid names parameters the policies have, ``tuned_envs`` names environments, ``metrics:``,
``layout:`` panels and claims name declared metrics, environments and policies, and claims
read checkpoints the config has; ``banditkit tune`` has a grid whose parameters no override
fixes and tuning seeds disjoint from the evaluation seeds. ``config.overrides`` scopes ``env_overrides``,
``config.tuned`` checks tuned files, ``config.papers`` the figures a paper's panels name.
Every message names the file and the field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from banditkit.core import POLICIES
from banditkit.core.validation import suggest
from banditkit.experiments.config.claims import LEGACY_METRICS, declared_metric
from banditkit.experiments.config.errors import ConfigError
from banditkit.experiments.config.metrics import METRICS, figures_for
from banditkit.experiments.config.resolved import (
    EnvEntry,
    PolicyEntry,
    ResolvedExperiment,
)
from banditkit.experiments.config.schema import ExperimentConfig

__all__ = [
    "check_env_label",
    "check_env_labels",
    "check_families",
    "check_grid",
    "check_grid_overrides",
    "check_layouts",
    "check_metrics",
    "check_tunable",
    "check_tuned_envs",
    "policy_label",
    "resolve_claims",
    "tuning_seeds",
    "unique_labels",
]


def check_families(
    envs: Sequence[EnvEntry], policies: Sequence[PolicyEntry], source: str
) -> None:
    """Every policy is of the family of every environment."""
    for i, p in enumerate(policies):
        for e in envs:
            if p.family != e.family:
                raise ConfigError(
                    f"policy {p.name!r} is of the {p.family} family but environment "
                    f"{e.label!r} is {e.family}; put them in separate configs",
                    source=source,
                    field=f"policies[{i}]",
                )


def check_tuned_envs(
    cfg: ExperimentConfig,
    tuned_labels: Sequence[str],
    env_labels: set[str],
    source: str,
) -> None:
    """``tuned_envs`` maps environment labels to labels the tuned values have."""
    check_env_labels(cfg.tuned_envs, env_labels, "tuned_envs", source)
    if cfg.tuned is None:
        return
    for label, looked_up in cfg.tuned_envs.items():
        if looked_up not in tuned_labels:
            known = sorted(tuned_labels)
            raise ConfigError(
                f"no tuned values for environment label {looked_up!r} in `tuned:`."
                f"{suggest(looked_up, known)} Labels there: {', '.join(known)}.",
                source=source,
                field=f"tuned_envs.{label}",
            )


def unique_labels(labels: list[str], what: str, source: str) -> None:
    """Labels of ``what`` (``envs``, ``policies``) are unique."""
    seen: set[str] = set()
    for i, label in enumerate(labels):
        if label in seen:
            raise ConfigError(
                f"label {label!r} is used twice; give each entry a distinct `label:`",
                source=source,
                field=f"{what}[{i}]",
            )
        seen.add(label)


def check_env_labels(
    mapping: Mapping[str, Any], env_labels: set[str], what: str, source: str
) -> None:
    """The keys of ``mapping`` (the config's ``what``) are environment labels."""
    for label in mapping:
        check_env_label(label, env_labels, source, f"{what}.{label}")


def check_env_label(
    ref: str, env_labels: set[str], source: str, field_name: str
) -> None:
    """``ref`` (at ``field_name``) is one of the environment labels."""
    if ref not in env_labels:
        raise ConfigError(
            f"no environment labelled {ref!r}.{suggest(ref, env_labels)} "
            f"Environment labels: {', '.join(sorted(env_labels))}.",
            source=source,
            field=field_name,
        )


def policy_label(
    ref: str, policies: list[PolicyEntry], source: str, field_name: str
) -> str:
    """The label of policy ``ref``: a label, or a registry name used by one entry."""
    labels = [p.label for p in policies]
    if ref in labels:
        return ref
    by_name = [p.label for p in policies if p.name == ref]
    if len(by_name) == 1:
        return by_name[0]
    hint = suggest(ref, labels)
    raise ConfigError(
        f"no policy labelled {ref!r}.{hint} Policy labels: {', '.join(labels)}.",
        source=source,
        field=field_name,
    )


def check_grid(cfg: ExperimentConfig, policies: list[PolicyEntry], source: str) -> None:
    """``grid:`` keys name policies (label or name) and their parameters."""
    for key, params in cfg.grid.items():
        matches = [p for p in policies if key in (p.label, p.name)]
        if not matches:
            hint = suggest(
                key, [p.label for p in policies] + [p.name for p in policies]
            )
            raise ConfigError(
                f"{key!r} is neither a policy label nor a policy name.{hint}",
                source=source,
                field=f"grid.{key}",
            )
        known = POLICIES.get(matches[0].name).param_names()
        for param in params:
            if param not in known or param == "seed":
                raise ConfigError(
                    f"policy {matches[0].name!r} has no parameter {param!r}."
                    f"{suggest(param, known)}",
                    source=source,
                    field=f"grid.{key}.{param}",
                )


def check_metrics(cfg: ExperimentConfig, envs: list[EnvEntry], source: str) -> None:
    """``metrics:`` names a registered figure metric or a metric every env declares."""
    for name in cfg.metrics:
        if name in METRICS:
            continue
        missing = [e.label for e in envs if name not in e.metrics]
        if missing:
            known = sorted(set(METRICS) | {m for e in envs for m in e.metrics})
            raise ConfigError(
                f"unknown metric {name!r} (not declared by {', '.join(missing)})."
                f"{suggest(name, known)} Known: {', '.join(known)}.",
                source=source,
                field="metrics",
            )


def resolve_claims(
    cfg: ExperimentConfig,
    envs: list[EnvEntry],
    policies: list[PolicyEntry],
    source: str,
) -> list[Any]:
    """Claims with policy references resolved to labels; envs, metrics, ``at`` checked."""
    env_labels = {e.label for e in envs}
    claims = []
    ids: set[str] = set()
    for i, claim in enumerate(cfg.claims):
        if claim.id in ids:
            raise ConfigError(
                f"claim id {claim.id!r} is used twice",
                source=source,
                field=f"claims[{i}].id",
            )
        ids.add(claim.id)
        update: dict[str, Any] = {}
        for attr in ("env", "envs"):
            refs = getattr(claim, attr)
            for ref in [refs] if isinstance(refs, str) else refs or []:
                check_env_label(ref, env_labels, source, f"claims[{i}].{attr}")
        _check_claim_metric(claim, envs, cfg.checkpoints, source, f"claims[{i}]")
        for attr in ("policy", "other"):
            ref = getattr(claim, attr, None)
            if ref is not None:
                update[attr] = policy_label(
                    ref, policies, source, f"claims[{i}].{attr}"
                )
        for attr in ("policies", "among"):
            refs = getattr(claim, attr, None)
            if isinstance(refs, list) and refs:
                update[attr] = [
                    policy_label(r, policies, source, f"claims[{i}].{attr}")
                    for r in refs
                ]
        claims.append(claim.model_copy(update=update))
    return claims


def _check_claim_metric(
    claim: Any, envs: list[EnvEntry], checkpoints: list[int], source: str, where: str
) -> None:
    metric = getattr(claim, "metric", None)
    at = getattr(claim, "at", None)
    if at is not None and at not in checkpoints:
        raise ConfigError(
            f"round {at} is not a checkpoint; add it to `checkpoints:` "
            f"(now {checkpoints})",
            source=source,
            field=f"{where}.at",
        )
    if metric is None or (metric in LEGACY_METRICS and at is None):
        return
    if metric in LEGACY_METRICS:
        metric = declared_metric(metric, at)
        if metric is None:
            raise ConfigError(
                "this metric has no value per round; drop `at:`",
                source=source,
                field=f"{where}.at",
            )
    named = claim.env_labels() or [e.label for e in envs]
    for env in envs:
        if env.label in named and metric not in env.metrics:
            known = sorted(env.metrics)
            raise ConfigError(
                f"environment {env.label!r} declares no metric {metric!r}."
                f"{suggest(metric, known)} Its metrics: {', '.join(known)}.",
                source=source,
                field=f"{where}.metric",
            )


def check_layouts(
    cfg: ExperimentConfig,
    envs: Sequence[EnvEntry],
    policy_labels: Sequence[str],
    source: str,
) -> None:
    """``layout:``: unique names; panels name environments, metrics and policies of ``cfg``.

    Panels drawing from another config (``figure:``) are checked where the paper is known
    (``config.papers.check_panel_figures``).
    """
    problem = _layout_problem(cfg, envs, policy_labels)
    if problem is not None:
        raise ConfigError(problem[1], source=source, field=problem[0])


def _layout_problem(
    cfg: ExperimentConfig, envs: Sequence[EnvEntry], policy_labels: Sequence[str]
) -> tuple[str, str] | None:
    """The first problem of the config's own panels as (field, message), or None."""
    labels = [e.label for e in envs]
    names: set[str] = set()
    for i, spec in enumerate(cfg.layout or []):
        if spec.name is not None:
            if spec.name in names:
                return f"layout[{i}].name", f"{spec.name!r} names two layouts"
            names.add(spec.name)
        for j, panel in enumerate(spec.panels or []):
            if panel.figure is not None:
                continue
            where = f"layout[{i}].panels[{j}]"
            if panel.env is None:
                if len(envs) != 1:
                    return (
                        f"{where}.env",
                        f"required when the config has several environments "
                        f"({', '.join(labels)})",
                    )
                env = envs[0]
            elif panel.env not in labels:
                return (
                    f"{where}.env",
                    f"no environment labelled {panel.env!r}.{suggest(panel.env, labels)} "
                    f"Environment labels: {', '.join(labels)}.",
                )
            else:
                env = envs[labels.index(panel.env)]
            known = list(
                dict.fromkeys(
                    [*figures_for(env.records, cfg.metrics), *env.metrics, *METRICS]
                )
            )
            if panel.metric not in known:
                return (
                    f"{where}.metric",
                    f"unknown metric {panel.metric!r} for {env.label!r}."
                    f"{suggest(panel.metric, known)} Known: {', '.join(known)}.",
                )
            for label in panel.policies or []:
                if label not in policy_labels:
                    return (
                        f"{where}.policies",
                        f"no policy labelled {label!r}.{suggest(label, policy_labels)} "
                        f"Policy labels: {', '.join(policy_labels)}.",
                    )
    return None


def tuning_seeds(config: ExperimentConfig, n: int | None = None) -> list[int]:
    """The tuning seeds of a config (``seed_offset + i``), checked disjoint from its seeds.

    Example:
        >>> from banditkit.experiments.config.load import load_config
        >>> cfg = load_config({"name": "x", "horizon": 5, "seeds": 3,
        ...     "env": {"name": "linear"}, "policies": [{"name": "random"}]})
        >>> tuning_seeds(cfg)
        [10000, 10001, 10002]
    """
    count = n if n is not None else (config.tuning.seeds or len(config.seed_list))
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ConfigError(
            f"expected a number of tuning seeds >= 1; got {count!r}", field="--seeds"
        )
    offset = config.tuning.seed_offset
    clash = [s for s in config.seed_list if s >= offset]
    if clash:
        raise ConfigError(
            f"evaluation seeds {clash} reach the tuning seeds (from {offset}); use smaller "
            "seeds or raise `tuning.seed_offset`",
            field="seeds",
        )
    return [offset + i for i in range(count)]


def check_tunable(cfg: ExperimentConfig, source: str) -> None:
    """``banditkit tune`` needs a ``grid:``."""
    if not cfg.grid:
        raise ConfigError(
            "nothing to tune: add a `grid:` mapping {policy label or name: {param: [values]}}",
            source=source,
            field="grid",
        )


def check_grid_overrides(resolved: ResolvedExperiment, source: str) -> None:
    """No ``env_overrides`` sets a parameter its policy's grid varies.

    Such an override would make the policy's grid candidates equal on that environment.
    """
    grid = resolved.config.grid
    for env, per_policy in resolved.config.env_overrides.items():
        for p in resolved.policies:
            varied = grid.get(p.label, grid.get(p.name)) or {}
            clash = sorted(set(per_policy.get(p.label) or {}) & set(varied))
            if clash:
                raise ConfigError(
                    f"sets {', '.join(clash)}, which the grid of {p.label!r} varies; "
                    "drop it from the grid or from env_overrides",
                    source=source,
                    field=f"env_overrides.{env}.{p.label}",
                )
