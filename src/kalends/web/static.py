"""The pages' static files: the style sheet, the script and the vendored htmx file, read
once from the package and served from memory with a long cache lifetime (their URLs
carry the version or, for htmx, its pinned release)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import Response

from kalends.web.render import WebRoute

__all__ = ["STATIC", "router"]

STATIC = Path(__file__).parent / "static"
# A day: the URLs change with the version, so a stale copy is never used for long.
CACHE_SECONDS = 24 * 3600
TYPES = {
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
}

router = APIRouter(route_class=WebRoute, include_in_schema=False)


@lru_cache(maxsize=16)
def _file(name: str) -> tuple[bytes, str] | None:
    """The bytes and type of a file of the static folder; ``None`` for anything else."""
    path = STATIC / name
    kind = TYPES.get(path.suffix)
    if kind is None or path.parent != STATIC or not path.is_file():
        return None
    return path.read_bytes(), kind


@router.get("/static/{name}")
async def static_file(name: str) -> Response:
    found = _file(name) if "/" not in name and not name.startswith(".") else None
    if found is None:
        return Response("not found\n", status_code=404, media_type="text/plain")
    body, kind = found
    return Response(
        body,
        media_type=kind,
        headers={
            "Cache-Control": f"public, max-age={CACHE_SECONDS}",
            "X-Content-Type-Options": "nosniff",
        },
    )
