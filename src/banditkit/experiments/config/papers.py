"""The papers shipped with banditkit: their folders of configs, and the checks across a paper.

A paper is a folder ``experiments/papers/<paper>/`` (or any folder given by path) holding one
config per figure or table (``<figure>.yaml``; the id is the config's ``figure:`` field, else
the file name), ``tuned*.yaml`` files written by ``banditkit tune`` and an optional
``_paper.yaml`` (``title``, ``reference``, ``notes``); files starting with "_" or "tuned" are
not configs. :func:`check_panel_figures` checks what only the paper as a whole can: a panel's
``figure:`` names a config of the paper, and layout names are unique across it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from banditkit.core.validation import suggest
from banditkit.experiments.config.errors import ConfigError
from banditkit.experiments.config.layout import LayoutSpec
from banditkit.experiments.config.load import load_config
from banditkit.experiments.config.names import check_file_id
from banditkit.experiments.config.yaml_io import read_yaml

__all__ = [
    "PAPERS_DIR",
    "check_panel_figures",
    "figure_id",
    "list_papers",
    "paper_configs",
    "paper_dir",
    "paper_meta",
    "select_figures",
]

PAPERS_DIR = Path(__file__).parent.parent / "papers"
"""Where the packaged paper folders live."""


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


def figure_id(path: Path) -> str:
    """The figure id of a config file: its ``figure:`` field, else the file name.

    Raises:
        ConfigError: If the file name is no id (``config.names.ID_PATTERN``): the id
            names the folder ``reproduce`` writes the figure into.
    """
    cfg = load_config(path)
    if cfg.figure is not None:
        return cfg.figure
    try:
        return check_file_id(path.stem)
    except ValueError as exc:
        raise ConfigError(
            f"{exc} (the file name); give the config a `figure:` id",
            source=str(path),
            field="figure",
        ) from None


def paper_meta(folder: Path) -> dict[str, Any]:
    """The folder's ``_paper.yaml`` (``title``, ``reference``, ``notes``), or {}."""
    for name in ("_paper.yaml", "_paper.yml"):
        if (folder / name).is_file():
            data = read_yaml(folder / name)
            return dict(data) if isinstance(data, dict) else {}
    return {}


def check_panel_figures(ids: dict[str, Path]) -> None:
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


def select_figures(
    paper: str | Path, figure: str | None
) -> tuple[Path, dict[str, Path]]:
    """The paper's folder and its configs by figure id (only ``figure``'s when given).

    Raises:
        ConfigError: For an unknown paper or figure, a paper without configs, or panels
            that :func:`check_panel_figures` rejects.
    """
    folder = paper_dir(paper)
    paths = paper_configs(folder)
    if not paths:
        raise ConfigError(f"no config files in {str(folder)!r}")
    ids = {figure_id(p): p for p in paths}
    check_panel_figures(ids)
    if figure is None:
        return folder, ids
    if figure not in ids:
        raise ConfigError(
            f"paper {str(paper)!r} has no figure {figure!r}.{suggest(figure, list(ids))} "
            f"Figures: {', '.join(ids)}.",
            field="--figure",
        )
    return folder, {figure: ids[figure]}
