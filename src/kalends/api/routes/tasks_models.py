"""The task side's JSON at the edge: input fields, bodies and the answers' shapes.

Answers are the domain values' own ``to_json()`` (what the CLI's ``--json`` prints);
the models below describe them in /openapi.json. Every text input refuses NUL and
lone surrogates, which no database stores, so such input is a 422, never a 5xx.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from datetime import date, datetime
from typing import Annotated, Any, Literal, TypeVar
from uuid import UUID

from fastapi import Path, Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, WithJsonSchema

from kalends.api.answers import JsonAnswer
from kalends.api.context import ApiContext
from kalends.identity import MAX_NAME_LENGTH
from kalends.tasks.values import MAX_REMINDERS, MAX_TAG_LENGTH, MAX_TITLE_LENGTH

T = TypeVar("T")

# Any text but NUL; a pattern also makes pydantic refuse lone surrogates.
NO_NUL = r"^[^\x00]*$"
# The same, and not blank: a name has a character that is not white space.
NOT_BLANK = r"^[^\x00]*[^\s\x00][^\x00]*$"
_UUID = r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"
# A task's short reference (six letters and digits) or its ID.
TASK_KEY = rf"^(?:[A-Za-z0-9]{{6}}|{_UUID}|[0-9A-Fa-f]{{32}})$"
# An actor's handle or ID.
ACTOR_KEY = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
# Revisions are 32-bit integers in the database.
MAX_REVISION = 2**31 - 1
# The largest comment, description or due text a body may carry (the services check bytes).
MAX_TEXT_CHARS = 64 * 1024
MAX_TAGS = 100

Text = Annotated[str, StringConstraints(max_length=MAX_TEXT_CHARS, pattern=NO_NUL)]
Name = Annotated[
    str, StringConstraints(min_length=1, max_length=MAX_NAME_LENGTH, pattern=NOT_BLANK)
]
Title = Annotated[
    str, StringConstraints(min_length=1, max_length=MAX_TITLE_LENGTH, pattern=NOT_BLANK)
]
TagName = Annotated[
    str, StringConstraints(min_length=1, max_length=MAX_TAG_LENGTH, pattern=NOT_BLANK)
]
# The shapes the civil code accepts; it still checks that the zone exists and the time is real.
ZONE_NAME = r"^(?:UTC|[A-Za-z][A-Za-z0-9_+\-]*(?:/[A-Za-z0-9_+\-]+)+)$"
LOCAL_DATETIME = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}$"
WALL_TIME = r"^[0-9]{2}:[0-9]{2}(?::[0-9]{2})?$"
Zone = Annotated[str, StringConstraints(min_length=1, max_length=64, pattern=ZONE_NAME)]
LocalTime = Annotated[str, StringConstraints(pattern=LOCAL_DATETIME)]
WallTime = Annotated[str, StringConstraints(pattern=WALL_TIME)]
TaskKeyText = Annotated[str, StringConstraints(pattern=TASK_KEY)]
ActorKeyText = Annotated[str, StringConstraints(pattern=ACTOR_KEY)]
Revision = Annotated[
    int,
    Field(
        ge=0,
        le=MAX_REVISION,
        description="The revision you last saw; a changed object is refused with 409.",
    ),
]
RoleName = Literal["owner", "editor", "viewer"]

TaskPath = Annotated[
    str,
    Path(pattern=TASK_KEY, description="A task's short reference (e.g. K7Q2XW) or its ID."),
]
SeriesPath = Annotated[
    str,
    Path(
        pattern=TASK_KEY,
        description="A series ID, or a task of the series (reference or ID).",
    ),
]
ActorPath = Annotated[str, Path(pattern=ACTOR_KEY, description="An actor's handle or ID.")]
OptionalRevisionQuery = Annotated[
    int | None,
    Query(ge=0, le=MAX_REVISION, description="Refuse unless the list is still at this revision."),
]


def atomic(ctx: ApiContext, fn: Callable[[], T], *, write: bool = True) -> T:
    """Runs several service calls as one transaction: all of them happen, or none."""
    return ctx.services.store.run(lambda _conn: fn(), write=write)


def answer(data: Any, status_code: int = 200) -> JSONResponse:
    """The domain's own JSON, as is (the route's response model documents it)."""
    return JsonAnswer(data, status_code=status_code)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --------------------------------------------------------------------------- answers


class ListOut(BaseModel):
    id: UUID
    name: str
    status: Literal["active", "archived"]
    revision: int
    role: RoleName | None = Field(description="The caller's role on the list.")


class MemberOut(BaseModel):
    id: UUID
    handle: str
    display_name: str
    email: str | None
    role: RoleName


class SectionOut(BaseModel):
    id: UUID
    name: str
    position: int


class DueTimed(Strict):
    local: LocalTime = Field(description="Wall time YYYY-MM-DDTHH:MM:SS, no offset.")
    zone: Zone = Field(description="IANA zone, e.g. Europe/Paris.")


class ReminderOut(BaseModel):
    channel: Literal["email", "push"]
    local: str
    zone: str
    at: datetime
    recipient_id: UUID


class TaskOut(BaseModel):
    id: UUID
    ref: str
    list_id: UUID
    section_id: UUID | None
    parent_id: UUID | None
    position: int
    title: str
    description: str
    status: Literal["open", "completed", "skipped"] = Field(
        description="`skipped`: settled by skipping its series occurrence (not completed)."
    )
    completed_at: datetime | None
    trashed: bool
    revision: int = Field(description="Send it back as `expectedRevision` on the next write.")
    schedule_revision: int
    priority: int | None
    planned: date | None
    due: date | DueTimed | None
    series_id: UUID | None
    occurrence: int | None
    created_at: datetime
    updated_at: datetime
    tags: list[str]
    reminders: list[ReminderOut]


class WarningOut(BaseModel):
    code: str = Field(description="Stable machine-readable code, e.g. `reminder-in-the-past`.")
    field: str = Field(description="The field of the body it is about.")
    message: str


class ScheduledTaskOut(TaskOut):
    warnings: list[WarningOut] = Field(
        description="What was written but will not happen as asked: a reminder whose time "
        "has passed is sent at once, or never when more than a day past."
    )


class TreeNodeOut(TaskOut):
    children: list[TreeNodeOut]


class CommentOut(BaseModel):
    id: UUID
    task_id: UUID
    author_id: UUID
    body: str
    created_at: datetime


class AttachmentOut(BaseModel):
    id: UUID
    task_id: UUID
    author_id: UUID
    name: str
    media_type: str
    size: int
    sha256: str
    created_at: datetime


class DailyRule(Strict):
    kind: Literal["daily"]
    interval_days: int = Field(default=1, ge=1, le=3650, description="Every N days.")


class WeekdaysRule(Strict):
    kind: Literal["weekdays"]
    days: list[Annotated[int, Field(ge=1, le=7)]] = Field(
        min_length=1, max_length=7, description="ISO weekdays, Monday = 1."
    )


class CompletionRule(Strict):
    kind: Literal["completion_relative"]
    days: int = Field(ge=0, le=3650, description="Calendar days after each completion.")


Rule = Annotated[DailyRule | WeekdaysRule | CompletionRule, Field(discriminator="kind")]


NEXT_DATE = (
    "The date the next occurrence would get if the outstanding one were settled now "
    "(a calendar rule catches up to the latest eligible date up to today); null for a "
    "completion-relative rule and when none will follow."
)


class SeriesOut(BaseModel):
    id: UUID
    list_id: UUID
    rule: Rule
    time: str | None
    zone: str | None
    anchor_date: date
    end_date: date | None
    count: int | None
    emitted: int
    status: Literal["active", "paused", "stopped", "ended"]
    revision: int = Field(description="The series' own revision, for pause/resume/stop.")
    outstanding_task_id: UUID | None
    outstanding_ordinal: int | None
    next_date: date | None = Field(description=NEXT_DATE)


class TaskSeriesOut(BaseModel):
    """The series as seen from one of its tasks."""

    id: UUID
    rule: Rule
    time: str | None
    zone: str | None
    status: str
    revision: int
    next_date: date | None = Field(description=NEXT_DATE)
    occurrence: int | None
    outstanding_ordinal: int | None


class TaskDetailOut(TaskOut):
    list: ListOut
    section: str | None
    comments: builtins.list[CommentOut]
    attachments: builtins.list[AttachmentOut]
    children: int = Field(description="How many live checklist items the task has.")
    series: TaskSeriesOut | None


class HistoryEventOut(BaseModel):
    id: int
    task_id: UUID
    kind: str
    actor_id: UUID | None
    at: datetime
    payload: dict[str, Any]
    series_id: UUID | None
    occurrence: int | None


class SkipOut(BaseModel):
    skipped: TaskOut
    successor: TaskOut | None
    series: SeriesOut


class SeriesStartOut(BaseModel):
    series: SeriesOut
    task: TaskOut = Field(description="The first occurrence, at its new revision.")


class IntentTaskOut(BaseModel):
    id: UUID
    ref: str
    title: str


class IntentRecipientOut(BaseModel):
    id: UUID
    handle: str


class IntentOut(BaseModel):
    id: UUID
    task: IntentTaskOut
    schedule_revision: int
    channel: str
    at: datetime = Field(description="The reminder's instant, in UTC.")
    local: str | None = Field(
        description="The same instant as its recipient reads it: the wall time "
        "YYYY-MM-DDTHH:MM:SS in `zone` (null without a zone)."
    )
    zone: str | None = Field(
        description="The zone the reminder was set in (else its task's due zone; null for neither)."
    )
    recipient: IntentRecipientOut
    status: Literal["pending", "leased", "delivered", "cancelled", "dead", "closed"]
    attempts: int
    max_attempts: int
    next_attempt_at: datetime | None
    lease_owner: str | None
    lease_expires_at: datetime | None
    last_error: str | None
    closed_reason: str | None
    delivered_at: datetime | None
    created_at: datetime
    updated_at: datetime


# --------------------------------------------------------------------------- bodies


class NewList(Strict):
    name: Name


class ListRevision(Strict):
    expectedRevision: Revision | None = None


class MemberRole(Strict):
    role: RoleName
    expectedRevision: Revision | None = None


class NewSection(Strict):
    name: Name


class NewTask(Strict):
    title: Title
    description: Text = ""
    parent: TaskKeyText | None = Field(default=None, description="Add as a checklist item.")
    section: Name | None = None
    tags: list[TagName] = Field(default_factory=list, max_length=MAX_TAGS)
    before: TaskKeyText | None = Field(default=None, description="Place before this sibling.")
    after: TaskKeyText | None = Field(default=None, description="Place after this sibling.")


class TaskRevision(Strict):
    expectedRevision: Revision


def _present(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    """JSON schema: ``name`` is given, as ``schema`` says (e.g. a string, or ``true``)."""
    return {"required": [name], "properties": {name: schema}}


def _both(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    return {
        "required": first["required"] + second["required"],
        "properties": first["properties"] | second["properties"],
    }


_STRING: dict[str, Any] = {"type": "string"}
_TRUE: dict[str, Any] = {"const": True}


class TaskEdit(Strict):
    """At least one change, all made in one transaction."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "anyOf": [
                _present("title", _STRING),
                _present("description", _STRING),
                _present("addTags", {"type": "array"}),
                _present("removeTags", {"type": "array"}),
            ]
        },
    )

    expectedRevision: Revision
    title: Title | None = None
    description: Text | None = None
    addTags: list[TagName] = Field(default_factory=list, min_length=1, max_length=MAX_TAGS)
    removeTags: list[TagName] = Field(default_factory=list, min_length=1, max_length=MAX_TAGS)


_SECTION, _NO_SECTION = _present("section", _STRING), _present("noSection", _TRUE)
_PARENT, _ROOT = _present("parent", _STRING), _present("root", _TRUE)
_BEFORE, _AFTER = _present("before", _STRING), _present("after", _STRING)
_LIST = _present("list", _STRING)
_MOVE_SCHEMA: dict[str, Any] = {
    "anyOf": [_BEFORE, _AFTER, _SECTION, _NO_SECTION, _PARENT, _ROOT, _LIST],
    "allOf": [
        {"not": _both(_SECTION, _NO_SECTION)},
        {"not": _both(_PARENT, _ROOT)},
        *[{"not": _both(_LIST, other)} for other in (_BEFORE, _AFTER, _PARENT, _ROOT, _NO_SECTION)],
    ],
}


class TaskMove(Strict):
    """Where to: a place among siblings, a section, a parent, or another list."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_MOVE_SCHEMA)

    expectedRevision: Revision
    before: TaskKeyText | None = Field(default=None, description="Place before this sibling.")
    after: TaskKeyText | None = Field(default=None, description="Place after this sibling.")
    section: Name | None = Field(default=None, description="Into this section of the list.")
    noSection: bool = Field(default=False, description="Out of its section.")
    parent: TaskKeyText | None = Field(default=None, description="Under this task.")
    root: bool = Field(default=False, description="To the top level of its list.")
    list: UUID | None = Field(
        default=None, description="To another list with its subtree (only `section` combines)."
    )


class NewComment(Strict):
    body: Text = Field(min_length=1)


# Checked by the schedule's own parser, so that an error names ``due`` or ``due.local``
# rather than a branch of a union; the schema still says what is accepted.
DueIn = Annotated[
    Any,
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "format": "date"},
                {
                    "type": "object",
                    "properties": {
                        "local": {"type": "string", "description": "YYYY-MM-DDTHH:MM:SS"},
                        "zone": {"type": "string", "description": "IANA zone"},
                    },
                    "required": ["local", "zone"],
                    "additionalProperties": False,
                },
                {"type": "null"},
            ]
        }
    ),
]


class ReminderIn(Strict):
    channel: Literal["email", "push"]
    local: LocalTime = Field(description="Wall time YYYY-MM-DDTHH:MM:SS, no offset.")
    zone: Zone
    recipient: ActorKeyText | None = Field(
        default=None, description="Handle or ID of a list member; default: the caller."
    )


class ScheduleBody(Strict):
    """The whole schedule: what is left out is cleared."""

    expectedRevision: Revision
    planned: date | None = Field(default=None, description="Planned day, no time or zone.")
    due: DueIn = Field(default=None, description="A due day, or a wall time with its IANA zone.")
    priority: int | None = Field(default=None, ge=1, le=3, description="1 is the highest.")
    reminders: list[ReminderIn] = Field(default_factory=list, max_length=MAX_REMINDERS)


class CompleteBody(Strict):
    expectedRevision: Revision
    completeSubtree: bool = Field(
        default=False,
        description="Also complete the open checklist items; a recurring occurrence needs it.",
    )


class SeriesStart(Strict):
    expectedRevision: Revision
    rule: Rule
    time: WallTime | None = Field(default=None, description="HH:MM wall time of each due.")
    zone: Zone | None = Field(default=None, description="IANA zone of the time and the days.")
    until: date | None = Field(default=None, description="No occurrence after this day.")
    count: int | None = Field(
        default=None, ge=1, le=MAX_REVISION, description="At most this many occurrences."
    )


class SeriesRevision(Strict):
    expectedRevision: Revision = Field(description="The series' revision (not a task's).")
