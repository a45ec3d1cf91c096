"""The ``layout:`` key of a config: multi-panel figures laid out like a paper's.

A config may state the paper figures it makes, each a grid of panels::

    layout:
      - name: fig1                    # file name: figures/fig1.png (and .svg)
        title: Cumulative regret      # figure title (default: the config's title)
        ncols: 3                      # panels per row (default: up to 4)
        panels:
          - {env: linear, title: "(a) linear"}                 # metric defaults to regret
          - {env: logistic, metric: act_seconds, title: "(b) selection time"}
          - {figure: fig1-neural, env: quadratic, title: "(c) quadratic"}
          - {env: linear, policies: [UCB, TS], title: "(d) UCB against TS"}

A panel names an environment label of the config (``env`` may be left out when the config has
one environment), the metric drawn (``regret``, a metric the environment declares, or a
registered figure metric such as ``act_seconds``; default ``regret``), an optional title
(default ``(a) <env>``, with the metric's name when it is not the regret) and, optionally, the
figure id of another config of the same paper (``figure:``) whose stored runs it draws: this is
how one paper figure spans several configs. ``policies:`` (policy labels) restricts a panel to
those curves (default: every policy of the config), so one config can feed several paper
figures that each show a subset of its algorithms. A layout with no ``panels`` draws every
environment x every plotted metric of the config (one row per metric). Without a ``layout:``
key, a config gets that default layout, named after its figure id; ``layout: []`` draws none.

``report.layouts`` fills in the defaults and draws them (one legend for all panels, a
colour per policy across a paper, bands as the config's ``band:``); the checks against the
environments and policies of the config are in ``config.checks``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from banditkit.experiments.config.names import FileId

__all__ = ["LayoutSpec", "PanelSpec"]


class PanelSpec(BaseModel):
    """One panel of a :class:`LayoutSpec`: an environment, a metric, a title."""

    model_config = ConfigDict(extra="forbid")

    env: str | None = Field(
        default=None,
        min_length=1,
        description="Environment label (may be left out when the config has one).",
    )
    metric: str = Field(default="regret", min_length=1, description="Metric drawn.")
    title: str | None = Field(default=None, description="Panel title.")
    figure: str | None = Field(
        default=None,
        min_length=1,
        description="Figure id of another config of the same paper to draw from.",
    )
    policies: list[str] | None = Field(
        default=None,
        min_length=1,
        description="Policy labels drawn in the panel (default: every policy).",
    )


class LayoutSpec(BaseModel):
    """A multi-panel figure: file name, title, panels, columns."""

    model_config = ConfigDict(extra="forbid")

    name: FileId | None = Field(
        default=None,
        description="File name (letters, digits, '_', '.', '-', not starting with '.' "
        "or '-'); default: the figure id.",
    )
    title: str | None = Field(default=None, description="Figure title.")
    panels: list[PanelSpec] | None = Field(
        default=None,
        min_length=1,
        description="The panels, row by row (default: every env x plotted metric).",
    )
    ncols: int | None = Field(
        default=None, ge=1, strict=True, description="Panels per row."
    )
