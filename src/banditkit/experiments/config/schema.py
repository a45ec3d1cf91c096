"""The experiment config (YAML) and its validation (docs/architecture.md section 5).

A config names the experiment, its horizon and seeds, the environments and the policies with
their parameters; optional sections add tuning grids, tuned values, quick settings, extra
metric plots and claims::

    name: logistic-fig1
    horizon: 2000
    seeds: 10                  # a count (seeds 0..9) or an explicit list
    envs:                      # or a single `env:` mapping
      - {name: logistic, h: h1, d: 20, n_arms: 5, pool: 2500}
    policies:
      - {name: linucb, label: LinUCB, nu: 1.0, lam: 0.1}
    grid:                      # for `banditkit tune`: per policy label or name
      LinUCB: {nu: [0.1, 1, 10]}
    tuned: tuned.yaml          # parameters chosen by `banditkit tune` (path relative to here)
    tuned_envs:                # optional: look tuned values up under another env label
      logistic-h1-low: logistic-h1
    env_overrides:             # optional: policy parameters set on one environment
      logistic-h1-low: {LinUCB: {lam: 5.0}}   # per policy label, or `all` (overrides)
    ci_level: 0.95             # level of the confidence intervals in summary.json and figures
    band: t-ci                 # figure bands: t-ci (interval of the mean), std or se
    checkpoints: [1000, 2000]  # rounds at which every declared metric is summarised too
    metrics: [average_regret]  # extra figures (declared metrics, registered figure metrics)
    quick: {seeds: 3, horizon: 300}      # what `--quick` runs
    resources: {cpus: 1, gpus: 0}        # each run's CPUs (threads) and GPU fraction (ray)
    checkpoint_every: 500      # a run's checkpoint every 500 rounds (resumed after a crash)
    layout:                    # multi-panel figures (config.layout; default: a grid)
      - {name: fig1, ncols: 3, panels: [{env: logistic-h1, title: "(a) h1"}]}
    claims:
      - {id: linucb-best, kind: lowest-final-regret, policy: LinUCB, env: logistic-h1}

Every key other than ``name`` and ``label`` in an environment or policy entry is a parameter of
that environment or policy. This module declares the shape and types (pydantic); the rest of
``experiments.config`` reads the file (``yaml_io``, ``load``), bounds its size (``limits``)
and checks it against the registries (``resolve``, ``checks``). Every problem is a
:class:`~banditkit.experiments.config.errors.ConfigError` naming the file, the field and what
was expected.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from banditkit.core import ENVIRONMENTS, POLICIES
from banditkit.experiments.config.claims import Claim
from banditkit.experiments.config.layout import LayoutSpec
from banditkit.experiments.config.names import FileId, OneLine, file_stem

__all__ = [
    "DEFAULT_TUNING_SEED_OFFSET",
    "QUICK_HORIZON",
    "QUICK_SEEDS",
    "EnvSpec",
    "ExperimentConfig",
    "PolicySpec",
    "QuickSpec",
    "ResourcesSpec",
    "TuningSpec",
    "check_seeds",
]

DEFAULT_TUNING_SEED_OFFSET = 10_000
"""Tuning seeds are ``offset + i``; evaluation seeds must stay below the offset."""

QUICK_SEEDS = 3
QUICK_HORIZON = 500
"""What ``--quick`` uses when a config has no ``quick:`` section (at most these).

Three seeds: the fewest on which a paired comparison of two policies has an interval with a
spread estimate worth the name; every shipped paper's ``quick:`` runs at least this many.
Verdicts of a quick run remain *indicative* where that evidence is not decisive
(``summarise.claims.standing``).
"""


def check_seeds(value: Any) -> int | list[int]:
    """``value`` as seeds: a count >= 1 or a list of distinct integers >= 0.

    Raises:
        ValueError: Naming what was expected and the value.
    """
    expected = "a count >= 1 or a non-empty list of distinct integers >= 0"
    if isinstance(value, bool):
        raise ValueError(f"expected {expected}; got {value!r}")
    if isinstance(value, int):
        if value < 1:
            raise ValueError(f"expected {expected}; got {value!r}")
        return value
    if isinstance(value, list) and value:
        if any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in value):
            raise ValueError(f"expected {expected}; got {value!r}")
        if len(set(value)) != len(value):
            raise ValueError(f"expected {expected}; got duplicates in {value!r}")
        return list(value)
    raise ValueError(f"expected {expected}; got {value!r}")


class _Entry(BaseModel):
    """An environment or policy: ``name``, optional ``label``, parameters as extra keys."""

    model_config = ConfigDict(extra="allow")

    name: str = Field(min_length=1, description="Registry name (``banditkit list``).")
    label: OneLine | None = Field(
        default=None, description="Name in tables and figures (one line)."
    )

    @property
    def params(self) -> dict[str, Any]:
        """The parameters: every key other than ``name`` and ``label``."""
        return dict(self.model_extra or {})


class EnvSpec(_Entry):
    """One environment: registry name, optional label, parameters."""

    @field_validator("name")
    @classmethod
    def _canonical(cls, name: str) -> str:
        # "Logistic" -> "logistic": the registered spelling, so run ids do not depend on case
        return ENVIRONMENTS.canonical(name)


class PolicySpec(_Entry):
    """One policy: registry name, optional label, hyper-parameters (no ``seed``)."""

    @field_validator("name")
    @classmethod
    def _canonical(cls, name: str) -> str:
        # "LinUCB" -> "linucb": the registered spelling, so run ids do not depend on case
        return POLICIES.canonical(name)

    @model_validator(mode="after")
    def _no_seed(self) -> PolicySpec:
        if "seed" in self.params:
            raise ValueError(
                "a policy takes no `seed` in a config: each run uses its seed from `seeds`"
            )
        return self


class QuickSpec(BaseModel):
    """What ``--quick`` runs: fewer seeds and a shorter horizon."""

    model_config = ConfigDict(extra="forbid")

    seeds: int | list[int] | None = Field(
        default=None, description="Seeds in quick mode."
    )
    horizon: int | None = Field(
        default=None, gt=0, strict=True, description="Quick horizon."
    )

    @field_validator("seeds", mode="before")
    @classmethod
    def _seeds(cls, value: Any) -> Any:
        return None if value is None else check_seeds(value)


class ResourcesSpec(BaseModel):
    """What each run of the experiment takes: CPUs (its threads) and a fraction of a GPU.

    The Ray backend reserves them for each task; every backend runs a task with ``cpus``
    BLAS and PyTorch threads (more than one can change the last digits of results).
    """

    model_config = ConfigDict(extra="forbid")

    cpus: int = Field(
        default=1, ge=1, le=1024, strict=True, description="CPUs per run."
    )
    gpus: float = Field(
        default=0.0, ge=0, le=64, description="GPUs per run (a fraction shares one)."
    )


class TuningSpec(BaseModel):
    """Seeds and horizon of ``banditkit tune``: seeds ``seed_offset + i`` for i < ``seeds``."""

    model_config = ConfigDict(extra="forbid")

    seeds: int | None = Field(
        default=None,
        ge=1,
        strict=True,
        description="Tuning seeds (default: as many as seeds).",
    )
    seed_offset: int = Field(
        default=DEFAULT_TUNING_SEED_OFFSET,
        ge=1,
        strict=True,
        description="First tuning seed; evaluation seeds must be below it.",
    )
    horizon: int | None = Field(
        default=None,
        gt=0,
        strict=True,
        description="Rounds of each tuning run (default: the config's horizon).",
    )


class ExperimentConfig(BaseModel):
    """A validated experiment config; see the module docstring for the format."""

    model_config = ConfigDict(extra="forbid")

    name: OneLine = Field(description="Experiment name (one line).")
    figure: FileId | None = Field(
        default=None,
        description="Figure or table id for `reproduce --figure` (default: file); "
        "letters, digits, '_', '.', '-' (it names DIR/<figure>/).",
    )
    title: str | None = Field(default=None, description="Title in reports.")
    description: str | None = Field(
        default=None, description="What the experiment shows."
    )
    horizon: int = Field(gt=0, strict=True, description="Rounds per run, >= 1.")
    seeds: int | list[int] = Field(
        description="A count (seeds 0..n-1) or a list of seeds."
    )
    env: EnvSpec | None = Field(default=None, description="A single environment.")
    envs: list[EnvSpec] = Field(default_factory=list, description="The environments.")
    policies: list[PolicySpec] = Field(min_length=1, description="The policies.")
    grid: dict[str, dict[str, list[Any]]] = Field(
        default_factory=dict, description="Tuning grid per policy label or name."
    )
    tuned: str | list[str] | dict[str, dict[str, dict[str, Any]]] | None = Field(
        default=None,
        description="Tuned parameters: file(s) written by `banditkit tune`, or inline "
        "{env label: {policy label: {param: value}}}.",
    )
    tuned_envs: dict[str, str] = Field(
        default_factory=dict,
        description="Env label -> the env label its tuned values are read under "
        "(reuse the values tuned on another environment or config).",
    )
    env_overrides: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="Env label -> {policy label or `all`: {param: value}} set on that "
        "environment (after tuned values; parameter sweeps); {param: value} alone where "
        "one policy has each parameter. See experiments.config.overrides.",
    )
    tuned_source: list[dict[str, Any]] = Field(
        default_factory=list, description="Provenance of the tuned values (filled in)."
    )
    tuning: TuningSpec = Field(default_factory=TuningSpec, description="Tuning seeds.")
    ci_level: float = Field(default=0.95, gt=0, lt=1, description="Confidence level.")
    band: Literal["t-ci", "std", "se"] = Field(
        default="t-ci",
        description="Shaded band of the figures: Student-t interval of the mean at "
        "`ci_level`, one standard deviation, or one standard error.",
    )
    checkpoints: list[int] = Field(
        default_factory=list,
        description="Rounds at which summary.json and the report give every declared "
        "metric, besides the final round (e.g. [1000, 2000, 4000]).",
    )
    metrics: list[str] = Field(
        default_factory=list,
        description="Extra figures: declared metrics or registered figure metrics.",
    )
    quick: QuickSpec | None = Field(default=None, description="Settings of `--quick`.")
    resources: ResourcesSpec | None = Field(
        default=None,
        description="CPUs and GPU fraction of each run (default: per policy family, "
        "compute.resources).",
    )
    checkpoint_every: int | None = Field(
        default=None,
        gt=0,
        strict=True,
        description="Rounds between a run's checkpoints in the result store (a crashed "
        "or lost run resumes from its last one); default: none.",
    )
    claims: list[Claim] = Field(default_factory=list, description="Checks for reports.")
    layout: list[LayoutSpec] | None = Field(
        default=None,
        description="Multi-panel figures (one mapping or a list; default: every env x "
        "plotted metric in a grid; [] for none). See experiments.config.layout.",
    )

    @field_validator("seeds", mode="before")
    @classmethod
    def _seeds(cls, value: Any) -> Any:
        return check_seeds(value)

    @field_validator("layout", mode="before")
    @classmethod
    def _one_layout(cls, value: Any) -> Any:
        return [value] if isinstance(value, Mapping) else value

    @field_validator("checkpoints")
    @classmethod
    def _checkpoints(cls, value: list[int]) -> list[int]:
        if any(isinstance(t, bool) or t < 1 for t in value) or len(set(value)) != len(
            value
        ):
            raise ValueError(f"expected distinct rounds >= 1; got {value!r}")
        return sorted(value)

    @field_validator("grid")
    @classmethod
    def _grid(
        cls, value: dict[str, dict[str, list[Any]]]
    ) -> dict[str, dict[str, list[Any]]]:
        for key, params in value.items():
            for param, values in params.items():
                if not values:
                    raise ValueError(
                        f"grid {key}.{param}: expected a non-empty list of values"
                    )
        return value

    @model_validator(mode="after")
    def _one_env_field(self) -> ExperimentConfig:
        if self.env is not None and self.envs:
            raise ValueError(
                "give either `env:` (one mapping) or `envs:` (a list), not both"
            )
        if self.env is not None:
            self.envs = [self.env]
            self.env = None
        if not self.envs:
            raise ValueError(
                "missing environments: expected `envs:` (a non-empty list) or `env:` (a mapping)"
            )
        return self

    @property
    def figure_id(self) -> str:
        """``figure``, else the name made a file name (``config.names.file_stem``)."""
        return self.figure or file_stem(self.name)

    @property
    def seed_list(self) -> list[int]:
        """The evaluation seeds as a list."""
        return (
            list(range(self.seeds)) if isinstance(self.seeds, int) else list(self.seeds)
        )

    def to_dict(self) -> dict[str, Any]:
        """A plain, YAML-able mapping (``env`` folded into ``envs``)."""
        data = self.model_dump(mode="json", exclude={"env"})
        for key in ("resources", "checkpoint_every"):  # how runs are computed, if set
            if data[key] is None:
                del data[key]
        return data
