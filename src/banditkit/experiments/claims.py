"""Claims: declarative checks of a paper's statements, evaluated on stored results.

A claim is one entry of a config's ``claims:`` list. Its ``kind`` picks the check:

    kind                  passes when (means over seeds, per environment)
    lowest-final-regret   policy has the lowest final regret of all policies (or of ``among``)
    below                 metric(policy) < factor * metric(other)
    seconds-ratio         seconds(policy) / seconds(other) < below
    regret-below          final regret(policy) < value
    sublinear             R(T) - R(T/2) < fraction * R(T/2): the regret of the second half
                          of the horizon is smaller than a fraction of the first half's
    top-k                 each of ``policies`` (or, with ``require: any``, at least one) is
                          among the k best of all policies (or of ``among``) by ``metric``
    equal                 each of ``policies`` has the same per-seed final ``metric`` on every
                          environment of ``envs`` (within ``tolerance``; an invariance)

    value-below           metric(policy) < value

Metrics (``metric``): any metric the environments declare (``core.records``: ``regret`` is
R(t), ``average_regret`` R(t)/t, ``weak_regret``, ``reward``, ``n_updates``, ...), at the final
round or, with ``at: t``, at the checkpoint t (one of the config's ``checkpoints:``); the
direction (lower or higher is better) comes from the declaration. The names of the first
version are kept: final_regret (lower is better), final_reward (sum of rewards; higher is
better), ctr (final_reward / recorded rounds, e.g. clicks per accepted event of a replay;
higher is better), seconds (time in the policy) and n_updates (lower is better).

``policy``, ``other`` and the entries of ``policies`` / ``among`` name a policy label (or a
policy name used by one entry only); ``env`` names an environment label, ``envs`` a list of
them, and a claim with neither must hold on every environment of the experiment. A claim is never hidden: it is reported PASS or FAIL with the
numbers it was decided on, in ``summary.json`` and in ``report.md``.

Example:
    >>> claim = parse_claim({"id": "c1", "kind": "below", "policy": "a", "other": "b"})
    >>> rows = [{"env": "e", "label": "a", "final_regret_mean": 1.0},
    ...         {"env": "e", "label": "b", "final_regret_mean": 2.0}]
    >>> evaluate_claim(claim, rows, {})["passed"]
    True
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator

__all__ = [
    "LEGACY_METRICS",
    "Below",
    "Claim",
    "Equal",
    "LowestFinalRegret",
    "Metric",
    "RegretBelow",
    "SecondsRatio",
    "Sublinear",
    "TopK",
    "ValueBelow",
    "declared_metric",
    "evaluate_claim",
    "evaluate_claims",
    "metric_value",
    "parse_claim",
]

Metric = str
"""A declared metric name, or one of :data:`LEGACY_METRICS` (see the module docstring)."""

LEGACY_METRICS: dict[str, tuple[str, str | None]] = {
    "final_regret": ("final_regret_mean", "regret"),
    "final_reward": ("final_reward_mean", "reward"),
    "ctr": ("ctr_mean", "average_reward"),
    "seconds": ("seconds_mean", None),
    "n_updates": ("n_updates_mean", "n_updates"),
}
"""Claim metric names of the first version -> (summary row key, declared metric)."""

_HIGHER_IS_BETTER = {"final_reward", "ctr"}


def declared_metric(metric: str, at: int | None) -> str | None:
    """The declared metric a claim's ``metric`` reads (None: the row's legacy key).

    Example:
        >>> declared_metric("ctr", None), declared_metric("ctr", 100)
        (None, 'average_reward')
        >>> declared_metric("weak_regret", None)
        'weak_regret'
    """
    if metric in LEGACY_METRICS:
        return None if at is None else LEGACY_METRICS[metric][1]
    return metric


class _ClaimCore(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(
        min_length=1, description="A short, unique identifier of the claim."
    )
    text: str | None = Field(
        default=None,
        description="The statement as the paper makes it (default: generated).",
    )
    env: str | None = Field(
        default=None,
        description="Environment label; None: must hold on every environment.",
    )
    envs: list[str] | None = Field(
        default=None,
        min_length=1,
        description="Environment labels the claim must hold on (instead of `env`).",
    )

    @model_validator(mode="after")
    def _one_env_field(self) -> _ClaimCore:
        if self.env is not None and self.envs is not None:
            raise ValueError(
                "give either `env:` (one label) or `envs:` (a list), not both"
            )
        return self

    def env_labels(self) -> list[str] | None:
        """The environment labels named by ``env`` / ``envs`` (None: every environment)."""
        if self.envs is not None:
            return list(self.envs)
        return [self.env] if self.env is not None else None

    def statement(self) -> str:
        """The claim in words (``text`` when given)."""
        return self.text or self._default_text()

    def _default_text(self) -> str:  # pragma: no cover - overridden
        return self.id


class _ClaimBase(_ClaimCore):
    policy: str = Field(description="Policy label the claim is about.")

    def policies(self) -> list[str]:
        """Policy labels this claim refers to."""
        return [self.policy]


class LowestFinalRegret(_ClaimBase):
    """``policy`` has the lowest mean final regret (of all policies, or of ``among``)."""

    kind: Literal["lowest-final-regret"]
    among: list[str] | None = Field(
        default=None,
        description="Policies compared (default: every policy of the config).",
    )

    def policies(self) -> list[str]:
        """Policy labels this claim refers to."""
        return [self.policy, *(self.among or [])]

    def _default_text(self) -> str:
        return f"{self.policy} has the lowest final regret"


def _at_field() -> Any:
    return Field(
        default=None,
        gt=0,
        strict=True,
        description="Checkpoint round the metric is read at (default: the final round).",
    )


class Below(_ClaimBase):
    """``metric(policy) < factor * metric(other)``."""

    kind: Literal["below"]
    other: str
    metric: Metric = "final_regret"
    at: int | None = _at_field()
    factor: float = Field(default=1.0, gt=0)

    def policies(self) -> list[str]:
        """Policy labels this claim refers to."""
        return [self.policy, self.other]

    def _default_text(self) -> str:
        scale = "" if self.factor == 1.0 else f"{self.factor:g} x "
        return (
            f"{_named(self.metric, self.at)} of {self.policy} is below {scale}that of "
            f"{self.other}"
        )


class SecondsRatio(_ClaimBase):
    """``seconds(policy) / seconds(other) < below``."""

    kind: Literal["seconds-ratio"]
    other: str
    below: float = Field(gt=0)

    def policies(self) -> list[str]:
        """Policy labels this claim refers to."""
        return [self.policy, self.other]

    def _default_text(self) -> str:
        return f"seconds of {self.policy} / {self.other} is below {self.below:g}"


class RegretBelow(_ClaimBase):
    """``final regret(policy) < value``."""

    kind: Literal["regret-below"]
    value: float

    def _default_text(self) -> str:
        return f"final regret of {self.policy} is below {self.value:g}"


class ValueBelow(_ClaimBase):
    """``metric(policy) < value``, at the final round or at checkpoint ``at``."""

    kind: Literal["value-below"]
    metric: Metric
    at: int | None = _at_field()
    value: float

    def _default_text(self) -> str:
        return (
            f"{_named(self.metric, self.at)} of {self.policy} is below {self.value:g}"
        )


def _named(metric: str, at: int | None) -> str:
    return metric if at is None else f"{metric} at t={at}"


class Sublinear(_ClaimBase):
    """``R(T) - R(T/2) < fraction * R(T/2)`` on the mean cumulative regret curve R.

    Linear regret gives a ratio of 1, sqrt(T) regret about 0.41, log(T) regret close to 0.
    """

    kind: Literal["sublinear"]
    fraction: float = Field(default=0.8, gt=0, le=1)

    def _default_text(self) -> str:
        return f"regret of {self.policy} is sublinear (second half < {self.fraction:g} x first)"


class TopK(_ClaimCore):
    """Each of ``policies`` (``require: any``: at least one) is among the ``k`` best.

    The rank of a policy is 1 + the number of compared policies with a strictly better mean
    ``metric`` (ties share a rank), so ``k: 1`` reads "no policy is better" (<= every other).
    """

    kind: Literal["top-k"]
    policies: list[str] = Field(
        min_length=1, description="Policies that must rank high."
    )
    k: int = Field(ge=1, strict=True, description="How many best places count.")
    among: list[str] | None = Field(
        default=None,
        description="Policies compared (default: every policy of the config).",
    )
    metric: Metric = "final_regret"
    at: int | None = _at_field()
    require: Literal["all", "any"] = Field(
        default="all", description="Every policy of `policies` must rank, or one."
    )

    def _default_text(self) -> str:
        who = (
            " and ".join(self.policies)
            if self.require == "all"
            else ("one of " + ", ".join(self.policies))
        )
        return f"{who} among the {self.k} best by {_named(self.metric, self.at)}"


class Equal(_ClaimCore):
    """Each of ``policies`` has identical per-seed final ``metric`` across ``envs``.

    An invariance: with common random numbers (run seed s on every environment), a policy
    that ignores what differs between the environments (for example a parameter swept by
    ``env_overrides``) gives the same value for every seed; ``|a - b| <= tolerance``.
    """

    kind: Literal["equal"]
    policies: list[str] = Field(
        min_length=1, description="Policies that must not change."
    )
    envs: list[str] | None = Field(
        default=None, min_length=2, description="Environment labels compared (>= 2)."
    )
    metric: Metric = "final_regret"
    at: int | None = _at_field()
    tolerance: float = Field(default=0.0, ge=0, description="Absolute tolerance.")

    @model_validator(mode="after")
    def _needs_envs(self) -> Equal:
        if self.envs is None or self.env is not None:
            raise ValueError(
                "an `equal` claim compares `envs:` (a list of >= 2 labels)"
            )
        return self

    def _default_text(self) -> str:
        return (
            f"{_named(self.metric, self.at)} of {', '.join(self.policies)} is the same on "
            f"{', '.join(self.envs or [])} (per seed)"
        )


Claim = Annotated[
    LowestFinalRegret
    | Below
    | SecondsRatio
    | RegretBelow
    | ValueBelow
    | Sublinear
    | TopK
    | Equal,
    Field(discriminator="kind"),
]
"""Any claim; the ``kind`` field selects the check."""

_ADAPTER: TypeAdapter[Any] = TypeAdapter(Claim)


def parse_claim(data: Mapping[str, Any]) -> Any:
    """Validate one claim mapping into its model."""
    return _ADAPTER.validate_python(dict(data))


def _row(
    rows: Sequence[Mapping[str, Any]], env: str, label: str
) -> Mapping[str, Any] | None:
    for row in rows:
        if row["env"] == env and row["label"] == label:
            return row
    return None


def _value(row: Mapping[str, Any] | None, key: str) -> float:
    if row is None or row.get(key) is None:
        return math.nan
    return float(row[key])


def _stats(
    row: Mapping[str, Any] | None, metric: str, at: int | None
) -> Mapping[str, Any]:
    """The summary statistics of a declared metric at round ``at`` (None: final)."""
    entry = ((row or {}).get("metrics") or {}).get(metric) or {}
    if at is None:
        return entry.get("final") or {}
    return (entry.get("checkpoints") or {}).get(str(at)) or {}


def metric_value(
    row: Mapping[str, Any] | None, metric: str, at: int | None = None
) -> float:
    """Mean over seeds of ``metric`` in a summary row (NaN when absent).

    Example:
        >>> metric_value({"final_regret_mean": 2.0}, "final_regret")
        2.0
        >>> row = {"metrics": {"regret": {"checkpoints": {"10": {"mean": 1.5}}}}}
        >>> metric_value(row, "regret", 10), metric_value(row, "regret", 20)
        (1.5, nan)
    """
    name = declared_metric(metric, at)
    if name is None:
        return _value(row, LEGACY_METRICS[metric][0])
    return _value(_stats(row, name, at), "mean")


def _higher_is_better(rows: Sequence[Mapping[str, Any]], metric: str) -> bool:
    if metric in LEGACY_METRICS:
        return metric in _HIGHER_IS_BETTER
    for row in rows:
        entry = (row.get("metrics") or {}).get(metric)
        if entry is not None:
            return bool(entry.get("higher_is_better", False))
    return False


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
            lab: _value(_row(rows, env, lab), "final_regret_mean") for lab in labels
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
        a = metric_value(_row(rows, env, claim.policy), claim.metric, claim.at)
        b = metric_value(_row(rows, env, claim.other), claim.metric, claim.at)
        passed = a < claim.factor * b
        scale = "" if claim.factor == 1.0 else f"{claim.factor:g} x "
        evidence = f"{claim.policy} {a:.4g} vs {scale}{claim.other} {b:.4g}"
        return passed, evidence, {claim.policy: a, claim.other: b}
    if isinstance(claim, SecondsRatio):
        a = _value(_row(rows, env, claim.policy), "seconds_mean")
        b = _value(_row(rows, env, claim.other), "seconds_mean")
        ratio = a / b if b > 0 else math.inf
        passed = ratio < claim.below
        evidence = (
            f"{claim.policy} {a:.4g} s / {claim.other} {b:.4g} s = {ratio:.4g} "
            f"(needs < {claim.below:g})"
        )
        return passed, evidence, {claim.policy: a, claim.other: b, "ratio": ratio}
    if isinstance(claim, RegretBelow):
        a = _value(_row(rows, env, claim.policy), "final_regret_mean")
        passed = a < claim.value
        return (
            passed,
            f"{claim.policy} {a:.4g} (needs < {claim.value:g})",
            {claim.policy: a},
        )
    if isinstance(claim, ValueBelow):
        a = metric_value(_row(rows, env, claim.policy), claim.metric, claim.at)
        passed = a < claim.value
        return (
            passed,
            f"{claim.policy} {_named(claim.metric, claim.at)} {a:.4g} "
            f"(needs < {claim.value:g})",
            {claim.policy: a},
        )
    if isinstance(claim, Sublinear):
        first, total = halves.get((env, claim.policy), (math.nan, math.nan))
        second = total - first
        ratio = second / first if first > 0 else math.inf
        passed = ratio < claim.fraction
        evidence = (
            f"R(T/2) {first:.4g}, R(T)-R(T/2) {second:.4g}, ratio {ratio:.3g} "
            f"(needs < {claim.fraction:g})"
        )
        return (
            passed,
            evidence,
            {"first_half": first, "second_half": second, "ratio": ratio},
        )
    if isinstance(claim, TopK):
        return _check_top_k(claim, env, rows)
    raise TypeError(f"not a claim: {claim!r}")  # pragma: no cover


def _check_top_k(
    claim: TopK, env: str, rows: Sequence[Mapping[str, Any]]
) -> tuple[bool, str, dict[str, float]]:
    labels = claim.among or [r["label"] for r in rows if r["env"] == env]
    labels = list(dict.fromkeys([*claim.policies, *labels]))
    values = {
        lab: metric_value(_row(rows, env, lab), claim.metric, claim.at)
        for lab in labels
    }
    name = declared_metric(claim.metric, claim.at) or claim.metric
    sign = -1.0 if _higher_is_better(rows, name) else 1.0

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


def _per_seed(
    rows: Sequence[Mapping[str, Any]],
    env: str,
    label: str,
    metric: str,
    at: int | None = None,
) -> dict[int, float]:
    row = _row(rows, env, label)
    name = declared_metric(metric, at)
    if name is None:
        per_seed = (row or {}).get("per_seed") or {}
        seeds = per_seed.get("seed") or []
        values = per_seed.get(metric) or []
    else:
        stats = _stats(row, name, at)
        seeds, values = stats.get("seeds") or [], stats.get("per_seed") or []
    return {int(s): float(v) for s, v in zip(seeds, values, strict=False)}


def _evaluate_equal(claim: Equal, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    envs = list(claim.envs or [])
    passed = True
    evidence: list[str] = []
    values: dict[str, dict[str, float | None]] = {}
    for label in claim.policies:
        per_env = {
            env: _per_seed(rows, env, label, claim.metric, claim.at) for env in envs
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
            f"(needs <= {claim.tolerance:g}) -> {'PASS' if ok else 'FAIL'}"
        )
    return {
        "id": claim.id,
        "text": claim.statement(),
        "kind": claim.kind,
        "passed": passed,
        "evidence": "; ".join(evidence),
        "values": values,
    }


def evaluate_claim(
    claim: Any,
    rows: Sequence[Mapping[str, Any]],
    halves: Mapping[tuple[str, str], tuple[float, float]],
) -> dict[str, Any]:
    """Evaluate one claim against summary rows.

    Args:
        claim: A claim model (see :func:`parse_claim`).
        rows: ``summary.json`` result rows; each has ``env`` and ``label`` keys (and
            ``per_seed`` for ``equal`` claims).
        halves: (env, label) -> (R(T/2), R(T)) of the mean cumulative regret curve, used by
            ``sublinear`` claims.

    Returns:
        ``{"id", "text", "kind", "passed", "evidence", "values"}``; ``values`` maps each
        environment to the numbers the decision used (for ``equal``: each policy to its
        mean per environment).
    """
    if isinstance(claim, Equal):
        return _evaluate_equal(claim, rows)
    named = claim.env_labels()
    envs = named if named else list(dict.fromkeys(r["env"] for r in rows))
    passed = bool(envs)
    evidence: list[str] = []
    values: dict[str, dict[str, float | None]] = {}
    for env in envs:
        ok, text, numbers = _check_one(claim, env, rows, halves)
        passed = passed and ok
        prefix = "" if len(envs) == 1 and named else f"{env}: "
        evidence.append(f"{prefix}{text} -> {'PASS' if ok else 'FAIL'}")
        values[env] = {k: (v if math.isfinite(v) else None) for k, v in numbers.items()}
    if not envs:
        evidence.append("no results to check")
    return {
        "id": claim.id,
        "text": claim.statement(),
        "kind": claim.kind,
        "passed": passed,
        "evidence": "; ".join(evidence),
        "values": values,
    }


def evaluate_claims(
    claims: Sequence[Any],
    rows: Sequence[Mapping[str, Any]],
    halves: Mapping[tuple[str, str], tuple[float, float]],
) -> list[dict[str, Any]]:
    """Evaluate every claim (see :func:`evaluate_claim`), in order."""
    return [evaluate_claim(c, rows, halves) for c in claims]
