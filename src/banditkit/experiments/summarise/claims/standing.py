"""How much a claim's verdict stands for: not decided (warm-up), indicative or firm.

A claim is decided by means over seeds (``claims.decide``). Two things can make that verdict
say little, and the summary says so rather than print a bare PASS or FAIL:

    not decided   a policy the claim compares spends at least :data:`WARMUP_SHARE` of the run
                  in its warm-up (``Policy.warmup_rounds``: GLM-ES's design pulls, ONL-MNL's
                  Phase I, every phase's warm-up of an anytime restart): the comparison then
                  measures warm-up costs, not the algorithm. Such an environment gets no
                  verdict, and a claim with one gets ``passed: null`` (unless another
                  environment FAILs it outright)
    indicative    the verdict rests on too little: a comparison of policies whose paired
                  evidence (``claims.evidence``) is not decisive, or a claim about one policy
                  decided on fewer than ``FEW_SEEDS`` seeds. A PASS is firm when every
                  environment is; a FAIL when one failing environment is

Result rows carry ``warmup`` (rounds of the run spent in warm-up; ``summarise.summary``).

Example:
    >>> rows = [{"env": "e", "label": "A", "warmup": 500, "n_seeds": 3},
    ...         {"env": "e", "label": "B", "warmup": 0, "n_seeds": 3}]
    >>> warmup_blockers(rows, "e", ["A", "B"], 80)
    ['A spends 500 of 80 rounds in warm-up']
    >>> warmup_blockers(rows, "e", ["B"], 80), firm([], rows, "e", ["A", "B"])
    ([], False)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from banditkit.experiments.summarise.claims.rows import find_row
from banditkit.experiments.summarise.stats import FEW_SEEDS

__all__ = [
    "INDICATIVE",
    "NOT_DECIDED",
    "WARMUP_SHARE",
    "combine",
    "firm",
    "tally",
    "verdict_label",
    "verdict_word",
    "warmup_blockers",
]

WARMUP_SHARE = 0.5
"""A policy in warm-up for at least this share of the run leaves a claim on it not decided."""

INDICATIVE = (
    "a paired comparison within noise or with too few pairs, or a claim about one policy "
    f"on fewer than {FEW_SEEDS} seeds"
)
"""What an indicative verdict rests on (printed under claims with such verdicts)."""

NOT_DECIDED = "not decided"
"""The verdict word of a claim that a warm-up leaves open."""


def warmup_blockers(
    rows: Sequence[Mapping[str, Any]],
    env: str,
    labels: Sequence[str],
    horizon: int | None,
) -> list[str]:
    """Why ``env`` cannot decide a claim on ``labels``: one phrase per policy in warm-up.

    A row without ``warmup`` (written before it existed, or a policy that could not be
    built to ask) counts as no warm-up.
    """
    if not horizon:
        return []
    out = []
    for label in dict.fromkeys(labels):
        warm = (find_row(rows, env, label) or {}).get("warmup")
        if warm and warm >= WARMUP_SHARE * horizon:
            out.append(f"{label} spends {warm} of {horizon} rounds in warm-up")
    return out


def firm(
    entries: Sequence[Mapping[str, Any]],
    rows: Sequence[Mapping[str, Any]],
    env: str,
    labels: Sequence[str],
) -> bool:
    """Whether a verdict on ``env`` is firm.

    Firm: its paired comparisons are all decisive, or, for a claim without any, every
    compared policy has at least ``FEW_SEEDS`` seeds.
    """
    if entries:
        return all(e["qualifier"] == "decisive" for e in entries)
    seeds = [(find_row(rows, env, lab) or {}).get("n_seeds", 0) for lab in labels]
    return bool(seeds) and min(seeds) >= FEW_SEEDS


def verdict_word(passed: bool | None) -> str:
    """``PASS``, ``FAIL`` or ``not decided`` (``passed`` None).

    Example:
        >>> verdict_word(True), verdict_word(None)
        ('PASS', 'not decided')
    """
    if passed is None:
        return NOT_DECIDED
    return "PASS" if passed else "FAIL"


def combine(statuses: Sequence[tuple[bool | None, bool]]) -> tuple[bool | None, bool]:
    """(passed, indicative) of a claim from its environments' (verdict, firm).

    A FAIL anywhere fails the claim (indicative unless one failing environment is firm);
    else an environment not decided leaves it not decided (None, never indicative); else it
    passes, indicative unless every environment is firm.

    Example:
        >>> combine([(True, True), (False, False)]), combine([(True, True), (None, False)])
        ((False, True), (None, False))
        >>> combine([(True, True), (True, False)])
        (True, True)
    """
    failed = [ok for verdict, ok in statuses if verdict is False]
    if failed:
        return False, not any(failed)
    if any(verdict is None for verdict, _ in statuses):
        return None, False
    return True, not all(ok for _, ok in statuses)


def verdict_label(claim: Mapping[str, Any]) -> str:
    """A claim entry's verdict as reports print it: ``PASS``, ``FAIL (indicative)``, ...

    Entries written before verdicts had standing (no ``verdict`` key) read as firm.

    Example:
        >>> verdict_label({"passed": True, "indicative": True})
        'PASS (indicative)'
        >>> verdict_label({"passed": None}), verdict_label({"passed": False})
        ('not decided', 'FAIL')
    """
    word = verdict_word(claim.get("passed"))
    return f"{word} (indicative)" if claim.get("indicative") else word


def tally(claims: Sequence[Mapping[str, Any]]) -> str:
    """The verdicts of a list of claims in one sentence.

    Example:
        >>> tally([{"passed": True, "indicative": True}, {"passed": False},
        ...        {"passed": None}])
        '1 of 3 claims PASS, 1 FAIL, 1 not decided (a warm-up as long as half the run); 1 verdict indicative only'
        >>> tally([{"passed": True}, {"passed": True}])
        '2 of 2 claims PASS'
    """
    verdicts = [c.get("passed") for c in claims]
    text = f"{verdicts.count(True)} of {len(claims)} claims PASS"
    failed = sum(1 for v in verdicts if v is False)
    if failed:
        text += f", {failed} FAIL"
    undecided = verdicts.count(None)
    if undecided:
        text += f", {undecided} {NOT_DECIDED} (a warm-up as long as half the run)"
    indicative = sum(1 for c in claims if c.get("indicative"))
    if indicative:
        plural = "verdict" if indicative == 1 else "verdicts"
        text += f"; {indicative} {plural} indicative only"
    return text
