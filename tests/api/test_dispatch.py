"""Where routes run: short reads and writes on the event loop on SQLite, the rest (and
every route on PostgreSQL) in the thread pool; a short write whose lock is taken waits
for it in the pool, never on the event loop."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy.engine import make_url
from starlette.routing import Match

from api.conftest import ApiWorld
from api.test_missions_refusals import control_body, create, revision_of, schedule
from kalends.api import ApiContext
from kalends.api.dispatch import DispatchedRoute, dispatched, inline_read, inline_write
from kalends.missions import ScheduleService
from kalends.storage.testing import StorageTarget
from kalends.tasks import TaskService


async def _loop_thread_name() -> str:
    return threading.current_thread().name


def loop_thread(api: ApiWorld) -> str:
    name: str = api.client.portal.call(_loop_thread_name)  # type: ignore[union-attr]
    return name


@pytest.fixture
def control_threads(api: ApiWorld, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The threads the schedule controls' service calls run in."""
    seen: list[str] = []
    real = ScheduleService.control

    def spy(self: ScheduleService, *args: Any, **kwargs: Any) -> Any:
        seen.append(threading.current_thread().name)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(ScheduleService, "control", spy)
    yield seen


def test_a_control_runs_on_the_event_loop_on_sqlite_and_in_the_pool_on_postgresql(
    api: ApiWorld, control_threads: list[str]
) -> None:
    mission = create(api, "create-loop")
    reply = api.client.post(
        schedule(api.home.id, mission),
        json=control_body("play", "play-loop", 1),
        headers=api.headers("bob"),
    )
    assert reply.status_code == 200, reply.text
    assert reply.json()["revision"] == 2 == revision_of(api, mission)
    loop = loop_thread(api)
    ctx: ApiContext = api.client.app.state.kalends  # type: ignore[attr-defined]
    assert ctx.inline_routes is (api.store.dialect == "sqlite")
    assert len(control_threads) == 1
    assert (control_threads[0] == loop) is (api.store.dialect == "sqlite")


def test_a_control_whose_write_lock_is_held_waits_in_the_pool_and_applies_once(
    api: ApiWorld, storage_target: StorageTarget, control_threads: list[str]
) -> None:
    if storage_target.backend != "sqlite":
        pytest.skip("the write lock is SQLite's")
    mission = create(api, "create-held")
    path = make_url(storage_target.url).database
    assert path is not None
    held = sqlite3.connect(path, timeout=0, isolation_level=None, check_same_thread=False)
    held.execute("BEGIN IMMEDIATE")
    # Released while the control waits for it (the store's busy timeout is seconds).
    release = threading.Timer(0.5, lambda: held.execute("ROLLBACK"))
    release.start()
    try:
        reply = api.client.post(
            schedule(api.home.id, mission),
            json=control_body("play", "play-held", 1),
            headers=api.headers("bob"),
        )
    finally:
        release.join()
        held.close()
    assert reply.status_code == 200, reply.text
    assert reply.json()["status"] == "applied" and reply.json()["revision"] == 2
    assert revision_of(api, mission) == 2
    # The attempt on the event loop never began; the one run was in the pool.
    assert len(control_threads) == 1 and control_threads[0] != loop_thread(api)
    status = api.client.get(
        schedule(api.home.id, mission, "/requests/play-held"), headers=api.headers("bob")
    )
    assert status.status_code == 200 and status.json()["status"] == "applied"


def test_a_route_marked_for_some_requests_runs_in_the_pool_for_the_others(
    api: ApiWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, str] = {}
    for name in ("tree_text", "tree_page_text"):
        real = getattr(TaskService, name)

        def spy(
            self: TaskService, *args: Any, _real: Any = real, _name: str = name, **kw: Any
        ) -> Any:
            seen[_name] = threading.current_thread().name
            return _real(self, *args, **kw)

        monkeypatch.setattr(TaskService, name, spy)
    tree = f"/api/lists/{api.home_list.id}/tasks"
    headers = api.headers("bob")
    whole = api.client.get(tree, headers=headers)
    page = api.client.get(tree + "?limit=200", headers=headers)
    assert whole.status_code == page.status_code == 200
    assert whole.json() == page.json()
    loop = loop_thread(api)
    # The whole list grows with the data: always the pool. An unfiltered page: short.
    assert seen["tree_text"] != loop
    assert (seen["tree_page_text"] == loop) is (api.store.dialect == "sqlite")


def test_synchronous_routes_are_dispatched_and_marks_are_kept() -> None:
    def read() -> str:
        return "read"

    def write() -> str:
        return "write"

    marked_read = inline_read(when=lambda values: True)(read)
    marked_write = inline_write()(write)
    assert marked_read is read and marked_write is write
    route = DispatchedRoute("/x", read, methods=["GET"])
    assert route.dependant.call is not read
    assert getattr(route.dependant.call, "__wrapped__", None) is read
    assert dispatched(write).__wrapped__ is write  # type: ignore[attr-defined]


class TestRouteMatching:
    @staticmethod
    def scope(path: str, method: str = "GET", root_path: str = "") -> dict[str, Any]:
        return {"type": "http", "path": path, "method": method, "root_path": root_path}

    @staticmethod
    def route() -> DispatchedRoute:
        def detail(list_id: str) -> str:
            return list_id

        return DispatchedRoute("/api/lists/{list_id}/tasks", detail, methods=["GET"])

    def test_a_path_outside_the_routes_literal_start_is_no_match(self) -> None:
        route = self.route()
        assert (route.literal_start, route.literal_end) == ("/api/lists/", "/tasks")
        # (a prefix of the start, another area, the start without its slash, another end)
        for path in ("/api", "/api/tasks/x/tasks", "/api/lists", "/api/lists/x/members"):
            assert route.matches(self.scope(path)) == (Match.NONE, {})

    def test_a_path_inside_it_is_matched_as_the_framework_matches_it(self) -> None:
        route = self.route()
        full, child = route.matches(self.scope("/api/lists/abc/tasks"))
        assert full is Match.FULL and child["path_params"] == {"list_id": "abc"}
        assert route.matches(self.scope("/api/lists/abc/tasks", "POST"))[0] is Match.PARTIAL
        assert route.matches(self.scope("/api/lists/abc/other"))[0] is Match.NONE

    def test_under_a_root_path_the_framework_strips_it_before_matching(self) -> None:
        route = self.route()
        found, child = route.matches(self.scope("/kal/api/lists/abc/tasks", root_path="/kal"))
        assert found is Match.FULL and child["path_params"] == {"list_id": "abc"}
