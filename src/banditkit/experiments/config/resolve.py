"""The config stage: a config loaded, checked and resolved into a :class:`ResolvedExperiment`.

:func:`prepare_experiment` is the stage: load the file (``config.load``), apply ``--quick``,
``--seeds`` and ``--horizon``, then :func:`resolve`. Resolution builds each environment and
policy of the config once, through the registries, so that unknown names, unknown parameters
and invalid values are reported before anything runs, and reads back their full parameters
(defaults included) and each environment's declared records; the checks that need them are
``config.checks``. The resolved config is what ``DIR/config.yaml`` holds, and resolving it
again gives the same config. What resolution produces (:class:`ResolvedExperiment`, its
cells and runs, run ids) is defined in ``config.resolved``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from banditkit.core import ENVIRONMENTS, POLICIES, make_env, make_policy
from banditkit.core.registry import Registry
from banditkit.datasets import list_datasets, require_datasets
from banditkit.experiments.config import checks
from banditkit.experiments.config.errors import ConfigError
from banditkit.experiments.config.load import apply_overrides, load_config
from banditkit.experiments.config.overrides import Overrides, scope_overrides
from banditkit.experiments.config.resolved import (
    Cell,
    EnvEntry,
    PolicyEntry,
    ResolvedExperiment,
    plain,
)
from banditkit.experiments.config.schema import EnvSpec, ExperimentConfig, PolicySpec
from banditkit.experiments.config.tuned import check_tuned_used, load_tuned

__all__ = ["config_datasets", "prepare_experiment", "resolve"]


def prepare_experiment(
    config: str | Path | Mapping[str, Any] | ExperimentConfig,
    *,
    seeds: int | list[int] | None = None,
    horizon: int | None = None,
    quick: bool = False,
    base_dir: str | Path | None = None,
    device: str | None = None,
    dtype: str | None = None,
) -> ResolvedExperiment:
    """Load, override (``config.load.apply_overrides``) and resolve a config.

    The overrides: ``--quick``, ``--seeds``, ``--horizon``, ``--device`` and ``--dtype``.

    Raises:
        ConfigError: For an invalid config, naming the file and the field.
        MissingDatasetsError: Naming every dataset the environments need that is missing.
    """
    source = str(config) if isinstance(config, str | Path) else None
    if isinstance(config, str | Path) and base_dir is None:
        base_dir = Path(config).parent
    cfg = load_config(config, source=source)
    try:
        cfg = apply_overrides(
            cfg, seeds=seeds, horizon=horizon, quick=quick, device=device, dtype=dtype
        )
    except ConfigError as exc:
        raise ConfigError(str(exc), source=source) from None
    return resolve(cfg, base_dir=base_dir, source=source)


def config_datasets(cfg: ExperimentConfig) -> list[str]:
    """The registry datasets the environments of ``cfg`` read, in config order.

    A built-in dataset is named by an environment's ``dataset`` parameter (``classification``,
    ``dueling-classification``) or by its class attribute ``required_datasets``
    (``obd-replay``: "obd"). Nothing is built, so this is cheap and reads no file.
    """
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


@contextmanager
def _building(
    registry: Registry[Any], name: str, field: str, source: str
) -> Iterator[None]:
    """Build the entry ``field`` (``envs[i]``, ``policies[i]``) named ``name`` of ``registry``.

    An unknown name, or a ``ValueError``/``TypeError`` raised by the block (the constructor's
    check of a parameter), becomes a ``ConfigError`` pointing at the field.
    """
    if name not in registry:
        raise ConfigError(registry.unknown(name), source=source, field=f"{field}.name")
    try:
        yield
    except (ValueError, TypeError) as exc:
        raise ConfigError(str(exc), source=source, field=f"{field} ({name})") from None


def _build_env(spec: EnvSpec, i: int, source: str, base: Path | None) -> EnvEntry:
    field_name = f"envs[{i}]"
    with _building(ENVIRONMENTS, spec.name, field_name, source):
        env = make_env(spec.name, **_with_paths(spec.name, spec.params, base))
        params = plain(env.get_params())
    return EnvEntry(
        spec.name, spec.label or env.label, params, env.family, env.declared_records()
    )


def _policy_params(name: str, params: Mapping[str, Any]) -> dict[str, Any]:
    policy = make_policy(name, **params, seed=0)
    full = plain(policy.get_params())
    full.pop("seed", None)
    return dict(full)


def _build_policy(spec: PolicySpec, i: int, source: str) -> PolicyEntry:
    with _building(POLICIES, spec.name, f"policies[{i}]", source):
        params = _policy_params(spec.name, spec.params)
    family = POLICIES.get(spec.name).family
    return PolicyEntry(spec.name, spec.label or spec.name, params, family)


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
            (as an output directory stores them, see ``store.stored``): used as given
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
    stored = envs is not None
    if not stored:
        require_datasets(config_datasets(cfg))
    envs, policies = _build_entries(cfg, source, base, envs)
    checks.check_grid(cfg, policies, source)
    env_labels = {e.label for e in envs}
    checks.check_env_labels(cfg.env_overrides, env_labels, "env_overrides", source)
    overrides = scope_overrides(
        cfg.env_overrides, policies, source, unnamed="every" if stored else "error"
    )
    cells, applied, provenance = _build_cells(
        cfg, envs, policies, overrides, base, source
    )
    checks.check_metrics(cfg, envs, source)
    checks.check_layouts(cfg, envs, [p.label for p in policies], source)
    claims = checks.resolve_claims(cfg, envs, policies, source)
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
    checks.unique_labels([e.label for e in envs], "envs", source)
    checks.unique_labels([p.label for p in policies], "policies", source)
    checks.check_families(envs, policies, source)
    return envs, policies


def _build_cells(
    cfg: ExperimentConfig,
    envs: list[EnvEntry],
    policies: list[PolicyEntry],
    overrides: Overrides,
    base: Path | None,
    source: str,
) -> tuple[list[Cell], Overrides, list[dict[str, Any]]]:
    """The cells with their effective parameters, the tuned values applied, provenance.

    ``overrides`` are the ``env_overrides`` per policy (``config.overrides``); they
    apply after the tuned values.
    """
    tuned_all, provenance, tuned_keys = load_tuned(cfg.tuned, base, source)
    if cfg.tuned_envs and provenance:
        provenance = [
            {**entry, "tuned_envs": dict(cfg.tuned_envs)} for entry in provenance
        ]
    checks.check_tuned_envs(cfg, list(tuned_all), {e.label for e in envs}, source)
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
