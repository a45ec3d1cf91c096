"""Claims: declarative checks of a paper's statements, evaluated on stored results.

A claim is one entry of a config's ``claims:`` list. Its ``kind`` picks the check:

    kind                  passes when (means over seeds, per environment)
    lowest-final-regret   policy has the lowest final regret of all policies (or of ``among``)
    below                 metric(policy) < factor * metric(other); metric: final_regret,
                          seconds or n_updates
    seconds-ratio         seconds(policy) / seconds(other) < below
    regret-below          final regret(policy) < value
    sublinear             R(T) - R(T/2) < fraction * R(T/2): the regret of the second half
                          of the horizon is smaller than a fraction of the first half's

``policy`` and ``other`` name a policy label (or a policy name used by one entry only);
``env`` names an environment label, and a claim without ``env`` must hold on every
environment of the experiment. A claim is never hidden: it is reported PASS or FAIL with the
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

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

__all__ = [
    "Below",
    "Claim",
    "LowestFinalRegret",
    "RegretBelow",
    "SecondsRatio",
    "Sublinear",
    "evaluate_claim",
    "evaluate_claims",
    "parse_claim",
]

_METRIC_KEYS = {
    "final_regret": "final_regret_mean",
    "seconds": "seconds_mean",
    "n_updates": "n_updates_mean",
}


class _ClaimBase(BaseModel):
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
    policy: str = Field(description="Policy label the claim is about.")

    def policies(self) -> list[str]:
        """Policy labels this claim refers to."""
        return [self.policy]

    def statement(self) -> str:
        """The claim in words (``text`` when given)."""
        return self.text or self._default_text()

    def _default_text(self) -> str:  # pragma: no cover - overridden
        return self.id


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


class Below(_ClaimBase):
    """``metric(policy) < factor * metric(other)``."""

    kind: Literal["below"]
    other: str
    metric: Literal["final_regret", "seconds", "n_updates"] = "final_regret"
    factor: float = Field(default=1.0, gt=0)

    def policies(self) -> list[str]:
        """Policy labels this claim refers to."""
        return [self.policy, self.other]

    def _default_text(self) -> str:
        scale = "" if self.factor == 1.0 else f"{self.factor:g} x "
        return f"{self.metric} of {self.policy} is below {scale}that of {self.other}"


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


class Sublinear(_ClaimBase):
    """``R(T) - R(T/2) < fraction * R(T/2)`` on the mean cumulative regret curve R.

    Linear regret gives a ratio of 1, sqrt(T) regret about 0.41, log(T) regret close to 0.
    """

    kind: Literal["sublinear"]
    fraction: float = Field(default=0.8, gt=0, le=1)

    def _default_text(self) -> str:
        return f"regret of {self.policy} is sublinear (second half < {self.fraction:g} x first)"


Claim = Annotated[
    LowestFinalRegret | Below | SecondsRatio | RegretBelow | Sublinear,
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
        key = _METRIC_KEYS[claim.metric]
        a = _value(_row(rows, env, claim.policy), key)
        b = _value(_row(rows, env, claim.other), key)
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
    raise TypeError(f"not a claim: {claim!r}")  # pragma: no cover


def evaluate_claim(
    claim: Any,
    rows: Sequence[Mapping[str, Any]],
    halves: Mapping[tuple[str, str], tuple[float, float]],
) -> dict[str, Any]:
    """Evaluate one claim against summary rows.

    Args:
        claim: A claim model (see :func:`parse_claim`).
        rows: ``summary.json`` result rows; each has ``env`` and ``label`` keys.
        halves: (env, label) -> (R(T/2), R(T)) of the mean cumulative regret curve, used by
            ``sublinear`` claims.

    Returns:
        ``{"id", "text", "kind", "passed", "evidence", "values"}``; ``values`` maps each
        environment to the numbers the decision used.
    """
    envs = [claim.env] if claim.env else list(dict.fromkeys(r["env"] for r in rows))
    passed = bool(envs)
    evidence: list[str] = []
    values: dict[str, dict[str, float | None]] = {}
    for env in envs:
        ok, text, numbers = _check_one(claim, env, rows, halves)
        passed = passed and ok
        prefix = "" if len(envs) == 1 and claim.env else f"{env}: "
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
