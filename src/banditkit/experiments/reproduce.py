"""``banditkit reproduce``: run a paper's configs and write its ``report.md``.

A paper is a folder of configs, one per figure or table (``config.papers``). ``reproduce``
validates every selected config before writing anything, then runs each into
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from banditkit.datasets import require_datasets
from banditkit.experiments.compute.execute import versions
from banditkit.experiments.compute.progress import Progress, make_progress
from banditkit.experiments.config.errors import ConfigError
from banditkit.experiments.config.load import load_config
from banditkit.experiments.config.papers import (
    figure_id,
    paper_configs,
    paper_dir,
    paper_meta,
    select_figures,
)
from banditkit.experiments.config.resolve import config_datasets, prepare_experiment
from banditkit.experiments.config.resolved import ResolvedExperiment
from banditkit.experiments.config.yaml_io import read_yaml
from banditkit.experiments.report.drawing import palette
from banditkit.experiments.report.layouts import Layout, config_layouts, draw_layout
from banditkit.experiments.report.markdown import FigureSection, render_report
from banditkit.experiments.runner import ExperimentResult, execute_experiment, redraw
from banditkit.experiments.store.runs import CellRuns, collect
from banditkit.experiments.store.store import (
    CorruptFileError,
    RunStore,
    read_json_object,
)
from banditkit.experiments.store.stored import check_owner, stored_experiment

__all__ = ["ReproduceResult", "build_report", "paper_colours", "reproduce"]


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
        """True when no claim FAILed (a claim not decided is no failure)."""
        return all(c["passed"] is not False for c in self.summary.get("claims", []))


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
    try:
        folder: Path | None = paper_dir(paper)
    except ConfigError:
        folder = None
    order = [figure_id(p) for p in paper_configs(folder)] if folder else []
    found = [p.parent.name for p in sorted(out.glob("*/summary.json"))]
    figure_ids = [f for f in order if f in found] + [f for f in found if f not in order]
    meta = paper_meta(folder) if folder else {}
    store = RunStore(out)
    store.subfolder("figures")
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
        config = read_yaml(sub / "config.yaml")
        layouts = stored.layouts(fid)
        # the run's own drawings of its layouts are replaced by the paper-level ones
        own = {layout.name for layout in layouts} | {
            layout.name for layout in stored.layouts(fid, stored.figure_id(fid))
        }
        figures = []
        for fig in sorted((sub / "figures").glob("*.*")):
            if fig.suffix in {".png", ".svg"} and fig.stem not in own:
                target = store.figures_dir / f"{fid}--{fig.name}"
                if store.copy_file(fig, target):
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
            if fid not in self.figure_ids:
                self._cache[fid] = None
            else:
                resolved = stored_experiment(self.out / fid)
                self._cache[fid] = (
                    resolved,
                    collect(resolved, RunStore(self.out / fid)),
                )
        return self._cache[fid]

    def figure_id(self, fid: str) -> str | None:
        """The figure id the run of ``fid`` named its own layouts after."""
        found = self.get(fid)
        return None if found is None else found[0].config.figure_id

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
    ``out/config.yaml`` (:func:`~banditkit.experiments.report.drawing.palette`).
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
            doc = read_yaml(out / "config.yaml") or {}
        except ConfigError:
            doc = {}
        figures = doc.get("figures") if isinstance(doc, dict) else None
        for config in (figures or {}).values():
            for policy in (config or {}).get("policies") or []:
                labels.append(str(policy.get("label") or policy.get("name")))
    return palette(labels)


def _write_paper_config(
    top: RunStore,
    paper: str | Path,
    quick: bool,
    resolved: dict[str, ResolvedExperiment],
) -> None:
    """``DIR/config.yaml``: the resolved configs of these figures and of earlier ones."""
    figures_doc: dict[str, Any] = {
        fid: r.config.to_dict() for fid, r in resolved.items()
    }
    previous = top.root / "config.yaml"
    if previous.is_file():
        try:
            earlier = read_yaml(previous) or {}
        except ConfigError:
            earlier = {}
        if isinstance(earlier, dict) and isinstance(earlier.get("figures"), dict):
            figures_doc = {**earlier["figures"], **figures_doc}
    config_doc = {"paper": str(paper), "quick": quick, "figures": figures_doc}
    top.write_text("config.yaml", yaml.safe_dump(config_doc, sort_keys=False))


def _command(
    paper: str | Path,
    out: Path,
    figure: str | None,
    quick: bool,
    seeds: int | list[int] | None,
    horizon: int | None,
    compute: dict[str, str | None],
) -> str:
    """The ``banditkit reproduce`` command line that the report names."""
    return " ".join(
        ["banditkit reproduce", str(paper)]
        + ([f"--figure {figure}"] if figure else [])
        + (["--quick"] if quick else [])
        + ([f"--seeds {seeds}"] if seeds is not None else [])
        + ([f"--horizon {horizon}"] if horizon is not None else [])
        + [f"--{name} {value}" for name, value in compute.items() if value is not None]
        + [f"--out {out}"]
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
    device: str | None = None,
    dtype: str | None = None,
) -> ReproduceResult:
    """Run the configs of ``paper`` (all, or the one with id ``figure``) and write a report.

    ``seeds`` and ``horizon`` override every selected config as ``run --seeds/--horizon``
    do; with ``quick`` they apply after it (``quick`` first shortens each config, then an
    explicit ``seeds`` or ``horizon`` replaces that part of it). ``device`` and ``dtype``
    set those parameters of every policy that has them, as ``run --device/--dtype`` do.

    Raises:
        ConfigError: Unknown paper or figure, or an invalid config (nothing is written).
        MissingDatasetsError: Naming every dataset that some selected figure needs and the
            data home lacks (nothing is written).
        OutputDirError: If ``out`` cannot be written.
    """
    folder, ids = select_figures(paper, figure)
    # every figure's datasets, checked before any figure is resolved: one error lists them all
    require_datasets(
        [n for path in ids.values() for n in config_datasets(load_config(path))]
    )
    resolved: dict[str, ResolvedExperiment] = {
        fid: prepare_experiment(
            path, quick=quick, seeds=seeds, horizon=horizon, device=device, dtype=dtype
        )
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
        check_owner(top, ("paper", None))
        _write_paper_config(top, paper, quick, resolved)
        for fid, exp in resolved.items():
            res = execute_experiment(
                exp,
                top.subfolder(fid),
                backend=backend,
                jobs=jobs,
                address=address,
                progress=reporter,
                title=f"{paper}: {fid}",
                colours=colours,
            )
            results[fid] = res
            failed.update({f"{fid}/{k}": v for k, v in res.failed.items()})
        compute = {"device": device, "dtype": dtype}
        cmd = command or _command(paper, out, figure, quick, seeds, horizon, compute)
        summary, report = build_report(out, str(paper), command=cmd, quick=quick)
    return ReproduceResult(out, results, summary, report, failed)
