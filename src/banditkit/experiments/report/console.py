"""What the command line prints: results and claims as aligned lines of at most 100 columns.

``report.md`` and ``summary.json`` keep everything (``report.markdown``); the
terminal gets the same numbers fitted: parameters shown as differences from the policy's
defaults, long labels shortened in their middle, claim statements wrapped (never cut).
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from banditkit.core import POLICIES
from banditkit.experiments.summarise.claims.standing import (
    INDICATIVE,
    tally,
    verdict_label,
)
from banditkit.experiments.summarise.stats import FEW_SEEDS

__all__ = [
    "TERMINAL_WIDTH",
    "claims_lines",
    "non_default",
    "number",
    "param_text",
    "results_lines",
    "shorten",
]

TERMINAL_WIDTH = 100
"""The width the command line's printed tables fit (report.md and summary.json are full)."""


def number(value: Any, digits: int = 4) -> str:
    """``value`` with ``digits`` significant digits; ``n/a`` for None and non-finite values."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    return f"{float(value):.{digits}g}"


def param_text(params: Mapping[str, Any]) -> str:
    """``k=v, ...`` (``-`` for none)."""
    if not params:
        return "-"
    return ", ".join(f"{k}={v}" for k, v in params.items())


def shorten(text: str, width: int) -> str:
    r"""``text`` on one line, cut to ``width`` characters with an ellipsis when longer.

    Line breaks (and the indentation after them) become one space; other spaces are kept.

    Example:
        >>> shorten("a long statement", 8), shorten("  short\n  text", 20)
        ('a long …', '  short text')
    """
    lines = str(text).splitlines() or [""]
    flat = " ".join([lines[0].rstrip(), *(line.strip() for line in lines[1:])])
    return flat if len(flat) <= width else flat[: max(width - 1, 0)] + "…"


def non_default(policy: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """The entries of ``params`` that differ from the registered policy's defaults.

    The defaults are those a policy built without arguments reports (its mode-resolved
    values, ``Registry.describe(resolve=True)``), so only what the config changed shows.
    """
    if policy not in POLICIES:
        return dict(params)
    defaults = {
        p.name: p.resolved for p in POLICIES.describe(policy, resolve=True).parameters
    }
    return {k: v for k, v in params.items() if k not in defaults or defaults[k] != v}


def results_lines(summary: Mapping[str, Any], width: int = TERMINAL_WIDTH) -> list[str]:
    """The results of a ``summary.json`` as aligned text lines of at most ``width`` characters.

    The command line prints this; ``results_table`` (report.md) and summary.json keep
    everything. Parameters are shown as differences from the policy's defaults, and the
    parameter column (then the labels) is cut with an ellipsis to fit.

    Example:
        >>> rows = [{"env": "e", "label": "a", "policy": "linucb", "params": {"nu": 1.0,
        ...     "lam": 2.0}, "n_seeds": 2, "final_regret_mean": 1.0, "final_regret_std": 0.5,
        ...     "final_regret_ci": [0.5, 1.5], "seconds_mean": 0.1, "n_updates_mean": 3.0}]
        >>> for line in results_lines({"ci_level": 0.9, "results": rows})[:2]:
        ...     print(line)
        environment  policy  seeds  final regret  90% CI      seconds  updates  parameters
        e            a       2      1 ± 0.5       [0.5, 1.5]  0.1      3        lam=2.0
    """
    level = summary.get("ci_level", 0.95)
    header = [
        "environment",
        "policy",
        "seeds",
        "final regret",
        f"{level:.0%} CI",
        "seconds",
        "updates",
        "parameters",
    ]
    rows: list[list[str]] = []
    for row in summary.get("results", []):
        lo, hi = row.get("final_regret_ci", [None, None])
        failed = row.get("n_failed", 0)
        params = non_default(row["policy"], row.get("params", {}))
        rows.append(
            [
                " ".join(str(row["env"]).split()),
                " ".join(str(row.get("label", row["policy"])).split()),
                f"{row['n_seeds']}" + (f" ({failed} failed)" if failed else ""),
                f"{number(row['final_regret_mean'])} ± {number(row['final_regret_std'], 3)}",
                f"[{number(lo)}, {number(hi)}]",
                number(row["seconds_mean"], 3),
                number(row["n_updates_mean"]),
                param_text(params) if params else "defaults",
            ]
        )
    lines = _aligned([header, *rows], width, floors=((7, 20), (0, 16), (1, 12)))
    if any(len(line) > width for line in lines):
        # too narrow for the parameters: one line per policy under the table instead
        table = _aligned([r[:7] for r in [header, *rows]], width, ((0, 16), (1, 12)))
        lines = [shorten(line, width) for line in table]
        lines.append("parameters (differences from the defaults):")
        notes = dict.fromkeys(f"  {r[1]}: {r[7]}" for r in rows)
        lines += [shorten(note, width) for note in notes]
    if any(0 < row.get("n_seeds", 0) < FEW_SEEDS for row in summary.get("results", [])):
        lines.append(
            f"(the {level:.0%} CI of fewer than {FEW_SEEDS} seeds is a rough interval)"
        )
    return lines


def _aligned(
    rows: list[list[str]], width: int, floors: tuple[tuple[int, int], ...]
) -> list[str]:
    """Left-aligned columns two spaces apart; (column, floor) give up width in turn."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for column, floor in floors:
        excess = sum(widths) + 2 * (len(widths) - 1) - width
        if excess > 0:
            widths[column] = max(widths[column] - excess, min(floor, widths[column]))
    return [
        "  ".join(
            (_shorten_middle(c, w) if i < 2 else shorten(c, w)).ljust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        ).rstrip()
        for r in rows
    ]


def _shorten_middle(text: str, width: int) -> str:
    """A label cut in its middle, so both ends stay: ``classifi…-digits``.

    Example:
        >>> _shorten_middle("classification-digits", 16)
        'classifi…-digits'
    """
    if len(text) <= width or width < 5:
        return shorten(text, width)
    tail = (width - 1) // 2
    return text[: width - 1 - tail] + "…" + text[-tail:]


def claims_lines(
    claims: Sequence[Mapping[str, Any]], full: str, width: int = TERMINAL_WIDTH
) -> list[str]:
    r"""Each claim's verdict, id and statement, wrapped to ``width``, and a tally.

    The statement is never cut: it continues on indented lines. A verdict that rests on
    too little says ``(indicative)``; a claim a warm-up leaves open reads ``not decided``
    (``summarise.claims.standing``); the last lines tally the verdicts, say what
    "indicative" means when a verdict is, and where the evidence is.

    Args:
        claims: The ``claims`` of a summary.
        full: Where the evidence is in full (report.md, summary.json).
        width: Most characters per line.

    Example:
        >>> lines = claims_lines([{"id": "c1", "text": "A beats B " * 5, "passed": True,
        ...                        "indicative": True}], "report.md", width=40)
        >>> print("\n".join(lines[:3]))
        PASS (indicative) c1: A beats B A beats
            B A beats B A beats B A beats B
        1 of 1 claims PASS; 1 verdict indicative
    """
    lines = []
    for claim in claims:
        text = " ".join(
            f"{verdict_label(claim)} {claim['id']}: {claim['text']}".split()
        )
        lines += textwrap.wrap(text, width, subsequent_indent="    ")
    lines += textwrap.wrap(tally(claims), width, subsequent_indent="    ")
    if any(c.get("indicative") for c in claims):
        lines += textwrap.wrap(
            f"(indicative: {INDICATIVE})", width, subsequent_indent="    "
        )
    lines += textwrap.wrap(f"(evidence in full: {full})", width)
    return lines
