"""``report.md``: figures, a results table and the claims table, from stored outputs only.

A report is rebuilt from what each experiment directory holds (``config.yaml``,
``summary.json``, ``figures/``), so it can be regenerated (``banditkit plot DIR``) without
recomputing anything. Every claim is listed with PASS or FAIL and its numbers.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

__all__ = [
    "FigureSection",
    "claims_table",
    "pivot_table",
    "render_report",
    "results_table",
]


def _num(value: Any, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    return f"{float(value):.{digits}g}"


def _params(params: Mapping[str, Any]) -> str:
    if not params:
        return "-"
    return ", ".join(f"{k}={v}" for k, v in params.items())


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def results_table(summary: Mapping[str, Any]) -> str:
    """The results of a ``summary.json`` as a Markdown table.

    Example:
        >>> print(results_table({"ci_level": 0.9, "results": [{"env": "e", "label": "a",
        ...     "policy": "a", "params": {}, "n_seeds": 2, "final_regret_mean": 1.0,
        ...     "final_regret_std": 0.5, "final_regret_ci": [0.5, 1.5], "seconds_mean": 0.1,
        ...     "n_updates_mean": 3.0}]}).splitlines()[2])
        | e | a | - | 2 | 1 ± 0.5 | [0.5, 1.5] | 0.1 | 3 |
    """
    level = summary.get("ci_level", 0.95)
    lines = [
        f"| environment | policy | parameters | seeds | final regret (mean ± std) "
        f"| {level:.0%} CI | seconds | updates |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in summary.get("results", []):
        lo, hi = row.get("final_regret_ci", [None, None])
        failed = row.get("n_failed", 0)
        seeds = f"{row['n_seeds']}" + (f" ({failed} failed)" if failed else "")
        lines.append(
            f"| {_cell(row['env'])} | {_cell(row.get('label', row['policy']))} "
            f"| {_cell(_params(row.get('params', {})))} | {seeds} "
            f"| {_num(row['final_regret_mean'])} ± {_num(row['final_regret_std'], 3)} "
            f"| [{_num(lo)}, {_num(hi)}] | {_num(row['seconds_mean'], 3)} "
            f"| {_num(row['n_updates_mean'])} |"
        )
    return "\n".join(lines)


def pivot_table(
    summary: Mapping[str, Any],
    key: str = "ctr_mean",
    *,
    row_notes: Mapping[str, Mapping[str, Any]] | None = None,
) -> str:
    """One value per environment (rows) and policy (columns), like the paper's Table 2.

    Args:
        summary: A ``summary.json`` mapping.
        key: The result field shown (``ctr_mean``, ``final_reward_mean``, ...).
        row_notes: Env label -> parameters written after the label (``env_overrides``).

    Example:
        >>> rows = [{"env": "e", "label": "a", "ctr_mean": 0.0025},
        ...         {"env": "e", "label": "b", "ctr_mean": 0.005}]
        >>> print(pivot_table({"results": rows}, row_notes={"e": {"width": 50}}))
        | environment | a | b |
        |---|---|---|
        | e (width=50) | 0.0025 | 0.005 |
    """
    results = summary.get("results", [])
    envs = list(dict.fromkeys(r["env"] for r in results))
    labels = list(dict.fromkeys(r.get("label") or r["policy"] for r in results))
    value = {(r["env"], r.get("label") or r["policy"]): r.get(key) for r in results}
    lines = [
        "| environment | " + " | ".join(_cell(lab) for lab in labels) + " |",
        "|---|" + "---|" * len(labels),
    ]
    for env in envs:
        note = (row_notes or {}).get(env)
        name = f"{env} ({_params(note)})" if note else env
        cells = " | ".join(_num(value.get((env, lab))) for lab in labels)
        lines.append(f"| {_cell(name)} | {cells} |")
    return "\n".join(lines)


def claims_table(claims: Sequence[Mapping[str, Any]]) -> str:
    """Claims as a Markdown table: id, statement, PASS/FAIL, evidence."""
    lines = ["| claim | statement | result | evidence |", "|---|---|---|---|"]
    for claim in claims:
        verdict = "**PASS**" if claim["passed"] else "**FAIL**"
        lines.append(
            f"| {_cell(claim['id'])} | {_cell(claim['text'])} | {verdict} "
            f"| {_cell(claim['evidence'])} |"
        )
    return "\n".join(lines)


class FigureSection:
    """One experiment of a report: its id, resolved config, summary and figure files."""

    def __init__(
        self,
        figure_id: str,
        config: Mapping[str, Any],
        summary: Mapping[str, Any],
        figures: Sequence[Path],
    ) -> None:
        self.figure_id = figure_id
        self.config = config
        self.summary = summary
        self.figures = list(figures)


def _tuned_note(config: Mapping[str, Any]) -> str:
    tuned = config.get("tuned") or {}
    if not tuned:
        if config.get("grid") or config.get("tuned_envs"):
            return (
                "**Not tuned**: the config has a tuning `grid:` or `tuned_envs:` but no "
                "`tuned:` values, so "
                "every policy runs with the parameters written in the config."
            )
        return ""
    parts = []
    for env, per_policy in tuned.items():
        for label, params in per_policy.items():
            parts.append(f"{label} on {env}: {_params(params)}")
    sources = config.get("tuned_source") or []
    how = []
    for src in sources:
        bits = [f"`{src.get('file', '?')}`"]
        if "tuning_seeds" in src:
            seeds = src["tuning_seeds"]
            bits.append(f"seeds {seeds[0]}..{seeds[-1]}" if seeds else "")
        if "horizon" in src:
            bits.append(f"horizon {src['horizon']}")
        if "criterion" in src:
            bits.append(str(src["criterion"]))
        how.append(", ".join(b for b in bits if b))
    text = (
        "Tuned parameters (chosen by `banditkit tune` on seeds disjoint from the "
        "evaluation seeds): " + "; ".join(parts) + "."
    )
    if how:
        text += " Source: " + "; ".join(how) + "."
    return text


def render_report(
    title: str,
    sections: Sequence[FigureSection],
    root: Path,
    *,
    command: str,
    quick: bool,
    versions: Mapping[str, Any],
    notes: str | None = None,
) -> str:
    """The Markdown text of ``report.md`` (figure paths relative to ``root``)."""
    claims = [c for s in sections for c in s.summary.get("claims", [])]
    passed = sum(1 for c in claims if c["passed"])
    date = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    version_text = ", ".join(f"{k} {v}" for k, v in versions.items() if v)
    out = [
        f"# {title}",
        "",
        f"Produced by `{command}` on {date} ({version_text}).",
        "",
        "Mode: **quick** (fewer seeds and shorter horizons than the paper; claims may not "
        "reach their full-scale verdicts)."
        if quick
        else "Mode: **full**.",
        "",
        f"Claims: **{passed} of {len(claims)} PASS**." if claims else "No claims.",
        "",
    ]
    if notes:
        out += [notes.strip(), ""]
    for section in sections:
        cfg = section.config
        heading = cfg.get("title") or cfg.get("name") or section.figure_id
        seeds = section.summary.get("seeds", cfg.get("seeds"))
        n_seeds = len(seeds) if isinstance(seeds, list) else seeds
        out += [f"## {section.figure_id}: {heading}", ""]
        if cfg.get("description"):
            out += [str(cfg["description"]).strip(), ""]
        out += [f"Horizon {cfg.get('horizon')}, {n_seeds} seeds.", ""]
        tuned = _tuned_note(cfg)
        if tuned:
            out += [tuned, ""]
        for fig in section.figures:
            if fig.suffix == ".png":
                rel = Path(os.path.relpath(fig, root)).as_posix()
                out += [f"![{fig.stem}]({rel})", ""]
        out += ["### Results", "", results_table(section.summary), ""]
        envs = cfg.get("envs") or []
        if any(str(e.get("name", "")).endswith("-replay") for e in envs):
            out += [
                "### Final CTR (clicks / accepted events)",
                "",
                pivot_table(
                    section.summary, "ctr_mean", row_notes=cfg.get("env_overrides")
                ),
                "",
            ]
        if section.summary.get("claims"):
            out += ["### Claims", "", claims_table(section.summary["claims"]), ""]
    return "\n".join(out).rstrip() + "\n"
