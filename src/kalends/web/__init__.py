"""The web pages, served by ``kalends serve`` at ``/`` beside the HTTP API.

Server-rendered HTML (Jinja2) with one vendored, pinned htmx file and a small script of
its own; every page reads and its core actions work with script off. The pages call the
same services as the API, through the protocols the CLI uses, with the signed-in person
as the acting actor: no SQL and no authorization rule of their own.
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.routing import APIRoute

from kalends.web import (
    pages_auth,
    pages_conversations,
    pages_editor,
    pages_missions,
    pages_passages,
    pages_questions,
    pages_settings,
    pages_simulate,
    pages_task,
    pages_tasks,
    static,
)

# The page modules, in the order their routes are matched.
MODULES = (
    static,
    pages_auth,
    pages_editor,
    pages_missions,
    pages_simulate,
    pages_passages,
    pages_tasks,
    pages_task,
    pages_settings,
    pages_conversations,
    pages_questions,
)

__all__ = ["MODULES", "install_web"]


def install_web(app: FastAPI) -> None:
    """Adds the pages and their static files to the application's routes."""
    for module in MODULES:
        for route in module.router.routes:
            if isinstance(route, APIRoute):
                route.include_in_schema = False
            app.router.routes.append(route)
