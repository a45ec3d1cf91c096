"""Claim kinds: the checks a config's ``claims:`` list may state (pydantic models).

A claim is one entry of a config's ``claims:`` list. Its ``kind`` picks the check; every kind
also takes ``text`` (the statement in the project's words), ``quote`` and ``where`` (the paper's
sentence it encodes, verbatim, and its section, figure or table; given together) and
``stricter`` (why the claim is the project's own check, beyond the quoted sentence):

    kind                  passes when (means over seeds, per environment)
    lowest-final-regret   policy has the lowest final regret of all policies (or of ``among``)
    below                 metric(policy) < factor * metric(other)
    seconds-ratio         seconds(policy) / seconds(other) < below
    regret-below          final regret(policy) < value
    value-below           metric(policy) < value
    sublinear             R(T) - R(T/2) < fraction * R(T/2): the regret of the second half
                          of the horizon is smaller than a fraction of the first half's
    linear                R(T) - R(T/2) >= fraction * R(T/2): the regret keeps growing at
                          (at least) a fraction of its first-half rate (not sublinear)
    grows-less            from ``envs[0]`` to ``envs[1]`` the metric of policy changes by
                          less than that of other: m(p, b) - m(p, a) < m(o, b) - m(o, a)
    top-k                 each of ``policies`` (or, with ``require: any``, at least one) is
                          among the k best of all policies (or of ``among``) by ``metric``
    equal                 each of ``policies`` has the same per-seed final ``metric`` on every
                          environment of ``envs`` (within ``tolerance``; an invariance)
    within-band           final regret(policy) <= mean + width * std of the best policy of
                          ``among`` (the one with the lowest mean final regret): inside its
                          band or below it

Metrics (``metric``): any metric the environments declare (``core.records``: ``regret`` is
R(t), ``average_regret`` R(t)/t, ``weak_regret``, ``reward``, ``n_updates``, ...), at the final
round or, with ``at: t``, at the checkpoint t (one of the config's ``checkpoints:``); the
direction (lower or higher is better) comes from the declaration. The names of the first
version are kept: final_regret (lower is better), final_reward (sum of rewards; higher is
better), ctr (final_reward / recorded rounds, e.g. clicks per accepted event of a replay;
higher is better), seconds (time in the policy) and n_updates (lower is better).

``policy``, ``other`` and the entries of ``policies`` / ``among`` name a policy label (or a
policy name used by one entry only); ``env`` names an environment label, ``envs`` a list of
them, and a claim with neither must hold on every environment of the experiment.
``summarise.claims`` decides them on a summary.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator

__all__ = [
    "HIGHER_IS_BETTER",
    "LEGACY_METRICS",
    "Below",
    "Claim",
    "Equal",
    "GrowsLess",
    "Linear",
    "LowestFinalRegret",
    "Metric",
    "RegretBelow",
    "SecondsRatio",
    "Sublinear",
    "TopK",
    "ValueBelow",
    "WithinBand",
    "declared_metric",
    "named",
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

HIGHER_IS_BETTER = {"final_reward", "ctr"}
"""Legacy metrics where higher is better (a declared metric says so in its record)."""


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
        description="The statement in the project's words (default: generated).",
    )
    quote: str | None = Field(
        default=None,
        min_length=1,
        description="The paper's sentence this claim encodes, verbatim (with `where`).",
    )
    where: str | None = Field(
        default=None,
        min_length=1,
        description="Where the paper says it: section, figure or table (with `quote`).",
    )
    stricter: str | None = Field(
        default=None,
        min_length=1,
        description=(
            "Set when the claim is the project's own check, stricter than (or beside) the "
            "quoted sentence: why (needs `quote`)."
        ),
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
        if (self.quote is None) != (self.where is None):
            raise ValueError(
                "give `quote:` (the paper's sentence) and `where:` (its section, figure or "
                "table) together"
            )
        if self.stricter is not None and self.quote is None:
            raise ValueError(
                "`stricter:` says how the claim goes beyond a quoted sentence: give "
                "`quote:` and `where:` too"
            )
        return self

    def source(self) -> dict[str, str]:
        """``quote``, ``where`` and ``stricter``, those that are set (for summary.json)."""
        fields = {"quote": self.quote, "where": self.where, "stricter": self.stricter}
        return {k: " ".join(v.split()) for k, v in fields.items() if v is not None}

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


class WithinBand(_ClaimBase):
    """final regret(policy) <= mean + width * std of the best of ``among`` (or below)."""

    kind: Literal["within-band"]
    among: list[str] = Field(min_length=1, description="The baselines compared.")
    width: float = Field(default=1.0, ge=0, description="Band half-width in stds.")

    def policies(self) -> list[str]:
        """Policy labels this claim refers to."""
        return [self.policy, *self.among]

    def _default_text(self) -> str:
        return (
            f"final regret of {self.policy} is within {self.width:g} std of the best of "
            f"{', '.join(self.among)}, or below"
        )


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
            f"{named(self.metric, self.at)} of {self.policy} is below {scale}that of "
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
        return f"{named(self.metric, self.at)} of {self.policy} is below {self.value:g}"


def named(metric: str, at: int | None) -> str:
    """A metric as claims write it: ``regret``, or ``regret at t=1000`` at a checkpoint."""
    return metric if at is None else f"{metric} at t={at}"


class Sublinear(_ClaimBase):
    """``R(T) - R(T/2) < fraction * R(T/2)`` on the mean cumulative regret curve R.

    Linear regret gives a ratio of 1, sqrt(T) regret about 0.41, log(T) regret close to 0.
    """

    kind: Literal["sublinear"]
    fraction: float = Field(default=0.8, gt=0, le=1)

    def _default_text(self) -> str:
        return f"regret of {self.policy} is sublinear (second half < {self.fraction:g} x first)"


class Linear(_ClaimBase):
    """``R(T) - R(T/2) >= fraction * R(T/2)``: the regret does not flatten (linear growth).

    The counterpart of :class:`Sublinear` with the same halves; linear regret gives a
    ratio of 1, so ``fraction: 0.8`` reads "the second half costs at least 80 % of the first".
    """

    kind: Literal["linear"]
    fraction: float = Field(default=0.8, gt=0, le=1)

    def _default_text(self) -> str:
        return f"regret of {self.policy} grows linearly (second half >= {self.fraction:g} x first)"


class GrowsLess(_ClaimBase):
    """From ``envs[0]`` to ``envs[1]``, ``metric`` of ``policy`` changes less than ``other``'s.

    A comparison across two environments (e.g. N = 100 and N = 800 items):
    ``m(policy, b) - m(policy, a) < m(other, b) - m(other, a)`` on the means over seeds.
    """

    kind: Literal["grows-less"]
    other: str
    metric: Metric = "final_regret"
    at: int | None = _at_field()

    @model_validator(mode="after")
    def _two_envs(self) -> GrowsLess:
        if self.envs is None or len(self.envs) != 2 or self.env is not None:
            raise ValueError(
                "a `grows-less` claim compares `envs:` (a list of exactly 2 labels: from, to)"
            )
        return self

    def policies(self) -> list[str]:
        """Policy labels this claim refers to."""
        return [self.policy, self.other]

    def _default_text(self) -> str:
        a, b = self.envs or ["?", "?"]
        return (
            f"{named(self.metric, self.at)} of {self.policy} grows less than that of "
            f"{self.other} from {a} to {b}"
        )


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
        return f"{who} among the {self.k} best by {named(self.metric, self.at)}"


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
            f"{named(self.metric, self.at)} of {', '.join(self.policies)} is the same on "
            f"{', '.join(self.envs or [])} (per seed)"
        )


Claim = Annotated[
    LowestFinalRegret
    | Below
    | SecondsRatio
    | RegretBelow
    | ValueBelow
    | Sublinear
    | Linear
    | GrowsLess
    | TopK
    | Equal
    | WithinBand,
    Field(discriminator="kind"),
]
"""Any claim; the ``kind`` field selects the check."""

_ADAPTER: TypeAdapter[Any] = TypeAdapter(Claim)


def parse_claim(data: Mapping[str, Any]) -> Any:
    """Validate one claim mapping into its model."""
    return _ADAPTER.validate_python(dict(data))
