"""One client for the task commands: the services and the HTTP clients answer the same
protocols, so that a command makes each call once, whatever the mode.

The assignments below are checked by mypy (``tests`` are type-checked, strictly); the
tests check at run time that each implementation takes every protocol method with the
protocol's parameters, names, kinds and defaults alike.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import pytest

from kalends.auth.grants import Grants
from kalends.bootstrap import Services
from kalends.cli.http import ServerError
from kalends.cli.http_tasks import (
    HttpDirectory,
    HttpGrants,
    HttpSeries,
    HttpTaskChanges,
    HttpTasks,
    Wire,
)
from kalends.cli.local_tasks import LocalTaskChanges
from kalends.cli.remote import Remote
from kalends.cli.session import Session
from kalends.cli.task_client import (
    DirectoryClient,
    GrantsClient,
    SeriesClient,
    TaskChanges,
    TaskClient,
    TaskSession,
)
from kalends.errors import OpenDescendants
from kalends.tasks import Directory, Task, TaskService, TaskStatus
from kalends.tasks.series import SeriesService
from unit.client_support import RecordingWire, parameters, protocol_methods


def local_session(s: Session) -> TaskSession:
    return s


def server_session(r: Remote) -> TaskSession:
    return r


def remote_is_a_wire(r: Remote) -> Wire:
    return r


def services_are_the_local_clients(
    s: Services,
) -> tuple[DirectoryClient, GrantsClient, TaskClient, SeriesClient, TaskChanges]:
    return s.directory, s.grants, s.tasks, s.series, LocalTaskChanges(s)


def the_http_clients(
    w: Wire,
) -> tuple[DirectoryClient, GrantsClient, TaskClient, SeriesClient, TaskChanges]:
    return HttpDirectory(w), HttpGrants(w), HttpTasks(w), HttpSeries(w), HttpTaskChanges(w)


PAIRS = [
    # lists, members, sections and actors
    (DirectoryClient, Directory, HttpDirectory),
    # the run privilege
    (GrantsClient, Grants, HttpGrants),
    # tasks, one call each
    (TaskClient, TaskService, HttpTasks),
    # recurring series
    (SeriesClient, SeriesService, HttpSeries),
    # changes of several calls: one transaction locally, one request on a server
    (TaskChanges, LocalTaskChanges, HttpTaskChanges),
]


class TestTheProtocols:
    @pytest.mark.parametrize(("protocol", "local", "http"), PAIRS)
    def test_both_implementations_take_each_call_with_the_protocols_parameters(
        self, protocol: type, local: type, http: type
    ) -> None:
        methods = protocol_methods(protocol)
        assert methods
        for name in methods:
            wanted = parameters(protocol, name)
            assert parameters(local, name) == wanted, (local.__name__, name)
            assert parameters(http, name) == wanted, (http.__name__, name)

    def test_a_session_in_either_mode_offers_what_a_task_command_asks(self) -> None:
        wanted = {"directory", "grants", "tasks", "series", "changes", "server"}
        for session in (Session, Remote):
            assert wanted <= {n for n in dir(session) if not n.startswith("_")}
            assert callable(session.read_together)


class FakeWire(RecordingWire):
    """The recording server, on the one list these tests name."""

    def list_id(self, ref: str) -> str:
        return LIST_ID


def fake_is_a_wire(w: FakeWire) -> Wire:
    return w


LIST_ID = str(UUID(int=7))
TASK = Task(
    id=UUID(int=1),
    ref="K7Q2XW",
    list_id=UUID(LIST_ID),
    section_id=None,
    parent_id=None,
    position=1,
    title="Water the plants",
    description="",
    status=TaskStatus.OPEN,
    completed_at=None,
    trashed=False,
    revision=3,
    schedule_revision=1,
    priority=None,
    planned=None,
    due=None,
    series_id=None,
    occurrence=None,
    created_at=datetime(2030, 3, 30, tzinfo=UTC),
    updated_at=datetime(2030, 3, 30, tzinfo=UTC),
)
A_LIST = {"id": LIST_ID, "name": "Chores", "status": "active", "revision": 2, "role": "owner"}


class TestTheHttpClients:
    def test_an_edit_is_one_request_that_names_only_the_tags_given(self) -> None:
        wire = FakeWire({("PATCH", "/api/tasks/K7Q2XW"): TASK.to_json()})
        edited = HttpTaskChanges(wire).edit("ignored", " K7Q2XW ", 2, title="Water", add_tags=["x"])
        assert edited == TASK
        assert wire.sent == [
            (
                "PATCH",
                "/api/tasks/K7Q2XW",
                {"expectedRevision": 2, "title": "Water", "description": None, "addTags": ["x"]},
            )
        ]

    def test_the_servers_open_descendants_refusal_speaks_as_local_mode_does(self) -> None:
        refusal = ServerError("open-descendants", "pass completeSubtree", {"open": 2}, 409)
        wire = FakeWire({("POST", "/api/tasks/K7Q2XW/complete"): refusal})
        with pytest.raises(OpenDescendants) as raised:
            HttpTasks(wire).complete("ignored", "K7Q2XW", 3)
        assert raised.value.details["open"] == 2
        assert raised.value.message == OpenDescendants.of(2, recurring=False).message

    def test_taking_a_member_off_a_list_is_a_delete_with_the_revision(self) -> None:
        route = f"/api/lists/{LIST_ID}/members/bob"
        wire = FakeWire({("DELETE", route): A_LIST})
        updated = HttpDirectory(wire).share("ignored", "Chores", " bob ", None, 1)
        assert updated.name == "Chores"
        assert wire.sent == [("DELETE", route, {"expectedRevision": 1})]

    def test_a_schedule_is_made_of_the_task_as_the_server_has_it(self) -> None:
        route = "/api/tasks/K7Q2XW"
        warning = {"code": "reminder-in-the-past", "field": "reminders[0]", "message": "past"}
        wire = FakeWire(
            {
                ("GET", route): TASK.to_json(),
                ("PUT", route + "/schedule"): {**TASK.to_json(), "warnings": [warning]},
            }
        )
        seen: list[Task | None] = []

        def edit(current: Task | None) -> dict[str, Any]:
            seen.append(current)
            return {"priority": 1}

        scheduled = HttpTaskChanges(wire).schedule("ignored", "K7Q2XW", 3, edit)
        assert seen == [TASK]
        assert scheduled.warnings == (warning,)
        assert wire.sent[-1] == ("PUT", route + "/schedule", {"priority": 1, "expectedRevision": 3})
