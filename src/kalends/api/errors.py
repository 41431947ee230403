"""Errors as JSON: ``{code, message, details}`` with a stable code and an HTTP status.

Every :class:`~kalends.errors.KalendsError` maps to one status, and one machine code,
by its class (:data:`STATUS_BY_CLASS`, :data:`CODE_BY_CLASS`; the nearest class of its
ancestry decides). A schedule's stale revision and a control its state refuses carry
the ``recurrence-`` codes seed 002 names for its routes, and a control the store could
not take (:class:`~kalends.errors.NotDispatched`) answers 503
``recurrence-not-dispatched``: the client keeps its request ID and reads the request's
status rather than inventing a new one. Fields and terms are named as the request
bodies name them (:data:`API_NAMES`).
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
    Forbidden,
    InvalidInput,
    KalendsError,
    NotFound,
    RateLimited,
    ScheduleRevisionConflict,
    StorageError,
    TooLarge,
    Unauthenticated,
    Vocabulary,
)

__all__ = [
    "API_NAMES",
    "CODE_BY_CLASS",
    "STATUS_BY_CLASS",
    "ErrorBody",
    "error_response",
    "error_responses",
    "install_error_handlers",
]

log = logging.getLogger("kalends.api")

API_NAMES: Vocabulary = {
    "complete_subtree": '"completeSubtree": true',
    "end_date": "until",
}
"""The services' fields and terms as the API's bodies name them."""

STATUS_BY_CLASS: dict[type[KalendsError], int] = {
    Unauthenticated: 401,
    Forbidden: 403,
    NotFound: 404,
    TooLarge: 413,
    InvalidInput: 422,
    RateLimited: 429,
    Conflict: 409,
    StorageError: 503,
}
"""The HTTP status of each kind of error; an error of no kind listed is a 500."""

CODE_BY_CLASS: dict[type[KalendsError], str] = {
    ScheduleRevisionConflict: "recurrence-revision-conflict",
    ControlConflict: "recurrence-control-conflict",
}
"""The machine codes seed 002's routes name where they differ from the class's own."""


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


def _nearest(table: dict[type[KalendsError], Any], exc: KalendsError) -> Any:
    for cls in type(exc).__mro__:
        if cls in table:
            return table[cls]
    return None


def status_of(exc: KalendsError) -> int:
    """The HTTP status of ``exc``, by its class."""
    return _nearest(STATUS_BY_CLASS, exc) or 500


def code_of(exc: KalendsError) -> str:
    """The machine code of ``exc`` on the API, by its class."""
    return _nearest(CODE_BY_CLASS, exc) or exc.code


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
    status = status_of(exc)
    if status == 500:
        log.error("unmapped error %s: %s", type(exc).__name__, exc.message)
    said = exc.named(API_NAMES)
    return error_response(status, code_of(exc), said.message, _jsonable(said.details))


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
