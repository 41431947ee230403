"""The keyword groups written once (PEP 692): the protocol, the local implementation and
the HTTP client of a call take the same group, the groups require what the calls
required before, and a keyword left out has the default it had."""

from __future__ import annotations

import inspect
from typing import Any, Unpack, get_type_hints
from uuid import UUID

import pytest

from kalends.cli.http_missions import HttpSchedules
from kalends.cli.http_reminders import HttpReminders
from kalends.cli.local_reminders import LocalReminders
from kalends.cli.mission_client import SchedulesClient
from kalends.cli.reminder_client import RemindersClient
from kalends.missions import ScheduleService
from kalends.missions.keywords import (
    ControlKeywords,
    PageKeywords,
    RequestKeywords,
    StatusKeywords,
)
from kalends.missions.limits import MAX_PAGE
from kalends.reminders.inspection import IntentQuery
from kalends.reminders.limits import LIST_LIMIT
from kalends.reminders.outbox import Outbox
from unit.client_support import RecordingWire

# Each call that takes a group, the group, and who implements it.
CALLS = [
    ("configure", RequestKeywords, (SchedulesClient, ScheduleService, HttpSchedules)),
    ("control", ControlKeywords, (SchedulesClient, ScheduleService, HttpSchedules)),
    ("control_status", StatusKeywords, (SchedulesClient, ScheduleService, HttpSchedules)),
    ("page", PageKeywords, (SchedulesClient, ScheduleService, HttpSchedules)),
    ("list", IntentQuery[str], (RemindersClient, LocalReminders, HttpReminders)),
    ("list", IntentQuery[UUID], (Outbox,)),
]


def _keywords_of(cls: type, name: str) -> Any:
    return get_type_hints(getattr(cls, name), include_extras=True)["kw"]


@pytest.mark.parametrize(("name", "group", "owners"), CALLS)
def test_every_implementation_takes_the_one_group(
    name: str, group: Any, owners: tuple[type, ...]
) -> None:
    for cls in owners:
        assert _keywords_of(cls, name) == Unpack[group], (cls.__name__, name)


def test_the_groups_require_what_the_calls_required() -> None:
    assert RequestKeywords.__required_keys__ == {"request_id", "expected_revision"}
    assert ControlKeywords.__required_keys__ == {"request_id", "expected_revision"}
    assert ControlKeywords.__optional_keys__ == {"changes", "workspace"}
    assert StatusKeywords.__required_keys__ == frozenset()
    assert PageKeywords.__required_keys__ == frozenset()
    assert IntentQuery.__required_keys__ == frozenset()


def test_a_control_method_spells_out_the_request_keywords() -> None:
    keywords = list(inspect.signature(ScheduleService.play).parameters)[-3:]
    assert keywords == list(RequestKeywords.__annotations__)


class Wire(RecordingWire):
    def workspace_id(self, ref: str) -> str:
        return str(UUID(int=7))

    def member_id(self, ref: str) -> str:
        return ref


def test_a_page_asked_without_keywords_is_the_first_and_fullest() -> None:
    route = f"/api/workspaces/{UUID(int=7)}/missions/scheduled"
    wire = Wire({("GET", route): {"items": [], "nextAfter": None}})
    HttpSchedules(wire).page("ignored", "Home")
    assert wire.sent == [("GET", route, {"after": None, "limit": MAX_PAGE})]


def test_reminders_asked_without_keywords_are_any_state_up_to_the_default() -> None:
    wire = Wire({("GET", "/api/reminders"): []})
    assert HttpReminders(wire).list("ignored") == []
    assert wire.sent == [("GET", "/api/reminders", {"status": None, "limit": LIST_LIMIT})]
    assert LIST_LIMIT == 100
