"""``reproduce``: run a paper's packaged configs and write ``report.md``.

A paper is a folder ``experiments/papers/<paper>/`` (or any folder given by path) holding

    <figure>.yaml    one experiment config per figure or table (the id is the config's
                     ``figure:`` field, else the file name), with its ``claims:`` and
                     ``quick:`` settings
    tuned*.yaml      tuned parameters written by ``banditkit tune`` (not configs)
    _paper.yaml      optional: {title, reference, notes} for the report (files starting
                     with "_" are not configs)

``reproduce`` validates every selected config before writing anything, then runs each into
``DIR/<figure>/`` (a complete ``run`` output directory, resumable) and writes at the top:

    DIR/config.yaml    {paper, quick, figures: {figure id: resolved config}}
    DIR/summary.json   the figures' summaries joined: every result and claim gets a
                       "figure" key (and results their "horizon")
    DIR/figures/       the multi-panel figures of the configs' ``layout:`` (a paper figure
                       may take panels from several configs), named <name>.png / .svg,
                       and every per-environment figure, named <figure>--<name>.png / .svg
    DIR/report.md      figures, results table and claims table (PASS/FAIL and numbers)
"""

from __future__ import annotations

import functools
import logging
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from banditkit.core.validation import suggest
from banditkit.datasets import require_datasets
from banditkit.experiments.layouts import Layout, LayoutSpec, draw_layout, palette
from banditkit.experiments.plots import config_layouts
from banditkit.experiments.progress import Progress, make_progress
from banditkit.experiments.reports import FigureSection, render_report
from banditkit.experiments.resolve import config_datasets
from banditkit.experiments.runner import (
    ExperimentResult,
    execute_experiment,
    prepare_experiment,
    redraw,
)
from banditkit.experiments.runs import ResolvedExperiment
from banditkit.experiments.schema import ConfigError, load_config, read_yaml
from banditkit.experiments.store import CorruptFileError, RunStore, read_json_object
from banditkit.experiments.summaries import CellRuns

__all__ = [
    "PAPERS_DIR",
    "ReproduceResult",
    "build_report",
    "list_papers",
    "paper_colours",
    "paper_configs",
    "paper_dir",
    "reproduce",
]

PAPERS_DIR = Path(__file__).parent / "papers"
"""Where the packaged paper folders live."""


@dataclass
class ReproduceResult:
    """What ``reproduce`` produced."""

    out: Path
    figures: dict[str, ExperimentResult]
    summary: dict[str, Any]
    report: Path
    failed: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when every run of every figure has a result."""
        return not self.failed

    @property
    def claims_passed(self) -> bool:
        """True when every claim passed."""
        return all(c["passed"] for c in self.summary.get("claims", []))


def list_papers() -> list[str]:
    """Names of the packaged papers."""
    if not PAPERS_DIR.is_dir():
        return []
    return sorted(
        p.name for p in PAPERS_DIR.iterdir() if p.is_dir() and any(p.glob("*.yaml"))
    )


def paper_dir(paper: str | Path) -> Path:
    """The folder of a packaged paper name, or ``paper`` itself if it is a folder."""
    candidate = Path(paper)
    if candidate.is_dir():
        return candidate
    packaged = PAPERS_DIR / str(paper)
    if packaged.is_dir():
        return packaged
    known = list_papers()
    folded = [k for k in known if k.casefold() == str(paper).casefold()]
    if len(folded) == 1:  # "Logistic" -> "logistic"
        return PAPERS_DIR / folded[0]
    raise ConfigError(
        f"unknown paper {str(paper)!r}.{suggest(str(paper), known)} "
        f"Packaged papers: {', '.join(known) or 'none'}; or give a folder of configs."
    )


def paper_configs(folder: Path) -> list[Path]:
    """The config files of a paper folder (sorted; no ``_*`` or ``tuned*`` files)."""
    return sorted(
        p
        for p in folder.glob("*.y*ml")
        if p.suffix in {".yaml", ".yml"} and not p.name.startswith(("_", "tuned"))
    )


def _figure_id(path: Path) -> str:
    cfg = load_config(path)
    return cfg.figure or path.stem


def _paper_meta(folder: Path) -> dict[str, Any]:
    for name in ("_paper.yaml", "_paper.yml"):
        if (folder / name).is_file():
            data = read_yaml(folder / name)
            return dict(data) if isinstance(data, dict) else {}
    return {}


def _figure_summary(sub: Path) -> dict[str, Any]:
    """``sub/summary.json``; a damaged one is rewritten from the stored runs (and said so)."""
    try:
        return read_json_object(sub / "summary.json")
    except CorruptFileError as exc:
        logging.getLogger("banditkit").warning(
            "banditkit: %s; rewriting it from the stored runs.", exc
        )
        redraw(sub)
        return read_json_object(sub / "summary.json")


def build_report(
    out: Path, paper: str, *, command: str, quick: bool
) -> tuple[dict[str, Any], Path]:
    """Join the figures found under ``out`` into ``summary.json`` and ``report.md``.

    Every ``out/<figure>/`` with a ``summary.json`` is included, in the order of the paper's
    configs, so figures reproduced one at a time (``--figure``) end up in one report.
    """
    from banditkit.experiments.execute import versions

    try:
        folder: Path | None = paper_dir(paper)
    except ConfigError:
        folder = None
    order = [_figure_id(p) for p in paper_configs(folder)] if folder else []
    found = [p.parent.name for p in sorted(out.glob("*/summary.json"))]
    figure_ids = [f for f in order if f in found] + [f for f in found if f not in order]
    meta = _paper_meta(folder) if folder else {}
    store = RunStore(out)
    store.figures_dir.mkdir(parents=True, exist_ok=True)
    sections = []
    joined: dict[str, Any] = {
        "name": paper,
        "horizon": 0,
        "banditkit_version": None,
        "quick": quick,
        "results": [],
        "claims": [],
    }
    colours = paper_colours(folder, out)
    stored = _StoredFigures(out, set(figure_ids))
    for fid in figure_ids:
        sub = out / fid
        summary = _figure_summary(sub)
        config = yaml.safe_load((sub / "config.yaml").read_text())
        layouts = stored.layouts(fid)
        # the run's own drawings of its layouts are replaced by the paper-level ones
        own = {layout.name for layout in layouts} | {
            layout.name
            for layout in stored.layouts(fid, config.get("figure") or config["name"])
        }
        figures = []
        for fig in sorted((sub / "figures").glob("*.*")):
            if fig.suffix in {".png", ".svg"} and fig.stem not in own:
                target = store.figures_dir / f"{fid}--{fig.name}"
                shutil.copyfile(fig, target)
                figures.append(target)
        panels: list[Path] = []
        for layout in layouts:
            cfg = stored.get(fid)[0].config  # type: ignore[index]
            panels += draw_layout(
                layout,
                functools.partial(stored.get_or, fid),
                store.figures_dir / layout.name,
                colours=colours,
                level=cfg.ci_level,
                band=cfg.band,
            )
        sections.append(FigureSection(fid, config, summary, figures, panels))
        joined["horizon"] = max(joined["horizon"], summary["horizon"])
        joined["banditkit_version"] = summary.get("banditkit_version")
        joined["results"] += [
            {"figure": fid, "horizon": summary["horizon"], **r}
            for r in summary["results"]
        ]
        joined["claims"] += [{"figure": fid, **c} for c in summary.get("claims", [])]
    notes = "\n\n".join(str(meta[k]) for k in ("reference", "notes") if meta.get(k))
    text = render_report(
        str(meta.get("title") or f"Reproduction: {paper}"),
        sections,
        out,
        command=command,
        quick=quick,
        versions=versions(),
        notes=notes or None,
    )
    store.write_json("summary.json", joined)
    report = store.write_text("report.md", text)
    return joined, report


class _StoredFigures:
    """The stored experiments of a reproduction, read once each (for the paper figures)."""

    def __init__(self, out: Path, figure_ids: set[str]) -> None:
        self.out = out
        self.figure_ids = figure_ids
        self._cache: dict[str, tuple[ResolvedExperiment, list[CellRuns]] | None] = {}

    def get(self, fid: str) -> tuple[ResolvedExperiment, list[CellRuns]] | None:
        """The resolved experiment and runs of figure ``fid``; None when not in ``out``."""
        if fid not in self._cache:
            from banditkit.experiments.summaries import collect
            from banditkit.experiments.tidy import stored_experiment

            if fid not in self.figure_ids:
                self._cache[fid] = None
            else:
                resolved = stored_experiment(self.out / fid)
                self._cache[fid] = (
                    resolved,
                    collect(resolved, RunStore(self.out / fid)),
                )
        return self._cache[fid]

    def get_or(
        self, fid: str, figure: str | None
    ) -> tuple[ResolvedExperiment, list[CellRuns]] | None:
        """:meth:`get` of ``figure``, or of ``fid`` when ``figure`` is None."""
        return self.get(figure or fid)

    def layouts(self, fid: str, figure_id: str | None = None) -> list[Layout]:
        """The multi-panel figures of figure ``fid`` (default names: ``figure_id``)."""
        found = self.get(fid)
        if found is None:
            return []
        return config_layouts(found[0], figure_id or fid)


def paper_colours(
    folder: Path | None, out: Path | None = None
) -> dict[str, tuple[float, ...]]:
    """One colour per policy label across a paper.

    The labels of the paper's configs in order, then those only found in
    ``out/config.yaml`` (:func:`~banditkit.experiments.layouts.palette`).
    """
    labels: list[str] = []
    for path in paper_configs(folder) if folder is not None else []:
        try:
            cfg = load_config(path)
        except ConfigError:
            continue
        labels += [p.label or p.name for p in cfg.policies]
    if out is not None and (out / "config.yaml").is_file():
        try:
            doc = yaml.safe_load((out / "config.yaml").read_text()) or {}
        except yaml.YAMLError:
            doc = {}
        figures = doc.get("figures") if isinstance(doc, dict) else None
        for config in (figures or {}).values():
            for policy in (config or {}).get("policies") or []:
                labels.append(str(policy.get("label") or policy.get("name")))
    return palette(labels)


def _check_panel_figures(ids: dict[str, Path]) -> None:
    """Panels of other configs name figures of this paper; layout names are unique."""
    names: dict[str, str] = {}
    for fid, path in ids.items():
        cfg = load_config(path)
        # no `layout:` key: the default grid, named after the figure id
        specs = cfg.layout if cfg.layout is not None else [LayoutSpec()]
        for i, layout in enumerate(specs):
            name = layout.name or fid
            if name in names:
                raise ConfigError(
                    f"layout {name!r} is also drawn by figure {names[name]!r}; give "
                    "each layout of a paper its own `name:`",
                    source=str(path),
                    field=f"layout[{i}].name",
                )
            names[name] = fid
            for j, panel in enumerate(layout.panels or []):
                if panel.figure is not None and panel.figure not in ids:
                    raise ConfigError(
                        f"no figure {panel.figure!r} in this paper."
                        f"{suggest(panel.figure, list(ids))} Figures: {', '.join(ids)}.",
                        source=str(path),
                        field=f"layout[{i}].panels[{j}].figure",
                    )


def reproduce(
    paper: str | Path,
    out: str | Path,
    *,
    figure: str | None = None,
    quick: bool = False,
    backend: str = "auto",
    jobs: int | None = None,
    address: str | None = None,
    progress: str | Progress | None = "auto",
    command: str | None = None,
    seeds: int | list[int] | None = None,
    horizon: int | None = None,
) -> ReproduceResult:
    """Run the configs of ``paper`` (all, or the one with id ``figure``) and write a report.

    ``seeds`` and ``horizon`` override every selected config as ``run --seeds/--horizon``
    do; with ``quick`` they apply after it (``quick`` first shortens each config, then an
    explicit ``seeds`` or ``horizon`` replaces that part of it).

    Raises:
        ConfigError: Unknown paper or figure, or an invalid config (nothing is written).
        MissingDatasetsError: Naming every dataset that some selected figure needs and the
            data home lacks (nothing is written).
        OutputDirError: If ``out`` cannot be written.
    """
    folder = paper_dir(paper)
    paths = paper_configs(folder)
    if not paths:
        raise ConfigError(f"no config files in {str(folder)!r}")
    ids = {_figure_id(p): p for p in paths}
    _check_panel_figures(ids)
    if figure is not None:
        if figure not in ids:
            raise ConfigError(
                f"paper {str(paper)!r} has no figure {figure!r}.{suggest(figure, list(ids))} "
                f"Figures: {', '.join(ids)}.",
                field="--figure",
            )
        ids = {figure: ids[figure]}
    # every figure's datasets, checked before any figure is resolved: one error lists them all
    require_datasets(
        [n for path in ids.values() for n in config_datasets(load_config(path))]
    )
    resolved: dict[str, ResolvedExperiment] = {
        fid: prepare_experiment(path, quick=quick, seeds=seeds, horizon=horizon)
        for fid, path in ids.items()
    }
    out = Path(out)
    top = RunStore(out)
    top.prepare(subdirs=False)
    reporter = make_progress(progress)
    colours = paper_colours(folder, out)
    results: dict[str, ExperimentResult] = {}
    failed: dict[str, str] = {}
    with top.lock():
        figures_doc: dict[str, Any] = {
            fid: r.config.to_dict() for fid, r in resolved.items()
        }
        previous = out / "config.yaml"
        if previous.is_file():
            try:
                earlier = yaml.safe_load(previous.read_text()) or {}
            except yaml.YAMLError:
                earlier = {}
            if isinstance(earlier, dict) and isinstance(earlier.get("figures"), dict):
                figures_doc = {**earlier["figures"], **figures_doc}
        config_doc = {"paper": str(paper), "quick": quick, "figures": figures_doc}
        top.write_text("config.yaml", yaml.safe_dump(config_doc, sort_keys=False))
        for fid, exp in resolved.items():
            res = execute_experiment(
                exp,
                out / fid,
                backend=backend,
                jobs=jobs,
                address=address,
                progress=reporter,
                title=f"{paper}: {fid}",
                colours=colours,
            )
            results[fid] = res
            failed.update({f"{fid}/{k}": v for k, v in res.failed.items()})
        cmd = command or " ".join(
            ["banditkit reproduce", str(paper)]
            + ([f"--figure {figure}"] if figure else [])
            + (["--quick"] if quick else [])
            + ([f"--seeds {seeds}"] if seeds is not None else [])
            + ([f"--horizon {horizon}"] if horizon is not None else [])
            + [f"--out {out}"]
        )
        summary, report = build_report(out, str(paper), command=cmd, quick=quick)
    return ReproduceResult(out, results, summary, report, failed)
