"""The FastAPI application: middleware, error handlers and every router."""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

from anyio import to_thread
from fastapi import APIRouter, FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kalends import __version__
from kalends.api import fast
from kalends.api.context import ApiContext, default_request_threads
from kalends.api.docs import install_docs
from kalends.api.errors import error_response, install_error_handlers
from kalends.api.fast.route_index import install_route_index
from kalends.api.routes import (
    auth,
    conversations,
    feeds,
    health,
    missions,
    passage_questions,
    passages,
    questions,
    tasks,
)
from kalends.api.security import (
    PASSAGE_SECURITY_SCHEME,
    SECURITY_SCHEMES,
    principal,
    principal_or_passage,
)
from kalends.tasks.values import MAX_ATTACHMENT_BYTES

__all__ = ["create_app"]

access_log = logging.getLogger("kalends.api.access")

# Multipart framing around an attachment's bytes: boundaries, headers, the file name.
MULTIPART_OVERHEAD = 64 * 1024
ATTACHMENT_PATH_END = "/attachments"


class BodyLimit:
    """Refuses a body over its limit with 413 before a route reads it (or as it streams)."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        limit = self.limit
        if path.endswith(ATTACHMENT_PATH_END) and scope["method"] == "POST":
            limit = MAX_ATTACHMENT_BYTES + MULTIPART_OVERHEAD
        for name, value in scope["headers"]:
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = -1
                if declared > limit or declared < 0:
                    await self._refuse(scope, receive, send, limit)
                    return
        seen = 0

        async def limited_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    # Raised inside the route's body read, so the error handlers answer it.
                    raise HTTPException(413, f"the request body is over its limit of {limit} bytes")
            return message

        await self.app(scope, limited_receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, limit: int) -> None:
        response = error_response(
            413,
            "too-large",
            f"the request body is over its limit of {limit} bytes",
            {"limit": limit},
        )
        await response(scope, receive, send)


class AccessLog:
    """One structured line per request: method, path, status, milliseconds."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def capture(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, capture)
        finally:
            if access_log.isEnabledFor(logging.INFO):
                access_log.info(
                    "request",
                    extra={
                        "method": scope["method"],
                        "path": scope["path"],
                        "status": status,
                        "ms": round((time.perf_counter() - started) * 1000, 2),
                    },
                )


def _flat_routes(router: APIRouter) -> Iterator[BaseRoute]:
    """The router's routes, with those of the routers it includes, as one flat list.

    The routers here add no prefix, tag or dependency when they include one another, so
    each route is complete as defined; placed on the application's own router they are
    matched directly, not through a wrapper per included router (which costs several
    times more per route tried on every request).
    """
    for route in router.routes:
        included = getattr(route, "original_router", None)
        if isinstance(included, APIRouter):
            yield from _flat_routes(included)
        else:
            yield route


def _needs_credentials(dependant: Dependant, reader: Any = principal) -> bool:
    return any(
        dep.call is reader or _needs_credentials(dep, reader) for dep in dependant.dependencies
    )


def document_security(app: FastAPI) -> None:
    """Name the credentials of every route that reads them in the OpenAPI document.

    :func:`~kalends.api.security.principal` reads the header and the cookie itself (no
    dependency per scheme to solve on every request), so the document is told here.
    """
    for route in app.router.routes:
        if not isinstance(route, APIRoute):
            continue
        passage = _needs_credentials(route.dependant, principal_or_passage)
        if passage or _needs_credentials(route.dependant):
            extra = dict(route.openapi_extra or {})
            names = [*SECURITY_SCHEMES, *([PASSAGE_SECURITY_SCHEME] if passage else [])]
            extra["security"] = [{name: []} for name in names]
            route.openapi_extra = extra
    plain = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = plain()
            components = schema.setdefault("components", {})
            components.setdefault("securitySchemes", {}).update(SECURITY_SCHEMES)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def create_app(ctx: ApiContext, *, access_log_enabled: bool = True) -> FastAPI:
    """The kalends HTTP API on one context (services, accounts, settings)."""

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        # Routes and blocking dependencies run in this pool: size it to the machine.
        threads = ctx.settings.request_threads or default_request_threads(
            ctx.services.store.dialect
        )
        to_thread.current_default_thread_limiter().total_tokens = threads
        if not ctx.inline_routes:
            yield
            return
        # Short routes run their transactions on the event loop: one connection for them.
        with ctx.services.store.keep_connection():
            yield

    app = FastAPI(
        lifespan=lifespan,
        title="kalends",
        version=__version__,
        description=(
            "Recurring tasks and durable mission schedules. Errors are JSON "
            "`{code, message, details}` with a stable code."
        ),
        openapi_url="/openapi.json",
        # Served from the package by install_docs: FastAPI's own pages load from a CDN.
        docs_url=None,
        redoc_url=None,
    )
    inline = ctx.settings.inline_routes
    ctx.inline_routes = ctx.services.store.dialect == "sqlite" if inline is None else inline
    app.state.kalends = ctx
    install_error_handlers(app)
    for module in (
        health,
        auth,
        tasks,
        missions,
        passages,
        passage_questions,
        feeds,
        conversations,
        questions,
    ):
        for route in _flat_routes(module.router):
            if not isinstance(route, APIRoute):
                app.router.routes.append(route)
                continue
            call = route.dependant.call
            if call is not None and not inspect.iscoroutinefunction(call):
                raise TypeError(
                    f"the synchronous route {route.path} is not dispatched: "
                    "give its router route_class=DispatchedRoute"
                )
            app.router.routes.append(route)
    # The pages stand on this package (its context, errors and session cookies): imported
    # here, so that either package may be imported first.
    from kalends.web import install_web  # noqa: PLC0415

    install_web(app)
    document_security(app)
    install_docs(app)
    if fast.ENABLED:
        install_route_index(app.router)
    app.add_middleware(BodyLimit, limit=ctx.settings.max_body_bytes)
    if access_log_enabled:
        app.add_middleware(AccessLog)
    return app
