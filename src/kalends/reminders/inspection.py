"""Reminder intents as people see them: listed, read one by one, and requeued.

A person sees the intents of the tasks in lists they belong to; to anyone else an intent
does not exist, so IDs do not leak. Only its recipient or an editor of the list may give
a failed intent a fresh round of attempts. Every function runs inside the caller's
transaction, for an actor already resolved.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypedDict, TypeVar
from uuid import UUID

from sqlalchemy import select, update
from sqlalchemy.engine import Connection

from kalends.errors import Conflict, Forbidden, InvalidInput, NotFound
from kalends.identity import Role, parse_uuid
from kalends.reminders.intents import LIVE_STATES, IntentState
from kalends.reminders.limits import MAX_ATTEMPTS
from kalends.reminders.local_times import intent_zone, local_text
from kalends.storage.identity_tables import actors
from kalends.storage.task_tables import list_members, reminder_intents, tasks
from kalends.storage.wake import notify

__all__ = [
    "Intent",
    "IntentQuery",
    "intent_by_id",
    "list_intents",
    "parse_intent_id",
    "requeue_in",
    "visible",
]

ri = reminder_intents
# How a listing names the task it is narrowed to.
TaskT = TypeVar("TaskT")
# Who may requeue an intent besides its recipient.
_REQUEUERS = (Role.OWNER.value, Role.EDITOR.value)


@dataclass(frozen=True, slots=True)
class Intent:
    """One reminder intent as stored, for listing and inspection."""

    id: UUID
    task_id: UUID
    task_ref: str
    task_title: str
    schedule_revision: int
    channel: str
    at: datetime
    recipient_id: UUID
    recipient: str
    status: IntentState
    attempts: int
    next_attempt_at: datetime
    lease_owner: str | None
    lease_expires_at: datetime | None
    last_error: str | None
    closed_reason: str | None
    delivered_at: datetime | None
    created_at: datetime
    updated_at: datetime
    # The zone its recipient reads its times in (kalends.reminders.local_times).
    zone: str | None = None

    def to_json(self) -> dict[str, Any]:
        def instant(value: datetime | None) -> str | None:
            return value.isoformat().replace("+00:00", "Z") if value is not None else None

        leased = self.status == IntentState.LEASED
        return {
            "id": str(self.id),
            "task": {"id": str(self.task_id), "ref": self.task_ref, "title": self.task_title},
            "schedule_revision": self.schedule_revision,
            "channel": self.channel,
            "at": instant(self.at),
            "local": local_text(self.at, self.zone),
            "zone": self.zone,
            "recipient": {"id": str(self.recipient_id), "handle": self.recipient},
            # The stored string (an intent read back from JSON holds it as such).
            "status": str(self.status),
            "attempts": self.attempts,
            "max_attempts": MAX_ATTEMPTS,
            "next_attempt_at": instant(self.next_attempt_at)
            if self.status in LIVE_STATES
            else None,
            "lease_owner": self.lease_owner if leased else None,
            "lease_expires_at": instant(self.lease_expires_at) if leased else None,
            "last_error": self.last_error,
            "closed_reason": self.closed_reason,
            "delivered_at": instant(self.delivered_at),
            "created_at": instant(self.created_at),
            "updated_at": instant(self.updated_at),
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Intent:
        """The intent :meth:`to_json` wrote (as a server answers it).

        A settled intent's JSON leaves out its next attempt, and so does every view of it:
        it reads back as its creation.
        """
        created_at = _instant(d["created_at"])
        return cls(
            id=UUID(str(d["id"])),
            task_id=UUID(str(d["task"]["id"])),
            task_ref=d["task"]["ref"],
            task_title=d["task"]["title"],
            schedule_revision=int(d["schedule_revision"]),
            channel=d["channel"],
            at=_instant(d["at"]),
            recipient_id=UUID(str(d["recipient"]["id"])),
            recipient=d["recipient"]["handle"],
            status=IntentState(d["status"]),
            attempts=int(d["attempts"]),
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


def _instant(value: Any) -> datetime:
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def _maybe_instant(value: Any) -> datetime | None:
    return None if value is None else _instant(value)


_INTENTS = select(
    ri,
    tasks.c.ref.label("task_ref"),
    tasks.c.title.label("task_title"),
    tasks.c.list_id,
    actors.c.handle.label("recipient"),
    intent_zone().label("zone"),
).select_from(
    ri.join(tasks, tasks.c.id == ri.c.task_id).join(actors, actors.c.id == ri.c.recipient_id)
)


def _intent_from_row(r: Any) -> Intent:
    return Intent(
        id=r.id,
        task_id=r.task_id,
        task_ref=r.task_ref,
        task_title=r.task_title,
        schedule_revision=r.schedule_revision,
        channel=r.channel,
        at=r.at,
        recipient_id=r.recipient_id,
        recipient=r.recipient,
        status=IntentState(r.status),
        attempts=r.attempts,
        next_attempt_at=r.next_attempt_at,
        lease_owner=r.lease_owner,
        lease_expires_at=r.lease_expires_at,
        last_error=r.last_error,
        closed_reason=r.closed_reason,
        delivered_at=r.delivered_at,
        created_at=r.created_at,
        updated_at=r.updated_at,
        zone=r.zone,
    )


class IntentQuery(TypedDict, Generic[TaskT], total=False):
    """Which of the intents an actor may see a listing shows, written once for
    :meth:`~kalends.reminders.outbox.Outbox.list` (``IntentQuery[UUID]``: the task by its
    ID) and the CLI's reminders clients (``IntentQuery[str]``: the task by reference or
    ID, as a person types it). Every key is optional and keyword-only."""

    # Only intents in this state (one of :data:`~kalends.reminders.intents.STATUSES`).
    # Default ``None``: any state.
    status: str | None
    # Only the intents of this task. Default ``None``: those of every task the actor sees.
    task: TaskT | None
    # At most this many, earliest first, 1 to 10 000. Default
    # :data:`~kalends.reminders.limits.LIST_LIMIT` (100).
    limit: int


def list_intents(
    conn: Connection,
    actor_id: UUID,
    *,
    status: IntentState | None,
    task: UUID | None,
    limit: int,
) -> list[Intent]:
    """The intents of tasks in lists the actor belongs to, earliest first (then by ID)."""
    stmt = _INTENTS.where(
        tasks.c.list_id.in_(
            select(list_members.c.list_id).where(list_members.c.actor_id == actor_id)
        )
    )
    if status is not None:
        stmt = stmt.where(ri.c.status == status.value)
    if task is not None:
        stmt = stmt.where(ri.c.task_id == task)
    stmt = stmt.order_by(ri.c.at, ri.c.id).limit(limit)
    return [_intent_from_row(r) for r in conn.execute(stmt)]


def intent_by_id(conn: Connection, intent_id: UUID) -> Intent:
    """The intent with this ID, whoever may see it; :class:`NotFound` when there is none."""
    row = conn.execute(_INTENTS.where(ri.c.id == intent_id)).first()
    if row is None:
        raise NotFound(f"reminder: no intent {intent_id}", field="reminder")
    return _intent_from_row(row)


def parse_intent_id(value: UUID | str) -> UUID:
    """An intent's ID from a UUID or its text; :class:`InvalidInput` for anything else."""
    if isinstance(value, UUID):
        return value
    parsed = parse_uuid(value, "reminder") if isinstance(value, str) else None
    if parsed is None:
        raise InvalidInput(f"reminder: not a reminder ID: {value!r}", field="reminder")
    return parsed


def _role_on_task(conn: Connection, actor_id: UUID, task_id: UUID) -> str | None:
    role: str | None = conn.execute(
        select(list_members.c.role)
        .join(tasks, tasks.c.list_id == list_members.c.list_id)
        .where(tasks.c.id == task_id, list_members.c.actor_id == actor_id)
    ).scalar()
    return role


def visible(conn: Connection, actor_id: UUID, intent_id: UUID) -> Intent:
    """The intent, if the actor belongs to its task's list; :class:`NotFound` otherwise."""
    found = intent_by_id(conn, intent_id)
    if _role_on_task(conn, actor_id, found.task_id) is None:
        # Not a member: answer as if it did not exist, so IDs do not leak.
        raise NotFound(f"reminder: no intent {intent_id}", field="reminder")
    return found


def requeue_in(conn: Connection, actor_id: UUID, intent_id: UUID, now: datetime) -> Intent:
    """Gives a dead intent (or one that failed and waits) a fresh round of attempts from
    ``now`` and wakes the workers; see :meth:`~kalends.reminders.outbox.Outbox.requeue`."""
    found = visible(conn, actor_id, intent_id)
    role = _role_on_task(conn, actor_id, found.task_id)
    if actor_id != found.recipient_id and role not in _REQUEUERS:
        raise Forbidden("reminder: only its recipient or an editor of the list may retry it")
    if found.status == IntentState.PENDING and found.last_error is None:
        raise _conflict(
            "reminder: this reminder has not failed; it waits for its time "
            f"({found.next_attempt_at.isoformat()})"
        )
    if found.status not in (IntentState.DEAD, IntentState.PENDING):
        raise _conflict(
            f"reminder: a {found.status} reminder cannot be retried; "
            "only a dead one, or one waiting after a failure, can"
        )
    changed = conn.execute(
        update(ri)
        .where(ri.c.id == intent_id, ri.c.status == found.status.value)
        .values(
            status=IntentState.PENDING.value,
            attempts=0,
            next_attempt_at=now,
            lease_token=None,
            lease_owner=None,
            lease_expires_at=None,
            updated_at=now,
        )
    ).rowcount
    if changed != 1:  # a worker claimed it meanwhile (PostgreSQL)
        raise _conflict("reminder: a worker took this reminder meanwhile; try again")
    notify(conn)
    return intent_by_id(conn, intent_id)


def _conflict(message: str) -> Exception:
    return Conflict(message, field="reminder")
