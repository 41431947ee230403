"""Planned request handlers answer as the framework's own handler does, valid input or not;
routes a plan does not fit keep the framework's handler."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Annotated, Any
from uuid import UUID

import pytest
from fastapi import Depends, FastAPI, Header, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from api.conftest import ApiWorld
from api.test_missions_refusals import control_body, create, schedule
from kalends.api.dispatch import DispatchedRoute
from kalends.api.fast.handlers import plan_route

Call = Callable[[ApiWorld], Any]
NO_ONES = UUID("0190d2f5-5e9a-7c31-9e6e-2f1c3b5a7d11")


def _unused() -> None:
    """A dependency no route has: overriding it turns every plan off."""


@pytest.fixture
def framework_only(api: ApiWorld) -> Iterator[Callable[[], None]]:
    app: FastAPI = api.client.app  # type: ignore[assignment]

    def turn_plans_off() -> None:
        app.dependency_overrides[_unused] = _unused

    yield turn_plans_off
    app.dependency_overrides.clear()


def page(limit: str) -> Call:
    return lambda api: api.client.get(
        f"/api/lists/{api.home_list.id}/tasks?limit={limit}", headers=api.headers("bob")
    )


def control(body: Any, *, kind: str = "application/json", who: str = "bob") -> Call:
    def send(api: ApiWorld) -> Any:
        mission = api.extra.setdefault("mission", create(api, "plan-create"))
        payload = body(mission) if callable(body) else body
        return api.client.post(
            schedule(api.home.id, mission),
            content=payload if isinstance(payload, str) else None,
            json=None if isinstance(payload, str) else payload,
            headers={**api.headers(who), "Content-Type": kind},
        )

    return send


REQUESTS: dict[str, Call] = {
    "a page": page("2"),
    "a page of a limit out of range": page("0"),
    "a page of a limit that is no number": page("two"),
    "a page without credentials": lambda api: api.client.get(
        f"/api/lists/{api.home_list.id}/tasks?limit=2"
    ),
    "a page of a list of no one": lambda api: api.client.get(
        f"/api/lists/{NO_ONES}/tasks?limit=2", headers=api.headers("bob")
    ),
    "a page with a malformed list ID": lambda api: api.client.get(
        "/api/lists/not-an-id/tasks?limit=2", headers=api.headers("bob")
    ),
    "a task of a viewer": lambda api: api.client.get(
        f"/api/tasks/{api.extra['task']}", headers=api.headers("carol")
    ),
    "a task of a non-member": lambda api: api.client.get(
        f"/api/tasks/{api.extra['task']}", headers=api.headers("dave")
    ),
    "a control": control(lambda m: control_body("play", "plan-play", 1)),
    "a control of a stale revision": control(lambda m: control_body("play", "plan-stale", 9)),
    "a control missing its request ID": control({"action": "play", "expectedRevision": 1}),
    "a control that is not JSON": control("{not json", kind="application/json"),
    "a control sent as text": control('{"action": "play"}', kind="text/plain"),
    "a control of Run now on the wrong route": control(
        lambda m: control_body("run-now", "plan-run", 1)
    ),
    "a control of a viewer": control(lambda m: control_body("play", "plan-v", 1), who="carol"),
}


def answer(reply: Any) -> tuple[int, Any, dict[str, str]]:
    kept = {"content-type", "link", "allow", "location", "retry-after"}
    headers = {k: v for k, v in reply.headers.items() if k in kept}
    try:
        body: Any = reply.json()
    except ValueError:
        body = reply.text
    return reply.status_code, body, headers


@pytest.mark.parametrize("what", list(REQUESTS))
def test_a_planned_route_answers_as_the_framework_does(
    api: ApiWorld, framework_only: Callable[[], None], what: str
) -> None:
    alice = api.actors["alice"].id
    for title in ("one", "two", "three"):
        task = api.services.tasks.create(alice, api.home_list.id, title)
        api.extra.setdefault("task", task.id)
    send = REQUESTS[what]
    planned = answer(send(api))
    # The same request again, through the framework's handler alone: a control that
    # applied applies no second time (its request ID is repeated), so it is sent to a
    # fresh schedule, the same but for its ID.
    first = api.extra.get("mission")
    if planned[0] == 200 and what == "a control":
        api.extra["mission"] = create(api, "plan-create-2")
    framework_only()
    framework = answer(send(api))
    assert without(planned, first) == without(framework, api.extra.get("mission"))


def without(found: tuple[int, Any, dict[str, str]], mission: str | None) -> str:
    """The answer as text, its schedule's ID left out."""
    text = json.dumps(found, sort_keys=True)
    return text if mission is None else text.replace(mission, "<mission>")


def test_valid_requests_are_settled_by_the_plan_and_invalid_ones_by_the_framework(
    api: ApiWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fastapi.routing  # noqa: PLC0415

    solved: list[str] = []
    real = fastapi.routing.solve_dependencies  # type: ignore[attr-defined]

    async def counted(*args: Any, **kwargs: Any) -> Any:
        solved.append(kwargs["request"].url.path)
        return await real(*args, **kwargs)

    monkeypatch.setattr(fastapi.routing, "solve_dependencies", counted)
    task = api.services.tasks.create(api.actors["alice"].id, api.home_list.id, "one")
    api.extra["task"] = task.id
    for what in ("a page", "a task of a viewer", "a control"):
        assert REQUESTS[what](api).status_code == 200, what
    assert solved == []
    # (a limit out of range is refused by the query's own dependency, under either handler)
    for what in ("a page with a malformed list ID", "a control missing its request ID"):
        assert REQUESTS[what](api).status_code == 422, what
    assert len(solved) == 2


def test_every_short_route_of_the_api_is_planned(api: ApiWorld) -> None:
    app: FastAPI = api.client.app  # type: ignore[assignment]
    planned = {
        (method, route.path)
        for route in app.router.routes
        if isinstance(route, DispatchedRoute) and plan_route(route) is not None
        for method in route.methods or ()
    }
    assert {
        ("GET", "/api/lists/{list_id}/tasks"),
        ("GET", "/api/tasks/{task}"),
        ("GET", "/api/workspaces/{id}/missions/{missionID}/schedule"),
        ("POST", "/api/workspaces/{id}/missions/{missionID}/schedule"),
    } <= planned


class Body(BaseModel):
    name: str


async def plain(request: Request) -> str:
    return request.url.path


def ask_response(response: Response) -> None:
    response.headers["X-Seen"] = "1"


def sync_dependency(request: Request) -> str:
    return "sync"


async def with_header(x_thing: Annotated[str, Header()]) -> str:
    return x_thing


def routes_no_plan_fits() -> list[DispatchedRoute]:
    async def returns_a_model(who: Annotated[str, Depends(plain)]) -> Body:
        return Body(name=who)

    async def asks_a_response(_: Annotated[None, Depends(ask_response)]) -> JSONResponse:
        return JSONResponse({})

    async def sync_dep(found: Annotated[str, Depends(sync_dependency)]) -> JSONResponse:
        return JSONResponse({"found": found})

    async def header_dep(found: Annotated[str, Depends(with_header)]) -> JSONResponse:
        return JSONResponse({"found": found})

    async def two_bodies(a: Body, b: Body) -> JSONResponse:
        return JSONResponse({})

    return [
        DispatchedRoute("/model", returns_a_model, methods=["GET"]),
        DispatchedRoute("/response", asks_a_response, methods=["GET"]),
        DispatchedRoute("/sync", sync_dep, methods=["GET"]),
        DispatchedRoute("/header", header_dep, methods=["GET"]),
        DispatchedRoute("/bodies", two_bodies, methods=["POST"]),
    ]


@pytest.mark.parametrize("route", routes_no_plan_fits(), ids=lambda r: r.path)
def test_a_route_no_plan_fits_keeps_the_frameworks_handler(route: DispatchedRoute) -> None:
    assert plan_route(route) is None


def test_a_route_of_request_dependencies_and_a_json_body_is_planned() -> None:
    async def fits(
        found: Annotated[str, Depends(plain)], body: Body, thing_id: str
    ) -> JSONResponse:
        return JSONResponse({"found": found, "name": body.name, "id": thing_id})

    route = DispatchedRoute("/things/{thing_id}", fits, methods=["POST"])
    plan = plan_route(route)
    assert plan is not None
    assert [name for name, _ in plan.dependencies] == ["found"]
