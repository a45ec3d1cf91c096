"""``report.md``: figures, a results table and the claims table, from stored outputs only.

A report is rebuilt from what each experiment directory holds (``config.yaml``,
``summary.json``, ``figures/``), so it can be regenerated (``banditkit plot DIR``) without
recomputing anything. Every claim is listed with PASS or FAIL and its numbers, and a claim
comparing policies with its paired evidence (``summarise.claims.evidence``).

Besides the results table, a section has one table per metric its environments plot other
than the regret (``core.records``: the click-through rate ``average_reward`` of a replay,
R(t)/t of a duel), and, when the config has ``checkpoints:``, one table per plotted metric
with its mean +- std at each checkpoint (the dueling papers' R(T)/T tables). Intervals from
fewer than 5 seeds are flagged. What the command line prints instead (the same numbers cut to
100 columns) is ``report.console``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from banditkit.experiments.report.console import non_default, number, param_text
from banditkit.experiments.summarise.claims.evidence import paired_overview
from banditkit.experiments.summarise.claims.standing import (
    INDICATIVE,
    tally,
    verdict_word,
)
from banditkit.experiments.summarise.stats import FEW_SEEDS

__all__ = [
    "FigureSection",
    "checkpoint_table",
    "claims_table",
    "override_notes",
    "pivot_table",
    "render_report",
    "results_table",
]


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _param_cell(row: Mapping[str, Any]) -> str:
    """The non-default parameters of a result row ("defaults" when there are none)."""
    params = row.get("params", {})
    changed = non_default(row["policy"], params)
    if not changed:
        return "defaults" if params else "-"
    return param_text(changed)


def results_table(summary: Mapping[str, Any]) -> str:
    """The results of a ``summary.json`` as a Markdown table.

    The parameters column shows the differences from the policy's defaults ("defaults" when
    none, "-" for a policy not registered here); summary.json has every parameter.

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
            f"| {_cell(_param_cell(row))} | {seeds} "
            f"| {number(row['final_regret_mean'])} ± {number(row['final_regret_std'], 3)} "
            f"| [{number(lo)}, {number(hi)}] | {number(row['seconds_mean'], 3)} "
            f"| {number(row['n_updates_mean'])} |"
        )
    if any(0 < row.get("n_seeds", 0) < FEW_SEEDS for row in summary.get("results", [])):
        lines += [
            "",
            f"(the {level:.0%} CI of fewer than {FEW_SEEDS} seeds is a rough interval)",
        ]
    return "\n".join(lines)


def _metric_mean(row: Mapping[str, Any], metric: str, at: str | None) -> Any:
    entry = (row.get("metrics") or {}).get(metric) or {}
    stats = (
        entry.get("final") if at is None else (entry.get("checkpoints") or {}).get(at)
    )
    return None if not stats else stats.get("mean")


def checkpoint_table(summary: Mapping[str, Any], metric: str) -> str:
    """A declared metric at every checkpoint and the final round: mean +- std over seeds.

    Example:
        >>> stats = {"mean": 0.5, "std": 0.1, "n": 2}
        >>> row = {"env": "e", "label": "a", "metrics": {"average_regret": {
        ...     "final": stats, "checkpoints": {"10": stats}}}}
        >>> print(checkpoint_table({"checkpoints": [10], "horizon": 20, "results": [row]},
        ...                        "average_regret").splitlines()[2])
        | e | a | 0.5 ± 0.1 | 0.5 ± 0.1 |
    """
    points = [str(t) for t in summary.get("checkpoints", [])]
    lines = [
        "| environment | policy | "
        + " | ".join(f"t = {t}" for t in points)
        + f" | final (T = {summary.get('horizon')}) |",
        "|---|---|" + "---|" * (len(points) + 1),
    ]
    few = False
    for row in summary.get("results", []):
        entry = (row.get("metrics") or {}).get(metric)
        if entry is None:
            continue
        cells = []
        for stats in [*(entry["checkpoints"].get(t) for t in points), entry["final"]]:
            if not stats or not stats.get("n"):
                cells.append("n/a")
                continue
            few = few or stats["n"] < FEW_SEEDS
            cells.append(f"{number(stats['mean'])} ± {number(stats['std'], 3)}")
        label = row.get("label") or row["policy"]
        lines.append(f"| {_cell(row['env'])} | {_cell(label)} | {' | '.join(cells)} |")
    if few:
        lines += ["", f"(mean ± std over fewer than {FEW_SEEDS} seeds)"]
    return "\n".join(lines)


def pivot_table(
    summary: Mapping[str, Any],
    key: str = "ctr_mean",
    *,
    row_notes: Mapping[str, Mapping[str, Any]] | None = None,
    metric: str | None = None,
) -> str:
    """One value per environment (rows) and policy (columns), like the paper's Table 2.

    Args:
        summary: A ``summary.json`` mapping.
        key: The result field shown (``ctr_mean``, ``final_reward_mean``, ...).
        row_notes: Env label -> parameters written after the label (``env_overrides``).
        metric: A declared metric whose final mean is shown instead of ``key``.

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
    value = {
        (r["env"], r.get("label") or r["policy"]): (
            r.get(key) if metric is None else _metric_mean(r, metric, None)
        )
        for r in results
    }
    lines = [
        "| environment | " + " | ".join(_cell(lab) for lab in labels) + " |",
        "|---|" + "---|" * len(labels),
    ]
    for env in envs:
        note = (row_notes or {}).get(env)
        name = f"{env} ({param_text(note)})" if note else env
        cells = " | ".join(number(value.get((env, lab))) for lab in labels)
        lines.append(f"| {_cell(name)} | {cells} |")
    return "\n".join(lines)


def claims_table(claims: Sequence[Mapping[str, Any]]) -> str:
    """Claims as a Markdown table: id, statement, verdict, evidence, paired evidence.

    The statement is followed by the paper's sentence it encodes and where the paper says
    it (``quote``, ``where``), and by why the claim is the project's own check when it goes
    beyond that sentence (``stricter``). The verdict is PASS, FAIL or *not decided*, with
    "(indicative)" when it rests on too little (``summarise.claims.standing``). The last
    column sums up the qualifiers of the claim's paired comparisons
    (``claims.evidence.paired_overview``: ``decisive``, ``within noise``, per environment
    when they differ; ``-`` for a claim that compares no policies); their numbers end the
    evidence of each environment.

    Example:
        >>> print(claims_table([{"id": "c", "text": "A beats B", "passed": True,
        ...     "evidence": "e: ... -> PASS", "paired": [{"env": "e", "policy": "A",
        ...     "qualifier": "decisive"}]}]).splitlines()[2])
        | c | A beats B | **PASS** | e: ... -> PASS | decisive |
    """
    lines = [
        "| claim | statement | result | evidence | paired |",
        "|---|---|---|---|---|",
    ]
    for claim in claims:
        word = verdict_word(claim.get("passed"))
        verdict = f"*{word}*" if claim.get("passed") is None else f"**{word}**"
        if claim.get("indicative"):
            verdict += " (indicative)"
        lines.append(
            f"| {_cell(claim['id'])} | {_statement(claim)} | {verdict} "
            f"| {_cell(claim['evidence'])} "
            f"| {_cell(paired_overview(claim.get('paired') or []))} |"
        )
    return "\n".join(lines)


def _statement(claim: Mapping[str, Any]) -> str:
    """A claim's statement cell: its text, the paper's sentence, the stricter check's why.

    Example:
        >>> _statement({"text": "A < B", "quote": "A beats B.", "where": "Fig. 2"})
        'A < B<br>Paper (Fig. 2): “A beats B.”'
    """
    parts = [_cell(claim["text"])]
    if claim.get("quote"):
        parts.append(
            f"Paper ({_cell(claim.get('where', ''))}): “{_cell(claim['quote'])}”"
        )
    if claim.get("stricter"):
        parts.append(f"*The project's own check:* {_cell(claim['stricter'])}")
    return "<br>".join(parts)


class FigureSection:
    """One experiment of a report: its id, resolved config, summary and figure files.

    ``figures`` are the per-environment figures (listed as links), ``layouts`` the
    multi-panel figures of the config's ``layout:`` (shown).
    """

    def __init__(
        self,
        figure_id: str,
        config: Mapping[str, Any],
        summary: Mapping[str, Any],
        figures: Sequence[Path],
        layouts: Sequence[Path] = (),
    ) -> None:
        self.figure_id = figure_id
        self.config = config
        self.summary = summary
        self.figures = list(figures)
        self.layouts = list(layouts)


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
            parts.append(f"{label} on {env}: {param_text(params)}")
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


def _plotted(summary: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(metric, description) of every metric some environment plots, in declared order."""
    seen: dict[str, str] = {}
    for env in (summary.get("envs") or {}).values():
        for name, record in (env.get("records") or {}).items():
            for metric in record.get("plot", []):
                what = record.get("description", "")
                if metric != name:
                    what = f"{name} summed to round t, divided by t; {name}: {what}"
                elif record.get("aggregation") == "sum":
                    what = f"summed to round t; {name}: {what}"
                seen.setdefault(metric, what)
    return list(seen.items())


def override_notes(cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Per environment label, the parameters its ``env_overrides`` set, for a row's label.

    A parameter set to one value on every policy it is set on is shown once (``width=50``);
    one set to different values is shown per policy (``width (ONL-MNL)=15``). A stored
    config written before overrides named their policies gives the parameters directly.

    Example:
        >>> cfg = {"policies": [{"label": "A"}, {"label": "B"}],
        ...        "env_overrides": {"e": {"A": {"w": 5, "t": 1}, "B": {"w": 5}}}}
        >>> override_notes(cfg)
        {'e': {'w': 5, 't': 1}}
    """
    labels = {p.get("label") for p in cfg.get("policies") or []}
    notes: dict[str, dict[str, Any]] = {}
    for env, mapping in (cfg.get("env_overrides") or {}).items():
        if not all(k in labels and isinstance(v, Mapping) for k, v in mapping.items()):
            notes[env] = dict(mapping)
            continue
        values: dict[str, dict[str, Any]] = {}
        for label, params in mapping.items():
            for name, value in params.items():
                values.setdefault(name, {})[label] = value
        note: dict[str, Any] = {}
        for name, per_label in values.items():
            if len({repr(v) for v in per_label.values()}) == 1:
                note[name] = next(iter(per_label.values()))
            else:
                note.update({f"{name} ({lab})": v for lab, v in per_label.items()})
        notes[env] = note
    return notes


def _metric_tables(summary: Mapping[str, Any], cfg: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    plotted = _plotted(summary)
    for metric, what in plotted:
        if metric == "regret":
            continue  # the results table has it
        out += [
            f"### Final {metric} ({what})",
            "",
            pivot_table(summary, row_notes=override_notes(cfg), metric=metric),
            "",
        ]
    if summary.get("checkpoints"):
        for metric, what in plotted:
            out += [
                f"### {metric} at checkpoints ({what})",
                "",
                checkpoint_table(summary, metric),
                "",
            ]
    return out


def _relative(path: Path, root: Path) -> str:
    return Path(os.path.relpath(path, root)).as_posix()


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
        f"Claims: **{tally(claims)}**." if claims else "No claims.",
        "",
    ]
    if any(c.get("indicative") for c in claims):
        out += [f"Verdicts marked *indicative* rest on too little: {INDICATIVE}.", ""]
    if any(c.get("passed") is None for c in claims):
        out += [
            "A claim is *not decided* where a policy it compares spends at least half of "
            "the run in its warm-up: the comparison would measure warm-up costs.",
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
        for fig in section.layouts:
            if fig.suffix == ".png":
                out += [f"![{fig.stem}]({_relative(fig, root)})", ""]
        singles = [f for f in section.figures if f.suffix == ".png"]
        if cfg.get("layout") == [] and singles:
            # `layout: []`: the runs are panels of a figure another section shows
            out += [
                "(Its runs are panels of a paper figure shown in another section.)",
                "",
            ]
        if singles and (section.layouts or cfg.get("layout") == []):
            links = ", ".join(f"[{f.stem}]({_relative(f, root)})" for f in singles)
            out += [f"Per-environment figures: {links}.", ""]
        else:
            out += [
                s for f in singles for s in (f"![{f.stem}]({_relative(f, root)})", "")
            ]
        out += ["### Results", "", results_table(section.summary), ""]
        out += _metric_tables(section.summary, cfg)
        if section.summary.get("claims"):
            out += ["### Claims", "", claims_table(section.summary["claims"]), ""]
    return "\n".join(out).rstrip() + "\n"
