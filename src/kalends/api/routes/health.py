"""Liveness and readiness.

Readiness asks the database to take a write, rolled back
(:meth:`kalends.storage.unit_of_work.Store.accepts_writes`): a database that answers
reads but refuses writes, such as a SQLite file turned read-only, is not ready.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from kalends import __version__
from kalends.api.dispatch import DispatchedRoute
from kalends.api.security import ContextDep
from kalends.errors import KalendsError

router = APIRouter(tags=["health"], route_class=DispatchedRoute)


@router.get("/api", include_in_schema=False)
def root() -> dict[str, Any]:
    """Where things are: the pages at ``/``, the API's document and its reference."""
    return {
        "service": "kalends",
        "version": __version__,
        "pages": "/",
        "api": "/openapi.json",
        "docs": "/docs",
    }


@router.get("/healthz", summary="Liveness: the process answers")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get(
    "/readyz",
    summary="Readiness: the database takes writes and every background loop runs",
    responses={503: {"description": "Not ready; `checks` says what is missing."}},
)
def readyz(ctx: ContextDep) -> JSONResponse:
    checks: dict[str, bool] = {}
    try:
        checks["database"] = ctx.services.store.accepts_writes()
    except KalendsError:
        checks["database"] = False
    for name in ctx.settings.workers:
        checks[name] = ctx.ready.get(name, False)
    ready = all(checks.values())
    return JSONResponse(
        {"status": "ready" if ready else "not-ready", "checks": checks},
        status_code=200 if ready else 503,
    )
