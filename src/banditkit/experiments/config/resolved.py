"""The resolved experiment: its environments, policies, cells and runs, and run ids.

``config.resolve`` builds a :class:`ResolvedExperiment` from a config, the config stage's
result; every later stage (plan, compute, store, summarise, report) reads it.

A run is one (environment, policy with its effective parameters, seed, horizon). Its id is
the first 16 hex digits of the SHA-256 of the canonical JSON of exactly these values plus
``RUN_ID_FORMAT``::

    {"format": 2, "env": {"name", "params"}, "policy": {"name", "params"}, "seed", "horizon"}

Labels, the experiment name and the banditkit version are not part of the id: they do not
change the numbers a run produces (the version is recorded in each run's metadata). Two
labels with identical settings therefore share their runs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import yaml

from banditkit.core.records import Record, metric_names
from banditkit.experiments.config.schema import ExperimentConfig

__all__ = [
    "RUN_ID_FORMAT",
    "Cell",
    "Entry",
    "EnvEntry",
    "PolicyEntry",
    "ResolvedExperiment",
    "RunSpec",
    "plain",
    "run_id",
]

RUN_ID_FORMAT = 2
"""Format 2 stores every declared record (the action and its propensity included). Bumped whenever the meaning of a stored run changes; old runs are then recomputed."""


def plain(value: Any) -> Any:
    """Convert a parameter value to plain JSON/YAML data (lists, dicts, scalars).

    Example:
        >>> plain({"a": (np.float64(1.5), np.int64(2))})
        {'a': [1.5, 2]}
    """
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if type(value).__name__ == "DataFrame":
        raise TypeError(
            "a pandas DataFrame cannot be stored in a config (run ids and config.yaml need "
            "plain values): save it as a .csv or .parquet file and give its path as data=, "
            "or use the DataFrame with banditkit.simulate."
        )
    raise TypeError(
        f"parameter value {value!r} cannot be stored in a config; use numbers, strings, "
        "lists or mappings (callables are for the Python API, not configs)."
    )


def _canonical(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=False)


def run_id(
    env_name: str,
    env_params: Mapping[str, Any],
    policy_name: str,
    policy_params: Mapping[str, Any],
    seed: int,
    horizon: int,
) -> str:
    """The id of a run: a hash of everything that determines its numbers.

    Example:
        >>> a = run_id("linear", {"d": 3}, "random", {}, 0, 10)
        >>> a == run_id("linear", {"d": 3}, "random", {}, 0, 10), len(a)
        (True, 16)
        >>> a == run_id("linear", {"d": 3}, "random", {}, 1, 10)
        False
    """
    identity = {
        "format": RUN_ID_FORMAT,
        "env": {"name": env_name, "params": plain(env_params)},
        "policy": {"name": policy_name, "params": plain(policy_params)},
        "seed": int(seed),
        "horizon": int(horizon),
    }
    return hashlib.sha256(_canonical(identity).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class RunSpec:
    """Everything a worker needs to compute one run (picklable, no live objects)."""

    env_name: str
    env_params: dict[str, Any]
    policy_name: str
    policy_params: dict[str, Any]
    seed: int
    horizon: int
    env_label: str = field(default="", compare=False)
    policy_label: str = field(default="", compare=False)

    @property
    def id(self) -> str:
        """See :func:`run_id`."""
        return run_id(
            self.env_name,
            self.env_params,
            self.policy_name,
            self.policy_params,
            self.seed,
            self.horizon,
        )

    @property
    def kind(self) -> str:
        """Everything that defines the run but its seed (runs of one kind cost alike).

        Example:
            >>> a = RunSpec("linear", {"d": 3}, "random", {}, 0, 10)
            >>> a.kind == RunSpec("linear", {"d": 3}, "random", {}, 1, 10).kind
            True
        """
        return json.dumps(
            [
                self.env_name,
                self.env_params,
                self.policy_name,
                self.policy_params,
                self.horizon,
            ],
            sort_keys=True,
            default=str,
        )

    def describe(self) -> str:
        """A short human-readable name."""
        env = self.env_label or self.env_name
        return f"{env} / {self.policy_label or self.policy_name} / seed {self.seed}"


@dataclass(frozen=True)
class Entry:
    """A resolved environment or policy: registry name, label, full parameters, family."""

    name: str
    label: str
    params: dict[str, Any]
    family: str


@dataclass(frozen=True)
class PolicyEntry(Entry):
    """A resolved policy (base parameters, before per-environment tuned values)."""


@dataclass(frozen=True)
class EnvEntry(Entry):
    """A resolved environment, with the records its runs store (its class's declaration)."""

    records: tuple[Record, ...] = field(default=(), compare=False)

    @property
    def metrics(self) -> dict[str, Record]:
        """Metric name -> record, for every declared metric (``core.records``)."""
        return metric_names(self.records)


@dataclass(frozen=True)
class Cell:
    """One (environment, policy) pair with the policy's effective parameters."""

    env: EnvEntry
    policy: PolicyEntry
    params: dict[str, Any]

    def runs(self, seeds: Sequence[int], horizon: int) -> list[RunSpec]:
        """The runs of this cell, one per seed."""
        return [
            RunSpec(
                env_name=self.env.name,
                env_params=self.env.params,
                policy_name=self.policy.name,
                policy_params=self.params,
                seed=s,
                horizon=horizon,
                env_label=self.env.label,
                policy_label=self.policy.label,
            )
            for s in seeds
        ]


@dataclass
class ResolvedExperiment:
    """A config with every default explicit, plus its environments, policies and runs."""

    config: ExperimentConfig
    envs: list[EnvEntry]
    policies: list[PolicyEntry]
    cells: list[Cell]
    source: str = "<config>"

    @property
    def seeds(self) -> list[int]:
        """Evaluation seeds."""
        return self.config.seed_list

    @property
    def horizon(self) -> int:
        """Rounds per run."""
        return self.config.horizon

    def runs(self) -> list[RunSpec]:
        """Every run: environments x policies x seeds, in that order."""
        return [r for c in self.cells for r in c.runs(self.seeds, self.horizon)]

    def to_yaml(self) -> str:
        """The resolved config as YAML (what ``DIR/config.yaml`` holds)."""
        header = (
            "# Resolved by banditkit: every default is explicit. Runs are matched on their id,\n"
            "# a hash of (env, policy, parameters, seed, horizon); see docs/experiments.md.\n"
        )
        return header + yaml.safe_dump(
            self.config.to_dict(), sort_keys=False, width=100
        )
