"""How an invalid experiment config is explained: ConfigError and pydantic's errors in words.

Every problem pydantic finds becomes one line naming its field (``policies[1].params``), the
problem and the value given; an unknown field gets the closest known names as a hint.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any, get_args

from pydantic import ValidationError

from banditkit.core.errors import BanditkitError
from banditkit.experiments.config.claims import Claim

__all__ = ["ConfigError", "format_validation_error"]


class ConfigError(BanditkitError, ValueError):
    """An invalid experiment config; the message names the file, the field and the problem."""

    def __init__(
        self, message: str, *, source: str | None = None, field: str | None = None
    ):
        self.source = source
        self.field = field
        where = ": ".join(p for p in (source, field) if p)
        super().__init__(f"{where}: {message}" if where else message)


_CLAIM_FIELDS = {
    get_args(member.model_fields["kind"].annotation)[0]: list(member.model_fields)
    for member in get_args(get_args(Claim)[0])
}
"""The fields of each claim kind (its tag is what pydantic adds to an error's location)."""


def _loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _describe(error: Mapping[str, Any], known_fields: list[str]) -> tuple[str, str]:
    """(field, message) for one pydantic error."""
    loc = tuple(
        p
        for p in error["loc"]
        if not (isinstance(p, str) and p.startswith("function-"))
    )
    # Union members and discriminator tags add noise to the location.
    loc = tuple(p for p in loc if not (isinstance(p, str) and ("[" in p and "]" in p)))
    if len(loc) > 2 and loc[0] == "claims" and loc[2] in _CLAIM_FIELDS:
        loc = loc[:2] + loc[3:]
    field = _loc(loc)
    kind = error["type"]
    given = error.get("input")
    if kind == "missing":
        return field, "required field is missing"
    if kind == "extra_forbidden":
        name = str(loc[-1]) if loc else ""
        close = difflib.get_close_matches(name, known_fields, n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        return field, f"unknown field.{hint} Known fields: {', '.join(known_fields)}"
    message = str(error["msg"])
    if message.startswith("Value error, "):
        message = message[len("Value error, ") :]
    if kind not in {"value_error", "assertion_error", "union_tag_invalid"}:
        message = f"{message}; got {given!r}"
    return field, message


def format_validation_error(
    exc: ValidationError, fields_by_section: Mapping[str, list[str]], source: str
) -> ConfigError:
    """One ConfigError for every problem pydantic found, each naming its field.

    ``fields_by_section`` lists the known fields of the top level (key "") and of each
    section, for the "did you mean" hints of unknown fields.
    """
    lines = []
    first_field: str | None = None
    for error in exc.errors():
        loc = error["loc"]
        section = str(loc[0]) if len(loc) > 1 and isinstance(loc[0], str) else ""
        if section == "layout" and "panels" in loc[:-1]:
            section = "panels"
        fields = fields_by_section.get(section, fields_by_section[""])
        if section == "claims" and len(loc) > 2 and loc[2] in _CLAIM_FIELDS:
            fields = _CLAIM_FIELDS[str(loc[2])]
        field, message = _describe(error, fields)
        first_field = first_field or field
        lines.append(f"{field or '(top level)'}: {message}")
    if len(lines) == 1:
        return ConfigError(lines[0].split(": ", 1)[1], source=source, field=first_field)
    body = "\n  - ".join(lines)
    return ConfigError(f"{len(lines)} problems:\n  - {body}", source=source)
