"""Claims decided on a summary: each PASS, FAIL or not decided, with the numbers it used.

The claim kinds and their fields are the config's (``config.claims``); this module decides
each on the result rows of a summary (``summarise.summary``), reading their numbers through
``claims.rows`` and adding the paired evidence of ``claims.evidence``; ``claims.standing``
says when a warm-up leaves it not decided and when the verdict is only indicative. A claim is
never hidden: it is reported with its verdict and numbers, in ``summary.json`` and
``report.md``.

Example:
    >>> from banditkit.experiments.config.claims import parse_claim
    >>> claim = parse_claim({"id": "c1", "kind": "below", "policy": "a", "other": "b"})
    >>> rows = [{"env": "e", "label": "a", "final_regret_mean": 1.0},
    ...         {"env": "e", "label": "b", "final_regret_mean": 2.0}]
    >>> evaluate_claim(claim, rows, {})["passed"]
    True
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from banditkit.experiments.config.claims import (
    Below,
    Equal,
    GrowsLess,
    Linear,
    LowestFinalRegret,
    RegretBelow,
    SecondsRatio,
    Sublinear,
    TopK,
    ValueBelow,
    WithinBand,
    declared_metric,
    named,
)
from banditkit.experiments.summarise.claims.evidence import (
    paired_evidence,
    paired_grows_less,
    paired_text,
)
from banditkit.experiments.summarise.claims.rows import (
    find_row,
    higher_is_better,
    metric_value,
    per_seed_values,
    row_value,
)
from banditkit.experiments.summarise.claims.standing import (
    combine,
    firm,
    verdict_word,
    warmup_blockers,
)

__all__ = ["evaluate_claim", "evaluate_claims"]


def _check_one(
    claim: Any,
    env: str,
    rows: Sequence[Mapping[str, Any]],
    halves: Mapping[tuple[str, str], tuple[float, float]],
) -> tuple[bool, str, dict[str, float]]:
    """Decide ``claim`` on one environment: (passed, evidence, numbers)."""
    if isinstance(claim, LowestFinalRegret):
        labels = claim.among or [r["label"] for r in rows if r["env"] == env]
        labels = list(dict.fromkeys([claim.policy, *labels]))
        values = {
            lab: row_value(find_row(rows, env, lab), "final_regret_mean")
            for lab in labels
        }
        mine = values[claim.policy]
        others = {k: v for k, v in values.items() if k != claim.policy}
        best_other = min(others, key=lambda k: others[k]) if others else None
        passed = not math.isnan(mine) and all(mine < v for v in others.values())
        if best_other is None:
            evidence = f"{claim.policy} {mine:.4g} (no other policy)"
        else:
            evidence = f"{claim.policy} {mine:.4g}; best other {best_other} {others[best_other]:.4g}"
        return passed, evidence, values
    if isinstance(claim, Below):
        a = metric_value(find_row(rows, env, claim.policy), claim.metric, claim.at)
        b = metric_value(find_row(rows, env, claim.other), claim.metric, claim.at)
        passed = a < claim.factor * b
        scale = "" if claim.factor == 1.0 else f"{claim.factor:g} x "
        evidence = f"{claim.policy} {a:.4g} vs {scale}{claim.other} {b:.4g}"
        return passed, evidence, {claim.policy: a, claim.other: b}
    if isinstance(claim, SecondsRatio):
        a = row_value(find_row(rows, env, claim.policy), "seconds_mean")
        b = row_value(find_row(rows, env, claim.other), "seconds_mean")
        ratio = a / b if b > 0 else math.inf
        passed = ratio < claim.below
        evidence = (
            f"{claim.policy} {a:.4g} s / {claim.other} {b:.4g} s = {ratio:.4g} "
            f"(needs < {claim.below:g})"
        )
        return passed, evidence, {claim.policy: a, claim.other: b, "ratio": ratio}
    if isinstance(claim, RegretBelow):
        a = row_value(find_row(rows, env, claim.policy), "final_regret_mean")
        passed = a < claim.value
        return (
            passed,
            f"{claim.policy} {a:.4g} (needs < {claim.value:g})",
            {claim.policy: a},
        )
    if isinstance(claim, ValueBelow):
        a = metric_value(find_row(rows, env, claim.policy), claim.metric, claim.at)
        passed = a < claim.value
        return (
            passed,
            f"{claim.policy} {named(claim.metric, claim.at)} {a:.4g} "
            f"(needs < {claim.value:g})",
            {claim.policy: a},
        )
    if isinstance(claim, Sublinear | Linear):
        return _check_halves(claim, env, halves)
    if isinstance(claim, TopK):
        return _check_top_k(claim, env, rows)
    if isinstance(claim, WithinBand):
        return _check_within_band(claim, env, rows)
    raise TypeError(f"not a claim: {claim!r}")  # pragma: no cover


def _check_halves(
    claim: Sublinear | Linear,
    env: str,
    halves: Mapping[tuple[str, str], tuple[float, float]],
) -> tuple[bool, str, dict[str, float]]:
    """``sublinear``: R(T) - R(T/2) < fraction R(T/2); ``linear``: >= (not sublinear)."""
    first, total = halves.get((env, claim.policy), (math.nan, math.nan))
    second = total - first
    if isinstance(claim, Sublinear):
        ratio = second / first if first > 0 else math.inf
        passed, need = ratio < claim.fraction, "<"
    else:
        ratio = second / first if first > 0 else math.nan
        passed, need = ratio >= claim.fraction, ">="
    evidence = (
        f"R(T/2) {first:.4g}, R(T)-R(T/2) {second:.4g}, ratio {ratio:.3g} "
        f"(needs {need} {claim.fraction:g})"
    )
    return (
        passed,
        evidence,
        {"first_half": first, "second_half": second, "ratio": ratio},
    )


def _check_top_k(
    claim: TopK, env: str, rows: Sequence[Mapping[str, Any]]
) -> tuple[bool, str, dict[str, float]]:
    labels = claim.among or [r["label"] for r in rows if r["env"] == env]
    labels = list(dict.fromkeys([*claim.policies, *labels]))
    values = {
        lab: metric_value(find_row(rows, env, lab), claim.metric, claim.at)
        for lab in labels
    }
    name = declared_metric(claim.metric, claim.at) or claim.metric
    sign = -1.0 if higher_is_better(rows, name) else 1.0

    def rank(label: str) -> float:
        mine = values[label]
        if math.isnan(mine):
            return math.inf
        # Ties share a rank: only strictly better policies push a policy down.
        return 1 + sum(
            1 for v in values.values() if not math.isnan(v) and sign * v < sign * mine
        )

    ranks = {lab: rank(lab) for lab in claim.policies}
    hits = [ranks[lab] <= claim.k for lab in claim.policies]
    passed = all(hits) if claim.require == "all" else any(hits)
    order = sorted(
        (lab for lab in labels if not math.isnan(values[lab])),
        key=lambda lab: sign * values[lab],
    )
    shown = ", ".join(f"{lab} {values[lab]:.4g}" for lab in order[: claim.k + 1])
    placed = ", ".join(
        f"{lab} #{'n/a' if math.isinf(r) else int(r)}" for lab, r in ranks.items()
    )
    evidence = f"{placed} (needs {claim.require} <= {claim.k}); best: {shown}"
    return passed, evidence, values


def _check_within_band(
    claim: WithinBand, env: str, rows: Sequence[Mapping[str, Any]]
) -> tuple[bool, str, dict[str, float]]:
    mine = row_value(find_row(rows, env, claim.policy), "final_regret_mean")
    means = {
        lab: row_value(find_row(rows, env, lab), "final_regret_mean")
        for lab in claim.among
    }
    finite = {lab: v for lab, v in means.items() if not math.isnan(v)}
    if not finite or math.isnan(mine):
        return (
            False,
            f"{claim.policy} {mine:.4g}; no baseline result",
            {claim.policy: mine},
        )
    best = min(finite, key=lambda lab: finite[lab])
    std = row_value(find_row(rows, env, best), "final_regret_std")
    std = 0.0 if math.isnan(std) else std
    bound = finite[best] + claim.width * std
    passed = mine <= bound
    evidence = (
        f"{claim.policy} {mine:.4g} vs best {best} {finite[best]:.4g} + "
        f"{claim.width:g} x std {std:.4g} = {bound:.4g}"
    )
    return passed, evidence, {claim.policy: mine, best: finite[best], "bound": bound}


def _evaluate_equal(claim: Equal, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    envs = list(claim.envs or [])
    passed = True
    evidence: list[str] = []
    values: dict[str, dict[str, float | None]] = {}
    for label in claim.policies:
        per_env = {
            env: per_seed_values(rows, env, label, claim.metric, claim.at)
            for env in envs
        }
        reference = per_env[envs[0]]
        ok = bool(reference)
        worst = 0.0
        for env in envs[1:]:
            other = per_env[env]
            if not other or set(other) != set(reference):
                ok = False
                continue
            gap = max(abs(other[s] - reference[s]) for s in reference)
            worst = max(worst, gap)
            ok = ok and gap <= claim.tolerance
        passed = passed and ok
        means = {
            env: (sum(v.values()) / len(v) if v else None) for env, v in per_env.items()
        }
        values[label] = means
        shown = ", ".join(
            f"{env} {'n/a' if m is None else f'{m:.4g}'}" for env, m in means.items()
        )
        evidence.append(
            f"{label}: {shown}; largest per-seed gap {worst:.3g} "
            f"(needs <= {claim.tolerance:g}) -> {verdict_word(ok)}"
        )
    # an invariance is checked seed by seed: firm on any number of seeds, warm-up or not
    return _verdict(claim, [(passed, True)], "; ".join(evidence), values, [])


def _evaluate_grows_less(
    claim: GrowsLess,
    rows: Sequence[Mapping[str, Any]],
    level: float,
    horizon: int | None,
) -> dict[str, Any]:
    a, b = list(claim.envs or [])
    values: dict[str, dict[str, float | None]] = {}
    changes: dict[str, float] = {}
    parts: list[str] = []
    for label in (claim.policy, claim.other):
        va = metric_value(find_row(rows, a, label), claim.metric, claim.at)
        vb = metric_value(find_row(rows, b, label), claim.metric, claim.at)
        changes[label] = vb - va
        values[label] = {
            k: (v if math.isfinite(v) else None)
            for k, v in {a: va, b: vb, "change": vb - va}.items()
        }
        parts.append(f"{label} {va:.4g} -> {vb:.4g} ({vb - va:+.4g})")
    passed = changes[claim.policy] < changes[claim.other]
    paired = paired_grows_less(claim, rows, passed, level)
    labels = [claim.policy, claim.other]
    blockers = [
        f"{env}: {why}"
        for env in (a, b)
        for why in warmup_blockers(rows, env, labels, horizon)
    ]
    status = None if blockers else passed
    evidence = f"{a} -> {b}: " + "; ".join(parts)
    evidence += f" -> {_word(status, blockers)}{_bracketed(paired)}"
    decisive = all(p["qualifier"] == "decisive" for p in paired) and bool(paired)
    return _verdict(claim, [(status, decisive)], evidence, values, paired)


def _bracketed(paired: Sequence[Mapping[str, Any]]) -> str:
    """The paired part of an evidence string: `` [paired ...; paired ...]`` or nothing."""
    if not paired:
        return ""
    return " [" + "; ".join(paired_text(p) for p in paired) + "]"


def _word(status: bool | None, blockers: Sequence[str]) -> str:
    """``PASS``, ``FAIL``, or ``not decided (why)`` for an environment's evidence."""
    if status is None:
        return f"{verdict_word(None)} ({'; '.join(blockers)})"
    return verdict_word(status)


def _labels(claim: Any) -> list[str]:
    """Every policy label a claim names (``top-k`` lists them in a field, others say)."""
    named = claim.policies
    return list(named) if isinstance(named, list) else list(named())


def evaluate_claim(
    claim: Any,
    rows: Sequence[Mapping[str, Any]],
    halves: Mapping[tuple[str, str], tuple[float, float]],
    *,
    level: float = 0.95,
    horizon: int | None = None,
) -> dict[str, Any]:
    """Evaluate one claim against summary rows.

    Args:
        claim: A claim model (see :func:`parse_claim`).
        rows: ``summary.json`` result rows; each has ``env`` and ``label`` keys (and
            ``per_seed`` for ``equal`` claims, ``warmup`` and ``n_seeds`` for the standing
            of the verdict, ``claims.standing``).
        halves: (env, label) -> (R(T/2), R(T)) of the mean cumulative regret curve, used by
            ``sublinear`` and ``linear`` claims.
        level: Confidence level of the paired intervals (the config's ``ci_level``).
        horizon: The runs' horizon T: an environment where a compared policy spends at
            least half of it in warm-up decides nothing (None: no such check).

    Returns:
        ``{"id", "text", "kind", "passed", "verdict", "indicative", "evidence", "values",
        "paired"}`` and the claim's ``quote``, ``where`` and ``stricter`` when it has them.
        ``passed`` is True, False or None (not decided: an environment left open by a
        warm-up, and none that FAILs), ``verdict`` says it in a word (``PASS``, ``FAIL``,
        ``not decided``), ``indicative`` is True when the verdict rests on too little
        (``claims.standing``); ``values`` maps each environment to the numbers the decision
        used (for ``equal`` and ``grows-less``: each policy to its mean per environment);
        ``paired`` lists the paired comparisons of the kinds that compare policies
        (``claims.evidence``; empty for the others), and the evidence of each environment
        ends with them in brackets. Verdicts are decided by means alone.
    """
    if isinstance(claim, Equal):
        return _evaluate_equal(claim, rows)
    if isinstance(claim, GrowsLess):
        return _evaluate_grows_less(claim, rows, level, horizon)
    named = claim.env_labels()
    envs = named if named else list(dict.fromkeys(r["env"] for r in rows))
    statuses: list[tuple[bool | None, bool]] = [] if envs else [(False, True)]
    evidence: list[str] = [] if envs else ["no results to check"]
    values: dict[str, dict[str, float | None]] = {}
    paired: list[dict[str, Any]] = []
    for env in envs:
        ok, text, numbers = _check_one(claim, env, rows, halves)
        compared = [
            label
            for label in dict.fromkeys([*numbers, *_labels(claim)])
            if find_row(rows, env, label) is not None
        ]
        blockers = warmup_blockers(rows, env, compared, horizon)
        status = None if blockers else ok
        pairs = paired_evidence(claim, env, rows, numbers, ok, level)
        paired += pairs
        prefix = "" if len(envs) == 1 and named else f"{env}: "
        evidence.append(
            f"{prefix}{text} -> {_word(status, blockers)}{_bracketed(pairs)}"
        )
        statuses.append((status, firm(pairs, rows, env, compared)))
        values[env] = {k: (v if math.isfinite(v) else None) for k, v in numbers.items()}
    return _verdict(claim, statuses, "; ".join(evidence), values, paired)


def _verdict(
    claim: Any,
    statuses: Sequence[tuple[bool | None, bool]],
    evidence: str,
    values: dict[str, dict[str, float | None]],
    paired: list[dict[str, Any]],
) -> dict[str, Any]:
    """A claim's entry in ``summary.json`` (see :func:`evaluate_claim`)."""
    passed, indicative = combine(statuses)
    return {
        "id": claim.id,
        "text": claim.statement(),
        "kind": claim.kind,
        "passed": passed,
        "verdict": verdict_word(passed),
        "indicative": indicative,
        **claim.source(),
        "evidence": evidence,
        "values": values,
        "paired": paired,
    }


def evaluate_claims(
    claims: Sequence[Any],
    rows: Sequence[Mapping[str, Any]],
    halves: Mapping[tuple[str, str], tuple[float, float]],
    *,
    level: float = 0.95,
    horizon: int | None = None,
) -> list[dict[str, Any]]:
    """Evaluate every claim (see :func:`evaluate_claim`), in order."""
    return [
        evaluate_claim(c, rows, halves, level=level, horizon=horizon) for c in claims
    ]
