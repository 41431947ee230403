"""One client for the workspace and schedule commands: the services and the HTTP clients
answer the same protocols, so that a command makes each call once, whatever the mode.

The assignments below are checked by mypy; the tests check at run time that each
implementation takes every protocol method with the protocol's parameters, names, kinds
and defaults alike, and what the HTTP clients send.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import pytest

from kalends.bootstrap import Services
from kalends.cli.http import ServerError
from kalends.cli.http_missions import HttpSchedules, HttpWorkspaces, MissionWire
from kalends.cli.mission_client import MissionSession, SchedulesClient, WorkspacesClient
from kalends.cli.remote import Remote
from kalends.cli.session import Session
from kalends.errors import InvalidInput, NotFound
from kalends.identity import Role
from kalends.missions import Action, ControlOutcome, Member, ScheduleService, Workspace, Workspaces
from unit.client_support import RecordingWire, assert_same_parameters


def local_session(s: Session) -> MissionSession:
    return s


def server_session(r: Remote) -> MissionSession:
    return r


def remote_is_a_mission_wire(r: Remote) -> MissionWire:
    return r


def services_are_the_local_clients(s: Services) -> tuple[WorkspacesClient, SchedulesClient]:
    return s.workspaces, s.schedules


def the_http_clients(w: MissionWire) -> tuple[WorkspacesClient, SchedulesClient]:
    return HttpWorkspaces(w), HttpSchedules(w)


PAIRS = [
    # workspaces and their members
    (WorkspacesClient, Workspaces, HttpWorkspaces),
    # schedule documents, their controls and reads
    (SchedulesClient, ScheduleService, HttpSchedules),
]


class TestTheProtocols:
    @pytest.mark.parametrize(("protocol", "local", "http"), PAIRS)
    def test_both_implementations_take_each_call_with_the_protocols_parameters(
        self, protocol: type, local: type, http: type
    ) -> None:
        assert_same_parameters(protocol, local, http)

    def test_a_session_in_either_mode_offers_what_a_mission_command_asks(self) -> None:
        wanted = {"workspaces", "schedules", "server", "read_together", "local_note"}
        for session in (Session, Remote):
            assert wanted <= {n for n in dir(session) if not n.startswith("_")}


WORKSPACE_ID = str(UUID(int=7))
MEMBER_ID = str(UUID(int=8))
MISSION_ID = str(UUID(int=9))
ROUTE = f"/api/workspaces/{WORKSPACE_ID}/missions/{MISSION_ID}/schedule"
DOC = {"id": MISSION_ID, "workspaceId": WORKSPACE_ID, "title": "Backup", "revision": 3}


class FakeWire(RecordingWire):
    """The recording server, in the one workspace these tests name."""

    def workspace_id(self, ref: str) -> str:
        return WORKSPACE_ID

    def member_id(self, ref: str) -> str:
        return MEMBER_ID


def fake_is_a_mission_wire(w: FakeWire) -> MissionWire:
    return w


def an_outcome(action: str) -> ControlOutcome:
    return ControlOutcome(
        request_id="req-00001",
        action=action,
        status="applied",
        expected_revision=3,
        revision=4,
        complete=True,
        repeated=False,
        schedule=DOC,
    )


class TestTheHttpWorkspaces:
    def test_a_role_is_put_on_the_member_found_in_the_workspace_found(self) -> None:
        member = Member(actor_id=UUID(MEMBER_ID), handle="ada", role=Role.VIEWER)
        path = f"/api/workspaces/{WORKSPACE_ID}/members/{MEMBER_ID}"
        wire = FakeWire({("PUT", path): member.to_json()})
        made = HttpWorkspaces(wire).set_member("ignored", "Home", "ada", Role.VIEWER)
        assert made == member
        assert wire.sent == [("PUT", path, {"role": "viewer"})]

    def test_a_relative_path_is_sent_from_the_current_directory(
        self, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
    ) -> None:
        monkeypatch.chdir(tmp_path)
        ws = Workspace(
            id=UUID(WORKSPACE_ID),
            name="here",
            path=str(tmp_path / "here"),
            role=Role.OWNER,
            schedules=0,
            created_at=datetime(2030, 3, 30, tzinfo=UTC),
        )
        wire = FakeWire({("POST", "/api/workspaces"): ws.to_json()})
        assert HttpWorkspaces(wire).add("ignored", "here") == ws
        assert wire.sent == [("POST", "/api/workspaces", {"path": ws.path, "name": None})]


class TestTheHttpSchedules:
    def test_a_detail_by_id_alone_is_one_request_to_the_missions_route(self) -> None:
        wire = FakeWire({("GET", f"/api/missions/{MISSION_ID}"): DOC})
        assert HttpSchedules(wire).detail("ignored", f" {MISSION_ID} ") == DOC
        assert [sent[:2] for sent in wire.sent] == [("GET", f"/api/missions/{MISSION_ID}")]

    def test_a_control_by_id_alone_finds_the_workspace_then_posts_to_its_route(self) -> None:
        wire = FakeWire(
            {
                ("GET", f"/api/missions/{MISSION_ID}"): DOC,
                ("POST", ROUTE): an_outcome("play").to_json(),
            }
        )
        outcome = HttpSchedules(wire).control(
            "ignored", MISSION_ID, Action.PLAY, request_id="req-00001", expected_revision=3
        )
        assert outcome == an_outcome("play")
        assert wire.sent[1] == (
            "POST",
            ROUTE,
            {"action": "play", "requestID": "req-00001", "expectedRevision": 3},
        )

    def test_run_now_in_a_known_workspace_posts_to_its_own_route_alone(self) -> None:
        wire = FakeWire({("POST", f"{ROUTE}/run-now"): an_outcome("run-now").to_json()})
        HttpSchedules(wire).control(
            "ignored",
            MISSION_ID,
            "run-now",
            request_id="req-00001",
            expected_revision=3,
            workspace=UUID(WORKSPACE_ID),
        )
        assert wire.sent == [
            ("POST", f"{ROUTE}/run-now", {"requestID": "req-00001", "expectedRevision": 3})
        ]

    def test_an_edit_sends_its_changes_with_the_configure_action(self) -> None:
        wire = FakeWire({("POST", ROUTE): an_outcome("configure").to_json()})
        HttpSchedules(wire).configure(
            "ignored",
            MISSION_ID,
            {"notes": "n"},
            request_id="req-00001",
            expected_revision=3,
            workspace=UUID(WORKSPACE_ID),
        )
        assert wire.sent[0][2] == {
            "action": "configure",
            "requestID": "req-00001",
            "expectedRevision": 3,
            "changes": {"notes": "n"},
        }

    def test_a_schedule_the_server_does_not_show_is_refused_as_local_mode_refuses_it(
        self,
    ) -> None:
        unseen = ServerError("not-found", f"id: no schedule {MISSION_ID}", {"field": "id"}, 404)
        wire = FakeWire({("GET", f"/api/missions/{MISSION_ID}"): unseen})
        with pytest.raises(NotFound) as raised:
            HttpSchedules(wire).preview("ignored", MISSION_ID, 3)
        assert raised.value.message == f"schedule: no schedule {MISSION_ID}"
        assert raised.value.details["field"] == "schedule"

    def test_a_malformed_id_is_refused_before_any_request(self) -> None:
        wire = FakeWire({})
        with pytest.raises(InvalidInput, match="not a mission ID"):
            HttpSchedules(wire).detail("ignored", "nope")
        assert wire.sent == []
