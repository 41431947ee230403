"""Reminder intents: their states, and the writes the task store makes through them.

An intent is keyed uniquely by (task, schedule revision, channel, instant) and names its
recipient actor; where the recipient's reminders go lives in their notification settings,
never here. Its life (seed 000, "Reminder outbox"):

``pending`` --claim--> ``leased`` --ack--> ``delivered``
                         |  --retry--> ``pending`` (later) or ``dead`` after the fifth attempt
                         |  --close--> ``closed`` (no longer eligible: the reason is kept)
                         |  --release--> ``pending`` (a worker shutting down, nothing sent)
                         '-- the lease expires --> claimable again (a crashed worker)

Schedule changes, completion, skipping and trash cancel the pending and leased intents
of the tasks concerned in their own transaction (``cancelled``): :func:`cancel_intents`,
or :func:`replace_intents` when a schedule brings new ones.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from uuid import UUID

from sqlalchemy import bindparam, insert, update
from sqlalchemy.engine import Connection

from kalends.reminders.channels import Channel
from kalends.storage.ids import ids_at
from kalends.storage.task_tables import reminder_intents
from kalends.storage.wake import notify

__all__ = [
    "LIVE_STATES",
    "STATUSES",
    "IntentPlan",
    "IntentState",
    "cancel_intents",
    "replace_intents",
]


class IntentState(StrEnum):
    """Where an intent is in its life; the value is the stored ``status``."""

    PENDING = "pending"
    LEASED = "leased"
    DELIVERED = "delivered"
    CANCELLED = "cancelled"
    DEAD = "dead"
    CLOSED = "closed"


# The states of an intent that may still be sent (claimable, or claimed and held).
LIVE_STATES = (IntentState.PENDING.value, IntentState.LEASED.value)
# Every state's stored string, in the order of an intent's life.
STATUSES = tuple(state.value for state in IntentState)
# kalends: tasks whose intents one statement cancels at most, well within the bound
# parameters a statement may hold (PostgreSQL's protocol allows 65,535).
CANCEL_CHUNK = 10_000


@dataclass(frozen=True, slots=True, kw_only=True)
class IntentPlan:
    """One reminder of a task's current schedule, to be sent at its instant."""

    task_id: UUID
    schedule_revision: int
    channel: Channel
    at: datetime
    recipient_id: UUID


_CANCEL = (
    update(reminder_intents)
    .where(
        reminder_intents.c.task_id.in_(bindparam("task_ids", expanding=True)),
        reminder_intents.c.status.in_(LIVE_STATES),
    )
    .values(
        status=IntentState.CANCELLED.value,
        closed_reason=bindparam("reason"),
        lease_token=None,
        lease_owner=None,
        lease_expires_at=None,
        updated_at=bindparam("now"),
    )
)


def cancel_intents(
    conn: Connection, task_ids: Collection[UUID], now: datetime, reason: str
) -> None:
    """Cancels the pending and leased intents of these tasks, keeping ``reason`` (say
    ``task-completed``); a worker holding one loses its lease. Runs in the caller's
    transaction."""
    ids = list(task_ids)
    for start in range(0, len(ids), CANCEL_CHUNK):
        chunk = ids[start : start + CANCEL_CHUNK]
        conn.execute(_CANCEL, {"task_ids": chunk, "now": now, "reason": reason})


def replace_intents(
    conn: Connection,
    task_ids: Collection[UUID],
    plans: Sequence[IntentPlan],
    now: datetime,
    reason: str = "schedule-changed",
) -> None:
    """Makes ``plans`` the live intents of the tasks ``task_ids``: cancels their pending and
    leased intents (:func:`cancel_intents`, with ``reason``), then creates one pending intent
    per plan, claimable from its instant, and wakes the delivery workers. Runs in the
    caller's transaction. Tasks created in it have no intents yet: pass no IDs for them,
    and nothing is cancelled."""
    if task_ids:
        cancel_intents(conn, task_ids, now, reason)
    if not plans:
        return
    conn.execute(
        insert(reminder_intents),
        [
            {
                "id": intent_id,
                "task_id": plan.task_id,
                "schedule_revision": plan.schedule_revision,
                "channel": plan.channel.value,
                "at": plan.at,
                "recipient_id": plan.recipient_id,
                "status": IntentState.PENDING.value,
                "attempts": 0,
                "next_attempt_at": plan.at,
                "created_at": now,
                "updated_at": now,
            }
            for plan, intent_id in zip(plans, ids_at(now, len(plans)), strict=True)
        ],
    )
    notify(conn)
