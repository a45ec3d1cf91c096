"""Loading a config: YAML or mapping to a validated :class:`ExperimentConfig`, then overrides.

:func:`load_config` reads the file (``yaml_io``: strict YAML), validates its shape and types
(``schema``; each problem becomes one line naming its field, ``errors``) and bounds its size
(``limits``); :func:`apply_overrides` applies ``--quick``, ``--seeds`` and ``--horizon``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from banditkit.core import POLICIES
from banditkit.experiments.config.errors import ConfigError, format_validation_error
from banditkit.experiments.config.layout import LayoutSpec, PanelSpec
from banditkit.experiments.config.limits import check_size
from banditkit.experiments.config.schema import (
    QUICK_HORIZON,
    QUICK_SEEDS,
    ExperimentConfig,
    PolicySpec,
    QuickSpec,
    TuningSpec,
    check_seeds,
)
from banditkit.experiments.config.yaml_io import read_yaml
from banditkit.policies.parts.models.compute import DEVICES, DTYPES

__all__ = ["apply_overrides", "load_config"]

_FIELDS_BY_DEPTH = {
    "": list(ExperimentConfig.model_fields),
    "quick": list(QuickSpec.model_fields),
    "tuning": list(TuningSpec.model_fields),
    "layout": list(LayoutSpec.model_fields),
    "panels": list(PanelSpec.model_fields),
}


def load_config(
    config: str | Path | Mapping[str, Any] | ExperimentConfig,
    *,
    source: str | None = None,
) -> ExperimentConfig:
    """Validate a config given as a YAML path, a mapping or a model.

    Raises:
        ConfigError: With the file, the field and what was expected, or when the
            experiment's estimated memory is above the limit
            (:func:`~banditkit.experiments.config.limits.check_size`).

    Example:
        >>> cfg = load_config({"name": "x", "horizon": 10, "seeds": 2,
        ...                    "env": {"name": "linear"}, "policies": [{"name": "random"}]})
        >>> cfg.seed_list, cfg.envs[0].name
        ([0, 1], 'linear')
        >>> load_config({"name": "x", "horizon": -1, "seeds": 2, "env": {"name": "linear"},
        ...              "policies": [{"name": "random"}]}, source="my.yaml")
        Traceback (most recent call last):
        ...
        banditkit.experiments.config.errors.ConfigError: my.yaml: horizon: Input should be greater than 0; got -1
    """
    if isinstance(config, ExperimentConfig):
        check_size(config, source=source)
        return config
    if isinstance(config, str | Path):
        source = source or str(config)
        data = read_yaml(config)
    else:
        data = config
        source = source or "<config>"
    if not isinstance(data, Mapping):
        raise ConfigError(
            f"expected a mapping of config fields at the top level; got {type(data).__name__}",
            source=source,
        )
    try:
        validated = ExperimentConfig.model_validate(dict(data))
    except ValidationError as exc:
        raise format_validation_error(exc, _FIELDS_BY_DEPTH, source) from None
    check_size(validated, source=source)
    return validated


def apply_overrides(
    config: ExperimentConfig,
    *,
    seeds: int | list[int] | None = None,
    horizon: int | None = None,
    quick: bool = False,
    device: str | None = None,
    dtype: str | None = None,
) -> ExperimentConfig:
    """Return a copy with ``--quick`` applied, then ``--seeds`` / ``--horizon``.

    ``--quick`` uses the config's ``quick:`` section; without one it keeps the first
    ``QUICK_SEEDS`` seeds and at most ``QUICK_HORIZON`` rounds. ``device`` and ``dtype``
    (``--device``, ``--dtype``) replace those parameters of every policy that has them
    (the neural policies: docs/performance.md, "Devices, dtype and batched duels") and
    leave the others as they are; a run on another device or dtype has its own run id.
    Only the name of a device is checked here (a cluster's workers may have GPUs its
    head lacks); a policy built where its device is not there fails with a
    ``ValueError`` naming it.

    Example:
        >>> cfg = load_config({"name": "x", "horizon": 1000, "seeds": 5,
        ...                    "env": {"name": "linear"}, "policies": [{"name": "random"}]})
        >>> q = apply_overrides(cfg, quick=True)
        >>> q.horizon, q.seed_list
        (500, [0, 1, 2])
    """
    update: dict[str, Any] = {}
    if quick:
        spec = config.quick or QuickSpec()
        if spec.seeds is not None:
            update["seeds"] = spec.seeds
        else:
            update["seeds"] = config.seed_list[:QUICK_SEEDS]
        update["horizon"] = (
            spec.horizon
            if spec.horizon is not None
            else min(config.horizon, QUICK_HORIZON)
        )
    if seeds is not None:
        try:
            update["seeds"] = check_seeds(seeds)
        except ValueError as exc:
            raise ConfigError(str(exc), field="--seeds") from None
    if horizon is not None:
        if isinstance(horizon, bool) or not isinstance(horizon, int) or horizon < 1:
            raise ConfigError(
                f"expected an integer >= 1; got {horizon!r}", field="--horizon"
            )
        update["horizon"] = horizon
    compute = _compute_overrides(device, dtype)
    if compute:
        update["policies"] = [_with_params(spec, compute) for spec in config.policies]
    if not update:
        return config
    return config.model_copy(update=update)


def _compute_overrides(device: str | None, dtype: str | None) -> dict[str, str]:
    """The checked ``--device`` / ``--dtype`` values given, by parameter name."""
    out: dict[str, str] = {}
    if device is not None:
        if not isinstance(device, str) or not (
            device in DEVICES or (device.startswith("cuda:") and device[5:].isdigit())
        ):
            raise ConfigError(
                f"expected 'cpu', 'cuda', 'cuda:N' or 'auto'; got {device!r}",
                field="--device",
            )
        out["device"] = device
    if dtype is not None:
        if dtype not in DTYPES:
            raise ConfigError(
                f"expected one of {list(DTYPES)}; got {dtype!r}", field="--dtype"
            )
        out["dtype"] = dtype
    return out


def _with_params(spec: PolicySpec, values: Mapping[str, str]) -> PolicySpec:
    """``spec`` with those of ``values`` that its policy takes as parameters."""
    taken = (
        set(POLICIES.get(spec.name).param_names()) if spec.name in POLICIES else set()
    )
    params = {k: v for k, v in values.items() if k in taken}
    if not params:
        return spec
    return PolicySpec.model_validate({**spec.model_dump(), **params})
