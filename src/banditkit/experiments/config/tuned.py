"""Tuned hyper-parameters read back from ``tuned:`` (files written by ``banditkit tune``).

A config's ``tuned:`` names one or more ``tuned.yaml`` files (or holds an inline mapping)
of the form {environment label: {policy label: {parameter: value}}}; resolution applies
the values to the matching cells. A source that matches no (environment, policy) pair of
the config is an error, so a stale or mistyped file never goes unnoticed.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from banditkit.experiments.config.errors import ConfigError
from banditkit.experiments.config.yaml_io import read_yaml

__all__ = ["TunedKeys", "check_tuned_used", "load_tuned"]


TunedKeys = list[tuple[str, set[tuple[str, str]]]]
"""Per ``tuned:`` source (a file, or the inline mapping): its (env label, policy label) pairs."""


def load_tuned(
    tuned: Any, base_dir: Path | None, source: str
) -> tuple[dict[str, dict[str, dict[str, Any]]], list[dict[str, Any]], TunedKeys]:
    """Read ``tuned:`` (file path(s) or an inline mapping) into one mapping + provenance."""
    if tuned is None:
        return {}, [], []
    if isinstance(tuned, Mapping):
        inline = {e: {p: dict(v) for p, v in ps.items()} for e, ps in tuned.items()}
        pairs = {(e, p) for e, ps in inline.items() for p in ps}
        return inline, [], [("the inline `tuned:` mapping", pairs)]
    paths = [tuned] if isinstance(tuned, str) else list(tuned)
    merged: dict[str, dict[str, dict[str, Any]]] = {}
    provenance: list[dict[str, Any]] = []
    keys: TunedKeys = []
    for raw in paths:
        path = Path(raw)
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        if not path.is_file():
            raise ConfigError(
                f"tuned-parameter file {str(path)!r} not found (write it with "
                "`banditkit tune CONFIG --out DIR`, then point `tuned:` at DIR/tuned.yaml)",
                source=source,
                field="tuned",
            )
        data = read_yaml(path)
        body = data.get("tuned") if isinstance(data, Mapping) else None
        if not isinstance(body, Mapping) or not all(
            isinstance(v, Mapping) and all(isinstance(p, Mapping) for p in v.values())
            for v in body.values()
        ):
            raise ConfigError(
                "expected a `tuned:` mapping {env label: {policy label: {param: value}}}, "
                "as written by `banditkit tune`",
                source=str(path),
                field="tuned",
            )
        pairs = set()
        for env_label, per_policy in body.items():
            for label, params in per_policy.items():
                merged.setdefault(str(env_label), {})[str(label)] = dict(params)
                pairs.add((str(env_label), str(label)))
        provenance.append({"file": str(raw), **dict(data.get("source") or {})})
        keys.append((f"tuned-parameter file {str(path)!r}", pairs))
    return merged, provenance, keys


def check_tuned_used(
    keys: TunedKeys, wanted: set[tuple[str, str]], source: str
) -> None:
    """Each ``tuned:`` source must give values for at least one (environment, policy)."""

    def show(pairs: set[tuple[str, str]]) -> str:
        listed = [f"{e} / {p}" for e, p in sorted(pairs)]
        more = f" and {len(listed) - 6} more" if len(listed) > 6 else ""
        return ", ".join(listed[:6]) + more

    for where, pairs in keys:
        if pairs and not pairs & wanted:
            raise ConfigError(
                f"{where} matches no policy of this config: its values are "
                f"for {show(pairs)}, but this config looks up {show(wanted)} (env label / "
                "policy label; map environment labels with `tuned_envs:`)",
                source=source,
                field="tuned",
            )
