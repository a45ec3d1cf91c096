"""The experiment of an output directory, written before its runs and read back without classes.

Before any run is computed, the runner writes the resolved experiment next to the runs:

    DIR/config.yaml   the resolved config (every default explicit)
    DIR/cells.json    what resolution learned from the registries: every environment with
                      its resolved parameters, family and declared records, every policy
                      with its parameters and family, and every (environment, policy) cell
                      with the policy's effective parameters (tuned values and
                      ``env_overrides`` applied)

:func:`stored_experiment` reads both back into a
:class:`~banditkit.experiments.config.resolved.ResolvedExperiment` without building any
environment or policy: reading results (``load_runs``, ``banditkit plot``, summaries,
figures, reports) needs neither their classes (a plugin policy need not be imported) nor the
datasets the runs were computed on. A directory written before ``cells.json`` existed is read
as before: the environments from ``config.yaml`` and the records ``summary.json`` declares,
the policies resolved through the registries (or, without a usable ``summary.json``, the
whole config resolved, which builds the environments).

One directory holds one experiment: :func:`write_experiment` refuses to write into a
directory whose ``config.yaml`` is another experiment's (another ``name``) or a paper
reproduction's (:func:`check_owner`), since the second would replace the first's
``config.yaml`` and ``summary.json``. The same experiment may change (more seeds, another
horizon, a policy added): its finished runs are found by their ids and kept.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from banditkit.core.safe_yaml import load_yaml
from banditkit.experiments.config.errors import ConfigError
from banditkit.experiments.config.load import load_config
from banditkit.experiments.config.resolve import resolve
from banditkit.experiments.config.resolved import (
    Cell,
    EnvEntry,
    PolicyEntry,
    ResolvedExperiment,
)
from banditkit.experiments.config.schema import ExperimentConfig
from banditkit.experiments.store.store import (
    CorruptFileError,
    OutputDirError,
    RunStore,
    read_json_object,
    read_stored_file,
)
from banditkit.experiments.store.tables import record_fields, stored_record

__all__ = [
    "CELLS_FILE",
    "CELLS_FORMAT",
    "check_owner",
    "stored_experiment",
    "write_experiment",
]

CELLS_FILE = "cells.json"
"""The file of an output directory holding its environments, policies and cells."""

CELLS_FORMAT = 1
"""Version of :data:`CELLS_FILE`'s layout."""


def check_owner(store: RunStore, owner: tuple[str, str | None]) -> None:
    """Refuse a directory whose ``config.yaml`` belongs to another experiment or paper.

    Args:
        store: The directory.
        owner: What is about to be written: ``("experiment", name)``, or ``("paper",
            None)`` for a reproduction (its figures go to folders of their own, each
            checked as an experiment).

    Raises:
        OutputDirError: Naming what the directory holds and the fix (another ``--out``).
    """
    path = store.root / "config.yaml"
    try:
        doc = load_yaml(read_stored_file(path).decode("utf-8"))
    except FileNotFoundError:
        return
    except (CorruptFileError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise OutputDirError(
            f"{str(path)!r} cannot be read ({exc}), so {str(store.root)!r} may hold "
            "another experiment; use another --out, or remove that file"
        ) from None
    held = _owner_of(doc)
    if held is not None and held[0] == owner[0] and owner[1] in (None, held[1]):
        return
    what = f"{held[0]} {held[1]!r}" if held else "something that is no experiment"
    mine = f"{owner[0]} {owner[1]!r}" if owner[1] is not None else f"a {owner[0]}"
    raise OutputDirError(
        f"{str(store.root)!r} holds the results of {what} ({path}), not of {mine}: "
        f"writing here would replace them. Use another --out (or remove "
        f"{str(store.root)!r} to start over)."
    )


def _owner_of(doc: Any) -> tuple[str, str] | None:
    """What a stored ``config.yaml`` is of: an experiment's name or a paper's."""
    if not isinstance(doc, Mapping):
        return None
    if isinstance(doc.get("figures"), Mapping):
        return ("paper", str(doc.get("paper")))
    name = doc.get("name")
    return ("experiment", name) if isinstance(name, str) else None


def write_experiment(store: RunStore, resolved: ResolvedExperiment) -> None:
    """Write ``config.yaml`` and ``cells.json`` of ``resolved`` into ``store``.

    Raises:
        OutputDirError: If the directory holds another experiment (:func:`check_owner`).
    """
    check_owner(store, ("experiment", resolved.config.name))
    store.write_text("config.yaml", resolved.to_yaml())
    store.write_json(
        CELLS_FILE,
        {
            "format": CELLS_FORMAT,
            "envs": [
                {
                    "name": e.name,
                    "label": e.label,
                    "params": e.params,
                    "family": e.family,
                    "records": {r.name: record_fields(r) for r in e.records},
                }
                for e in resolved.envs
            ],
            "policies": [
                {
                    "name": p.name,
                    "label": p.label,
                    "params": p.params,
                    "family": p.family,
                }
                for p in resolved.policies
            ],
            "cells": [
                {"env": c.env.label, "policy": c.policy.label, "params": c.params}
                for c in resolved.cells
            ],
        },
    )


def stored_experiment(directory: str | os.PathLike[str]) -> ResolvedExperiment:
    """The resolved experiment of an output directory, from its stored files.

    Reads ``config.yaml`` and ``cells.json``: no environment or policy is built, no dataset
    read (module docstring; older directories are read as they were written).

    Raises:
        ConfigError: If ``config.yaml`` is missing or invalid.
    """
    out = Path(directory)
    path = out / "config.yaml"
    if not path.is_file():
        raise ConfigError(
            f"not found; is {str(out)!r} an output directory of `banditkit run`?",
            source=str(path),
        )
    cfg = load_config(path, source=str(path))
    found = _from_cells(cfg, out, str(path))
    if found is not None:
        return found
    return resolve(cfg, base_dir=out, source=str(path), envs=_stored_envs(out, cfg))


def _from_cells(
    cfg: ExperimentConfig, out: Path, source: str
) -> ResolvedExperiment | None:
    """The experiment of ``cells.json`` with ``cfg``; None when the file does not fit it."""
    try:
        doc = read_json_object(out / CELLS_FILE)
        if doc.get("format") != CELLS_FORMAT:
            return None
        envs = {e["label"]: _env(e) for e in doc["envs"]}
        policies = {p["label"]: _policy(p) for p in doc["policies"]}
        cells = [
            Cell(envs[c["env"]], policies[c["policy"]], dict(c["params"]))
            for c in doc["cells"]
        ]
    except (FileNotFoundError, CorruptFileError, KeyError, TypeError, ValueError):
        return None
    if list(envs) != [e.label for e in cfg.envs] or list(policies) != [
        p.label for p in cfg.policies
    ]:
        return None  # not written with this config.yaml
    return ResolvedExperiment(
        cfg, list(envs.values()), list(policies.values()), cells, source
    )


def _env(entry: Mapping[str, Any]) -> EnvEntry:
    records = tuple(
        stored_record(name, fields) for name, fields in entry["records"].items()
    )
    return EnvEntry(
        entry["name"], entry["label"], dict(entry["params"]), entry["family"], records
    )


def _policy(entry: Mapping[str, Any]) -> PolicyEntry:
    return PolicyEntry(
        entry["name"], entry["label"], dict(entry["params"]), entry["family"]
    )


def _stored_envs(out: Path, cfg: ExperimentConfig) -> list[EnvEntry] | None:
    """The environments as ``out/summary.json`` declares them (None when it cannot).

    For a directory written before ``cells.json``: the records of each environment label
    as ``summary.json`` keeps them (``summarise.summary``).
    """
    try:
        summary = read_json_object(out / "summary.json")
    except (FileNotFoundError, CorruptFileError):
        return None
    declared = summary.get("envs")
    if not isinstance(declared, dict):
        return None
    higher = {
        metric: bool(stats.get("higher_is_better"))
        for row in summary.get("results") or []
        if isinstance(row, dict)
        for metric, stats in (row.get("metrics") or {}).items()
        if isinstance(stats, dict)
    }
    envs = []
    for spec in cfg.envs:
        label = spec.label or ""  # a resolved config labels every environment
        entry = declared.get(label)
        if not isinstance(entry, dict) or not isinstance(entry.get("records"), dict):
            return None
        records = tuple(
            stored_record(name, fields, higher)
            for name, fields in entry["records"].items()
        )
        envs.append(
            EnvEntry(spec.name, label, spec.params, str(entry["family"]), records)
        )
    return envs
