"""What a passage's reservation writes beside its document: the task checklist made from
the schedule's template (SPEC §4 "Templates") and the passage's own conversation (SPEC
§4 "Conversations": its input as the first message, ``streaming`` until it settles), in
the reservation's own transaction, and the counts its settlement records.

Every caller that reserves a passage (the scheduler's set-based round, a look of its own,
Run now) calls :func:`write_reserved` (or :func:`write_reservations` for a round) in the
transaction of the compare-and-swap that wrote the pending record, only when that write
applied: the checklist, the conversation and the pending record that names the passage
are committed together or not at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy.engine import Connection

from kalends.civil import Calendars
from kalends.conversations import (
    MAX_MESSAGE_CHARS,
    MessageRole,
    PassageOpening,
    conversation_of_passage,
    open_passage_conversations,
    passage_say,
    settle_passage_conversation,
)
from kalends.conversations import MAX_TITLE as MAX_CONVERSATION_TITLE
from kalends.errors import NotFound
from kalends.missions.checklists import (
    ChecklistSpec,
    checklist_counts,
    checklist_items,
    create_checklists,
    slot_title,
)
from kalends.missions.config import Config
from kalends.missions.document import Pending
from kalends.missions.watching import ENVELOPE_CHARS, hand_over, watched_text

__all__ = [
    "Reserved",
    "passage_zone",
    "read_counts",
    "read_items",
    "settle_transcript",
    "passage_input_text",
    "write_reservations",
    "write_reserved",
]


def passage_zone(config: Config) -> str:
    """The zone a checklist's title shows the slot in: the policy's own (a calendar
    union's first calendar's), UTC for elapsed and immediate policies."""
    policy = config.policy
    if isinstance(policy, Calendars):
        return next((c.zone for c in policy.calendars), "UTC")
    zone = getattr(policy, "zone", None)
    return zone if isinstance(zone, str) else "UTC"


def write_reserved(
    conn: Connection,
    *,
    schedule_id: UUID,
    workspace_id: UUID,
    config: Config,
    pending: Pending,
    now: datetime,
) -> None:
    """Create the pending passage's checklist (nothing when it has none) and open its
    conversation: one reservation's :func:`write_reservations`."""
    reserved = Reserved(
        schedule_id=schedule_id, workspace_id=workspace_id, config=config, pending=pending
    )
    write_reservations(conn, [reserved], now)


@dataclass(frozen=True, slots=True, kw_only=True)
class Reserved:
    """A reservation just written: its schedule, workspace, configuration and passage."""

    schedule_id: UUID
    workspace_id: UUID
    config: Config
    pending: Pending


def write_reservations(
    conn: Connection, reserved: list[Reserved], now: datetime
) -> dict[str, list[dict[str, Any]]]:
    """:func:`write_reserved` for a round's reservations at once (the conversations in
    three statements whatever their number; a schedule that watches conversations has
    its sources read and the reads frozen with the passage,
    :func:`~kalends.missions.watching.hand_over`); the items of the checklists made, by
    passage (for the passages' input files)."""
    openings = []
    for r in reserved:
        text = passage_input_text(r.config, r.pending)
        if r.config.watch:
            reads = hand_over(
                conn,
                now,
                schedule_id=r.schedule_id,
                passage_id=r.pending.passage_id,
                config=r.config,
                envelope_chars=ENVELOPE_CHARS,
            )
            text += "\n\n" + watched_text(reads)
        openings.append(
            PassageOpening(
                workspace_id=r.workspace_id,
                schedule_id=r.schedule_id,
                passage_id=r.pending.passage_id,
                title=_conversation_title(_passage_title(r)),
                input_text=text[:MAX_MESSAGE_CHARS],
            )
        )
    open_passage_conversations(conn, now, openings)
    specs = [
        ChecklistSpec(
            checklist_id=UUID(r.pending.checklist_id),
            workspace_id=r.workspace_id,
            title=_passage_title(r),
            template=r.config.template,
            passage_id=r.pending.passage_id,
            schedule_id=r.schedule_id,
        )
        for r in reserved
        if r.pending.checklist_id is not None
    ]
    return create_checklists(conn, specs, now) if specs else {}


def _passage_title(r: Reserved) -> str:
    """The title of the passage's checklist and conversation: the schedule's and the slot."""
    return slot_title(
        r.config.title,
        r.pending.slot,
        passage_zone(r.config),
        reserved_at=r.pending.reserved_at,
    )


_CONTROL_AS_SPACE = dict.fromkeys((*range(0x20), 0x7F), " ")


def _conversation_title(title: str) -> str:
    """A passage's title as its conversation's: one line (a schedule's title may hold a
    line break, a conversation's may not), within the conversation's bound."""
    line = " ".join(title.translate(_CONTROL_AS_SPACE).split())
    return line[:MAX_CONVERSATION_TITLE] or "Passage"


def passage_input_text(config: Config, pending: Pending) -> str:
    """The first message of the passage's conversation: what it was asked to do, in
    words (the schedule's title, objective and notes, and what launched it)."""
    lines = [config.title]
    if config.objective:
        lines.append(f"Objective: {config.objective}")
    if config.notes:
        lines.append(f"Notes: {config.notes}")
    if pending.trigger == "manual":
        lines.append("Launched by Run now.")
    elif pending.slot is not None:
        lines.append(f"Launched for the slot {pending.slot.isoformat().replace('+00:00', 'Z')}.")
    return "\n".join(lines)


def read_counts(conn: Connection, pending: Pending) -> tuple[int, int] | None:
    """The ``(open, done)`` items of the passage's checklist; ``None`` when it has none."""
    if pending.checklist_id is None:
        return None
    try:
        return checklist_counts(conn, UUID(pending.checklist_id))
    except NotFound:
        return None


def read_items(conn: Connection, pendings: list[Pending]) -> dict[str, list[dict[str, Any]]]:
    """The checklist items of those passages that have a checklist, by passage ID, for
    their input files."""
    out: dict[str, list[dict[str, Any]]] = {}
    for pending in pendings:
        if pending.checklist_id is None:
            continue
        try:
            out[pending.passage_id] = checklist_items(conn, UUID(pending.checklist_id))
        except NotFound:
            continue
    return out


def settle_transcript(
    conn: Connection,
    now: datetime,
    passage_id: str,
    outcome: str,
    reason: str | None,
    summary: str | None,
) -> None:
    """At settlement, in the archive's transaction: the outcome (and the report's
    summary) as the last message of the passage's conversation, which is then
    ``settled``. A passage reserved before passages had conversations has none."""
    found = conversation_of_passage(conn, passage_id, lock=True)
    if found is None:
        return
    if found.state.value == "streaming":
        said = f"Settled: {outcome}" + (f" ({reason})" if reason else "") + "."
        if summary:
            said += f"\nReport: {summary}"
        passage_say(conn, now, passage_id, said, role=MessageRole.SYSTEM)
    settle_passage_conversation(conn, now, passage_id)
