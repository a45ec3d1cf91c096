"""The service configuration (YAML) and its validation.

::

    policies:
      - id: rec                       # the URL path segment: /v1/policies/rec/...
        name: linucb                  # a registered policy (banditkit list policies)
        params: {nu: 0.5, seed: 0}    # its hyper-parameters (seed: of its random stream)
        update_every: 1               # learn every N feedbacks, or a static grid:
                                      #   {grid: blce, horizon: 10000} or {grid: [50, 200, 1000]}
        snapshot_every: 10000         # logged events between two snapshots
        join_window_s: 3600           # feedback accepted for this long after the decision
        default_feedback: null        # learned when the window closes without feedback
        token_env: REC_TOKEN          # environment variable holding the bearer token
        horizon: null                 # policy.begin(horizon), for policies that need T
        learning: inline              # or background: learn on a copy, decide meanwhile
    limits: {max_body_bytes: 1048576, max_arms: 1024, max_features: 4096}
    sqlite_synchronous: full          # full (default) or normal

A policy's *model definition* (``name``, ``params``, ``update_every``, ``horizon``,
``learning``) is stored in the database the first time the service runs it; later runs must
give the same definition (replaying the log under another one would not rebuild the same
state). The other fields may change between runs.

A served policy takes :data:`SERVING_DEFAULTS` for the parameters it has and its entry
leaves unset: ``keep_history: false``, because the event log already holds every
observation; kept in the policy's state as well, they would make every snapshot grow with
the log (176 bytes per linucb update at d = 20) and its serialisation stall the service. The
actions are the same bit for bit; give ``keep_history: true`` to keep them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from banditkit.core import POLICIES, policy_name
from banditkit.core.errors import BanditkitError
from banditkit.core.safe_yaml import YamlFileError, read_yaml_file
from banditkit.serve.schedule import make_schedule

__all__ = [
    "ID_PATTERN",
    "SERVING_DEFAULTS",
    "Limits",
    "PolicySpec",
    "ServeConfig",
    "ServeConfigError",
    "build_policy",
    "load_config",
    "serving_params",
]

#: Policy ids and event ids: printable ASCII without spaces (ids are also URL segments).
ID_PATTERN = r"^[A-Za-z0-9_.:-]+$"


#: Parameters a served policy takes unless its entry sets them (module docstring).
SERVING_DEFAULTS: dict[str, Any] = {"keep_history": False}


def serving_params(name: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` and the :data:`SERVING_DEFAULTS` that policy ``name`` has and they omit.

    Raises:
        ValueError: An unknown name (``UnknownNameError``, with suggestions).

    Example:
        >>> serving_params("linucb", {"nu": 0.5})
        {'keep_history': False, 'nu': 0.5}
        >>> serving_params("glm-ucb", {})
        {}
    """
    per_arm = params.get("per_arm", False)
    names = POLICIES.get(policy_name(name, per_arm=per_arm)).param_names()
    defaults = {k: v for k, v in SERVING_DEFAULTS.items() if k in names}
    return {**defaults, **params}


class ServeConfigError(BanditkitError, ValueError):
    """The service configuration (or the database's record of it) is invalid."""


class Limits(BaseModel):
    """Bounds on requests: their size, and how many may wait for the writer.

    A larger request is refused (413 or 422); past ``max_pending`` waiting requests a new
    one is refused 503 with ``Retry-After``, so an overloaded service sheds load instead
    of queueing without end.
    """

    model_config = ConfigDict(extra="forbid")

    max_body_bytes: int = Field(1_048_576, ge=256)
    max_arms: int = Field(1024, ge=1)
    max_features: int = Field(4096, ge=1)
    max_pending: int = Field(4096, ge=1)


class PolicySpec(BaseModel):
    """One served policy (see the module docstring for the fields)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=64, pattern=ID_PATTERN)
    name: str
    params: dict[str, Any] = Field(default_factory=dict)
    update_every: int | dict[str, Any] = 1
    snapshot_every: int = Field(10_000, ge=1)
    join_window_s: float = Field(3600.0, gt=0)
    default_feedback: float | int | None = None
    token_env: str | None = Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    horizon: int | None = Field(None, ge=1)
    learning: Literal["inline", "background"] = "inline"

    @field_validator("update_every")
    @classmethod
    def _schedule(cls, value: int | dict[str, Any]) -> int | dict[str, Any]:
        make_schedule(value)  # raises ValueError naming the problem
        return value

    def definition(self) -> dict[str, Any]:
        """The model definition stored in the database (JSON-able)."""
        return {
            "name": self.name,
            "params": self.params,
            "update_every": self.update_every,
            "horizon": self.horizon,
            "learning": self.learning,
        }


class ServeConfig(BaseModel):
    """The whole configuration: the policies and the service's limits."""

    model_config = ConfigDict(extra="forbid")

    policies: list[PolicySpec] = Field(min_length=1)
    limits: Limits = Field(default_factory=Limits)  # type: ignore[arg-type]
    sqlite_synchronous: Literal["full", "normal"] = "full"

    @field_validator("policies")
    @classmethod
    def _unique(cls, value: list[PolicySpec]) -> list[PolicySpec]:
        ids = [p.id for p in value]
        twice = sorted({i for i in ids if ids.count(i) > 1})
        if twice:
            raise ValueError(f"policy ids must be unique; repeated: {', '.join(twice)}")
        return value

    def policy(self, policy_id: str) -> PolicySpec:
        """The spec of ``policy_id``.

        Raises:
            KeyError: If no policy has this id.
        """
        for spec in self.policies:
            if spec.id == policy_id:
                return spec
        raise KeyError(policy_id)

    def tokens(self, environ: Mapping[str, str] | None = None) -> dict[str, str | None]:
        """Each policy's bearer token, read from the variable its ``token_env`` names.

        Raises:
            ServeConfigError: A named variable is unset or empty (the message names the
                variable, never a token).
        """
        environ = os.environ if environ is None else environ
        out: dict[str, str | None] = {}
        for spec in self.policies:
            if spec.token_env is None:
                out[spec.id] = None
                continue
            token = environ.get(spec.token_env, "")
            if not token:
                raise ServeConfigError(
                    f"policy {spec.id!r}: token_env {spec.token_env} is not set (or empty); "
                    "export it with the bearer token clients will send."
                )
            out[spec.id] = token
        return out


def _message(exc: ValidationError) -> str:
    lines = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "config"
        lines.append(f"{where}: {err['msg']}")
    return "; ".join(lines)


def load_config(source: str | os.PathLike[str] | Mapping[str, Any]) -> ServeConfig:
    """Read and validate a service configuration (a YAML file or a mapping).

    Checks the shape (types, ranges, unique ids, schedules) and builds every policy once,
    so an unknown name or a bad hyper-parameter is reported before the service starts.

    Raises:
        ServeConfigError: The message names the file, the field and what is expected.

    Example:
        >>> cfg = load_config({"policies": [{"id": "rec", "name": "linucb"}]})
        >>> cfg.policies[0].snapshot_every
        10000
    """
    where = "config"
    if isinstance(source, Mapping):
        raw: Any = dict(source)
    else:
        where = str(source)
        try:
            raw = read_yaml_file(source)  # bounded: size, nesting, aliases, numbers
        except YamlFileError as exc:
            raise ServeConfigError(str(exc)) from None
    if not isinstance(raw, dict):
        raise ServeConfigError(f"{where}: must be a mapping with a 'policies' list")
    try:
        config = ServeConfig.model_validate(raw)
    except ValidationError as exc:
        raise ServeConfigError(f"{where}: {_message(exc)}") from None
    for i, spec in enumerate(config.policies):
        try:
            _check_default(build_policy(spec), spec.default_feedback)
        except (ValueError, TypeError, KeyError) as exc:
            raise ServeConfigError(
                f"{where}: policies.{i} ({spec.id!r}): {exc}"
            ) from None
    return config


def build_policy(spec: PolicySpec | Mapping[str, Any]) -> Any:
    """A fresh policy of a spec (or of a stored model definition), horizon given.

    The spec's parameters, with the :data:`SERVING_DEFAULTS` it leaves unset.

    Raises:
        ValueError: An unknown name or bad parameters (``UnknownNameError`` is one).
    """
    import banditkit as bk

    definition = spec.definition() if isinstance(spec, PolicySpec) else dict(spec)
    name = definition["name"]
    policy = bk.make_policy(name, **serving_params(name, definition["params"]))
    horizon = definition.get("horizon")
    if policy.requires_horizon and horizon is None:
        raise ValueError(
            f"{definition['name']} needs the horizon T: give horizon: T in its entry."
        )
    if horizon is not None:
        policy.begin(int(horizon))
    return policy


def _check_default(policy: Any, value: float | None) -> None:
    """Refuse a ``default_feedback`` the policy would not accept."""
    if value is None:
        return
    if policy.family == "assortment" and value != -1:
        raise ValueError(
            f"default_feedback of an assortment policy must be -1 (no purchase) or null; "
            f"got {value!r}."
        )
    action = {"contextual": 0, "dueling": (0, 0), "assortment": (0,)}[policy.family]
    try:
        policy._check_feedback(value, action)
    except ValueError as exc:
        raise ValueError(f"default_feedback: {exc}") from None
