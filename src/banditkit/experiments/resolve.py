"""Resolving a config: every default made explicit, every name checked, runs expanded.

Resolution builds each environment and policy of the config once, through the registries, so
that unknown names, unknown parameters and invalid values are reported before anything runs,
and reads back their full parameters (defaults included) and each environment's declared
records. The resolved config is what ``DIR/config.yaml`` holds, and resolving it again gives
the same config. What resolution produces (:class:`ResolvedExperiment`, its cells and runs,
run ids) is defined in ``experiments.runs``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from banditkit.core import ENVIRONMENTS, POLICIES, make_env, make_policy
from banditkit.core.validation import suggest
from banditkit.experiments.claims import LEGACY_METRICS, declared_metric
from banditkit.experiments.metrics import METRICS
from banditkit.experiments.runs import (
    RUN_ID_FORMAT,
    Cell,
    EnvEntry,
    PolicyEntry,
    ResolvedExperiment,
    RunSpec,
    plain,
    run_id,
)
from banditkit.experiments.schema import (
    ConfigError,
    EnvSpec,
    ExperimentConfig,
    PolicySpec,
    load_config,
)
from banditkit.experiments.tuned import check_tuned_used, load_tuned

__all__ = [
    "ALL_POLICIES",
    "RUN_ID_FORMAT",
    "Cell",
    "EnvEntry",
    "Overrides",
    "PolicyEntry",
    "ResolvedExperiment",
    "RunSpec",
    "config_datasets",
    "plain",
    "resolve",
    "run_id",
    "scope_overrides",
]


def config_datasets(cfg: ExperimentConfig) -> list[str]:
    """The registry datasets the environments of ``cfg`` read, in config order.

    A built-in dataset is named by an environment's ``dataset`` parameter (``classification``,
    ``dueling-classification``) or by its class attribute ``required_datasets``
    (``obd-replay``: "obd"). Nothing is built, so this is cheap and reads no file.
    """
    from banditkit.datasets import list_datasets

    known = set(list_datasets())
    out: list[str] = []
    for spec in cfg.envs:
        cls = ENVIRONMENTS.get(spec.name) if spec.name in ENVIRONMENTS else None
        names = list(getattr(cls, "required_datasets", ()))
        value = spec.params.get("dataset")
        if isinstance(value, str):
            names.append(value)
        out += [n for n in names if n in known and n not in out]
    return out


def _with_paths(
    name: str, params: Mapping[str, Any], base: Path | None
) -> dict[str, Any]:
    """Read the environment's relative file parameters from ``base`` (the config's folder).

    An environment names them in its class attribute ``path_params`` (e.g. ``data`` of
    ``classification`` and ``log-replay``); the resolved config holds the absolute path.
    """
    out = dict(params)
    if base is None:
        return out
    for key in getattr(ENVIRONMENTS.get(name), "path_params", ()):
        value = out.get(key)
        if isinstance(value, str) and not Path(value).is_absolute():
            out[key] = str((base / value).resolve())
    return out


def _build_env(spec: EnvSpec, i: int, source: str, base: Path | None) -> EnvEntry:
    field_name = f"envs[{i}]"
    if spec.name not in ENVIRONMENTS:
        raise ConfigError(
            ENVIRONMENTS.unknown(spec.name),
            source=source,
            field=f"{field_name}.name",
        )
    try:
        env = make_env(spec.name, **_with_paths(spec.name, spec.params, base))
        params = plain(env.get_params())
    except (ValueError, TypeError) as exc:
        raise ConfigError(
            str(exc), source=source, field=f"{field_name} ({spec.name})"
        ) from None
    return EnvEntry(
        spec.name, spec.label or env.label, params, env.family, env.declared_records()
    )


def _policy_params(name: str, params: Mapping[str, Any]) -> dict[str, Any]:
    policy = make_policy(name, **params, seed=0)
    full = plain(policy.get_params())
    full.pop("seed", None)
    return dict(full)


def _build_policy(spec: PolicySpec, i: int, source: str) -> PolicyEntry:
    field_name = f"policies[{i}]"
    if spec.name not in POLICIES:
        raise ConfigError(
            POLICIES.unknown(spec.name),
            source=source,
            field=f"{field_name}.name",
        )
    try:
        params = _policy_params(spec.name, spec.params)
    except (ValueError, TypeError) as exc:
        raise ConfigError(
            str(exc), source=source, field=f"{field_name} ({spec.name})"
        ) from None
    family = POLICIES.get(spec.name).family
    return PolicyEntry(spec.name, spec.label or spec.name, params, family)


def _unique_labels(labels: list[str], what: str, source: str) -> None:
    seen: set[str] = set()
    for i, label in enumerate(labels):
        if label in seen:
            raise ConfigError(
                f"label {label!r} is used twice; give each entry a distinct `label:`",
                source=source,
                field=f"{what}[{i}]",
            )
        seen.add(label)


def _check_env_keys(
    mapping: Mapping[str, Any], env_labels: set[str], what: str, source: str
) -> None:
    for label in mapping:
        if label not in env_labels:
            raise ConfigError(
                f"no environment labelled {label!r}.{suggest(label, env_labels)} "
                f"Environment labels: {', '.join(sorted(env_labels))}.",
                source=source,
                field=f"{what}.{label}",
            )


def _policy_label(
    ref: str, policies: list[PolicyEntry], source: str, field_name: str
) -> str:
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
        banditkit.experiments.config_errors.ConfigError: x.yaml: env_overrides.e.lam: parameter 'lam' belongs to 2 policies of this config (LinUCB, LinTS); name the policies it is for, e.g. `e: {LinUCB: {lam: 2.0}}`, or `all:` for every policy that has it, e.g. `e: {all: {lam: 2.0}}`
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


def resolve(
    config: str | Path | Mapping[str, Any] | ExperimentConfig,
    *,
    base_dir: str | Path | None = None,
    source: str | None = None,
    envs: list[EnvEntry] | None = None,
) -> ResolvedExperiment:
    """Validate and resolve a config (path, mapping or model).

    The steps, each a function below: build every environment and policy (names, parameters,
    families, labels); check the tuning grid; apply tuned values and overrides per cell;
    check the metrics, checkpoints and claims against the environments' declared records.

    Args:
        config: The config.
        base_dir: Directory that relative ``tuned:`` paths and environment files (``data:``)
            are read from (default: the config file's directory, or the working directory).
        source: Name of the config in messages (default: its path).
        envs: The environments, already resolved, one per entry of the config's ``envs``
            (as an output directory stores them, see ``experiments.tidy``): used as given
            instead of being built, so no environment is constructed and no dataset read.
            The config is then a stored one, and an ``env_overrides`` parameter that names
            no policy is read as the version that wrote it applied it: on every policy
            that has the parameter (:func:`scope_overrides`).

    Raises:
        ConfigError: Naming the file, the field and the problem.
        MissingDatasetsError: Naming every built-in dataset the environments need that is
            not in the data home, and the command that fetches them (nothing is built).

    Example:
        >>> r = resolve({"name": "x", "horizon": 5, "seeds": 2,
        ...              "env": {"name": "linear", "d": 3}, "policies": [{"name": "linucb"}]})
        >>> r.envs[0].params["d"], r.policies[0].params["nu"], len(r.runs())
        (3, 1.0, 2)
    """
    if isinstance(config, str | Path):
        source = source or str(config)
        base_dir = base_dir if base_dir is not None else Path(config).parent
    source = source or "<config>"
    cfg = load_config(config, source=source)
    base = Path(base_dir) if base_dir is not None else None
    if envs is None:
        from banditkit.datasets import require_datasets

        require_datasets(config_datasets(cfg))

    stored = envs is not None
    envs, policies = _build_entries(cfg, source, base, envs)
    _check_grid(cfg, policies, source)
    _check_env_keys(cfg.env_overrides, {e.label for e in envs}, "env_overrides", source)
    overrides = scope_overrides(
        cfg.env_overrides, policies, source, unnamed="every" if stored else "error"
    )
    cells, applied, provenance = _build_cells(
        cfg, envs, policies, overrides, base, source
    )
    _check_metrics(cfg, envs, source)
    _check_layouts(cfg, envs, source, [p.label for p in policies])
    claims = _resolve_claims(cfg, envs, policies, source)
    resolved_config = cfg.model_copy(
        update={
            "seeds": cfg.seed_list,
            "envs": [EnvSpec(name=e.name, label=e.label, **e.params) for e in envs],
            "policies": [
                PolicySpec(name=p.name, label=p.label, **p.params) for p in policies
            ],
            "tuned": applied or None,
            "env_overrides": overrides,
            # Applied values are keyed by this config's env labels: the lookup is done.
            "tuned_envs": {} if applied else cfg.tuned_envs,
            "tuned_source": provenance or cfg.tuned_source,
            "claims": claims,
        }
    )
    return ResolvedExperiment(resolved_config, envs, policies, cells, source)


def _build_entries(
    cfg: ExperimentConfig,
    source: str,
    base: Path | None,
    stored: list[EnvEntry] | None = None,
) -> tuple[list[EnvEntry], list[PolicyEntry]]:
    if stored is not None and len(stored) != len(cfg.envs):
        raise ValueError(
            f"envs must give one entry per environment of the config ({len(cfg.envs)}); "
            f"got {len(stored)}."
        )
    envs = (
        list(stored)
        if stored is not None
        else [_build_env(spec, i, source, base) for i, spec in enumerate(cfg.envs)]
    )
    policies = [_build_policy(spec, i, source) for i, spec in enumerate(cfg.policies)]
    _unique_labels([e.label for e in envs], "envs", source)
    _unique_labels([p.label for p in policies], "policies", source)
    for i, p in enumerate(policies):
        for e in envs:
            if p.family != e.family:
                raise ConfigError(
                    f"policy {p.name!r} is of the {p.family} family but environment "
                    f"{e.label!r} is {e.family}; put them in separate configs",
                    source=source,
                    field=f"policies[{i}]",
                )
    return envs, policies


def _check_grid(
    cfg: ExperimentConfig, policies: list[PolicyEntry], source: str
) -> None:
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


def _build_cells(
    cfg: ExperimentConfig,
    envs: list[EnvEntry],
    policies: list[PolicyEntry],
    overrides: Overrides,
    base: Path | None,
    source: str,
) -> tuple[list[Cell], Overrides, list[dict[str, Any]]]:
    """The cells with their effective parameters, the tuned values applied, provenance.

    ``overrides`` are the ``env_overrides`` per policy (:func:`scope_overrides`); they
    apply after the tuned values.
    """
    tuned_all, provenance, tuned_keys = load_tuned(cfg.tuned, base, source)
    if cfg.tuned_envs and provenance:
        provenance = [
            {**entry, "tuned_envs": dict(cfg.tuned_envs)} for entry in provenance
        ]
    env_labels = {e.label for e in envs}
    _check_env_keys(cfg.tuned_envs, env_labels, "tuned_envs", source)
    if cfg.tuned is not None:
        for label, looked_up in cfg.tuned_envs.items():
            if looked_up not in tuned_all:
                known = sorted(tuned_all)
                raise ConfigError(
                    f"no tuned values for environment label {looked_up!r} in `tuned:`."
                    f"{suggest(looked_up, known)} Labels there: {', '.join(known)}.",
                    source=source,
                    field=f"tuned_envs.{label}",
                )
    check_tuned_used(
        tuned_keys,
        {
            (cfg.tuned_envs.get(e.label, e.label), p.label)
            for e in envs
            for p in policies
        },
        source,
    )
    applied: dict[str, dict[str, dict[str, Any]]] = {}
    cells: list[Cell] = []
    for e in envs:
        for p in policies:
            tuned_label = cfg.tuned_envs.get(e.label, e.label)
            override = dict(tuned_all.get(tuned_label, {}).get(p.label) or {})
            swept = overrides.get(e.label, {}).get(p.label, {})
            params = p.params
            if override or swept:
                try:
                    params = _policy_params(p.name, {**p.params, **override, **swept})
                except (ValueError, TypeError) as exc:
                    where = "env_overrides" if swept else "tuned"
                    raise ConfigError(
                        str(exc), source=source, field=f"{where}.{e.label}.{p.label}"
                    ) from None
            if override:
                applied.setdefault(e.label, {})[p.label] = plain(override)
            cells.append(Cell(e, p, params))
    return cells, applied, provenance


def _check_layouts(
    cfg: ExperimentConfig,
    envs: list[EnvEntry],
    source: str,
    policy_labels: list[str] | None = None,
) -> None:
    """``layout:`` panels name environments, metrics and policies of this config."""
    from banditkit.experiments.layouts import check

    problem = check(cfg.layout, envs, cfg.metrics, policy_labels)
    if problem is not None:
        raise ConfigError(problem[1], source=source, field=problem[0])


def _check_metrics(cfg: ExperimentConfig, envs: list[EnvEntry], source: str) -> None:
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


def _resolve_claims(
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
                if ref not in env_labels:
                    raise ConfigError(
                        f"no environment labelled {ref!r}.{suggest(ref, env_labels)} "
                        f"Environment labels: {', '.join(sorted(env_labels))}.",
                        source=source,
                        field=f"claims[{i}].{attr}",
                    )
        _check_claim_metric(claim, envs, cfg.checkpoints, source, f"claims[{i}]")
        for attr in ("policy", "other"):
            ref = getattr(claim, attr, None)
            if ref is not None:
                update[attr] = _policy_label(
                    ref, policies, source, f"claims[{i}].{attr}"
                )
        for attr in ("policies", "among"):
            refs = getattr(claim, attr, None)
            if isinstance(refs, list) and refs:
                update[attr] = [
                    _policy_label(r, policies, source, f"claims[{i}].{attr}")
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
