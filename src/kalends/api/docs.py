"""``/docs`` (Swagger UI) and ``/redoc`` (ReDoc), rendering ``/openapi.json`` with assets
served by kalends itself, so that they work on a machine without internet.

FastAPI's own pages load their scripts, styles and icon from a CDN. The assets here are
those the ``fastapi-offline`` package ships (Swagger UI, ReDoc's standalone bundle,
FastAPI's icon, each under its own licence inside that package), served under
:data:`ASSETS` by the server. Swagger UI is told not to ask its online validator
either, the one other address it would reach.
"""

from __future__ import annotations

from typing import Final

from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

__all__ = ["ASSETS", "DOCS", "REDOC", "install_docs"]

DOCS: Final = "/docs"
REDOC: Final = "/redoc"
ASSETS: Final = "/docs/assets"
# The package and its folder that hold the assets.
_PACKAGE: Final = ("fastapi_offline", "static")


def install_docs(app: FastAPI) -> None:
    """Add the two pages and their assets to ``app`` (created with ``docs_url`` and
    ``redoc_url`` ``None``)."""
    title = app.title
    openapi = app.openapi_url or "/openapi.json"
    swagger_parameters = {**(app.swagger_ui_parameters or {}), "validatorUrl": None}

    async def swagger(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "").rstrip("/")
        return get_swagger_ui_html(
            openapi_url=root + openapi,
            title=f"{title} - Swagger UI",
            swagger_js_url=f"{root}{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{root}{ASSETS}/favicon.png",
            swagger_ui_parameters=swagger_parameters,
        )

    async def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "").rstrip("/")
        return get_redoc_html(
            openapi_url=root + openapi,
            title=f"{title} - ReDoc",
            redoc_js_url=f"{root}{ASSETS}/redoc.standalone.js",
            redoc_favicon_url=f"{root}{ASSETS}/favicon.png",
            with_google_fonts=False,
        )

    app.router.routes.extend(
        [
            Route(DOCS, swagger, methods=["GET"], include_in_schema=False),
            Route(REDOC, redoc, methods=["GET"], include_in_schema=False),
            Mount(ASSETS, StaticFiles(packages=[_PACKAGE]), name="docs-assets"),
        ]
    )
