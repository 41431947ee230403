"""Liveness and readiness."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from sqlalchemy import text

from kalends import __version__
from kalends.api.dispatch import DispatchedRoute
from kalends.api.security import ContextDep
from kalends.errors import KalendsError

router = APIRouter(tags=["health"], route_class=DispatchedRoute)


@router.get("/", include_in_schema=False)
def root() -> dict[str, Any]:
    return {"service": "kalends", "version": __version__, "api": "/openapi.json", "docs": "/docs"}


@router.get("/healthz", summary="Liveness: the process answers")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get(
    "/readyz",
    summary="Readiness: the database answers and every background loop runs",
    responses={503: {"description": "Not ready; `checks` says what is missing."}},
)
def readyz(ctx: ContextDep) -> JSONResponse:
    checks: dict[str, bool] = {}
    try:
        ctx.services.store.run(lambda conn: conn.execute(text("SELECT 1")).scalar(), write=False)
        checks["database"] = True
    except KalendsError:
        checks["database"] = False
    for name in ctx.settings.workers:
        checks[name] = ctx.ready.get(name, False)
    ready = all(checks.values())
    return JSONResponse(
        {"status": "ready" if ready else "not-ready", "checks": checks},
        status_code=200 if ready else 503,
    )
