"""Finding a request's route by the shape of its path instead of trying every route.

The framework's router tries its routes in order until one matches: for a route near the
end of some 70 that took 33-70 us a request (a schedule control spent 7% of its time
there). :class:`RouteIndex`, installed as the router's own middleware, files each route
under the shapes of path it can match, the number of segments and the first two (``4,
"api", "tasks"`` for ``/api/tasks/{task}``), and the methods it takes. A request's shape
and method name a short list of routes in their order; the first that matches it fully
handles it, exactly as the router would have chosen (a route outside the list cannot
match the request fully). Whatever the
index cannot settle (no full match: a 404, a 405, a redirect to the other slash; a shape
no route was filed under; a mounted application) goes to the router as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import APIRouter
from starlette.convertors import PathConvertor
from starlette.routing import BaseRoute, Match, Route
from starlette.types import Receive, Scope, Send

__all__ = ["RouteIndex", "install_route_index"]

Shape = tuple[int, str | None, str | None]
# A shape and a method: the routes filed under it are those that take the method too.
Key = tuple[Shape, str]
# A segment of a route's path that matches any text of a request's.
_ANY = object()


def _shape(path: str) -> Shape:
    segments = path.split("/")
    count = len(segments)
    return (
        count,
        segments[1] if count > 1 else None,
        segments[2] if count > 2 else None,
    )


def _template(route: BaseRoute) -> tuple[int, object, object] | None:
    """What shapes ``route`` can match: a segment count and its first two segments (the
    text, or ``_ANY`` for a parameter); ``None`` for any shape at all (a parameter that
    spans segments, a mounted application, a route of another kind)."""
    if not isinstance(route, Route):
        return None
    if any(isinstance(c, PathConvertor) for c in route.param_convertors.values()):
        return None
    segments = route.path_format.split("/")
    first, second = (
        (_ANY if "{" in s else s) if s is not None else None
        for s in (segments[i] if i < len(segments) else None for i in (1, 2))
    )
    return len(segments), first, second


def _takes(route: BaseRoute, method: str) -> bool:
    """Whether ``route`` may match a request of ``method`` fully (a route of no methods
    takes them all); the others, matching the path alone, make the router's 405."""
    methods = getattr(route, "methods", None)
    return not methods or method in methods


def _text(segment: object) -> str | None:
    assert segment is None or isinstance(segment, str)
    return segment


def _fits(template: tuple[int, object, object] | None, shape: Shape) -> bool:
    if template is None:
        return True
    return template[0] == shape[0] and all(
        t is _ANY or t == s for t, s in zip(template[1:], shape[1:], strict=True)
    )


class RouteIndex:
    """The router's routes filed by the shapes of path they match (module docstring)."""

    def __init__(self, router: APIRouter) -> None:
        self.router = router
        self.fallback = router.app
        self._filed: dict[Key, list[BaseRoute]] = {}
        self._count = -1

    def _file(self) -> None:
        routes: Sequence[BaseRoute] = self.router.routes
        templates = [_template(r) for r in routes]
        # Filed under the shapes of the routes whose first two segments are text (or
        # absent); a request of another shape goes to the router.
        shapes: set[Shape] = set()
        for t in templates:
            if t is not None and not (t[1] is _ANY or t[2] is _ANY):
                shapes.add((t[0], _text(t[1]), _text(t[2])))
        methods = {m for r in routes for m in (getattr(r, "methods", None) or ())}
        self._filed = {
            (shape, method): [
                r
                for r, t in zip(routes, templates, strict=True)
                if _fits(t, shape) and _takes(r, method)
            ]
            for shape in shapes
            for method in methods
        }
        self._count = len(routes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # (telemetry records the route the framework's router chose: leave those to it)
        if (
            scope["type"] == "http"
            and not scope.get("root_path")
            and "fastapi.telemetry" not in scope
        ):
            if len(self.router.routes) != self._count:
                self._file()  # routes were added since
            for route in self._filed.get((_shape(scope["path"]), scope["method"]), ()):
                match, child = route.matches(scope)
                if match is Match.FULL:
                    if any(key.startswith("fastapi") for key in child):
                        break  # the framework's own routing context: its router's business
                    scope.setdefault("router", self.router)
                    scope.update(child)
                    await route.handle(scope, receive, send)
                    return
        await self.fallback(scope, receive, send)


def install_route_index(router: APIRouter) -> bool:
    """Put a :class:`RouteIndex` in front of ``router``'s routing; whether it was (a router
    with form limits or middleware of its own routes as before)."""
    if getattr(router, "form_limits", None) or router.middleware_stack != router.app:
        return False
    index: Any = RouteIndex(router)
    router.middleware_stack = index
    return True
