"""One client for the task commands: the services and the HTTP clients answer the same
protocols, so that a command makes each call once, whatever the mode.

The assignments below are checked by mypy (``tests`` are type-checked, strictly); the
tests check at run time that each implementation takes every protocol method with the
protocol's parameters, names, kinds and defaults alike.
"""

from __future__ import annotations

import inspect
from datetime import UTC, date, datetime
from typing import Any, Unpack, get_args, get_origin, get_type_hints, is_typeddict
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
from kalends.tasks.series_rules import SeriesRule
from unit.client_support import RecordingWire, assert_same_parameters, protocol_methods


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
        assert_same_parameters(protocol, local, http)

    @pytest.mark.parametrize(("protocol", "local", "http"), PAIRS)
    def test_a_keyword_group_is_the_same_group_in_all_three(
        self, protocol: type, local: type, http: type
    ) -> None:
        # ``**kw: Unpack[Group]`` shows as ``**kw`` alone in a signature: the group each
        # one names must be the same TypedDict, so that the keywords agree too.
        grouped = 0
        for name in protocol_methods(protocol):
            for param in inspect.signature(getattr(protocol, name)).parameters.values():
                if param.kind is not inspect.Parameter.VAR_KEYWORD:
                    continue
                wanted = keyword_group(protocol, name, param.name)
                assert keyword_group(local, name, param.name) == wanted, (local.__name__, name)
                assert keyword_group(http, name, param.name) == wanted, (http.__name__, name)
                grouped += 1
        if protocol in (TaskClient, TaskChanges):
            assert grouped >= 2

    def test_a_session_in_either_mode_offers_what_a_task_command_asks(self) -> None:
        wanted = {"directory", "grants", "tasks", "series", "changes", "server"}
        for session in (Session, Remote):
            assert wanted <= {n for n in dir(session) if not n.startswith("_")}
            assert callable(session.read_together)


def keyword_group(cls: type, name: str, kwargs: str) -> Any:
    """The TypedDict that ``cls.name`` takes its ``**kwargs`` as (``Unpack[Group]``)."""
    hint = get_type_hints(getattr(cls, name), include_extras=True)[kwargs]
    assert get_origin(hint) is Unpack, (cls.__name__, name, hint)
    (group,) = get_args(hint)
    assert is_typeddict(group)
    return group


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

    def test_keywords_left_out_are_sent_with_their_defaults(self) -> None:
        tasks_route = f"/api/lists/{LIST_ID}/tasks"
        wire = FakeWire(
            {
                ("GET", tasks_route): [],
                ("POST", tasks_route): TASK.to_json(),
                ("POST", "/api/tasks/K7Q2XW/move"): TASK.to_json(),
            }
        )
        assert HttpTasks(wire).tree("ignored", "Chores", tag="green") == []
        HttpTasks(wire).create("ignored", "Chores", "Water the plants", parent="K7Q2XW")
        HttpTaskChanges(wire).relocate("ignored", "K7Q2XW", 3, section="Home")
        unset: dict[str, Any] = {"dueFrom": None, "dueTo": None, "planned": None}
        assert wire.sent == [
            (
                "GET",
                tasks_route,
                {"section": None, "tag": "green", "status": None, **unset, "trashed": False},
            ),
            (
                "POST",
                tasks_route,
                {
                    "title": "Water the plants",
                    "description": "",
                    "parent": "K7Q2XW",
                    "section": None,
                    "tags": [],
                    "before": None,
                    "after": None,
                },
            ),
            (
                "POST",
                "/api/tasks/K7Q2XW/move",
                {
                    "expectedRevision": 3,
                    "before": None,
                    "after": None,
                    "section": "Home",
                    "noSection": False,
                    "parent": None,
                    "root": False,
                },
            ),
        ]

    def test_a_series_is_sent_with_its_timing(self) -> None:
        rule = SeriesRule.parse({"kind": "daily", "interval_days": 1})
        series = {
            "id": str(UUID(int=9)),
            "list_id": LIST_ID,
            "rule": rule.to_json(),
            "time": None,
            "zone": None,
            "anchor_date": "2030-03-30",
            "end_date": "2030-04-01",
            "count": None,
            "emitted": 1,
            "status": "active",
            "revision": 1,
            "outstanding_task_id": str(TASK.id),
            "outstanding_ordinal": 1,
            "next_date": None,
        }
        started = {"series": series, "task": TASK.to_json()}
        wire = FakeWire({("POST", "/api/tasks/K7Q2XW/series"): started})
        repeated = HttpTaskChanges(wire).repeat(
            "ignored", "K7Q2XW", 3, rule, end_date=date(2030, 4, 1)
        )
        assert repeated.task == TASK and repeated.series.end_date == date(2030, 4, 1)
        assert wire.sent == [
            (
                "POST",
                "/api/tasks/K7Q2XW/series",
                {
                    "expectedRevision": 3,
                    "rule": rule.to_json(),
                    "time": None,
                    "zone": None,
                    "until": "2030-04-01",
                    "count": None,
                },
            )
        ]
