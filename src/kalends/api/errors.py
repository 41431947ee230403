"""Errors as JSON: ``{code, message, details}`` with a stable code and an HTTP status.

Every :class:`~kalends.errors.KalendsError` maps to one status by its class. On the
mission routes of seed 002 the conflict codes carry the ``recurrence-`` prefix the
seed names, and a control the store could not take (busy or unavailable, nothing
written) answers 503 ``recurrence-not-dispatched``: the client keeps its request ID
and reads the request's status rather than inventing a new one.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import BaseRoute, Match

from kalends.errors import (
    Conflict,
    ControlConflict,
    DatabaseBusy,
    Forbidden,
    InvalidInput,
    KalendsError,
    NotFound,
    RateLimited,
    RevisionConflict,
    StorageError,
    TooLarge,
    Unauthenticated,
)

__all__ = ["ErrorBody", "error_response", "error_responses", "install_error_handlers"]

log = logging.getLogger("kalends.api")

MISSION_PATH_MARK = "/missions/"


class ErrorBody(BaseModel):
    """Every error answer: a stable machine code, a human message and details."""

    code: str = Field(description="Stable machine-readable code, e.g. `not-found`.")
    message: str = Field(description="One human-readable sentence.")
    details: dict[str, Any] = Field(default_factory=dict, description="Code-specific details.")


_STATUS_BY_CODE = {
    400: "Refused before anything else: this request belongs to another route.",
    401: "Not authenticated: no valid session or token.",
    403: "Authenticated, but not allowed (membership, role, the run privilege, or CSRF).",
    404: "Not found.",
    409: "Conflict with the current state; nothing was written.",
    413: "The body is over its size limit.",
    422: "Invalid input; `details.field` names the field.",
    429: "Too many attempts; `Retry-After` says when to try again.",
    503: "The store could not take the request; nothing was written.",
}


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries for the named error statuses (all share ErrorBody)."""
    return {s: {"model": ErrorBody, "description": _STATUS_BY_CODE[s]} for s in statuses}


def _status(exc: KalendsError) -> int:
    if isinstance(exc, Unauthenticated):
        return 401
    if isinstance(exc, Forbidden):
        return 403
    if isinstance(exc, NotFound):
        return 404
    if isinstance(exc, TooLarge):
        return 413
    if isinstance(exc, InvalidInput):
        return 422
    if isinstance(exc, RateLimited):
        return 429
    if isinstance(exc, Conflict):
        return 409
    if isinstance(exc, StorageError):
        return 503
    return 500


def _code(exc: KalendsError, path: str) -> str:
    if MISSION_PATH_MARK in path:
        if isinstance(exc, RevisionConflict):
            return "recurrence-revision-conflict"
        if isinstance(exc, ControlConflict):
            return "recurrence-control-conflict"
        if isinstance(exc, DatabaseBusy):
            return "recurrence-not-dispatched"
    return exc.code


def error_response(
    status: int, code: str, message: str, details: dict[str, Any] | None = None
) -> JSONResponse:
    headers: dict[str, str] = {}
    if status == 429 and details and "retry_after" in details:
        headers["Retry-After"] = str(max(1, int(float(details["retry_after"]) + 0.999)))
    return JSONResponse(
        {"code": code, "message": message, "details": details or {}},
        status_code=status,
        headers=headers,
    )


def _jsonable(details: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in details.items():
        if value is None or isinstance(value, str | int | float | bool):
            out[key] = value
        elif isinstance(value, list | tuple):
            out[key] = [v if isinstance(v, str | int | float | bool) else str(v) for v in value]
        else:
            out[key] = str(value)
    return out


async def _kalends_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, KalendsError)
    status = _status(exc)
    if status == 500:
        log.error("unmapped error %s: %s", type(exc).__name__, exc.message)
    return error_response(status, _code(exc, request.url.path), exc.message, _jsonable(exc.details))


_LOCATIONS = frozenset({"body", "query", "path", "header", "cookie"})


def _field_of(loc: Sequence[Any]) -> str:
    """``("body", "config", "title")`` → ``config.title``; only the leading location goes
    (a body field may itself be called ``path``)."""
    parts = [str(p) for p in loc]
    if parts and parts[0] in _LOCATIONS:
        parts = parts[1:]
    return ".".join(parts) or "body"


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = list(exc.errors())
    first = errors[0] if errors else {"loc": ("body",), "msg": "invalid"}
    field = _field_of(first.get("loc", ()))
    message = f"{field}: {first.get('msg', 'invalid')}"
    listed = [{"field": _field_of(e.get("loc", ())), "message": str(e.get("msg"))} for e in errors]
    return error_response(422, "invalid-input", message, {"field": field, "errors": listed})


_HTTP_CODES = {
    400: "bad-request",
    401: "unauthenticated",
    403: "forbidden",
    404: "not-found",
    405: "method-not-allowed",
    413: "too-large",
    415: "unsupported-media-type",
}


# What the framework says when a body is not JSON text at all (not UTF-8, say).
_UNPARSEABLE_BODY = "There was an error parsing the body"


def _allowed_methods(request: Request) -> str:
    """Every method the path supports, over all of its routes (one route per method)."""
    methods: set[str] = set()
    for route in request.app.router.routes:
        if isinstance(route, BaseRoute) and route.matches(request.scope)[0] is not Match.NONE:
            methods |= getattr(route, "methods", None) or set()
    if "GET" in methods:
        methods.add("HEAD")
    return ", ".join(sorted(methods))


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 400 and exc.detail == _UNPARSEABLE_BODY:
        return error_response(422, "invalid-input", "body: not valid JSON text", {"field": "body"})
    code = _HTTP_CODES.get(exc.status_code, f"http-{exc.status_code}")
    detail = exc.detail if isinstance(exc.detail, str) else "request refused"
    response = error_response(exc.status_code, code, detail)
    for key, value in (exc.headers or {}).items():
        response.headers[key] = value
    if exc.status_code == 405:
        response.headers["Allow"] = _allowed_methods(request)
    return response


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unexpected error on %s %s", request.method, request.url.path)
    return error_response(500, "internal-error", "the server failed; see its log")


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(KalendsError, _kalends_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)
