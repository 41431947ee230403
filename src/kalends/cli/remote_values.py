"""The domain values a server's JSON stands for, so server mode prints as local mode does.

The HTTP API answers each value's own ``to_json()``; these functions read such JSON
back into the value, so a command draws a server's answer with the renderers it uses
locally and its ``--json`` prints ``to_json()`` in both modes. Only what the JSON holds
is restored: a timed due value's instant is resolved again from its wall time and zone.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime
from typing import Any
from uuid import UUID

from kalends.civil import parse_local_datetime
from kalends.missions import ControlOutcome, ControlStatus, Member, Receipt, Workspace
from kalends.reminders.outbox import Intent
from kalends.tasks import (
    Actor,
    Attachment,
    Channel,
    Comment,
    HistoryEvent,
    ListStatus,
    Reminder,
    Role,
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
from kalends.tasks.values import SKIPPED, Due

__all__ = [
    "actor",
    "attachment",
    "comment",
    "control_outcome",
    "control_status",
    "history_event",
    "intent",
    "member",
    "receipt",
    "section",
    "series_view",
    "task",
    "task_detail",
    "task_list",
    "tree_node",
    "workspace",
]

Json = Mapping[str, Any]


def _uuid(value: Any) -> UUID:
    return UUID(str(value))


def _maybe_uuid(value: Any) -> UUID | None:
    return None if value is None else UUID(str(value))


def _instant(value: Any) -> datetime:
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def _maybe_instant(value: Any) -> datetime | None:
    return None if value is None else _instant(value)


def _maybe_date(value: Any) -> date | None:
    return None if value is None else date.fromisoformat(str(value))


def actor(d: Json) -> Actor:
    return Actor(
        id=_uuid(d["id"]), handle=d["handle"], display_name=d["display_name"], email=d["email"]
    )


def task_list(d: Json) -> TaskList:
    role = d.get("role")
    return TaskList(
        id=_uuid(d["id"]),
        name=d["name"],
        status=ListStatus(d["status"]),
        revision=int(d["revision"]),
        role=Role(role) if role else None,
    )


def section(d: Json, list_id: UUID | str) -> Section:
    return Section(
        id=_uuid(d["id"]), list_id=_uuid(list_id), name=d["name"], position=int(d["position"])
    )


def _timed(d: Json, field: str) -> TimedValue:
    return TimedValue.parse(d["local"], d["zone"], field)


def _due(value: Any) -> Due | None:
    if value is None:
        return None
    if isinstance(value, Mapping):
        return _timed(value, "due")
    return date.fromisoformat(str(value))


def _reminder(d: Json) -> Reminder:
    return Reminder(
        channel=Channel(d["channel"]),
        time=TimedValue(
            local=parse_local_datetime(d["local"]), zone=d["zone"], at=_instant(d["at"])
        ),
        recipient_id=_uuid(d["recipient_id"]),
    )


def task(d: Json) -> Task:
    # A task a skip settled is shown "skipped" and stored "completed" (kalends.tasks.skips).
    skipped = d["status"] == SKIPPED
    return Task(
        id=_uuid(d["id"]),
        ref=d["ref"],
        list_id=_uuid(d["list_id"]),
        section_id=_maybe_uuid(d["section_id"]),
        parent_id=_maybe_uuid(d["parent_id"]),
        position=int(d["position"]),
        title=d["title"],
        description=d["description"],
        status=TaskStatus.COMPLETED if skipped else TaskStatus(d["status"]),
        completed_at=_maybe_instant(d["completed_at"]),
        trashed=bool(d["trashed"]),
        revision=int(d["revision"]),
        schedule_revision=int(d["schedule_revision"]),
        priority=d["priority"],
        planned=_maybe_date(d["planned"]),
        due=_due(d["due"]),
        series_id=_maybe_uuid(d["series_id"]),
        occurrence=d["occurrence"],
        created_at=_instant(d["created_at"]),
        updated_at=_instant(d["updated_at"]),
        tags=tuple(d["tags"]),
        reminders=tuple(_reminder(r) for r in d["reminders"]),
        skipped=skipped,
    )


def tree_node(d: Json) -> TreeNode:
    return TreeNode(task=task(d), children=tuple(tree_node(c) for c in d["children"]))


def comment(d: Json) -> Comment:
    return Comment(
        id=_uuid(d["id"]),
        task_id=_uuid(d["task_id"]),
        author_id=_uuid(d["author_id"]),
        body=d["body"],
        created_at=_instant(d["created_at"]),
    )


def attachment(d: Json) -> Attachment:
    return Attachment(
        id=_uuid(d["id"]),
        task_id=_uuid(d["task_id"]),
        author_id=_uuid(d["author_id"]),
        name=d["name"],
        media_type=d["media_type"],
        size=int(d["size"]),
        sha256=d["sha256"],
        created_at=_instant(d["created_at"]),
    )


def task_detail(d: Json) -> TaskDetail:
    return TaskDetail(
        task=task(d),
        list=task_list(d["list"]),
        section=d["section"],
        comments=tuple(comment(c) for c in d["comments"]),
        attachments=tuple(attachment(a) for a in d["attachments"]),
        children=int(d["children"]),
    )


def history_event(d: Json) -> HistoryEvent:
    return HistoryEvent(
        id=int(d["id"]),
        task_id=_uuid(d["task_id"]),
        kind=d["kind"],
        actor_id=_maybe_uuid(d["actor_id"]),
        at=_instant(d["at"]),
        payload=dict(d["payload"]),
        series_id=_maybe_uuid(d["series_id"]),
        occurrence=d["occurrence"],
    )


def series_view(d: Json) -> SeriesView:
    return SeriesView(
        id=_uuid(d["id"]),
        list_id=_uuid(d["list_id"]),
        rule=SeriesRule.parse(d["rule"]),
        local_time=d["time"],
        zone=d["zone"],
        anchor_date=date.fromisoformat(d["anchor_date"]),
        end_date=_maybe_date(d["end_date"]),
        count=d["count"],
        emitted=int(d["emitted"]),
        status=d["status"],
        revision=int(d["revision"]),
        outstanding_task_id=_maybe_uuid(d["outstanding_task_id"]),
        outstanding_ordinal=d["outstanding_ordinal"],
        next_date=_maybe_date(d["next_date"]),
    )


def intent(d: Json) -> Intent:
    created_at = _instant(d["created_at"])
    return Intent(
        id=_uuid(d["id"]),
        task_id=_uuid(d["task"]["id"]),
        task_ref=d["task"]["ref"],
        task_title=d["task"]["title"],
        schedule_revision=int(d["schedule_revision"]),
        channel=d["channel"],
        at=_instant(d["at"]),
        recipient_id=_uuid(d["recipient"]["id"]),
        recipient=d["recipient"]["handle"],
        status=d["status"],
        attempts=int(d["attempts"]),
        # The JSON leaves it out once the reminder is settled, and so does every view.
        next_attempt_at=_maybe_instant(d["next_attempt_at"]) or created_at,
        lease_owner=d["lease_owner"],
        lease_expires_at=_maybe_instant(d["lease_expires_at"]),
        last_error=d["last_error"],
        closed_reason=d["closed_reason"],
        delivered_at=_maybe_instant(d["delivered_at"]),
        created_at=created_at,
        updated_at=_instant(d["updated_at"]),
        zone=d.get("zone"),
    )


def workspace(d: Json) -> Workspace:
    return Workspace(
        id=_uuid(d["id"]),
        name=d["name"],
        path=d["path"],
        role=Role(d["role"]),
        schedules=int(d["schedules"]),
        created_at=_instant(d["createdAt"]),
    )


def member(d: Json) -> Member:
    return Member(actor_id=_uuid(d["actorId"]), handle=d["handle"], role=Role(d["role"]))


def receipt(d: Json) -> Receipt:
    return Receipt(
        request_id=d["requestId"],
        status=d["status"],
        mission_id=_maybe_uuid(d["missionId"]),
        workspace_id=_maybe_uuid(d["workspaceId"]),
        created_at=_maybe_instant(d["createdAt"]),
        repeated=bool(d["repeated"]),
        schedule=d["schedule"],
    )


def control_outcome(d: Json) -> ControlOutcome:
    return ControlOutcome(
        request_id=d["requestId"],
        action=d["action"],
        status=d["status"],
        expected_revision=int(d["expectedRevision"]),
        revision=int(d["revision"]),
        complete=bool(d["complete"]),
        repeated=bool(d["repeated"]),
        schedule=d["schedule"],
    )


def control_status(d: Json) -> ControlStatus:
    return ControlStatus(
        request_id=d["requestId"],
        status=d["status"],
        code=d["code"],
        action=d["action"],
        expected_revision=d["expectedRevision"],
        revision=d["revision"],
        complete=d["complete"],
        at=_maybe_instant(d["at"]),
        reason=d["reason"],
    )
