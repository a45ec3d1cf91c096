"""Paired evidence for the claims that compare policies: per-seed differences, t-interval.

Every policy of a config runs on the same seeds, and an environment draws its contexts and
noise from the seed (common random numbers), so two policies' results on one seed are a pair.
A claim is decided by means over seeds (``claims.decide``); for the kinds that compare
policies this module adds the paired evidence on the comparison that decides the claim, on
each environment, without changing the verdict:

    kind                  difference d_s on seed s
    top-k                 m(policy) - m(rival); the rival is the k-th best of the OTHER compared
                          policies by mean (ties: the claim's policies first, then config
                          order): when the policy ranks <= k it is the one that would push it
                          out by overtaking it, when it ranks > k the last of the k that beat
                          it; one entry per policy
    lowest-final-regret   final regret(policy) - final regret(best other by mean)
    below                 m(policy) - factor * m(other)
    grows-less            [m(policy, to) - m(policy, from)] - [m(other, to) - m(other, from)]

where m is the claim's metric (at checkpoint ``at`` when given; the legacy ``n_updates`` is
read from the declared metric's per-seed values, the legacy ``seconds`` has none). Only seeds
with a value for every term are paired. Reported: n (paired seeds), the mean of d and its
Student-t interval at the config's ``ci_level`` (``summarise.stats.t_interval``), and a qualifier:

    decisive        n >= 2 and the interval excludes 0 on the verdict's side
    within noise    n >= 2 and it does not (it contains 0, or lies on the other side: possible
                    only when seeds are missing, since with every seed mean d is the
                    difference of the means the verdict used)
    too few pairs   n < 2 (no interval)

The verdict's side is the sign of d the (mean-based) verdict stands for: negative for a
passing ``below`` / ``grows-less`` / ``lowest-final-regret``, positive for a failing one; for
``top-k`` negative when the policy ranks <= k on a lower-is-better metric (regret), positive on a
higher-is-better one (reward, CTR), and the other way round when it ranks > k.
``seconds-ratio`` (timings: not drawn from the seed) and ``within-band`` (a band of one
standard deviation, not a comparison of means) get no paired evidence, nor do the kinds about a
single policy.

Example:
    >>> entry = paired_difference({0: 3.0, 1: 5.0, 2: 4.0}, {0: 1.0, 1: 2.0, 2: 2.0}, 0.95)
    >>> entry["n"], round(entry["mean"], 3), [round(x, 3) for x in entry["ci"]]
    (3, 2.333, [0.899, 3.768])
    >>> qualifier(entry, "positive"), qualifier(entry, "negative")
    ('decisive', 'within noise')
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from banditkit.experiments.config.claims import (
    Below,
    GrowsLess,
    LowestFinalRegret,
    TopK,
    declared_metric,
    named,
)
from banditkit.experiments.summarise.claims.rows import (
    higher_is_better,
    per_seed_values,
)
from banditkit.experiments.summarise.stats import t_interval

__all__ = [
    "QUALIFIERS",
    "paired_difference",
    "paired_evidence",
    "paired_grows_less",
    "paired_overview",
    "paired_text",
    "qualifier",
]

QUALIFIERS = ("decisive", "within noise", "too few pairs")
"""The qualifiers of a paired comparison (see the module docstring)."""


def paired_difference(
    a: Mapping[int, float],
    b: Mapping[int, float],
    level: float,
    *,
    factor: float = 1.0,
) -> dict[str, Any]:
    """Mean and t-interval of ``a[s] - factor * b[s]`` over the seeds s in both.

    Args:
        a: Seed -> value (e.g. ``claim_rows.per_seed_values``) of the first term.
        b: Seed -> value of the second term.
        level: Confidence level of the interval.
        factor: Multiplies ``b`` (a ``below`` claim's factor).

    Returns:
        ``{"n", "seeds", "mean", "ci"}``: the paired seeds (sorted), the mean difference
        (None when n = 0) and its Student-t interval ``[low, high]`` (None when n < 2).
        Pairs with a non-finite value are left out.
    """
    seeds = sorted(
        s for s in set(a) & set(b) if math.isfinite(a[s]) and math.isfinite(b[s])
    )
    diffs = [a[s] - factor * b[s] for s in seeds]
    n = len(diffs)
    mean = sum(diffs) / n if n else None
    ci = list(t_interval(diffs, level)) if n >= 2 else None
    return {"n": n, "seeds": seeds, "mean": mean, "ci": ci}


def qualifier(entry: Mapping[str, Any], side: str) -> str:
    """``decisive``, ``within noise`` or ``too few pairs`` for a verdict on ``side``.

    ``side`` is the sign of the difference the verdict stands for: ``negative`` or
    ``positive``.
    """
    if entry["n"] < 2 or entry["ci"] is None:
        return "too few pairs"
    low, high = entry["ci"]
    if (side == "negative" and high < 0) or (side == "positive" and low > 0):
        return "decisive"
    return "within noise"


def _entry(
    env: str,
    policy: str,
    other: str,
    metric: str,
    diff: dict[str, Any],
    side: str,
    level: float,
    factor: float = 1.0,
) -> dict[str, Any]:
    return {
        "env": env,
        "policy": policy,
        "other": other,
        "metric": metric,
        "factor": factor,
        **diff,
        "level": level,
        "verdict_side": side,
        "qualifier": qualifier(diff, side),
    }


def _side(ok: bool, lower_wins: bool) -> str:
    """The sign of d a verdict stands for: a pass of "lower wins" means d below 0."""
    return "negative" if ok == lower_wins else "positive"


def paired_evidence(
    claim: Any,
    env: str,
    rows: Sequence[Mapping[str, Any]],
    numbers: Mapping[str, float],
    ok: bool,
    level: float,
) -> list[dict[str, Any]]:
    """The paired comparisons deciding ``claim`` on ``env`` (empty for other kinds).

    Args:
        claim: A claim model.
        env: Environment label.
        rows: The summary's result rows.
        numbers: Label -> mean the verdict used on ``env`` (``claims``' per-env values).
        ok: The verdict on ``env``.
        level: Confidence level of the intervals (the config's ``ci_level``).

    Returns:
        One entry per comparison: ``{"env", "policy", "other", "metric", "factor", "n",
        "seeds", "mean", "ci", "level", "verdict_side", "qualifier"}``.
    """
    if isinstance(claim, Below):
        metric, at = claim.metric, claim.at
        pairs = [(claim.policy, claim.other, ok, True)]
        factor = claim.factor
    elif isinstance(claim, LowestFinalRegret):
        metric, at, factor = "final_regret", None, 1.0
        rival = _kth_other(claim.policy, numbers, 1, 1.0)
        pairs = [] if rival is None else [(claim.policy, rival, ok, True)]
    elif isinstance(claim, TopK):
        metric, at, factor = claim.metric, claim.at, 1.0
        name = declared_metric(metric, at) or metric
        lower_wins = not higher_is_better(rows, name)
        sign = 1.0 if lower_wins else -1.0
        pairs = []
        for policy in claim.policies:
            rival = _kth_other(policy, numbers, claim.k, sign)
            if rival is None or math.isnan(numbers[policy]):
                continue
            hit = sign * numbers[policy] <= sign * numbers[rival]
            pairs.append((policy, rival, hit, lower_wins))
    else:
        return []
    out = []
    for policy, other, verdict, lower_wins in pairs:
        diff = paired_difference(
            per_seed_values(rows, env, policy, metric, at, declared_fallback=True),
            per_seed_values(rows, env, other, metric, at, declared_fallback=True),
            level,
            factor=factor,
        )
        side = _side(verdict, lower_wins)
        out.append(
            _entry(env, policy, other, named(metric, at), diff, side, level, factor)
        )
    return out


def _kth_other(
    policy: str, numbers: Mapping[str, float], k: int, sign: float
) -> str | None:
    """The k-th best label other than ``policy`` by ``sign * mean`` (None: fewer than k)."""
    others = sorted(
        (lab for lab, v in numbers.items() if lab != policy and not math.isnan(v)),
        key=lambda lab: sign * numbers[lab],
    )
    return others[k - 1] if len(others) >= k else None


def paired_grows_less(
    claim: GrowsLess, rows: Sequence[Mapping[str, Any]], passed: bool, level: float
) -> list[dict[str, Any]]:
    """The paired difference of the two policies' changes of a ``grows-less`` claim.

    d_s = [m(policy, to) - m(policy, from)] - [m(other, to) - m(other, from)] on the seeds
    with all four values; ``env`` of the entry is ``"from -> to"``.
    """
    a, b = list(claim.envs or [])

    def change(label: str) -> dict[int, float]:
        start, end = (
            per_seed_values(
                rows, e, label, claim.metric, claim.at, declared_fallback=True
            )
            for e in (a, b)
        )
        return {s: end[s] - start[s] for s in set(start) & set(end)}

    diff = paired_difference(change(claim.policy), change(claim.other), level)
    side = _side(passed, True)
    metric = f"change of {named(claim.metric, claim.at)}"
    return [_entry(f"{a} -> {b}", claim.policy, claim.other, metric, diff, side, level)]


def paired_text(entry: Mapping[str, Any]) -> str:
    """One comparison as the evidence writes it.

    Example:
        >>> diff = paired_difference({0: 3.0, 1: 5.0}, {0: 1.0, 1: 2.0}, 0.96)
        >>> paired_text(_entry("e", "A", "B", "final_regret", diff, "positive", 0.96))
        'paired A - B +2.5 ± 7.95 (96% CI, 2 seeds, within noise)'
        >>> paired_text(_entry("e", "A", "B", "x", paired_difference({}, {}, 0.9),
        ...                    "negative", 0.9, factor=0.5))
        'paired A - 0.5 x B: no seed with both values (too few pairs)'
    """
    scale = "" if entry["factor"] == 1.0 else f"{entry['factor']:g} x "
    change = "change of " if str(entry["metric"]).startswith("change of ") else ""
    head = f"paired {change}{entry['policy']} - {scale}{change}{entry['other']}"
    n, mean, ci = entry["n"], entry["mean"], entry["ci"]
    if n == 0:
        return f"{head}: no seed with both values ({entry['qualifier']})"
    if ci is None:
        return f"{head} {mean:+.4g} (1 seed: {entry['qualifier']})"
    half = (ci[1] - ci[0]) / 2
    return (
        f"{head} {mean:+.4g} ± {half:.3g} ({entry['level'] * 100:g}% CI, {n} seeds, "
        f"{entry['qualifier']})"
    )


def paired_overview(entries: Sequence[Mapping[str, Any]]) -> str:
    """The qualifiers of a claim's comparisons in a few words (the report's column).

    Example:
        >>> paired_overview([{"env": "h1", "policy": "A", "qualifier": "decisive"},
        ...                  {"env": "h2", "policy": "A", "qualifier": "within noise"}])
        'decisive: h1; within noise: h2'
        >>> paired_overview([{"env": "h1", "policy": "A", "qualifier": "decisive"}])
        'decisive'
        >>> paired_overview([])
        '-'
    """
    if not entries:
        return "-"
    several = len({e["policy"] for e in entries}) > 1
    groups: dict[str, list[str]] = {}
    for e in entries:
        where = f"{e['env']} ({e['policy']})" if several else str(e["env"])
        groups.setdefault(str(e["qualifier"]), []).append(where)
    if len(groups) == 1:
        (only,) = groups
        return only if len(entries) == 1 else f"all {only}"
    return "; ".join(f"{q}: {', '.join(groups[q])}" for q in QUALIFIERS if q in groups)
