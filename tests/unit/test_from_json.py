"""``X.from_json(x.to_json()) == x``: a server's answer reads back into the value local
mode has, so both modes print the same."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from typing import Any
from uuid import UUID, uuid4

import pytest

from kalends.civil import parse_local_datetime
from kalends.identity import Actor, Role
from kalends.tasks import (
    Attachment,
    Channel,
    Comment,
    HistoryEvent,
    ListStatus,
    Reminder,
    Section,
    Task,
    TaskDetail,
    TaskList,
    TaskStatus,
    TimedValue,
    TreeNode,
)
from kalends.tasks.series import SeriesView
from kalends.tasks.series_rules import SeriesRule

AT = datetime(2030, 3, 30, 7, 15, 2, 123456, tzinfo=UTC)


def wire(value: dict[str, Any]) -> dict[str, Any]:
    """The JSON as it crosses the network: text, read back."""
    return json.loads(json.dumps(value))  # type: ignore[no-any-return]


def a_task(**changes: Any) -> Task:
    fields: dict[str, Any] = {
        "id": uuid4(),
        "ref": "K7Q2XW",
        "list_id": uuid4(),
        "section_id": None,
        "parent_id": None,
        "position": 3,
        "title": "Water the plants",
        "description": "all of them",
        "status": TaskStatus.OPEN,
        "completed_at": None,
        "trashed": False,
        "revision": 4,
        "schedule_revision": 2,
        "priority": None,
        "planned": None,
        "due": None,
        "series_id": None,
        "occurrence": None,
        "created_at": AT,
        "updated_at": AT,
    }
    return Task(**{**fields, **changes})


def timed(local: str, zone: str) -> TimedValue:
    return TimedValue.parse(local, zone, "due")


def reminder(local: str, zone: str) -> Reminder:
    return Reminder(channel=Channel.EMAIL, time=timed(local, zone), recipient_id=uuid4())


TASKS = [
    # a bare open task
    a_task(),
    # everything set: section, parent, priority, planned, date due, tags, series
    a_task(
        section_id=uuid4(),
        parent_id=uuid4(),
        priority=1,
        planned=date(2030, 3, 29),
        due=date(2030, 3, 31),
        series_id=uuid4(),
        occurrence=2,
        tags=("green", "weekly"),
    ),
    # a timed due value just after the spring-forward gap in Paris, and reminders on
    # either side of it
    a_task(
        due=timed("2030-03-31T03:00:00", "Europe/Paris"),
        reminders=(
            reminder("2030-03-31T01:30:00", "Europe/Paris"),
            reminder("2030-03-31T03:30:00", "Europe/Paris"),
        ),
    ),
    # a timed due value in New York's summer time
    a_task(due=timed("2030-07-04T18:00:00", "America/New_York")),
    # completed, and trashed
    a_task(status=TaskStatus.COMPLETED, completed_at=AT, trashed=True),
    # settled by a skip: shown "skipped", stored "completed"
    a_task(status=TaskStatus.COMPLETED, completed_at=AT, skipped=True, series_id=uuid4()),
]


class TestTask:
    @pytest.mark.parametrize("task", TASKS)
    def test_a_task_reads_back_from_its_json(self, task: Task) -> None:
        assert Task.from_json(wire(task.to_json())) == task

    def test_a_reminder_keeps_the_instant_it_was_given(self) -> None:
        # 02:30 happens twice in Paris on 2030-10-27; the JSON's instant decides which.
        local = parse_local_datetime("2030-10-27T02:30:00")
        second = datetime(2030, 10, 27, 1, 30, tzinfo=UTC)
        time = TimedValue(local=local, zone="Europe/Paris", at=second)
        task = a_task(reminders=(Reminder(channel=Channel.PUSH, time=time, recipient_id=uuid4()),))
        assert Task.from_json(wire(task.to_json())).reminders[0].time.at == second

    def test_a_tree_reads_back_with_its_children(self) -> None:
        leaf = TreeNode(task=a_task(ref="AAAAAA"))
        node = TreeNode(task=a_task(), children=(TreeNode(task=a_task(), children=(leaf,)),))
        assert TreeNode.from_json(wire(node.to_json())) == node

    def test_a_detail_reads_back_with_its_list_comments_and_attachments(self) -> None:
        task = a_task(due=timed("2030-03-31T03:00:00", "Europe/Paris"))
        detail = TaskDetail(
            task=task,
            list=TaskList(
                id=task.list_id,
                name="Chores",
                status=ListStatus.ACTIVE,
                revision=2,
                role=Role.EDITOR,
            ),
            section="Home",
            comments=(
                Comment(id=uuid4(), task_id=task.id, author_id=uuid4(), body="?", created_at=AT),
            ),
            attachments=(
                Attachment(
                    id=uuid4(),
                    task_id=task.id,
                    author_id=uuid4(),
                    name="notes.txt",
                    media_type="text/plain",
                    size=11,
                    sha256="ab" * 32,
                    created_at=AT,
                ),
            ),
            children=2,
        )
        assert TaskDetail.from_json(wire(detail.to_json())) == detail


class TestListsAndActors:
    @pytest.mark.parametrize("role", [Role.OWNER, Role.VIEWER, None])
    def test_a_list_reads_back_with_or_without_a_role(self, role: Role | None) -> None:
        found = TaskList(
            id=uuid4(), name="Chores", status=ListStatus.ARCHIVED, revision=7, role=role
        )
        assert TaskList.from_json(wire(found.to_json())) == found

    def test_a_section_reads_back_in_the_list_it_was_read_from(self) -> None:
        section = Section(id=uuid4(), list_id=uuid4(), name="Dairy", position=1 << 20)
        assert Section.from_json(wire(section.to_json()), list_id=section.list_id) == section

    @pytest.mark.parametrize("email", ["bob@example.com", None])
    def test_an_actor_reads_back(self, email: str | None) -> None:
        actor = Actor(id=uuid4(), handle="bob", display_name="Bob", email=email)
        assert Actor.from_json({**wire(actor.to_json()), "role": "editor"}) == actor


class TestHistoryAndSeries:
    def test_an_event_reads_back_with_its_payload(self) -> None:
        event = HistoryEvent(
            id=42,
            task_id=uuid4(),
            kind="scheduled",
            actor_id=uuid4(),
            at=AT,
            payload={"due": {"local": "2030-03-31T03:00:00", "zone": "Europe/Paris"}},
            series_id=uuid4(),
            occurrence=3,
        )
        assert HistoryEvent.from_json(wire(event.to_json())) == event

    def test_an_event_without_an_actor_reads_back(self) -> None:
        event = HistoryEvent(id=1, task_id=uuid4(), kind="created", actor_id=None, at=AT)
        assert HistoryEvent.from_json(wire(event.to_json())) == event

    @pytest.mark.parametrize(
        "rule",
        [
            # every other day
            {"kind": "daily", "interval_days": 2},
            # Monday, Wednesday and Friday
            {"kind": "weekdays", "days": [1, 3, 5]},
            # three days after each completion
            {"kind": "completion_relative", "days": 3},
        ],
    )
    def test_a_series_reads_back(self, rule: dict[str, Any]) -> None:
        view = SeriesView(
            id=uuid4(),
            list_id=uuid4(),
            rule=SeriesRule.parse(rule),
            local_time="07:30",
            zone="Europe/Paris",
            anchor_date=date(2030, 3, 29),
            end_date=date(2030, 12, 31),
            count=10,
            emitted=2,
            status="active",
            revision=3,
            outstanding_task_id=uuid4(),
            outstanding_ordinal=2,
            next_date=date(2030, 3, 31),
        )
        assert SeriesView.from_json(wire(view.to_json())) == view

    def test_an_ended_series_without_time_or_outstanding_task_reads_back(self) -> None:
        view = SeriesView(
            id=UUID(int=1),
            list_id=UUID(int=2),
            rule=SeriesRule.parse({"kind": "daily", "interval_days": 1}),
            local_time=None,
            zone=None,
            anchor_date=date(2030, 3, 29),
            end_date=None,
            count=None,
            emitted=5,
            status="ended",
            revision=9,
            outstanding_task_id=None,
            outstanding_ordinal=None,
            next_date=None,
        )
        assert SeriesView.from_json(wire(view.to_json())) == view
