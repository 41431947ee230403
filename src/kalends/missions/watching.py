"""Watched conversations (seed 002 "Settlement, result and watched cursors", SPEC §4
"Conversations"): a schedule's ``watch`` names conversations of its workspace, and each
passage is handed, per source in order, the stable new messages after the schedule's
cursor of that source.

- **Configuration** (:func:`check_watch`): each watched ID must be a conversation of the
  schedule's workspace, never one of the schedule's own passages (the passage family
  writes them: a schedule watching itself would feed on its own output), and the
  conversations the schedule remembers — those watched and those whose cursors it keeps
  — are at most :data:`~kalends.missions.limits.MAX_REMEMBERED_CONVERSATIONS`; beyond
  that the configuration is refused, so a cursor is never dropped silently.
- **Reservation** (:func:`hand_over`, in the reservation's transaction): the sources are
  read after their cursors (:func:`~kalends.conversations.read_sources`: at most 32
  stable complete messages each, the whole start text within 16,384 characters) and the
  reads are frozen with the passage (``passage_watch_reads``): its input and the cursors
  its settlement may advance to are exactly what it was handed.
- **Start** (:func:`handed_many`): the passage's input ``watched`` lists each source's
  messages, the one that did not fit (``needsDecision: "source-input-capacity"``, empty
  text) and a failed read's reason (a deleted, moved or rewritten source is never read
  as "no change").
- **Settlement** (:func:`settle_watch`, in the archive's transaction): only a
  ``completed`` passage advances the cursors, to its frozen reads' ends; ``failed`` and
  ``ended-without-report`` leave them, so the next passage is handed the same messages
  again. The frozen reads go with the archive. A removed watch keeps its cursor.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy import delete, insert, select
from sqlalchemy.engine import Connection

from kalends.conversations import (
    ConversationKind,
    SourceRead,
    WatchCursor,
    read_conversation,
    read_sources,
)
from kalends.errors import InvalidInput, LimitReached
from kalends.missions.config import Config
from kalends.missions.limits import MAX_REMEMBERED_CONVERSATIONS
from kalends.storage.among import among
from kalends.storage.watch_tables import passage_watch_reads, watch_cursors

__all__ = [
    "ENVELOPE_CHARS",
    "check_watch",
    "cursors_of",
    "hand_over",
    "handed_many",
    "settle_watch",
    "watched_text",
]

# kalends decision: the characters of the start text that are neither instructions nor
# messages (the title, the launch line, each source's heading), reserved whole; it also
# leaves the last source room for its capacity reference.
ENVELOPE_CHARS = 1024
_R = passage_watch_reads.c
_W = watch_cursors.c


def check_watch(
    conn: Connection, config: Config, *, workspace_id: UUID, schedule_id: UUID | None
) -> None:
    """Refuse ``config``'s ``watch`` (:class:`InvalidInput` on ``watch[i]``, or
    :class:`LimitReached` on ``watch``) unless each is a conversation of the workspace
    and none a conversation of this schedule's own passages, and the conversations the
    schedule would remember are within the ceiling. Nothing is written."""
    for i, text in enumerate(config.watch):
        found = read_conversation(conn, UUID(text))
        field = f"watch[{i}]"
        if found is None or found.workspace_id != workspace_id:
            # Another workspace's conversation is as unknown here as a missing one.
            raise InvalidInput(f"{field}: no conversation {text} in this workspace", field=field)
        if found.kind is ConversationKind.PASSAGE and (
            schedule_id is not None and found.schedule_id == schedule_id
        ):
            raise InvalidInput(
                f"{field}: {text} is the conversation of one of this schedule's own "
                "passages; a schedule never watches its own passages",
                field=field,
            )
    if schedule_id is None:
        return
    kept = set(cursors_of(conn, schedule_id))
    remembered = kept | {UUID(text) for text in config.watch}
    if len(remembered) > MAX_REMEMBERED_CONVERSATIONS:
        raise LimitReached(
            f"watch: the schedule would remember {len(remembered)} conversations (those "
            f"watched, and {len(kept)} whose cursors it keeps); at most "
            f"{MAX_REMEMBERED_CONVERSATIONS}",
            field="watch",
            limit=MAX_REMEMBERED_CONVERSATIONS,
        )


def cursors_of(conn: Connection, schedule_id: UUID) -> dict[UUID, WatchCursor]:
    """The schedule's cursors, by conversation (those of removed watches included)."""
    rows = conn.execute(
        select(_W.conversation_id, _W.cursor).where(_W.schedule_id == schedule_id)
    ).all()
    return {row.conversation_id: WatchCursor.from_json(json.loads(row.cursor)) for row in rows}


def hand_over(
    conn: Connection,
    now: datetime,
    *,
    schedule_id: UUID,
    passage_id: str,
    config: Config,
    envelope_chars: int,
) -> tuple[SourceRead, ...]:
    """Read the watched sources after the schedule's cursors, in order, and freeze the
    reads with the passage; the reads (none when nothing is watched)."""
    if not config.watch:
        return ()
    cursors = cursors_of(conn, schedule_id)
    sources = [(UUID(text), cursors.get(UUID(text))) for text in config.watch]
    reads = read_sources(
        conn,
        sources,
        instructions_chars=len(config.objective) + len(config.notes),
        envelope_chars=envelope_chars,
    )
    conn.execute(
        insert(passage_watch_reads).values(
            passage_id=passage_id,
            schedule_id=schedule_id,
            reads=json.dumps([_frozen(r) for r in reads], ensure_ascii=False),
            created_at=now,
        )
    )
    return reads


def _frozen(read: SourceRead) -> dict[str, Any]:
    return {
        **_shown(read),
        "nextCursor": None if read.next_cursor is None else read.next_cursor.to_json(),
    }


def _shown(read: SourceRead) -> dict[str, Any]:
    """One source as the passage's input lists it."""
    return {
        "conversationId": str(read.conversation_id),
        "messages": list(read.messages),
        "needsDecision": read.needs_decision,
        "stop": read.stop.value,
        "failure": None if read.failure is None else read.failure.value,
    }


def watched_text(reads: Sequence[SourceRead]) -> str:
    """The watched part of the passage's start text (its conversation's first message):
    per source, its heading and each handed message as the input's compact JSON line,
    so the text is counted as the reads were."""
    parts: list[str] = []
    for read in reads:
        heading = f"Watched conversation {read.conversation_id}"
        if read.failure is not None:
            parts.append(f"{heading}: not read ({read.failure.value}).")
            continue
        lines = [f"{heading}: {len(read.messages)} new message(s)."]
        lines.extend(
            json.dumps(m, ensure_ascii=False, separators=(",", ":")) for m in read.messages
        )
        if read.needs_decision is not None:
            lines.append(json.dumps(read.needs_decision, ensure_ascii=False, separators=(",", ":")))
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def handed_many(conn: Connection, passage_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    """What the passages were handed, per source, for their inputs, in one statement (a
    round's starts), by passage (one that watched nothing, or was reserved before
    watches were read, is left out)."""
    if not passage_ids:
        return {}
    rows = conn.execute(
        select(_R.passage_id, _R.reads).where(among(conn, _R.passage_id, passage_ids))
    ).all()
    return {
        row.passage_id: [
            {k: v for k, v in read.items() if k != "nextCursor"} for read in json.loads(row.reads)
        ]
        for row in rows
    }


def settle_watch(
    conn: Connection, now: datetime, *, schedule_id: UUID, passage_id: str, outcome: str
) -> None:
    """At the passage's archive: a ``completed`` passage moves each successfully read
    source's cursor to the end of what it was handed; any other outcome leaves the
    cursors. The frozen reads go either way."""
    row = conn.execute(select(_R.reads).where(_R.passage_id == passage_id)).first()
    if row is None:
        return
    if outcome == "completed":
        for read in json.loads(row.reads):
            cursor = read.get("nextCursor")
            if read.get("failure") is not None or cursor is None:
                continue
            conversation_id = UUID(read["conversationId"])
            conn.execute(
                delete(watch_cursors).where(
                    _W.schedule_id == schedule_id, _W.conversation_id == conversation_id
                )
            )
            conn.execute(
                insert(watch_cursors).values(
                    schedule_id=schedule_id,
                    conversation_id=conversation_id,
                    cursor=json.dumps(cursor),
                    updated_at=now,
                )
            )
    conn.execute(delete(passage_watch_reads).where(_R.passage_id == passage_id))
