"""Each passage's own conversation, written by the mission runtime inside its own
transactions: no actor is checked here, the scheduler's authority is the passage's.

A passage's conversation opens ``streaming`` with the passage's input as its first
message (``user``, complete), takes what the passage says, and becomes ``settled`` when
the passage settles; people read it but never post to it. Opening is idempotent on the
passage's ID, as the passage's start is (seed 002: deterministic identities), and so is
settling.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from sqlalchemy import select
from sqlalchemy.engine import Connection

from kalends.conversations import records
from kalends.conversations.values import (
    Conversation,
    ConversationKind,
    ConversationState,
    Message,
    MessageRole,
    message_digest,
)
from kalends.errors import Conflict, InvalidInput, NotFound
from kalends.storage.among import among
from kalends.storage.conversation_tables import conversation_messages, conversations
from kalends.storage.ids import ids_at
from kalends.storage.mission_tables import PASSAGE_ID_LENGTH
from kalends.storage.prepared import inserting
from kalends.storage.unit_of_work import for_update

__all__ = [
    "PassageOpening",
    "conversation_of_passage",
    "open_passage_conversation",
    "open_passage_conversations",
    "passage_say",
    "settle_passage_conversation",
]

_C = conversations.c
_M = conversation_messages.c


def _check_passage_id(passage_id: object) -> str:
    if not isinstance(passage_id, str) or not passage_id or len(passage_id) > PASSAGE_ID_LENGTH:
        raise InvalidInput(
            f"passage: a passage ID of 1 to {PASSAGE_ID_LENGTH} characters, got {passage_id!r}",
            field="passage",
        )
    return passage_id


def conversation_of_passage(
    conn: Connection, passage_id: str, *, lock: bool = False
) -> Conversation | None:
    """The conversation of the passage, or ``None`` when it has none."""
    query = select(conversations).where(_C.passage_id == _check_passage_id(passage_id))
    row = conn.execute(for_update(query) if lock else query).first()
    return None if row is None else Conversation.from_row(row)


def _streaming(conn: Connection, passage_id: str) -> Conversation:
    found = conversation_of_passage(conn, passage_id, lock=True)
    if found is None:
        raise NotFound(f"passage: no conversation of passage {passage_id}", field="passage")
    if found.state is not ConversationState.STREAMING:
        raise Conflict(
            f"passage: the conversation of passage {passage_id} is settled", field="passage"
        )
    return found


def open_passage_conversation(
    conn: Connection,
    now: datetime,
    *,
    workspace_id: UUID,
    schedule_id: UUID,
    passage_id: str,
    title: str,
    input_text: str,
) -> Conversation:
    """The passage's conversation, ``streaming``, its first message the passage's input;
    the one already opened for ``passage_id``, as it is, when there is one."""
    passage = _check_passage_id(passage_id)
    clean_title = records.check_title(title)
    text = records.check_text(input_text, "input_text")
    existing = conversation_of_passage(conn, passage)
    if existing is not None:
        return existing
    created = records.insert_conversation(
        conn,
        now,
        workspace_id=workspace_id,
        kind=ConversationKind.PASSAGE,
        title=clean_title,
        created_by=None,
        state=ConversationState.STREAMING,
        passage_id=passage,
        schedule_id=schedule_id,
    )
    records.add_message(
        conn,
        now,
        created.id,
        role=MessageRole.USER,
        text=text,
        complete=True,
        author_passage_id=passage,
    )
    opened = records.read_conversation(conn, created.id)
    if opened is None:  # pragma: no cover - inserted just above, in this transaction
        raise NotFound(f"passage: no conversation of passage {passage}", field="passage")
    return opened


@dataclass(frozen=True, slots=True, kw_only=True)
class PassageOpening:
    """A reserved passage's conversation to open: where, whose, and its input."""

    workspace_id: UUID
    schedule_id: UUID
    passage_id: str
    title: str
    input_text: str


# A round's conversations and their first messages, run on the driver (each row gives
# every column).
_OPEN = inserting(conversations)
_FIRST_MESSAGE = inserting(conversation_messages)


def open_passage_conversations(
    conn: Connection, now: datetime, openings: Sequence[PassageOpening]
) -> int:
    """:func:`open_passage_conversation` for a round's reservations at once, in three
    statements whatever their number (a read of those already open, then one insert of
    the conversations and one of their first messages); those already open are left as
    they are. How many were opened."""
    checked = [
        (o, _check_passage_id(o.passage_id), records.check_title(o.title),
         records.check_text(o.input_text, "input_text"))
        for o in openings
    ]  # fmt: skip
    if not checked:
        return 0
    already = set(
        conn.execute(
            select(_C.passage_id).where(among(conn, _C.passage_id, [p for _, p, _, _ in checked]))
        ).scalars()
    )
    fresh = [c for c in checked if c[1] not in already]
    if not fresh:
        return 0
    ids = ids_at(now, 2 * len(fresh))
    role = MessageRole.USER
    _OPEN.many(
        conn,
        [
            {
                "id": ids[2 * i],
                "workspace_id": o.workspace_id,
                "kind": ConversationKind.PASSAGE.value,
                "title": title,
                "created_by": None,
                "passage_id": passage,
                "schedule_id": o.schedule_id,
                "state": ConversationState.STREAMING.value,
                # As one insert and one post would leave it: its first message counted.
                "revision": 2,
                "last_seq": 1,
                "created_at": now,
                "updated_at": now,
            }
            for i, (o, passage, title, _text) in enumerate(fresh)
        ],
    )
    _FIRST_MESSAGE.many(
        conn,
        [
            {
                "id": ids[2 * i + 1],
                "conversation_id": ids[2 * i],
                "seq": 1,
                "role": role.value,
                "author_actor_id": None,
                "author_passage_id": passage,
                "text": text,
                "digest": message_digest(role, text),
                "complete": True,
                "revision": 1,
                "created_at": now,
                "updated_at": now,
                "completed_at": now,
            }
            for i, (_o, passage, _title, text) in enumerate(fresh)
        ],
    )
    return len(fresh)


def passage_say(
    conn: Connection,
    now: datetime,
    passage_id: str,
    text: str,
    *,
    role: MessageRole | str = MessageRole.ASSISTANT,
    complete: bool = True,
) -> Message:
    """A new last message of the passage's streaming conversation, by the passage."""
    passage = _check_passage_id(passage_id)
    clean = records.check_text(text)
    said = records.check_role(role)
    if not isinstance(complete, bool):
        raise InvalidInput(f"complete: true or false, got {complete!r}", field="complete")
    found = _streaming(conn, passage)
    return records.add_message(
        conn,
        now,
        found.id,
        role=said,
        text=clean,
        complete=complete,
        author_passage_id=passage,
    )


def settle_passage_conversation(conn: Connection, now: datetime, passage_id: str) -> Conversation:
    """The passage's conversation, ``settled``; a message the passage left incomplete is
    marked complete as it stands (a settled passage writes no more, and a reader waits
    for incomplete messages). Settling again changes nothing."""
    passage = _check_passage_id(passage_id)
    found = conversation_of_passage(conn, passage, lock=True)
    if found is None:
        raise NotFound(f"passage: no conversation of passage {passage}", field="passage")
    if found.state is ConversationState.SETTLED:
        return found
    left_open = conn.execute(
        select(conversation_messages).where(_M.conversation_id == found.id, _M.complete.is_(False))
    ).all()
    for row in left_open:
        message = Message.from_row(row)
        records.change_message(conn, now, message, message.revision, complete=True)
    conn.execute(
        conversations.update()
        .where(_C.id == found.id)
        .values(state=ConversationState.SETTLED.value, revision=_C.revision + 1, updated_at=now)
    )
    settled = records.read_conversation(conn, found.id)
    if settled is None:  # pragma: no cover - locked above, in this transaction
        raise NotFound(f"passage: no conversation of passage {passage}", field="passage")
    return settled
