"""The HTTP API of the decision service (FastAPI; the schema is served at ``/openapi.json``).

This module needs the ``serve`` extra (FastAPI).

    POST /v1/policies/{id}/decide     {"context": {"arms": [[...], ...]}, "event_id"?}
                                      -> {"event_id", "action", "propensity", "model_version"}
    POST /v1/policies/{id}/feedback   {"event_id", "feedback"} -> {"duplicate": bool}
                                      404 unknown event, 409 past its join window
    GET  /v1/policies/{id}            the policy's counts
    GET  /health                      200 while the writer runs and the log is writable
    GET  /metrics                     Prometheus text

A guard in front of FastAPI checks, in this order: that the policy exists (404), its bearer
token when the configuration names one (401, compared in constant time, never logged), and
the size of the body (413). It validates decide and feedback bodies strictly (no strings for
numbers, no NaN, no unknown fields) and answers them itself; the other routes are FastAPI's.
Every refusal is a 4xx whose ``detail`` names the field, and a refused request changes
nothing.
"""

from __future__ import annotations

import asyncio
import gc
import hmac
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from contextlib import asynccontextmanager, suppress
from typing import Annotated, Any

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from banditkit import __version__
from banditkit.serve.config import ID_PATTERN, Limits
from banditkit.serve.metrics import Metrics
from banditkit.serve.process import WriterProcess
from banditkit.serve.service import Service
from banditkit.serve.state import ServeError, context_from

__all__ = [
    "ContextIn",
    "DecideIn",
    "DecideOut",
    "FeedbackIn",
    "FeedbackOut",
    "create_app",
]

logger = logging.getLogger("banditkit.serve")

EventId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=128,
        pattern=ID_PATTERN,
        description="Client-chosen id of the event (letters, digits, _ . : -); a retry "
        "with the same id gets the logged decision.",
    ),
]
_STRICT = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class ContextIn(BaseModel):
    """A round's context, as the policy's family defines it."""

    model_config = _STRICT

    arms: list[list[float]] = Field(
        min_length=1,
        description="(K, d) features: one row per arm (per item for assortments).",
    )
    revenues: list[float] | None = Field(
        None, description="Assortment policies: (K,) item revenues."
    )
    max_size: int | None = Field(
        None, ge=1, description="Assortment policies: largest assortment (capacity)."
    )


class DecideIn(BaseModel):
    """Decide for a context; the decision is logged before the reply."""

    model_config = _STRICT

    context: ContextIn
    event_id: EventId | None = None


class DecideOut(BaseModel):
    """A logged decision."""

    event_id: str
    action: int | list[int] = Field(
        description="An arm (contextual), an ordered pair (dueling) or sorted items "
        "(assortment)."
    )
    propensity: float | None = Field(
        description="Probability with which the policy chose this action, when it knows it."
    )
    model_version: int = Field(description="Learning steps of the deciding model.")


class FeedbackIn(BaseModel):
    """Join a feedback to its decision; logged before the reply, learned once."""

    model_config = _STRICT

    event_id: EventId
    feedback: int | float = Field(
        description="A reward (contextual), 1 if the first arm won (dueling), the chosen "
        "item or -1 (assortment)."
    )


class FeedbackOut(BaseModel):
    """Whether the event already had its feedback (then nothing was learned again)."""

    duplicate: bool


def _detail(errors: list[dict[str, Any]]) -> str:
    """One line naming each bad field (the first five)."""
    parts = []
    for err in errors[:5]:
        if err["type"] == "json_invalid":
            parts.append(
                f"body: not valid JSON ({err.get('ctx', {}).get('error', '')})"
            )
            continue
        loc = [str(p) for p in err["loc"]]
        where = ".".join(loc[1:] if loc and loc[0] == "body" else loc) or "body"
        parts.append(f"{where}: {err['msg']}")
    more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
    return "; ".join(parts) + more


def _invalid(errors: list[dict[str, Any]]) -> dict[str, Any]:
    """The body of a 422 answer: a one-line ``detail`` and the list of ``errors``."""
    return {
        "detail": _detail(errors),
        "errors": [
            {"loc": [str(p) for p in e["loc"]], "msg": e["msg"], "type": e["type"]}
            for e in errors
        ],
    }


def _parse(model: type[BaseModel], body: bytes) -> Any:
    """``model`` validated from the JSON ``body``; ServeError 422 naming the fields."""
    try:
        return model.model_validate_json(body)
    except ValidationError as exc:
        errors: list[dict[str, Any]] = [
            dict(e)
            if e["type"] == "json_invalid"
            else {**e, "loc": ("body", *e["loc"])}
            for e in exc.errors(include_url=False)
        ]
        raise ServeError(
            422, _detail(errors), errors=_invalid(errors)["errors"]
        ) from None


def _checked_context(context: ContextIn, limits: Limits) -> Any:
    """The request's Context, within the size limits; ServeError 422 else."""
    n_arms = len(context.arms)
    if n_arms > limits.max_arms:
        raise ServeError(
            422,
            f"context.arms: at most {limits.max_arms} arms per request; got {n_arms}.",
        )
    width = max(len(row) for row in context.arms)
    if width > limits.max_features:
        raise ServeError(
            422,
            f"context.arms: at most {limits.max_features} features per arm; got {width}.",
        )
    try:
        return context_from(
            {
                "arms": context.arms,
                "revenues": context.revenues,
                "max_size": context.max_size,
            }
        )
    except ValueError as exc:
        raise ServeError(422, f"context: {exc}") from None


Send = Callable[[dict[str, Any]], Awaitable[None]]


async def _send_json(
    send: Send,
    status: int,
    body: Any,
    headers: tuple[tuple[bytes, bytes], ...] = (),
) -> int:
    """Send ``body`` as a JSON answer; returns ``status``."""
    data = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})
    return status


def _route(path: str) -> tuple[str | None, str]:
    """(policy id or None, endpoint label) of a request path."""
    if path.startswith("/v1/policies/"):
        parts = path[len("/v1/policies/") :].split("/")
        if len(parts) == 1:
            return parts[0], "status"
        if len(parts) == 2 and parts[1] in ("decide", "feedback"):
            return parts[0], parts[1]
        return None, "other"
    return None, {"/health": "health", "/metrics": "metrics"}.get(path, "other")


class Guard:
    """The outermost ASGI app: checks, then answers decide and feedback itself (the hot path).

    For ``/v1/policies/{id}...``: an unknown policy is 404, a missing or wrong bearer
    token 401, a body over the limit 413. Decide and feedback requests are then validated
    (pydantic, from the raw JSON), queued for the writer and answered here, in front of
    FastAPI and its middleware (their routing and wrappers cost about a third of the
    service's time per request); everything else, the lifespan included, goes on to
    FastAPI. An unexpected error on the hot path is logged and answered 500. Every request
    is counted and timed in the metrics.
    """

    def __init__(
        self,
        app: Any,
        *,
        service: Service | WriterProcess,
        tokens: Mapping[str, str | None],
        metrics: Metrics,
    ) -> None:
        self.app = app
        self.service = service
        self.tokens = tokens
        self.limits = service.config.limits
        self.metrics = metrics

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        policy, endpoint = _route(scope["path"])
        if policy is None or endpoint == "status":
            code = await self._forward(scope, receive, send, policy)
        else:
            code = await self._policy_route(scope, receive, send, policy, endpoint)
        label = policy if policy in self.tokens else ""
        elapsed = time.perf_counter() - started
        self.metrics.answered(label or "", endpoint, code, elapsed)

    async def _forward(
        self, scope: dict[str, Any], receive: Any, send: Send, policy: str | None
    ) -> int:
        """Hand the request to FastAPI (after the policy checks); the status it sent."""
        if policy is not None:
            refusal = self._refusal(scope, policy)
            if refusal is not None:
                return await _send_error(send, refusal)
        code = [500]

        async def sending(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                code[0] = message["status"]
            await send(message)

        await self.app(scope, receive, sending)
        return code[0]

    def _refusal(self, scope: dict[str, Any], policy: str) -> ServeError | None:
        """404 for an unknown policy, 401 without its token, 413 for a declared big body."""
        if policy not in self.tokens:
            known = ", ".join(sorted(self.tokens))
            return ServeError(
                404, f"policy: no policy {policy!r} is served here (served: {known})."
            )
        headers = dict(scope.get("headers", []))
        token = self.tokens[policy]
        if token is not None:
            scheme, _, given = headers.get(b"authorization", b"").partition(b" ")
            if scheme.lower() != b"bearer" or not hmac.compare_digest(
                given.strip(), token.encode()
            ):
                return ServeError(
                    401,
                    f"authorization: policy {policy!r} needs 'Authorization: Bearer <token>'.",
                )
        declared = headers.get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.limits.max_body_bytes:
            return _too_large(self.limits.max_body_bytes)
        return None

    async def _body(self, receive: Any) -> bytes:
        """The whole body; ServeError 413 past the limit (for bodies of undeclared size)."""
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limits.max_body_bytes:
                raise _too_large(self.limits.max_body_bytes)
            chunks.append(chunk)
            more = message.get("more_body", False)
        return b"".join(chunks)

    async def _policy_route(
        self,
        scope: dict[str, Any],
        receive: Any,
        send: Send,
        policy: str,
        endpoint: str,
    ) -> int:
        """Answer a decide or feedback request; the status sent."""
        refusal = self._refusal(scope, policy)
        if refusal is None and scope["method"] != "POST":
            refusal = ServeError(405, f"{endpoint}: use POST.")
        if refusal is not None:
            return await _send_error(send, refusal)
        try:
            body = await self._body(receive)
            if endpoint == "decide":
                request = _parse(DecideIn, body)
                ctx = _checked_context(request.context, self.limits)
                reply = await self.service.ask("decide", policy, request.event_id, ctx)
            else:
                fed = _parse(FeedbackIn, body)
                reply = await self.service.ask(
                    "feedback", policy, fed.event_id, fed.feedback
                )
        except ServeError as exc:
            return await _send_error(send, exc)
        except Exception:
            logger.exception("%s of policy %s failed", endpoint, policy)
            return await _send_error(send, ServeError(500, "internal error"))
        return await _send_json(send, 200, reply)


def _too_large(limit: int) -> ServeError:
    return ServeError(413, f"body: larger than the limit of {limit} bytes.")


async def _send_error(send: Send, error: ServeError) -> int:
    body: dict[str, Any] = {"detail": str(error)}
    if error.errors is not None:
        body["errors"] = error.errors
    headers = {
        401: ((b"www-authenticate", b"Bearer"),),
        503: ((b"retry-after", b"1"),),
    }.get(error.status, ())
    return await _send_json(send, error.status, body, headers)


_ERRORS = {
    "401": "missing or wrong bearer token",
    "404": "unknown policy (decide, feedback) or unknown event (feedback)",
    "409": "feedback past the event's join window",
    "413": "body over the size limit",
    "422": "invalid body; detail names the field",
    "503": "the event log is unavailable, the service is stopping, or it is overloaded "
    "(limits.max_pending requests waiting); nothing was recorded, retry",
}


def _operation(
    name: str, body: type[BaseModel], reply: type[BaseModel], models: dict[str, Any]
) -> dict[str, Any]:
    """The OpenAPI operation of a guard route; its models go into ``models``."""
    for model in (body, reply):
        spec = model.model_json_schema(ref_template="#/components/schemas/{model}")
        models.update(spec.pop("$defs", {}))
        models[model.__name__] = spec
    responses: dict[str, Any] = {
        code: {"description": text} for code, text in _ERRORS.items()
    }
    responses["200"] = {
        "description": "OK",
        "content": {"application/json": {"schema": _ref(reply)}},
    }
    path_id = {"name": "policy_id", "in": "path", "required": True}
    return {
        "summary": (body.__doc__ or name).strip().splitlines()[0],
        "operationId": name,
        "parameters": [{**path_id, "schema": {"type": "string"}}],
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": _ref(body)}},
        },
        "responses": responses,
        "security": [{"bearer": []}],
    }


def _documented(app: Any) -> None:
    """Add the guard's two routes and their models to the app's OpenAPI schema."""
    make = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = make()
        components = schema.setdefault("components", {})
        models = components.setdefault("schemas", {})
        components["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
        paths = schema["paths"]
        paths["/v1/policies/{policy_id}/decide"] = {
            "post": _operation("decide", DecideIn, DecideOut, models)
        }
        paths["/v1/policies/{policy_id}/feedback"] = {
            "post": _operation("feedback", FeedbackIn, FeedbackOut, models)
        }
        app.openapi_schema = schema
        return schema

    app.openapi = openapi


def _ref(model: type[BaseModel]) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{model.__name__}"}


def create_app(
    service: Service | WriterProcess,
    tokens: Mapping[str, str | None] | None = None,
    *,
    freeze_gc: bool = False,
) -> Any:
    """The ASGI app serving an opened :class:`Service` (its writer starts with the app).

    The service may also be a :class:`~banditkit.serve.process.WriterProcess`: the same
    writer in a child process (what ``banditkit serve run`` uses by default).

    The app is the :class:`Guard` in front of a FastAPI app: the guard answers decide and
    feedback, FastAPI the rest (status, health, metrics, ``/openapi.json``) and the
    lifespan.

    Args:
        service: The service, after :meth:`Service.open`.
        tokens: Each policy's bearer token (None: no token); default
            ``service.config.tokens()`` (read from the environment).
        freeze_gc: Once the writer has started, move every object alive to the garbage
            collector's permanent generation (``gc.freeze()``), so that its full
            collections no longer scan the interpreter's start-up (the imports, the
            restored policies): with the service imported a full collection stopped every
            thread for 57-68 ms, after the freeze for microseconds. Frozen objects are
            still freed when their last reference goes; only a reference cycle among them
            would stay. ``banditkit serve run`` sets it; it is process-wide, so it is off
            for apps built in a process that makes many (tests).
    """
    tokens = dict(service.config.tokens() if tokens is None else tokens)
    metrics = Metrics(service.statuses)
    service.on_commit = metrics.committed

    @asynccontextmanager
    async def lifespan(_app: Any) -> Any:
        service.start()
        if freeze_gc:
            gc.collect()
            gc.freeze()
        gc.callbacks.append(metrics.collecting)
        try:
            yield
        finally:
            gc.callbacks.remove(metrics.collecting)
            await asyncio.get_running_loop().run_in_executor(None, service.stop)

    app = FastAPI(
        title="banditkit decision service",
        version=__version__,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    _documented(app)

    @app.exception_handler(ServeError)
    async def _refused(_request: Any, exc: ServeError) -> Any:
        return JSONResponse({"detail": str(exc)}, status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def _invalid_request(_request: Any, exc: RequestValidationError) -> Any:
        return JSONResponse(_invalid(list(exc.errors())), status_code=422)

    _routes(app, service, sorted(tokens), metrics)
    return Guard(app, service=service, tokens=tokens, metrics=metrics)


def _routes(
    app: Any, service: Service | WriterProcess, policies: list[str], metrics: Metrics
) -> None:
    """FastAPI's routes: a policy's counts, the health check, the metrics."""

    @app.get("/v1/policies/{policy_id}")
    async def status(policy_id: str) -> Any:
        """The policy's counts."""
        await service.refresh()
        status = service.status(policy_id)
        if status is None:
            raise ServeError(503, "the policy is being restored from the log; retry")
        return status

    @app.get("/health")
    async def health() -> Any:
        """200 while the writer runs and the log is writable, else 503."""
        body = {
            "status": "ok" if service.alive else "unavailable",
            "policies": policies,
        }
        return JSONResponse(body, status_code=200 if service.alive else 503)

    @app.get("/metrics")
    async def prometheus() -> Any:
        """Prometheus text exposition."""
        from prometheus_client import CONTENT_TYPE_LATEST

        # a writer that does not answer: its last counts (and /health says so)
        with suppress(ServeError):
            await service.refresh()
        return Response(metrics.text(), media_type=CONTENT_TYPE_LATEST)
