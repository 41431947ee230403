"""The route index hands every request to the route the framework's router would choose,
and leaves to the router what it cannot settle: unknown paths, other methods, slashes."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from fastapi import FastAPI
from starlette.routing import BaseRoute, Match, Route

from api.conftest import ApiWorld
from kalends.api.fast.route_index import RouteIndex

SAMPLE_ID = "0190d2f5-5e9a-7c31-9e6e-2f1c3b5a7d11"


def run(coroutine: Coroutine[Any, Any, None]) -> None:
    """Runs ``coroutine`` to its end in a thread of its own, whatever loop the calling
    thread may hold."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(asyncio.run, coroutine).result()


def concrete(route: Route) -> str:
    """A path ``route`` matches: each parameter filled with an ID (or an ID-like text)."""
    return re.sub(r"\{[^}]+\}", SAMPLE_ID, route.path_format)


def routers_choice(routes: list[BaseRoute], scope: dict[str, Any]) -> BaseRoute | None:
    """The first route that matches ``scope`` fully, as the router tries them."""
    for route in routes:
        if route.matches(scope)[0] is Match.FULL:
            return route
    return None


class Recorder:
    """Stands in for the routes' handling: records what the index handed over."""

    def __init__(self) -> None:
        self.handled: list[BaseRoute] = []
        self.fallen_back = 0


def index_of(app: FastAPI, recorder: Recorder, monkeypatch: pytest.MonkeyPatch) -> RouteIndex:
    index = app.router.middleware_stack
    assert isinstance(index, RouteIndex)

    async def handle(self: BaseRoute, scope: Any, receive: Any, send: Any) -> None:
        recorder.handled.append(self)

    async def fallback(scope: Any, receive: Any, send: Any) -> None:
        recorder.fallen_back += 1

    for route in app.router.routes:
        monkeypatch.setattr(type(route), "handle", handle)
    monkeypatch.setattr(index, "fallback", fallback)
    return index


def scope_of(path: str, method: str) -> dict[str, Any]:
    return {"type": "http", "path": path, "method": method, "root_path": "", "headers": []}


def test_every_route_is_found_as_the_router_finds_it(
    api: ApiWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    app: FastAPI = api.client.app  # type: ignore[assignment]
    routes = list(app.router.routes)
    recorder = Recorder()
    index = index_of(app, recorder, monkeypatch)
    tried = fallen = 0
    for route in routes:
        if not isinstance(route, Route):
            continue
        # A route whose first two segments are not both text (the pages' /w/{workspace}/…,
        # /static/{name}) is filed under no shape: its requests go to the router.
        filed = not re.match(r"^/(\{[^}]*\}|[^/]*/\{)", route.path_format)
        for method in sorted(route.methods or {"GET"}):
            scope = scope_of(concrete(route), method)
            expected = routers_choice(routes, scope)
            assert expected is not None, (route.path_format, method)
            recorder.handled.clear()
            before = recorder.fallen_back
            run(index(scope, None, None))  # type: ignore[arg-type]
            if filed:
                assert recorder.handled == [expected], (route.path_format, method)
                tried += 1
            else:
                assert (recorder.handled, recorder.fallen_back) == ([], before + 1)
                fallen += 1
    assert tried >= 60 and recorder.fallen_back == fallen


@pytest.mark.parametrize(
    ("path", "method"),
    [
        ("/api/no/such/route", "GET"),  # a shape no route was filed under
        ("/api/tasks/" + SAMPLE_ID, "PUT"),  # a method the route does not take: 405
        ("/api/lists/", "GET"),  # the other slash: the router redirects
        ("/api/lists/" + SAMPLE_ID + "/tasks/extra", "GET"),  # one segment too many
    ],
)
def test_what_the_index_cannot_settle_goes_to_the_router(
    api: ApiWorld, monkeypatch: pytest.MonkeyPatch, path: str, method: str
) -> None:
    app: FastAPI = api.client.app  # type: ignore[assignment]
    recorder = Recorder()
    index = index_of(app, recorder, monkeypatch)
    run(index(scope_of(path, method), None, None))  # type: ignore[arg-type]
    assert (recorder.handled, recorder.fallen_back) == ([], 1)


def test_routes_added_later_are_filed_too(api: ApiWorld) -> None:
    app: FastAPI = api.client.app  # type: ignore[assignment]

    @app.get("/api/late/{thing}")
    async def late(thing: str) -> dict[str, str]:
        return {"thing": thing}

    # A parameter that spans segments may match a path of any shape.
    @app.get("/api/{rest:path}/tail")
    async def spanning(rest: str) -> dict[str, str]:
        return {"rest": rest}

    reply = api.client.get("/api/late/x")
    assert (reply.status_code, reply.json()) == (200, {"thing": "x"})
    reply = api.client.get("/api/a/b/c/tail")
    assert (reply.status_code, reply.json()) == (200, {"rest": "a/b/c"})


def test_answers_the_router_gives_are_unchanged(api: ApiWorld) -> None:
    missing = api.client.get("/api/no/such/route")
    assert missing.status_code == 404 and missing.json()["code"] == "not-found"
    wrong = api.client.put(f"/api/tasks/{SAMPLE_ID}", headers=api.headers("bob"))
    assert wrong.status_code == 405 and "GET" in wrong.headers["allow"]
    slash = api.client.get("/api/lists/", headers=api.headers("bob"), follow_redirects=False)
    assert slash.status_code == 307 and slash.headers["location"].endswith("/api/lists")
